#!/usr/bin/env bash
# kernel-calls.sh: which kernel functions (rdma_rxe, ib_uverbs, ib_core) a 64 B
# busy-poll ping-pong calls, ib_send_lat against ezbench, counted with the
# function tracer, and in what context each runs. Pinned like tests/bench/compare
# (server vCPU 1, client vCPU 0). Runs as root where rxe0 is up (inside the
# test bed's VM); a count needs no timing, so TCG's slowness does not bias it.
#
# Usage: kernel-calls.sh EZBENCH [ITERS]
# Prints, per tool, the calls per round trip (both sides, warm-up and
# connection included), then the functions whose counts differ by 0.3 or more
# per round trip. With KERNEL_CALLS_CONTEXT=1, the rxe data-path functions are
# traced alone and listed by caller, CPU and context (process or softirq).
set -eu
ez=$1 iters=${2:-1000}
addr=${EZ_TEST_ADDR:-192.0.2.1} dev=${EZ_DEVICE:-rxe0} gid=${EZ_GID_INDEX:-1}
out=$(mktemp -d) port=27000
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T

echo 0 >$T/tracing_on
echo nop >$T/current_tracer
if [ "${KERNEL_CALLS_CONTEXT:-0}" = 1 ]; then
	: >$T/set_ftrace_filter
	for f in rxe_requester rxe_completer rxe_responder rxe_rcv rxe_cq_post rxe_post_send \
		rxe_xmit_packet rxe_run_task ib_uverbs_comp_handler; do
		echo $f >>$T/set_ftrace_filter
	done
else
	echo ':mod:rdma_rxe' >$T/set_ftrace_filter
	echo ':mod:ib_uverbs' >>$T/set_ftrace_filter
	echo ':mod:ib_core' >>$T/set_ftrace_filter
fi
echo 200000 >$T/buffer_size_kb
echo function >$T/current_tracer

# trace NAME "SERVER" "CLIENT": the client's run, traced; NAME.trace, NAME.cnt.
trace() {
	local sp
	port=$((port + 1))
	echo >$T/trace
	# shellcheck disable=SC2086
	taskset -c 1 $2 >"$out/$1.srv" 2>&1 &
	sp=$!
	sleep 2
	echo 1 >$T/tracing_on
	# shellcheck disable=SC2086
	taskset -c 0 $3 >"$out/$1.cli" 2>&1
	echo 0 >$T/tracing_on
	wait $sp
	grep -v '^#' $T/trace >"$out/$1.trace"
	if grep -h '^overrun:' $T/per_cpu/cpu*/stats | grep -qv ' 0$'; then
		echo "$1: the trace buffer overran; use fewer ITERS" >&2
		exit 1
	fi
	# "task-pid [cpu] flags time: func <-parent": fields after the CPU.
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) {
		ctx = substr($(i + 1), 5, 1) ~ /[sS]/ ? "softirq" : "process"
		print $(i + 3), $(i + 4), $i, ctx; break } }' "$out/$1.trace" >"$out/$1.calls"
	awk '{ print $1 }' "$out/$1.calls" | sort | uniq -c | awk '{ print $2, $1 }' | sort >"$out/$1.cnt"
	echo "$1: $(wc -l <"$out/$1.calls") calls, $(awk -v n="$iters" 'END { printf "%.1f", NR / n }' "$out/$1.calls") per round trip"
}

trace ib_send_lat "ib_send_lat -d $dev -x $gid -F -p $((port + 1)) -s 64 -n $iters" \
	"ib_send_lat -d $dev -x $gid -F -p $((port + 1)) -s 64 -n $iters $addr"
trace ezbench "$ez -s -a $addr -p $((port + 1)) --timeout 600 --poll spin" \
	"$ez -c $addr -p $((port + 1)) --lat --poll spin --size 64 --iters $iters"
echo nop >$T/current_tracer

echo "function: ib_send_lat ezbench (per round trip; |difference| >= 0.3)"
join -a1 -a2 -e0 -o 0,1.2,2.2 "$out/ib_send_lat.cnt" "$out/ezbench.cnt" |
	awk -v n="$iters" '{ d = ($3 - $2) / n; if (d >= 0.3 || d <= -0.3) printf "  %-32s %7.2f %7.2f\n", $1, $2 / n, $3 / n }'
if [ "${KERNEL_CALLS_CONTEXT:-0}" = 1 ]; then
	for t in ib_send_lat ezbench; do
		echo "== $t: function, caller, CPU, context (calls)"
		sort "$out/$t.calls" | uniq -c | sort -rn | awk '$1 >= 100'
	done
fi
rm -rf "$out"
