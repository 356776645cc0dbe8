#!/usr/bin/env bash
# linkdown-rping.sh: the link-down fault with rdma_cm's own tools only (rping), no easyrdma: shows whether a port flap alone, or a CM message sent while the link is down, leaves b unable to connect.
#
# Usage: tests/faults/linkdown-rping.sh   (boots a `testbed pair`; runs itself in both VMs)
#
# Round 1: b flaps eth0 (3 s) with no RDMA connection open, then `rping -c` to a.
# Round 2: b streams to a with `rping -c` (a: persistent `rping -s -P`), takes
#          eth0 down, SIGKILLs that rping while the link is down (so b's kernel
#          CM sends a DREQ on QP1 while there is no route), brings eth0 up, then
#          `rping -c` to a again (twice), and a runs `rping -c` to b.
# Each side prints rxe0's hw_counters, GIDs, `ip neigh` and rxe's debug lines
# about QP1 and QP state changes (dynamic debug) around the steps.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${EZ_HOST:-}" ]; then
	exec "$here/../testbed/testbed" pair --timeout "${EZ_TESTBED_TIMEOUT:-400}" --cwd "$here" -- \
		timeout --kill-after=10 300 bash "$here/linkdown-rping.sh"
fi
d=$EZ_PAIR_DIR
say() { echo "$(date +%T.%N | cut -c1-12) $*"; }
waitf() { local i; for i in $(seq 600); do [ -e "$d/$1" ] && return 0; sleep 0.1; done; say "timeout waiting for $1"; return 1; }
state() {
	say "--- state ($1)"
	ip -br link show eth0; ip neigh show dev eth0; ip route show dev eth0
	rdma link show rxe0/1
	for g in 0 1 2 3; do printf 'gid%s %s\n' $g "$(cat /sys/class/infiniband/rxe0/ports/1/gids/$g 2>/dev/null)"; done
	(cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | grep -v ':0$' | tr '\n' ' '); echo
}
mount -t debugfs none /sys/kernel/debug 2>/dev/null
dmesg -n 1 2>/dev/null
# rxe's and ib_mad's own debug messages (dynamic debug), if this kernel has it
echo 'module rdma_rxe +p' > /sys/kernel/debug/dynamic_debug/control 2>/dev/null && say "rdma_rxe dynamic debug on"
dmesg -C 2>/dev/null
dmesg -w 2>/dev/null | grep --line-buffered -v 'state = \|speed is unknown' | sed -u "s/^/dmesg: /" & dm=$!
flap() { say "eth0 down"; ip link set eth0 down; sleep 3; ip link set eth0 up; say "eth0 up"; sleep 1; }
try() { # try NAME ADDR: one short rping as client
	local st
	timeout 20 rping -c -a "$2" -p 7471 -C 3 -S 64 -v >"/tmp/rping.$EZ_HOST.$1" 2>&1; st=$?
	say "$1: rping -c -a $2 -C 3 exit $st: $(head -c 300 /tmp/rping.$EZ_HOST.$1 | tr '\n' '|')"
	return $st
}
if [ "$EZ_HOST" = a ]; then
	rping -s -a 0.0.0.0 -p 7471 -P >/dev/null 2>&1 & srv=$!
	sleep 1; touch "$d/a-listening"
	waitf b-round2-done
	state "a after round 2"
	say "a -> b: b listens now"
	waitf b-listening && try a-to-b "$EZ_PEER_ADDR"; echo $? > "$d/a-to-b-status"
	kill $dm; kill $srv; wait $srv 2>/dev/null
	exit 0
fi
# b
waitf a-listening || exit 1
state "b at start"
try before "$EZ_PEER_ADDR"
say "=== round 1: flap with no connection open"
flap
state "b after flap 1"
try after-flap-1 "$EZ_PEER_ADDR"; r1=$?
say "=== round 2: flap while an rping client streams"
rping -c -a "$EZ_PEER_ADDR" -p 7471 -C 100000000 >/tmp/rping.b.stream 2>&1 & cl=$!
sleep 3
kill -0 $cl 2>/dev/null || say "the streaming rping ended early: $(tail -c 300 /tmp/rping.b.stream | tr '\n' '|')"
say "eth0 down"; ip link set eth0 down; sleep 1
say "kill -9 the streaming rping (link still down)"; kill -9 $cl; wait $cl 2>/dev/null
sleep 2; ip link set eth0 up; say "eth0 up"; sleep 1
state "b after flap 2"
try after-flap-2 "$EZ_PEER_ADDR"; r2=$?
sleep 5
try after-flap-2-again "$EZ_PEER_ADDR"; r3=$?
rping -s -a 0.0.0.0 -p 7471 >/dev/null 2>&1 & srv=$!
sleep 1; touch "$d/b-listening" "$d/b-round2-done"
waitf a-to-b-status; r4=$(cat "$d/a-to-b-status")
kill $srv 2>/dev/null; wait $srv 2>/dev/null
state "b at end"
kill $dm
say "RESULT: after a flap with no connection: $r1; after a flap with a DREQ sent while down: b->a $r2, 5 s later $r3, a->b $r4 (0 = connected)"
exit 0
