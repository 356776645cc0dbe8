#!/usr/bin/env bash
# tests/tiers/distcheck.sh: make distcheck in ./build; EZ_SKIP_DISTCHECK=1 lists it as skipped instead.
# usage: tests/tiers/distcheck.sh
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

distcheck() {
	local t
	if [ "${EZ_SKIP_DISTCHECK:-0}" = 1 ]; then
		skip "make distcheck (EZ_SKIP_DISTCHECK=1)"
		return
	fi
	say "make distcheck"
	t=$SECONDS
	pass_fail "make distcheck" timeout 1200 make -C "$build" -j2 distcheck
	echo "(distcheck: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
distcheck
tier_status
