#!/usr/bin/env bash
# tests/tiers/cluster.sh: four hosts on one switch (tests/faults/cluster.sh): 3 client hosts' connections to one server, one client host powered off half-way, the capture's UDP source ports.
# usage: tests/tiers/cluster.sh   (EZ_CLUSTER_CONNS: connections per client host, default 3000 here,
#   issue 22's full size: 170 s on a quiet 2-core host, 3 GiB a VM; 100 in cluster.sh)
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cluster() {
	local t=$SECONDS
	say "four hosts on one switch: 3 x ${EZ_CLUSTER_CONNS:-3000} connections, one host powered off (tests/faults/cluster.sh)"
	# A run takes about 250 s on a quiet host and ~950 s on a loaded one
	# (the README run of dfafcbb with the host loaded reached the old 900 s
	# ceiling with every host still echoing): a hang is caught by
	# EZ_VM_IDLE_S (300 s in which no VM printed anything; cluster_hosts
	# prints its counts every 30 s while they move), and 1,800 s is only
	# the far bound.
	pass_fail "cluster (four hosts)" \
		env EZ_TESTBED_TIMEOUT=1800 EZ_VM_MEM="${EZ_VM_MEM:-3072}" \
		EZ_CLUSTER_CONNS="${EZ_CLUSTER_CONNS:-3000}" "$top/tests/faults/cluster.sh" "$build"
	echo "(cluster: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
cluster
tier_status
