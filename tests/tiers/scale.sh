#!/usr/bin/env bash
# tests/tiers/scale.sh: 10,000 connections held by one server process (tests/scale/run-10k.sh): 4 client processes connect them at once (100 in flight each), each echoes and is checked, a ping-pong beside them keeps a tenth of its rate alone, then everything closes and the server is back to one CQ.
# usage: tests/tiers/scale.sh   (EZ_SCALE_N: connections, default 10000)
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

scale() {
	local t=$SECONDS
	say "one server process, ${EZ_SCALE_N:-10000} connections at once (tests/scale/run-10k.sh)"
	pass_fail "${EZ_SCALE_N:-10000} connections in one process" \
		env EZ_SCALE_N="${EZ_SCALE_N:-10000}" EZ_SCALE_WINDOW=100 EZ_SCALE_CMTIME= \
		EZ_SCALE_PING_S=10 EZ_SCALE_TIMEOUT=1800 "$top/tests/scale/run-10k.sh" "$build"
	echo "(scale: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
scale
tier_status
