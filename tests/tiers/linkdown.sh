#!/usr/bin/env bash
# tests/tiers/linkdown.sh: two hosts, the link goes down on one of them (tests/faults/linkdown.sh), or for good (tests/faults/deadpeer.sh), the loop's liveness (tests/faults/liveness-pair.sh), and large messages on a lossy link (tests/faults/lossy.sh).
# usage: tests/tiers/linkdown.sh
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

linkdown() {
	local t=$SECONDS
	say "two hosts: link down on one of them (tests/faults/linkdown.sh)"
	pass_fail "link down (two hosts)" \
		env EZ_TESTBED_TIMEOUT=400 "$top/tests/faults/linkdown.sh" "$build"
	echo "(link down: $((SECONDS - t)) s)"
}

deadpeer() {
	local t=$SECONDS
	say "two hosts: the peer's link goes down for good (tests/faults/deadpeer.sh)"
	pass_fail "dead peer: keepalive, transport, op_timeout_ms (two hosts)" \
		env EZ_TESTBED_TIMEOUT=300 "$top/tests/faults/deadpeer.sh" "$build"
	echo "(dead peer: $((SECONDS - t)) s)"
}

# Issue 20: the loop never stalls on a connect storm from the other host
# nor on closing a connection to a host that vanished.
liveness() {
	local t=$SECONDS
	say "two hosts: connect storm, vanished peer's close (tests/faults/liveness-pair.sh)"
	pass_fail "liveness (two hosts)" \
		env EZ_TESTBED_TIMEOUT=400 "$top/tests/faults/liveness-pair.sh" "$build"
	echo "(liveness: $((SECONDS - t)) s)"
}

# Issue 42: large messages in chunks on a link that drops 0.1 % of its
# packets, small messages beside them.
lossy() {
	local t=$SECONDS
	say "two hosts: a lossy link (netem 0.1 %), 1-16 MiB objects (tests/faults/lossy.sh)"
	pass_fail "lossy link: chunked large messages (two hosts)" \
		env EZ_TESTBED_TIMEOUT=900 "$top/tests/faults/lossy.sh" "$build"
	echo "(lossy: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
linkdown
deadpeer
liveness
lossy
tier_status
