#!/usr/bin/env bash
# inside-vm.sh: runs where rxe0 exists (the Soft-RoCE VM of tests/bench/compare): each round runs every easyrdma figure next to its anchors and appends the raw results.
#
# Usage: inside-vm.sh OUTDIR ROUNDS QUICK(0|1) EZBENCH
# Writes OUTDIR/raw.tsv (metric, side, round, value-or-ERROR, detail),
# OUTDIR/log.txt (every tool's output) and OUTDIR/env.txt.
# Inside one round the order is fixed (easyrdma, then its anchors, figure by
# figure), so rounds interleave A B A B and drift over the run cancels in the
# medians.
set -u

out=$1 rounds=$2 quick=$3 ez=$4
# EZ_BENCH_ONLY: the sections to run (mem lat rate bw big conn; default all).
only=${EZ_BENCH_ONLY:-mem lat rate bw big conn}
want() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }
cmserial=$(dirname "$ez")/cmserial
addr=${EZ_TEST_ADDR:-192.0.2.1}
dev=${EZ_DEVICE:-rxe0}
raw=$out/raw.tsv
log=$out/log.txt
tmp=$(mktemp -d /tmp/ezbench-vm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
: >"$raw"
: >"$log"
port=21000

if [ "$quick" = 1 ]; then
	lat_iters=200 rate_iters=1000 bw_iters=100 conn_ns="20" mem_n=100
	lat_sizes="64"
else
	lat_iters=500 rate_iters=5000 bw_iters=500 conn_ns="100 500" mem_n=1000
	lat_sizes="2 64 4096"
fi

say() { echo "inside-vm: $*" | tee -a "$log" >&2; }

# Every pair, easyrdma's and its anchors' alike, runs its server on vCPU 1 and
# its client on vCPU 0 (EZ_BENCH_PIN=0: unpinned). Unpinned, the scheduler
# often wakes a sleeping server on its client's vCPU: 100 serial connections
# took 30 % longer with either library from placement alone (5.0 against
# 7.1 ms per connection, doc/performance-history.md).
if [ "${EZ_BENCH_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	pin_srv="taskset -c 1" pin_cli="taskset -c 0"
else
	pin_srv="" pin_cli=""
fi
record() {
	if [ -z "$4" ]; then
		printf '%s\t%s\t%s\tERROR\t%s\n' "$1" "$2" "$3" "no figure in the tool's output (see log.txt)" >>"$raw"
		return
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$raw"
}
# A figure that could not be taken: the tool's own words go in the table.
fail() {
	local msg
	msg=$(tr '\t\n' '  ' <<<"$4" | sed 's/  */ /g' | cut -c1-300)
	record "$1" "$2" "$3" ERROR "$msg"
}

next_port() { port=$((port + 1)); }

# Waits until something listens on TCP port $1 (perftest, UCX and fabtests
# exchange their parameters over TCP first).
wait_tcp() {
	local i
	for i in $(seq 1 100); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.2
	done
	return 1
}

wait_line() { # file needle
	local i
	for i in $(seq 1 150); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# Stops a server this script started (by its pid) if it has not exited.
reap() {
	local pid=$1 i
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return; }
		sleep 0.2
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# ez_pair "SERVER ARGS" CLIENT ARGS...: output of the client in $tmp/cli, server's in $tmp/srv.
ez_pair() {
	local sargs=$1 spid rc
	shift
	next_port
	# shellcheck disable=SC2086
	$pin_srv "$ez" -s -a "$addr" -p "$port" --timeout 600 $sargs >"$tmp/srv" 2>&1 &
	spid=$!
	if ! wait_line "$tmp/srv" "listening on"; then
		echo "ezbench server did not start: $(cat "$tmp/srv")" >"$tmp/cli"
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		return 1
	fi
	timeout -k 10 600 $pin_cli "$ez" -c "$addr" -p "$port" --timeout 590 "$@" >"$tmp/cli" 2>&1
	rc=$?
	reap "$spid"
	{ echo "## ezbench -s $sargs / -c $*: exit $rc"; cat "$tmp/srv" "$tmp/cli"; } >>"$log"
	return $rc
}

# tool_pair NAME "SERVER CMD" "CLIENT CMD" [tcp|sleep]: both run with their env;
# the client output goes to $tmp/cli.
tool_pair() {
	local name=$1 scmd=$2 ccmd=$3 wait=${4:-tcp} spid rc
	# shellcheck disable=SC2086
	timeout -k 10 300 $pin_srv $scmd >"$tmp/srv" 2>&1 &
	spid=$!
	if [ "$wait" = tcp ]; then
		if ! wait_tcp "$port"; then
			echo "$name server did not listen on port $port: $(cat "$tmp/srv")" >"$tmp/cli"
			kill "$spid" 2>/dev/null
			wait "$spid" 2>/dev/null
			return 1
		fi
	else
		sleep 2
	fi
	# shellcheck disable=SC2086
	timeout -k 10 300 $pin_cli $ccmd >"$tmp/cli" 2>&1
	rc=$?
	reap "$spid"
	{ echo "## $name: $ccmd: exit $rc"; cat "$tmp/srv" "$tmp/cli"; } >>"$log"
	return $rc
}

field() { grep -o " $1=[0-9.]*" "$2" | head -1 | cut -d= -f2; }

# The RoCEv2 GID of $addr on $dev: what rdma_cm (and so easyrdma) uses.
gid_index() {
	local want f i a b c d
	IFS=. read -r a b c d <<<"$addr"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		i=${f##*/}
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] || continue
		[ "$(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$i" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "$i"
		return
	done
	echo 1
}
gid=$(gid_index)

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "kernel: $(uname -r)"
	echo "cpus: $(nproc)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
	echo "device: $dev"
	echo "gid_index: $gid"
	echo "addr: $addr"
	echo "rounds: $rounds"
	echo "quick: $quick"
	if [ -n "$pin_srv" ]; then echo "pinning: server $pin_srv, client $pin_cli"; else echo "pinning: none"; fi
	echo "perftest: $(dpkg-query -W -f '${Version}' perftest 2>/dev/null)"
	echo "ucx: $(dpkg-query -W -f '${Version}' ucx-utils 2>/dev/null || echo missing)"
	echo "libfabric: $(dpkg-query -W -f '${Version}' libfabric-bin 2>/dev/null || echo missing)"
	echo "rdmacm-utils: $(dpkg-query -W -f '${Version}' rdmacm-utils 2>/dev/null)"
} >"$out/env.txt"
mkdir -p /dev/shm 2>/dev/null

pt="-d $dev -x $gid -F"
ucx_env="env UCX_TLS=rc UCX_NET_DEVICES=$dev:1 UCX_UD_ETH_DGID_CHECK=n"

# perftest's result line: the one starting with the message size. Under TCG
# the client of ib_send_lat sometimes prints "inf" (its cycle counter and the
# MHz it read disagree); the server times the same ping-pong, so its line is
# used then (the log keeps both).
pt_col() {
	local v
	v=$(awk -v s="$1" -v c="$2" '$1 == s && NF >= c { print $c; exit }' "$tmp/cli")
	case $v in
	''|inf|-inf|nan|-nan) v=$(awk -v s="$1" -v c="$2" '$1 == s && NF >= c { print $c; exit }' "$tmp/srv") ;;
	esac
	case $v in inf|-inf|nan|-nan) v="" ;; esac
	echo "$v"
}

lat_round() {
	local r=$1 s
	for s in $lat_sizes; do
		# 1a. spin (busy-poll context, ez_ctx_process() in a loop) vs ib_send_lat (polls the CQ)
		# The first round's 64 B samples, every one, for the latency CDF (plot.py).
		samples=
		[ "$r" = 1 ] && [ "$s" = 64 ] && samples=$out/cdf-easyrdma.txt
		if EZ_BENCH_SAMPLES=$samples ez_pair "--poll spin" --lat --poll spin --size "$s" --iters "$lat_iters"; then
			record "lat_${s}_poll" ez "$r" "$(field typical "$tmp/cli")"
			record "lat_${s}_ucx" ez "$r" "$(field typical "$tmp/cli")"
			record "lat_${s}_fi" ez "$r" "$(field typical "$tmp/cli")"
		else
			fail "lat_${s}_poll" ez "$r" "$(cat "$tmp/cli")"
		fi
		next_port
		if tool_pair ib_send_lat "ib_send_lat $pt -p $port -s $s -n $lat_iters" \
			"ib_send_lat $pt -p $port -s $s -n $lat_iters $addr"; then
			record "lat_${s}_poll" anchor "$r" "$(pt_col "$s" 5)"
		else
			fail "lat_${s}_poll" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
		# ib_send_lat's samples of the same size for the CDF: -H prints every one.
		if [ "$r" = 1 ] && [ "$s" = 64 ]; then
			next_port
			if tool_pair "ib_send_lat -H" "ib_send_lat $pt -H -p $port -s $s -n $lat_iters" \
				"ib_send_lat $pt -H -p $port -s $s -n $lat_iters $addr"; then
				awk -F', *' 'NF == 2 && $1 ~ /^ *[0-9]+$/ && $2 ~ /^[0-9.]+ *$/ { print $2 + 0 }' \
					"$tmp/cli" | sort -g >"$out/cdf-ib_send_lat.txt"
			fi
		fi
		# 1a'. easyrdma always receives through an SRQ (its pool): the same
		# spin figure against ib_send_lat receiving through one too.
		next_port
		if [ "$s" = 64 ] && tool_pair "ib_send_lat --use-srq" "ib_send_lat $pt --use-srq -p $port -s $s -n $lat_iters" \
			"ib_send_lat $pt --use-srq -p $port -s $s -n $lat_iters $addr"; then
			record "lat_${s}_poll_srq" anchor "$r" "$(pt_col "$s" 5)"
			record "lat_${s}_poll_srq" ez "$r" "$(awk -v r="$r" -F'\t' -v m="lat_${s}_poll" '$1 == m && $2 == "ez" && $3 == r { print $4 }' "$raw")"
		elif [ "$s" = 64 ]; then
			fail "lat_${s}_poll_srq" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
		# 1a''. easyrdma's QPs are made and connected by rdma_cm: the same spin
		# figure against ib_send_lat connected by rdma_cm too (-R).
		next_port
		# (with -R the server listens on rdma_cm, not on a TCP port: wait 2 s)
		if [ "$s" = 64 ] && tool_pair "ib_send_lat -R" "ib_send_lat $pt -R -p $port -s $s -n $lat_iters" \
			"ib_send_lat $pt -R -p $port -s $s -n $lat_iters $addr" sleep; then
			record "lat_${s}_poll_cm" anchor "$r" "$(pt_col "$s" 5)"
			record "lat_${s}_poll_cm" ez "$r" "$(awk -v r="$r" -F'\t' -v m="lat_${s}_poll" '$1 == m && $2 == "ez" && $3 == r { print $4 }' "$raw")"
		elif [ "$s" = 64 ]; then
			fail "lat_${s}_poll_cm" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
		# 1b. event mode vs ib_send_lat -e
		if ez_pair "--poll event" --lat --poll event --size "$s" --iters "$lat_iters"; then
			record "lat_${s}_event" ez "$r" "$(field typical "$tmp/cli")"
		else
			fail "lat_${s}_event" ez "$r" "$(cat "$tmp/cli")"
		fi
		next_port
		if tool_pair "ib_send_lat -e" "ib_send_lat $pt -e -p $port -s $s -n $lat_iters" \
			"ib_send_lat $pt -e -p $port -s $s -n $lat_iters $addr"; then
			record "lat_${s}_event" anchor "$r" "$(pt_col "$s" 5)"
		else
			fail "lat_${s}_event" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
		# 1c. UCX ucp_am_lat (50th percentile of half round trips)
		next_port
		if tool_pair ucx_perftest "$ucx_env ucx_perftest -p $port" \
			"$ucx_env ucx_perftest -p $port -t ucp_am_lat -s $s -n $lat_iters $addr" &&
			grep -q '^Final:' "$tmp/cli"; then
			record "lat_${s}_ucx" anchor "$r" "$(awk '/^Final:/ { print $3 }' "$tmp/cli")"
		else
			fail "lat_${s}_ucx" anchor "$r" "$(grep -iE 'error|fail|unsupported|no ' "$tmp/cli" "$tmp/srv" | head -3)$(tail -2 "$tmp/cli")"
		fi
		# 1d. fabtests fi_pingpong, verbs msg endpoint (usec/xfer)
		next_port
		if tool_pair fi_pingpong "fi_pingpong -p verbs -e msg -S $s -I $lat_iters -B $port" \
			"fi_pingpong -p verbs -e msg -S $s -I $lat_iters -P $port $addr" &&
			awk -v s="$s" '$1 == s || $1 == (s / 1024) "k" { ok = 1 } END { exit !ok }' "$tmp/cli"; then
			# fi_pingpong writes 4096 as "4k"
			record "lat_${s}_fi" anchor "$r" "$(awk -v s="$s" '$1 == s || $1 == (s / 1024) "k" { print $7; exit }' "$tmp/cli")"
		else
			fail "lat_${s}_fi" anchor "$r" "$(grep -v '^ *-' "$tmp/cli" | tail -3)"
		fi
	done
}

rate_round() {
	local r=$1
	# 2. 64 B message rate: tx depth 128, rx depth 512 (perftest's defaults)
	if ez_pair "--poll spin" --rate --poll spin --size 64 --iters "$rate_iters" --send-depth 128 --depth 512; then
		record rate_64 ez "$r" "$(field rate "$tmp/cli")"
		record rate_64_ucx ez "$r" "$(field rate "$tmp/cli")"
	else
		fail rate_64 ez "$r" "$(cat "$tmp/cli")"
	fi
	next_port
	if tool_pair ib_send_bw "ib_send_bw $pt -p $port -s 64 -n $rate_iters" \
		"ib_send_bw $pt -p $port -s 64 -n $rate_iters $addr"; then
		record rate_64 anchor "$r" "$(pt_col 64 5)"
		record rate_64_event anchor "$r" "$(pt_col 64 5)"
	else
		fail rate_64 anchor "$r" "$(tail -3 "$tmp/cli")"
	fi
	# the same with easyrdma in event mode (which mode suits a throughput test
	# on this machine is itself a finding)
	if ez_pair "--poll event" --rate --poll event --size 64 --iters "$rate_iters" --send-depth 128 --depth 512; then
		record rate_64_event ez "$r" "$(field rate "$tmp/cli")"
	else
		fail rate_64_event ez "$r" "$(cat "$tmp/cli")"
	fi
	if ez_pair "--poll spin --pool-bufs 512" --rate --poll spin --srq --size 64 --iters "$rate_iters" --send-depth 128; then
		record rate_64_srq ez "$r" "$(field rate "$tmp/cli")"
	else
		fail rate_64_srq ez "$r" "$(cat "$tmp/cli")"
	fi
	next_port
	if tool_pair "ib_send_bw --use-srq" "ib_send_bw $pt --use-srq -p $port -s 64 -n $rate_iters" \
		"ib_send_bw $pt --use-srq -p $port -s 64 -n $rate_iters $addr"; then
		record rate_64_srq anchor "$r" "$(pt_col 64 5)"
	else
		fail rate_64_srq anchor "$r" "$(tail -3 "$tmp/cli")"
	fi
	next_port
	if tool_pair "ucx am_bw" "$ucx_env ucx_perftest -p $port" \
		"$ucx_env ucx_perftest -p $port -t am_bw -x rc_verbs -d $dev:1 -s 64 -n $rate_iters $addr" &&
		grep -q '^Final:' "$tmp/cli"; then
		# overall message rate (msg/s) -> Mpps
		record rate_64_ucx anchor "$r" "$(awk '/^Final:/ { printf "%.6f", $NF / 1e6 }' "$tmp/cli")"
	else
		fail rate_64_ucx anchor "$r" "$(grep -iE 'error|fail|unsupported' "$tmp/cli" "$tmp/srv" | head -3)$(tail -2 "$tmp/cli")"
	fi
}

bw_round() {
	local r=$1 op tool sargs
	# 3. 64 KiB: tx depth 128; SEND receiver depth 512 (perftest's defaults)
	for op in write send; do
		tool=ib_${op}_bw
		# The target of RDMA WRITEs has nothing to poll: like ib_write_bw's
		# passive side (blocked in its TCP handshake) it sleeps, leaving
		# the CPU to the device. A SEND's receiver polls, as ib_send_bw's.
		sargs="--poll spin"
		[ "$op" = write ] && sargs="--poll event"
		if ez_pair "$sargs" --bw --op "$op" --poll spin --size 65536 --iters "$bw_iters" --send-depth 128 --depth 512; then
			record "bw_64k_$op" ez "$r" "$(field bw "$tmp/cli")"
		else
			fail "bw_64k_$op" ez "$r" "$(cat "$tmp/cli")"
		fi
		next_port
		if tool_pair "$tool" "$tool $pt -p $port -s 65536 -n $bw_iters" \
			"$tool $pt -p $port -s 65536 -n $bw_iters $addr"; then
			record "bw_64k_$op" anchor "$r" "$(pt_col 65536 4)"
			record "bw_64k_${op}_event" anchor "$r" "$(pt_col 65536 4)"
		else
			fail "bw_64k_$op" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
		if ez_pair "--poll event" --bw --op "$op" --poll event --size 65536 --iters "$bw_iters" --send-depth 128 --depth 512; then
			record "bw_64k_${op}_event" ez "$r" "$(field bw "$tmp/cli")"
		else
			fail "bw_64k_${op}_event" ez "$r" "$(cat "$tmp/cli")"
		fi
	done
}

# 4. 1 MiB messages (issue 24): easyrdma by rendezvous (the receiver's
# private pool has 64 KiB buffers, so each message is a header, an RDMA READ
# by the receiver and an acknowledgement), against ib_send_bw -s 1048576
# (1 MiB receive buffers) and UCX's ucp_am_bw (its own rendezvous; the uct
# am_bw of rate_64 takes at most 79 bytes on rc_verbs).
big_round() {
	local r=$1 n=$((bw_iters / 4))
	[ "$n" -ge 20 ] || n=20
	if ez_pair "--poll spin" --bw --op send --poll spin --size 1048576 --iters "$n" --send-depth 16 --depth 64; then
		record bw_1m_send ez "$r" "$(field bw "$tmp/cli")"
		record bw_1m_send_ucx ez "$r" "$(field bw "$tmp/cli")"
	else
		fail bw_1m_send ez "$r" "$(cat "$tmp/cli")"
	fi
	next_port
	if tool_pair ib_send_bw "ib_send_bw $pt -p $port -s 1048576 -n $n" \
		"ib_send_bw $pt -p $port -s 1048576 -n $n $addr"; then
		record bw_1m_send anchor "$r" "$(pt_col 1048576 4)"
	else
		fail bw_1m_send anchor "$r" "$(tail -3 "$tmp/cli")"
	fi
	next_port
	if tool_pair "ucx am_bw 1 MiB" "$ucx_env ucx_perftest -p $port" \
		"$ucx_env ucx_perftest -p $port -t ucp_am_bw -s 1048576 -n $n $addr" &&
		grep -q '^Final:' "$tmp/cli"; then
		# ucx_perftest's Final line: ... bandwidth (MB/s: 2^20) average is the 6th field
		record bw_1m_send_ucx anchor "$r" "$(awk '/^Final:/ { printf "%.3f", $6 }' "$tmp/cli")"
	else
		fail bw_1m_send_ucx anchor "$r" "$(grep -iE 'error|fail|unsupported' "$tmp/cli" "$tmp/srv" | head -3)$(tail -2 "$tmp/cli")"
	fi
}

# cmtime's steps up to "connect" (its client side): each step runs for all N
# connections before the next starts; "total ms" is the step's wall time.
cm_sum() {
	awk '/^(create id|resolve addr|resolve route|create qp|connect) *:/ {
		sub(/^[^:]*: */, ""); split($0, f, / +/); t += f[1] } END { if (t) printf "%.3f", t }' "$tmp/cli"
}

conn_round() {
	local r=$1 n tot
	for n in $conn_ns; do
		# 4. setup: ez_connect() .. on_connect(0), one after the other, then all
		# at once. Each side receives from one pool of 2N buffers; send depth 16
		# (64, the default, times 500 connections would not fit rxe's 32767-entry CQ).
		# The server makes its pool before it listens, as a server does
		# (cmtime's server has nothing to make): buffers of 4 KiB, the
		# library's default message size, which ezbench --conn asks for.
		if ez_pair "--pool-bufs $((2 * n)) --pool-size 4096" --conn "$n" --send-depth 16; then
			record "conn_${n}_per_conn_ms" ez "$r" "$(field per_conn "$tmp/cli")"
		else
			fail "conn_${n}_per_conn_ms" ez "$r" "$(grep ezbench "$tmp/cli" | tail -3)"
		fi
		# The same loop busy-polling (EZ_CTX_BUSY_POLL on both sides): what
		# the library's own work costs without the sleep and wake-up of each
		# CM event in event mode.
		if ez_pair "--pool-bufs $((2 * n)) --pool-size 4096 --poll spin" --conn "$n" --send-depth 16 --poll spin; then
			record "conn_${n}_per_conn_ms_spin" ez "$r" "$(field per_conn "$tmp/cli")"
		else
			fail "conn_${n}_per_conn_ms_spin" ez "$r" "$(grep ezbench "$tmp/cli" | tail -3)"
		fi
		if ez_pair "--pool-bufs $((2 * n)) --pool-size 4096" --conn "$n" --async --send-depth 16; then
			record "conn_${n}_async_rate" ez "$r" "$(field rate "$tmp/cli")"
			record "conn_${n}_async_rate_cmtime" ez "$r" "$(field rate "$tmp/cli")"
			record "conn_${n}_async_total_ms" ez "$r" "$(field total "$tmp/cli")"
			record "conn_${n}_async_per_conn_ms" ez "$r" "$(field per_conn "$tmp/cli")"
		else
			fail "conn_${n}_async_rate" ez "$r" "$(grep ezbench "$tmp/cli" | tail -3)"
		fi
		# The serial anchor: cmtime's server, and its QP and parameters in a
		# plain rdma_cm loop, one connection after the other (cmserial.c).
		next_port
		if tool_pair cmserial "cmtime -b $addr -p $port" "$cmserial -s $addr -p $port -c $n" sleep; then
			record "conn_${n}_per_conn_ms" anchor "$r" "$(field per_conn "$tmp/cli")"
			record "conn_${n}_per_conn_ms_spin" anchor "$r" "$(field per_conn "$tmp/cli")"
			record "conn_${n}_async_rate" anchor "$r" "$(field rate "$tmp/cli")"
		else
			fail "conn_${n}_per_conn_ms" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
		next_port
		if tool_pair cmtime "cmtime -b $addr -p $port -c $n" "cmtime -s $addr -p $port -c $n" sleep &&
			tot=$(cm_sum) && [ -n "$tot" ]; then
			record "conn_${n}_async_rate_cmtime" anchor "$r" "$(awk -v t="$tot" -v n="$n" 'BEGIN { printf "%.1f", n / (t / 1000) }')"
			record "conn_${n}_async_total_ms" anchor "$r" "$tot"
			record "conn_${n}_async_per_conn_ms" anchor "$r" "$(awk -v t="$tot" -v n="$n" 'BEGIN { printf "%.3f", t / n }')"
		else
			fail "conn_${n}_async_per_conn_ms" anchor "$r" "$(tail -3 "$tmp/cli")"
		fi
	done
	# One connection from a new process on both sides (cold: the first
	# resolve, the first QP), which is what cmtime run serially would be.
	if ez_pair "--pool-bufs 2 --pool-size 4096" --conn 1 --send-depth 16; then
		record conn_1_cmtime_ms ez "$r" "$(field per_conn "$tmp/cli")"
	else
		fail conn_1_cmtime_ms ez "$r" "$(grep ezbench "$tmp/cli" | tail -3)"
	fi
	next_port
	if tool_pair cmtime "cmtime -b $addr -p $port -c 1" "cmtime -s $addr -p $port -c 1" sleep &&
		tot=$(cm_sum) && [ -n "$tot" ]; then
		record conn_1_cmtime_ms anchor "$r" "$tot"
	else
		fail conn_1_cmtime_ms anchor "$r" "$(tail -3 "$tmp/cli")"
	fi
}

mem_once() {
	local pool per per_conn n_real failed
	# 5. receive memory, from the server's figures: one shared pool of 4
	# buffers of 4 KiB per connection (the library needs at least one per
	# connection: each gets a receive credit) vs a queue of 64 x 4 KiB (the
	# default recv_depth) per connection. Send depth 8 keeps the CQ room for
	# 1,000 connections within rxe's 32767 CQEs.
	ez_pair "--pool-bufs $((4 * mem_n))" --mem "$mem_n" --send-depth 8
	pool=$(grep 'mode=pool' "$tmp/srv" | head -1)
	per=$(grep 'mode=per-conn' "$tmp/srv" | head -1)
	if [ -n "$pool" ]; then
		record "mem_${mem_n}_rx_bytes" ez 1 "$(grep -o ' bytes_registered=[0-9]*' <<<"$pool" | cut -d= -f2)" \
			"pool: $(grep -o ' conns=[0-9]*' <<<"$pool" | cut -d= -f2) real connections attached"
	else
		fail "mem_${mem_n}_rx_bytes" ez 1 "$(tail -3 "$tmp/cli") $(tail -3 "$tmp/srv")"
	fi
	if [ -n "$per" ]; then
		per_conn=$(grep -o ' bytes_per_conn=[0-9]*' <<<"$per" | cut -d= -f2)
		n_real=$(grep -o ' conns=[0-9]*' <<<"$per" | cut -d= -f2)
		failed=$(grep -o ' failed=[0-9]*' <<<"$per" | cut -d= -f2)
		record "mem_${mem_n}_rx_bytes" anchor 1 "$((per_conn * mem_n))" \
			"per-conn: $n_real real connections ($failed refused by the server), $per_conn bytes each, x $mem_n"
	else
		fail "mem_${mem_n}_rx_bytes" anchor 1 "$(tail -3 "$tmp/cli") $(tail -3 "$tmp/srv")"
	fi
	grep -h 'ezbench: test=mem\|refused\|failed' "$tmp/srv" "$tmp/cli" | sort | uniq -c | head -12 >"$out/mem.txt"
}

# The memory figure is not a timing: taken once, first, so a run cut short by
# its time cap still has it.
if want mem; then
	say "receive memory"
	mem_once
fi
for r in $(seq 1 "$rounds"); do
	want lat && { say "round $r of $rounds: latency"; lat_round "$r"; }
	want rate && { say "round $r: message rate"; rate_round "$r"; }
	want bw && { say "round $r: bandwidth"; bw_round "$r"; }
	want big && { say "round $r: 1 MiB messages"; big_round "$r"; }
	want conn && { say "round $r: connection setup"; conn_round "$r"; }
done
say "done"
