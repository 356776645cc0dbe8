#!/usr/bin/env bash
# tests/tiers/two-hosts.sh: two VMs on a virtual wire: RoCEv2 captured with tcpdump, then make check-flows-pair and check-mpath-pair.
# usage: tests/tiers/two-hosts.sh
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

two_hosts() {
	local t pt
	# Two VMs on a virtual wire: real RoCEv2 packets, captured with tcpdump.
	say "two hosts: RoCEv2 between two VMs, captured with tcpdump"
	t=$SECONDS
	pass_fail two_host_capture \
		"$testbed" pair --cwd "$build" --timeout 600 -- "$top/tests/integration/two_host_capture.sh"
	echo "(two hosts: $((SECONDS - t)) s)"
	for pt in check-flows-pair check-mpath-pair; do
		say "two hosts: make $pt"
		t=$SECONDS
		pass_fail "$pt" timeout 900 make -C "$build" "$pt"
		echo "($pt: $((SECONDS - t)) s)"
	done
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
two_hosts
tier_status
