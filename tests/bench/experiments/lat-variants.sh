#!/usr/bin/env bash
# lat-variants.sh: 64 B busy-poll latency of ezbench and variants of ib_send_lat,
# interleaved round by round, pinned like tests/bench/compare (server vCPU 1,
# client vCPU 0). Runs where rxe0 is up (inside the test bed's VM).
#
# Usage: lat-variants.sh ROUNDS EZBENCH [PERFTEST_IB_SEND_LAT]
# Prints "round name half-round-trip-us" lines. Variants: Debian's ib_send_lat,
# ib_send_lat -R (connected through rdma_cm), and, given a perftest built from
# source with perftest-shared-cq.patch, that build plain, --send_with_imm,
# PT_SHARED_CQ=1 (one CQ for sends and receives) and both.
set -u
rounds=$1 ez=$2 pt=${3:-}
addr=${EZ_TEST_ADDR:-192.0.2.1} dev=${EZ_DEVICE:-rxe0} gid=${EZ_GID_INDEX:-1}
iters=5000 port=26000

pair() {	# NAME ENV BINARY ARGS...
	local name=$1 envs=$2 bin=$3 sp
	shift 3
	port=$((port + 1))
	env $envs taskset -c 1 "$bin" -d "$dev" -x "$gid" -F -p $port -s 64 -n $iters "$@" >/dev/null 2>&1 &
	sp=$!
	sleep 2
	echo "$r $name $(env $envs taskset -c 0 "$bin" -d "$dev" -x "$gid" -F -p $port -s 64 -n $iters "$@" "$addr" 2>/dev/null |
		awk '$1 == 64 { print $5 }')"
	wait $sp
}

for r in $(seq "$rounds"); do
	port=$((port + 1))
	taskset -c 1 "$ez" -s -a "$addr" -p $port --timeout 600 --poll spin >/dev/null 2>&1 &
	sp=$!
	sleep 2
	echo "$r ezbench $(taskset -c 0 "$ez" -c "$addr" -p $port --lat --poll spin --size 64 --iters $iters |
		grep -o 'typical=[0-9.]*' | cut -d= -f2)"
	wait $sp
	pair ib_send_lat X=1 ib_send_lat
	pair ib_send_lat-R X=1 ib_send_lat -R
	if [ -n "$pt" ]; then
		pair built X=1 "$pt"
		pair built-imm X=1 "$pt" --send_with_imm
		pair built-shared-cq PT_SHARED_CQ=1 "$pt"
		pair built-imm-shared-cq PT_SHARED_CQ=1 "$pt" --send_with_imm
	fi
done
