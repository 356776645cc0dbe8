#!/usr/bin/env bash
# tests/tiers/quick.sh: the tier a contributor runs before the whole suite: the unit tier, then the core integration tests in the plain build, in the test bed (a few minutes).
# usage: tests/tiers/quick.sh   (or ./dev.sh quick; EZ_QUICK_TESTS replaces the list)
#
# The core: a connection's life and errors (test_conn, test_api), the QP
# ladder against the device, the receive pools, several paths, large
# messages, and one hostile peer. Everything else (the fault suite, ASan,
# two and more VMs, the budget, packages) is ./dev.sh test's.
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK_TESTS=${EZ_QUICK_TESTS:-"tests/integration/test_conn tests/faults/test_api
	tests/integration/test_qpfsm_ladder tests/integration/test_srqpool
	tests/integration/test_multipath tests/faults/test_rndv tests/faults/test_hostile_rkey"}

quick_tier() {
	local st f0 t=$SECONDS
	"$tiers_dir/unit.sh" || true
	f0=$failed
	say "quick tier: the core integration tests, plain build, in the test bed"
	# shellcheck disable=SC2086
	make -C "$build" -j2 $QUICK_TESTS >/dev/null &&
		"$testbed" run --cwd "$build" --timeout 900 -- \
			make check TESTS="$(echo $QUICK_TESTS)"; st=$?
	count_trs tests/integration || result fail "quick integration tests did not run (exit $st)"
	count_trs tests/faults || true
	[ $st -eq 0 ] || [ $failed -gt $f0 ] || result fail "quick integration tests (exit $st)"
	echo "(quick tier: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tiers_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tier_begin
clean_results
quick_tier
tier_status
