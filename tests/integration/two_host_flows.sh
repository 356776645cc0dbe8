#!/bin/sh
# two_host_flows.sh: UDP source port policies across the wire: the capture must show exactly the ports each connection reports.
#
# Run in the two-host test bed from the build directory:
#     ../tests/testbed/testbed pair --timeout 300 --cwd "$PWD" -- ../tests/integration/two_host_flows.sh
# Four cases, one after the other, each with its own capture on VM a (the
# server) and its own listener port:
#   auto   8 connections, client and server EZ_SPORT_AUTO: 8 distinct client
#          ports, each 0xC000 + its QPN mod 16384 (likewise the server's)
#   auto2proc  the same with two client processes of 4 connections each:
#          their 8 ports are distinct with no coordination between them
#   fixed  3 connections, client fixed 0xCAFE, server fixed 0xD00D: each
#          direction carries its own side's port only
#   range  8 connections, client range 0xE000-0xE003, server 0xE100-0xE101:
#          round-robin, every port of the range used twice (server: 4 times)
#   mpath  one 4-path connection (ez_conn_opts.paths = 4, both sides auto)
#          moving 64 MiB in 4 KiB sends: every path's packets carry the port
#          its side reported for it, each client path carries at least 15 %
#          of the client's bytes, every message arrives once and intact, and
#          the order-independent checksums of both sides agree
# EZ_FLOW_CASES="auto mpath" runs only the cases named.
# VM b (client) writes the ports its connections report to $EZ_PAIR_DIR; VM a
# checks the capture against both sides' reports (flowcheck): every
# data packet of a connection carries the port its sender reported.
set -u

: "${EZ_HOST:?run me with: testbed pair -- $0}" "${EZ_PAIR_DIR:?}" "${EZ_TEST_ADDR:?}" "${EZ_PEER_ADDR:?}"
dir=$EZ_PAIR_DIR
peer=./tests/integration/flowpeer
[ -x "$peer" ] || { echo "FAIL: run from the build directory ($peer missing)"; exit 1; }
MSGS=${EZ_FLOW_MSGS:-100}

fail() { echo "FAIL ($EZ_HOST): $*"; touch "$dir/failed"; exit 1; }

wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		[ -e "$dir/failed" ] && fail "the other VM failed"
		i=$((i + 1))
		[ $i -gt $(($2 * 10)) ] && return 1
		sleep 0.1
	done
}

# name conns client-policy server-policy listener-port client-processes
#   [paths msgs size seconds]
CASES="auto 8 auto auto 7471 1
auto2proc 8 auto auto 7474 2
fixed 3 fixed:0xCAFE fixed:0xD00D 7472 1
range 8 range:0xE000-0xE003 range:0xE100-0xE101 7473 1
mpath 1 auto auto 7475 1 4 16384 4096 240"

t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }
status=0
echo "$CASES" | while read -r name n cpol spol port procs paths msgs size secs; do
	if [ -n "${EZ_FLOW_CASES:-}" ]; then
		case " $EZ_FLOW_CASES " in *" $name "*) ;; *) continue ;; esac
	fi
	paths=${paths:-1} msgs=${msgs:-$MSGS} size=${size:-1024} secs=${secs:-50}
	# flowpeer writes one line per path: flowcheck checks each path's port.
	lines=$((n * paths)) share=
	[ "$paths" -gt 1 ] && share=15
	stamp "case $name"
	case $EZ_HOST in
	a)
		# Headers are all flowcheck reads (it counts the original lengths).
		tcpdump -i eth0 -n -U -s 128 -B 65536 -w "$dir/$name.pcap" udp port 4791 2>"$dir/$name.tcpdump.err" &
		tcpdump=$!
		i=0
		until grep -q 'listening on' "$dir/$name.tcpdump.err" 2>/dev/null; do
			kill -0 $tcpdump 2>/dev/null || fail "tcpdump died: $(cat "$dir/$name.tcpdump.err")"
			i=$((i + 1)); [ $i -gt 300 ] && fail "tcpdump did not start in 30 s"
			sleep 0.1
		done
		timeout $((secs + 10)) $peer server -a "$EZ_TEST_ADDR" -p $port -n $n -m $msgs -P "$spol" \
			-k $paths -o "$dir/$name.server" -t $secs >"$dir/$name.server.log" 2>&1 &
		srv=$!
		sleep 0.5
		kill -0 $srv 2>/dev/null || fail "$name: server exited early: $(cat "$dir/$name.server.log")"
		touch "$dir/$name.listening"
		wait $srv; st=$?
		stamp "$name: server done"
		wait_for "$dir/$name.client-done" $((secs + 10)) || fail "$name: client did not finish"
		sleep 0.5
		# A TCG guest's tcpdump lags behind a bulk transfer, and SIGINT
		# drops what is still in its ring: stop once the file stops growing.
		last=-1 i=0
		while [ $i -lt 120 ]; do
			psize=$(stat -c %s "$dir/$name.pcap" 2>/dev/null || echo 0)
			[ "$psize" = "$last" ] && break
			last=$psize i=$((i + 1))
			sleep 1
		done
		kill -INT $tcpdump; wait $tcpdump
		# What the capture missed (a TCG guest drops packets under load).
		grep -E 'captured|dropped' "$dir/$name.tcpdump.err" | sed 's/^/tcpdump: /'
		cat "$dir/$name.server.log"
		[ $st -eq 0 ] || fail "$name: server exited $st"
		echo "case $name: $n connections of $paths path(s), client $cpol, server $spol, $msgs msgs of $size bytes each"
		ls -l "$dir/$name.pcap"
		timeout 120 ./tests/integration/flowcheck "$dir/$name.pcap" "$dir/$name.client" \
			"$dir/$name.server" "$EZ_PEER_ADDR" "$EZ_TEST_ADDR" "$cpol" "$spol" $lines $share ||
			fail "$name: capture does not match the reported ports"
		if [ "$paths" -gt 1 ]; then
			csum=$(grep -o 'checksum 0x[0-9a-f]* over [0-9]* bytes' "$dir/$name.client.log")
			ssum=$(grep -o 'checksum 0x[0-9a-f]* over [0-9]* bytes' "$dir/$name.server.log")
			echo "  client: $csum"
			echo "  server: $ssum"
			[ -n "$csum" ] && [ "$csum" = "$ssum" ] || fail "$name: checksums differ"
			want=$((n * msgs * size))
			case "$ssum" in *" over $want bytes") ;; *) fail "$name: server did not get $want bytes" ;; esac
		fi
		echo "PASS: two_host_flows $name"
		stamp "$name: checked"
		touch "$dir/$name.checked"
		;;
	b)
		wait_for "$dir/$name.listening" 120 || fail "$name: server never listened"
		# Several client processes at once: their automatic ports must not
		# collide although nothing is shared between them.
		pids=
		for k in $(seq $procs); do
			timeout $((secs + 10)) $peer client -a "$EZ_PEER_ADDR" -p $port -n $((n / procs)) \
				-m $msgs -s $size -k $paths -P "$cpol" -o "$dir/$name.client.$k" -t $secs \
				>"$dir/$name.client.$k.log" 2>&1 &
			pids="$pids $!"
		done
		st=0
		for pid in $pids; do wait $pid || st=$?; done
		for k in $(seq $procs); do cat "$dir/$name.client.$k"; done >"$dir/$name.client"
		cat "$dir"/$name.client.*.log >"$dir/$name.client.log"
		stamp "$name: client done"
		cat "$dir/$name.client.log"
		touch "$dir/$name.client-done"
		[ $st -eq 0 ] || fail "$name: client exited $st"
		wait_for "$dir/$name.checked" $((secs + 120)) || fail "$name: a did not check the capture"
		;;
	*)
		fail "EZ_HOST must be a or b"
		;;
	esac
done || status=1
[ -e "$dir/failed" ] && status=1
exit $status
