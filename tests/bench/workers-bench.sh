#!/bin/sh
# workers-bench.sh: RPC echo throughput of one rpc_server with 1 and with 2 worker threads, each request costing the server WORK_US of computation (issue 21's figure).
# Usage (in a 2-vCPU VM): EZ_VM_SMP=2 tests/testbed/testbed run --cwd build -- ../tests/bench/workers-bench.sh
# Environment: WORK_US (default 20), CLIENTS rpc_client processes (default 4), N requests
# each (default 4000), WINDOW (default 8), ROUNDS interleaved rounds (default 2),
# THREADS the worker counts to compare (default "1 2").
# Prints one line per run and the median ratio of each count's throughput to the first's.
addr=${EZ_TEST_ADDR:-192.0.2.1}
work=${WORK_US:-20}
clients=${CLIENTS:-4}
n=${N:-4000}
win=${WINDOW:-8}
rounds=${ROUNDS:-2}
threads=${THREADS:-"1 2"}
out=$(mktemp) || exit 1
res=$(mktemp) || exit 1
trap 'rm -f "$out" "$res"' EXIT
echo "workers-bench: $(nproc) CPUs, work ${work} us/request, $clients clients x $n requests, window $win"
run() {
	t=$1
	./samples/rpc_server -a "$addr" -p 0 --threads "$t" --work-us "$work" >"$out" 2>&1 &
	srv=$!
	port=
	for _ in $(seq 200); do
		port=$(sed -n 's/.*listening on .* port \([0-9]*\).*/\1/p' "$out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { echo "rpc_server did not start"; cat "$out"; kill $srv; return 1; }
	t0=$(date +%s.%N)
	pids=
	for i in $(seq "$clients"); do
		./samples/rpc_client -a "$addr" -p "$port" -n "$n" -w "$win" >/dev/null 2>&1 &
		pids="$pids $!"
	done
	ok=1
	for p in $pids; do wait $p || ok=0; done
	t1=$(date +%s.%N)
	kill -TERM $srv; wait $srv
	rate=$(awk -v a="$t0" -v b="$t1" -v r=$((clients * n)) 'BEGIN { printf "%.0f", r / (b - a) }')
	echo "threads $t: $((clients * n)) requests in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s: $rate requests/s (clients ok: $ok); $(grep -c 'worker [0-9]*:' "$out") workers: $(grep 'worker [0-9]*:' "$out" | sed 's/rpc_server: //' | tr '\n' ' ')"
	echo "$t $rate" >>"$res"
}
for r in $(seq "$rounds"); do
	for t in $threads; do run "$t"; done
done
first=$(echo $threads | awk '{ print $1 }')
median() {
	awk -v t="$1" '$1 == t { print $2 }' "$res" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
base=$(median "$first")
for t in $threads; do
	m=$(median "$t")
	echo "workers-bench: $t worker thread(s): median $m requests/s, $(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", a / b }')x of $first"
done
