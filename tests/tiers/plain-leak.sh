#!/usr/bin/env bash
# tests/tiers/plain-leak.sh: tests/faults/test_leak in the plain build, in the test bed; dev.sh runs it unless EZ_PLAIN_TIER=1.
# usage: tests/tiers/plain-leak.sh
#
# test_leak's RSS bound is compiled out under ASan (its quarantine keeps freed
# memory resident), so the plain build runs that test.
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

plain_leak() {
	local st f0=$failed
	say "plain build: tests/faults/test_leak (its RSS bound), in the test bed"
	make -C "$build" -j2 tests/faults/test_leak >/dev/null &&
		"$testbed" run --cwd "$build" --timeout 600 -- \
			make check TESTS=tests/faults/test_leak; st=$?
	count_trs tests/faults || result fail "plain test_leak did not run (exit $st)"
	[ $st -eq 0 ] || [ $failed -gt $f0 ] || result fail "plain test_leak (exit $st)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
plain_leak
tier_status
