#!/usr/bin/env bash
# cluster.sh: four hosts on one switch: boots `testbed cluster 4` and runs cluster_hosts in every VM (a serves; b, c, d each open EZ_CLUSTER_CONNS connections at once, every fourth with two paths; d powers off half-way), with the switch's RoCEv2 traffic captured; then checks the capture: every client host's flows spread over many UDP source ports.
#
# Usage: tests/faults/cluster.sh BUILD_DIR   (EZ_CLUSTER_CONNS: connections per client host, default 100;
#   EZ_TESTBED_TIMEOUT: seconds for the whole run, default 1500; EZ_VM_IDLE_S: seconds
#   without a line from any VM that end the run as a hang, default 300; EZ_VM_MEM: MiB per VM)
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
make -C "$bdir" tests/faults/cluster_hosts >/dev/null || exit 1
export EZ_CLUSTER_CONNS=${EZ_CLUSTER_CONNS:-100}
cap=$(mktemp "${TMPDIR:-/tmp}/ez-cluster.XXXXXX.pcap")
trap 'rm -f "$cap"' EXIT
tb_timeout=${EZ_TESTBED_TIMEOUT:-1500}
# A hang: no VM printed anything for 300 s (cluster_hosts prints its counts
# every 30 s while they move), however slow the host.
export EZ_VM_IDLE_S=${EZ_VM_IDLE_S:-300}
# A run the test bed voids (75: a VM's emulated NIC stalled, see testbed's
# EZ_VM_NIC_STALL_S, a VM's clock ran fast, EZ_VM_CLOCK_VOID, or a VM's
# kernel held rdma_destroy_id()) says nothing of the library: again, from
# the start, up to three runs in all. Two were not enough on a loaded host:
# the README run of 796dfa0 with the host loaded (stop 51) had its first
# run voided for a guest kernel's CM stall and its second for a VM's
# virtio-net transmit stall (the guest's netdev watchdog), every other tier
# green; a void costs 2-4 min on a quiet host, ~15 on a loaded one. No timeout(1) inside
# the guests: it counts in the guest's clock, which a loaded host was seen
# to run at 5.7x; the test bed's --timeout counts in the host's, and
# cluster_hosts' ceilings read the host's clock (pair_host_now()).
for try in 1 2 3; do
	EZ_CLUSTER_CAPTURE=$cap "$here/../testbed/testbed" cluster 4 --timeout "$tb_timeout" \
		--cwd "$bdir" -- ./tests/faults/cluster_hosts
	st=$?
	if [ "$st" != 75 ] || [ $try = 3 ]; then break; fi
	echo "cluster: the test bed voided the run (it said why above); running it again"
done
[ "$st" = 75 ] && echo "cluster: FAIL: the test bed voided all three runs (a VM's NIC stalled, its clock ran fast or its kernel held rdma_destroy_id)"
# The capture: per client host, the UDP source ports of its RoCEv2 frames to a.
# Each of its QPs (one per path) has a port of its own; ports collide rarely.
ok=1
for h in 2 3 4; do
	n=$(tcpdump -nr "$cap" "src host 192.0.2.$h and dst host 192.0.2.1" 2>/dev/null |
		awk '{ n = split($3, p, "."); print p[n] }' | sort -u | wc -l)
	qps=$(( EZ_CLUSTER_CONNS + EZ_CLUSTER_CONNS / 4 ))
	# rxe draws a QP's port from 16,384 (0xc000 + 14 bits of a hash): q QPs
	# on random ports would cover 16384 (1 - e^(-q/16384)) of them (3,352
	# for 3,750 QPs); at least 90 % of that.
	want=$(awk -v q="$qps" 'BEGIN { printf "%d", 0.9 * 16384 * (1 - exp(-q / 16384)) }')
	echo "cluster: host 192.0.2.$h sent RoCEv2 to a from $n UDP source ports ($qps QPs, at least $want wanted)"
	[ "$n" -ge "$want" ] || ok=0
done
echo "cluster: $(tcpdump -nr "$cap" 2>/dev/null | wc -l) frames captured"
[ $ok = 1 ] || { echo "cluster: FAIL: flows did not spread over source ports"; [ $st = 0 ] && st=1; }
exit $st
