#!/bin/sh
# rpc-demo.sh: runs rpc_server and rpc_client on one RDMA device and prints the client's figures.
# Usage: samples/rpc-demo.sh [BUILDDIR] (default: the current directory); run where a
# device exists, e.g. tests/testbed/testbed run --cwd build -- ../samples/rpc-demo.sh
# Environment: EZ_TEST_ADDR (default 192.0.2.1), RPC_N requests per client (default 5000),
# RPC_CLIENTS clients at once (default 2), RPC_WINDOWS windows to try (default "1 16"),
# RPC_THREADS the server's worker threads (rpc_server --threads; default none), RPC_WORK_US
# its work per request in microseconds (--work-us; default 0).
build=${1:-.}
addr=${EZ_TEST_ADDR:-192.0.2.1}
n=${RPC_N:-5000}
clients=${RPC_CLIENTS:-2}
windows=${RPC_WINDOWS:-"1 16"}
out=$(mktemp) || exit 1
trap 'kill $srv 2>/dev/null; rm -f "$out"' EXIT

"$build/samples/rpc_server" -a "$addr" -p 0 ${RPC_THREADS:+--threads "$RPC_THREADS"} \
	${RPC_WORK_US:+--work-us "$RPC_WORK_US"} >"$out" &
srv=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on .* port \([0-9]*\).*/\1/p' "$out")
	[ -n "$port" ] && break
	kill -0 $srv 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || { echo "rpc-demo: rpc_server did not start"; cat "$out"; exit 1; }
echo "rpc-demo: rpc_server on $addr port $port; $n requests per client (ECHO and SUM, 64 B)"

status=0
for w in $windows; do
	echo "--- 1 client, window $w"
	timeout 300 "$build/samples/rpc_client" -a "$addr" -p "$port" -n "$n" -w "$w" || status=1
done
w=$(echo $windows | awk '{ print $NF }')
echo "--- $clients clients at once, window $w each"
pids=
for i in $(seq "$clients"); do
	timeout 300 "$build/samples/rpc_client" -a "$addr" -p "$port" -n "$n" -w "$w" &
	pids="$pids $!"
done
for p in $pids; do wait $p || status=1; done

kill -TERM $srv
wait $srv || status=1
grep 'requests' "$out"
exit $status
