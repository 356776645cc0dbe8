#!/bin/sh
# workers-bench-pair.sh: issue 21's throughput figure across two VMs: rpc_server with 1 and 2 worker threads alone in VM a, the rpc_client processes in VM b.
# Usage (from the build directory):
#   EZ_VM_SMP=2 ../tests/testbed/testbed pair --cwd "$PWD" --timeout 3000 -- \
#       env WORK_US=2000 CPU_WORK=1 ROUNDS=3 ../tests/bench/workers-bench-pair.sh
# Environment: WORK_US per request (default 2000), CPU_WORK=1 spins on the
# worker thread's CPU clock (rpc_server --cpu-work) rather than the wall clock,
# CLIENTS rpc_client processes in VM b (default 4), N requests each (default
# 1000), WINDOW (default 8), ROUNDS interleaved rounds (default 3), THREADS
# the worker counts (default "1 2").
# VM a prints, per run, the rate VM b measured and where a's vCPUs' time went
# (/proc/stat: user, system, softirq, idle; and the server threads' own CPU
# seconds), then every count's median, min and max and the ratio of medians.
set -u
: "${EZ_HOST:?run me with: testbed pair -- $0}" "${EZ_PAIR_DIR:?}" "${EZ_TEST_ADDR:?}" "${EZ_PEER_ADDR:?}"
dir=$EZ_PAIR_DIR
work=${WORK_US:-2000}
clients=${CLIENTS:-4}
n=${N:-1000}
win=${WINDOW:-8}
rounds=${ROUNDS:-3}
threads=${THREADS:-"1 2"}
cpuflag=
# QP_TIMEOUT: both sides' ez_conn_opts.qp_timeout (4.096 us * 2^n; default
# 20, 4 s): an emulated, overloaded host delays ACKs past the library's
# default (14: 67 ms, 7 retries), and the client's send then fails
# "Connection timed out".
qpt=${QP_TIMEOUT:-20}
[ "${CPU_WORK:-0}" = 1 ] && cpuflag=--cpu-work

wait_for() {	# FILE SECONDS
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -gt $(($2 * 10)) ] && { echo "timed out waiting for $1"; exit 1; }
		sleep 0.1
	done
}

cpu_line() { awk '/^cpu / { print $2 + $3, $4, $7, $8, $5 + $6 }' /proc/stat; }	# user sys softirq irq idle

server_run() {	# ROUND THREADS
	out=$(mktemp)
	./samples/rpc_server -a "$EZ_TEST_ADDR" -p 0 --threads "$2" --work-us "$work" $cpuflag -Q "$qpt" -H 60000 \
		>"$out" 2>&1 &
	srv=$!
	port=
	for _ in $(seq 300); do
		port=$(sed -n 's/.*listening on .* port \([0-9]*\).*/\1/p' "$out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { echo "rpc_server did not start"; cat "$out"; exit 1; }
	c0=$(cpu_line)
	echo "$port" >"$dir/port.$1.$2.tmp" && mv "$dir/port.$1.$2.tmp" "$dir/port.$1.$2"
	wait_for "$dir/done.$1.$2" 1200
	c1=$(cpu_line)
	# The server's threads' CPU seconds (utime + stime), main thread first.
	tcpu=$(for t in /proc/$srv/task/*; do awk '{ printf "%.2f ", ($14 + $15) / 100 }' "$t/stat"; done)
	kill -TERM $srv
	wait $srv
	rate=$(cat "$dir/done.$1.$2")
	grep -q "^$1 $2\$" "$dir/failed-runs" 2>/dev/null && rate="$rate(a client failed)"
	echo "$c0 $c1" | awk -v t="$2" -v r="$rate" -v tc="$tcpu" -v w="$(grep -c 'worker [0-9]*:' "$out")" \
		'{ u = $6 - $1; s = $7 - $2; q = $8 - $3; i = $9 - $4; d = $10 - $5; a = u + s + q + i + d;
		   printf "threads %s: %s requests/s; VM a vCPU time: user %.0f%%, system %.0f%%, softirq %.0f%%, irq %.0f%%, idle %.0f%%; server threads CPU s: %s(%d workers)\n",
		   t, r, 100 * u / a, 100 * s / a, 100 * q / a, 100 * i / a, 100 * d / a, tc, w }'
	grep 'worker [0-9]*:\|requests (' "$out" | sed 's/^/    /'
	case $rate in *failed*) ;; *) echo "$2 $rate" >>"$dir/results" ;; esac
	rm -f "$out"
}

client_run() {	# ROUND THREADS
	wait_for "$dir/port.$1.$2" 600
	port=$(cat "$dir/port.$1.$2")
	t0=$(date +%s.%N)
	pids=
	for i in $(seq "$clients"); do
		./samples/rpc_client -a "$EZ_PEER_ADDR" -p "$port" -n "$n" -w "$win" -Q "$qpt" -C 60000 \
			>"$dir/client.$1.$2.$i.log" 2>&1 &
		pids="$pids $!"
	done
	ok=1
	for p in $pids; do wait "$p" || ok=0; done
	t1=$(date +%s.%N)
	[ $ok = 1 ] || { echo "a client failed (round $1, threads $2):"; grep -h rpc_client "$dir/client.$1.$2".*.log; }
	awk -v a="$t0" -v b="$t1" -v r=$((clients * n)) 'BEGIN { printf "%.0f\n", r / (b - a) }' \
		>"$dir/done.$1.$2.tmp"
	[ $ok = 1 ] || echo "$1 $2" >>"$dir/failed-runs"
	mv "$dir/done.$1.$2.tmp" "$dir/done.$1.$2"
}

[ "$EZ_HOST" = a ] && echo "workers-bench-pair: VM a $(nproc) vCPUs (server alone), VM b (clients) $clients x $n requests, window $win, work $work us/request${cpuflag:+ (thread CPU time)}"
for r in $(seq "$rounds"); do
	for t in $threads; do
		if [ "$EZ_HOST" = a ]; then server_run "$r" "$t"; else client_run "$r" "$t"; fi
	done
done
[ "$EZ_HOST" = a ] || exit 0
[ -e "$dir/failed-runs" ] && echo "workers-bench-pair: runs with a failed client (round threads): $(tr '\n' ' ' <"$dir/failed-runs")"
first=$(echo $threads | awk '{ print $1 }')
stats() { awk -v t="$1" '$1 == t { print $2 }' "$dir/results" | sort -n |
	awk '{ a[NR] = $1 } END { printf "%s %s %s", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
base=$(stats "$first" | awk '{ print $1 }')
for t in $threads; do
	stats "$t" | awk -v t="$t" -v b="$base" -v f="$first" \
		'{ printf "workers-bench-pair: %s worker thread(s): median %s requests/s (min %s, max %s), %.2fx of %s\n", t, $1, $2, $3, $1 / b, f }'
done
