#!/bin/sh
# insn-workers.sh: instructions per message on each worker thread of rpc_server --threads T (T = 1, 2), under callgrind --separate-threads=yes (issue 21).
# Usage (from the build directory, in the VM):
#   tests/testbed/testbed run --cwd build --timeout 2400 -- ../tests/bench/insn-workers.sh [OUTDIR]
# Environment: N1, N2 requests per client (default 300, 900), CLIENTS (default 2),
# WINDOW (default 1: one request at a time, as tests/bench/insn's ping-pong),
# THREADS (default "1 2").
# For each T and each count, rpc_server runs under callgrind with one
# output file per thread (main listener thread first, then the workers in
# creation order), CLIENTS rpc_client processes each send N requests
# (alternately ECHO and SUM, 64 B), and the server says how many requests each
# worker served. A worker's instructions per message is the difference of its
# totals between the two counts over the difference of its requests: start-up,
# connection set-up and teardown cancel out. The main thread's share (the
# listener, handoffs) is printed likewise; it does no per-message work.
set -u
out=${1:-$(mktemp -d)}
mkdir -p "$out"
addr=${EZ_TEST_ADDR:-192.0.2.1}
n1=${N1:-300}
n2=${N2:-900}
clients=${CLIENTS:-2}
win=${WINDOW:-1}
threads=${THREADS:-"1 2"}
vg="valgrind --tool=callgrind --vgdb=no --separate-threads=yes --dump-instr=no"

# run T N: the server's callgrind files go to $out/T.N.out-<tid>
run() {
	t=$1 n=$2 log=$out/$1.$2.log
	rm -f "$out/$t.$n.out"*
	$vg --callgrind-out-file="$out/$t.$n.out" ./samples/rpc_server -a "$addr" -p 0 \
		--threads "$t" -H 120000 -Q 20 >"$log" 2>&1 &
	srv=$!
	port=
	for _ in $(seq 1200); do
		port=$(sed -n 's/.*listening on .* port \([0-9]*\).*/\1/p' "$log")
		[ -n "$port" ] && break
		sleep 0.2
	done
	[ -n "$port" ] || { echo "insn-workers: rpc_server did not start"; cat "$log"; kill $srv; exit 1; }
	pids=
	for _ in $(seq "$clients"); do
		./samples/rpc_client -a "$addr" -p "$port" -n "$n" -w "$win" -C 120000 -Q 20 >>"$log.cli" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || { echo "insn-workers: a client failed"; cat "$log.cli"; exit 1; }; done
	kill -TERM $srv
	wait $srv || { echo "insn-workers: rpc_server failed"; cat "$log"; exit 1; }
}

# totals T N TID: the thread's instruction total
total() {
	f=$(ls "$out/$1.$2.out"-* | sed -n "$(($3 + 0))p")
	awk '/^(totals|summary):/ { print $2; exit }' "$f"
}
# served T N W: requests worker W served (from the server's worker lines)
served() { sed -n "s/.*worker $3: [0-9]* connections, \([0-9]*\) requests.*/\1/p" "$out/$1.$2.log"; }

echo "insn-workers: $(nproc) vCPUs, $clients clients, window $win, $n1 and $n2 requests each"
for t in $threads; do
	run "$t" "$n1"
	run "$t" "$n2"
	nf=$(ls "$out/$t.$n1.out"-* | wc -l)
	m1=$(total "$t" "$n1" 1) m2=$(total "$t" "$n2" 1)
	echo "threads $t: $nf thread files; main thread: $m1 -> $m2 instructions ($((m2 - m1)) more for $(( (n2 - n1) * clients )) more requests: $(awk -v d=$((m2 - m1)) -v r=$(( (n2 - n1) * clients )) 'BEGIN { printf "%.0f", d / r }') per request)"
	w=0
	while [ "$w" -lt "$t" ]; do
		a=$(total "$t" "$n1" $((w + 2))) b=$(total "$t" "$n2" $((w + 2)))
		ra=$(served "$t" "$n1" "$w") rb=$(served "$t" "$n2" "$w")
		echo "threads $t: worker $w: $ra -> $rb requests, $a -> $b instructions: $(awk -v d=$((b - a)) -v r=$((rb - ra)) 'BEGIN { printf "%.0f", r ? d / r : 0 }') instructions per request"
		w=$((w + 1))
	done
done
echo "insn-workers: files in $out"
