#!/bin/sh
# two_host_capture.sh: rping from VM b to VM a across the wire; tcpdump on a must see RoCEv2.
#
# Run in the two-host test bed, from anywhere:
#     tests/testbed/testbed pair -- tests/integration/two_host_capture.sh
# VM a captures UDP port 4791 on eth0 and serves one rping connection; VM b waits
# until a says it listens, then connects (retrying, bounded). Passes when both
# rping ends succeed and a's capture holds at least one RoCEv2 packet; prints the
# packet count and the UDP source ports seen in each direction.
set -u

: "${EZ_HOST:?run me with: testbed pair -- $0}" "${EZ_PAIR_DIR:?}" "${EZ_TEST_ADDR:?}" "${EZ_PEER_ADDR:?}"
dir=$EZ_PAIR_DIR
ROUNDS=20

fail() { echo "FAIL ($EZ_HOST): $*"; touch "$dir/failed"; exit 1; }

# Waits up to $2 seconds for file $1 (or for the other side's failure).
wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		[ -e "$dir/failed" ] && fail "the other VM failed"
		i=$((i + 1))
		[ $i -gt $(($2 * 10)) ] && return 1
		sleep 0.1
	done
}

case $EZ_HOST in
a)
	tcpdump -i eth0 -n -l udp port 4791 >"$dir/capture.txt" 2>"$dir/tcpdump.err" &
	tcpdump=$!
	# tcpdump says "listening on" once the capture is armed.
	i=0
	until grep -q 'listening on' "$dir/tcpdump.err" 2>/dev/null; do
		kill -0 $tcpdump 2>/dev/null || fail "tcpdump died: $(cat "$dir/tcpdump.err")"
		i=$((i + 1)); [ $i -gt 300 ] && fail "tcpdump did not start in 30 s"
		sleep 0.1
	done
	# One connection, then rping's server exits.
	timeout 180 rping -s -a "$EZ_TEST_ADDR" -C $ROUNDS -v >"$dir/rping-server.txt" 2>&1 &
	rping=$!
	sleep 1
	kill -0 $rping 2>/dev/null || fail "rping server exited early: $(cat "$dir/rping-server.txt")"
	touch "$dir/server-listening"
	wait $rping; st=$?
	wait_for "$dir/client-done" 60 || fail "client did not finish"
	sleep 1
	kill -INT $tcpdump; wait $tcpdump
	cat "$dir/tcpdump.err"
	[ $st -eq 0 ] || fail "rping server exited $st: $(tail -5 "$dir/rping-server.txt")"
	echo "rping server: $(grep -c 'ping data' "$dir/rping-server.txt") pings echoed"

	# Lines look like: "12:00:00.000000 IP 192.0.2.2.49153 > 192.0.2.1.4791: UDP, length 44"
	n=$(grep -c ' > .*\.4791: UDP' "$dir/capture.txt")
	echo "captured $n RoCEv2 packets (udp port 4791) on a's eth0"
	for src in "$EZ_PEER_ADDR" "$EZ_TEST_ADDR"; do
		ports=$(awk -v s="$src." '$2 == "IP" && index($3, s) == 1 {
				sub(".*\\.", "", $3); n[$3]++ }
			END { for (p in n) printf "%s(%d) ", p, n[p] }' "$dir/capture.txt")
		echo "  from $src: UDP source ports (packets): ${ports:-none}"
	done
	[ "$n" -ge 1 ] || fail "no RoCEv2 packet captured"
	echo "PASS: two_host_capture"
	;;
b)
	wait_for "$dir/server-listening" 120 || fail "server never listened"
	ok=0
	for try in $(seq 20); do
		if timeout 60 rping -c -a "$EZ_PEER_ADDR" -C $ROUNDS -v >"$dir/rping-client.txt" 2>&1; then
			ok=1; break
		fi
		echo "rping client: try $try failed: $(tail -1 "$dir/rping-client.txt")"
		sleep 1
	done
	touch "$dir/client-done"
	[ $ok = 1 ] || fail "rping client never succeeded"
	echo "rping client: $(grep -c 'ping data' "$dir/rping-client.txt") pings to $EZ_PEER_ADDR"
	;;
*)
	fail "EZ_HOST must be a or b"
	;;
esac
