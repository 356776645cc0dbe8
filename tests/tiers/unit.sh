#!/usr/bin/env bash
# tests/tiers/unit.sh: the unit tier: make check in ./build, one result per test.
# usage: tests/tiers/unit.sh   (after tests/tiers/build.sh)
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

unit_tier() {
	local st f0=$failed
	say "unit tier: make check"
	timeout 1200 make -C "$build" -j2 check; st=$?
	count_trs tests/unit || result fail "unit tier did not run (make check exited $st)"
	count_trs doc || true
	# The layer and export checks (tests/check-*.sh, .py) and the header's exports.
	count_trs tests "$build" 1 || result fail "layer and export checks did not run"
	count_trs tests/abi || result fail "tests/abi/check-exports.sh did not run"
	[ $st -eq 0 ] || [ $failed -gt $f0 ] || result fail "make check exited $st"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
unit_tier
tier_status
