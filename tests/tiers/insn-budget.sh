#!/usr/bin/env bash
# tests/tiers/insn-budget.sh: libeasyrdma's own instructions per message, counted by callgrind in the test bed, against tests/bench/insn-budget.json (fails beyond +10 %).
# usage: tests/tiers/insn-budget.sh
# A cheap run of tests/bench/insn: easyrdma only, small counts, the rows of
# the budget file. A change that makes the per-message path longer fails
# here; one that makes it shorter should record the new figures
# (tests/bench/insn --budget tests/bench/insn-budget.json --write-budget with
# the same --counts and --cases).
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

insn_budget() {
	local t=$SECONDS
	say "instruction budget: libeasyrdma's instructions per message under callgrind (tests/bench/insn)"
	# The stream's sides and the busy-poll ping-pong spin until the end, so
	# their pass counts follow the clock: a third run with a busy loop on the
	# server's vCPU lets a fit (I = c + a N + b P) take a message's own work
	# apart from the empty passes, whatever the pass counts of this run were.
	# Checked: the stream's sender and receiver per message, the ping-pong's
	# round trip, and an empty poll pass of each; in event mode, a wake-up's
	# instructions and system calls (a second epoll_wait() inside the
	# context, or a read that only returns EAGAIN, fails it).
	pass_fail "instruction budget (tests/bench/insn-budget.json)" \
		env EZ_INSN_FIT_CASES="stream64 lat64_spin" "$top/tests/bench/insn" --builddir "$build" --no-anchors \
		--counts 200,1200 --cases "stream64 lat64_spin lat64_event" --budget "$top/tests/bench/insn-budget.json" --check
	echo "(instruction budget: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
insn_budget
tier_status
