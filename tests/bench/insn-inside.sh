#!/usr/bin/env bash
# insn-inside.sh: runs where rxe0 exists (the VM of tests/bench/insn): every case's client and server under callgrind at two message counts, easyrdma's and its anchors'.
#
# Usage: insn-inside.sh OUTDIR EZBENCH N1 N2 CASES...
# For each case, each count N and (spin cases) a run with a busy loop on the
# server's vCPU, writes OUTDIR/CASE.impl.run.{cli,srv}.out (callgrind) and
# .txt (the tool's output), and one line per run to OUTDIR/runs.tsv:
# case impl run count. tests/bench/insn-summarize.py reads them.
set -u

out=$1 ez=$2 n1=$3 n2=$4
shift 4
cases=$*
addr=${EZ_TEST_ADDR:-192.0.2.1}
dev=${EZ_DEVICE:-rxe0}
port=22000
# runs.tsv is appended to: runs into the same OUTDIR add up (a later run of
# the same case, implementation and count replaces the earlier one).
runs=$out/runs.tsv
touch "$runs"
# --vgdb=no: valgrind's gdb FIFO cannot be made on the VM's 9p /tmp.
# Positions by line, no compressed names: insn-summarize.py parses the files.
vg="valgrind --tool=callgrind --vgdb=no --dump-instr=no --compress-strings=no --compress-pos=no"

say() { echo "insn-inside: $*" >&2; }

if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	pin_srv="taskset -c 1" pin_cli="taskset -c 0"
else
	pin_srv="" pin_cli=""
	say "one vCPU: runs are not pinned and no busy-peer run separates empty polls"
fi

wait_tcp() {
	local i
	for i in $(seq 1 300); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.2
	done
	return 1
}
wait_line() {
	local i
	for i in $(seq 1 600); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# The RoCEv2 GID of $addr on $dev (perftest's -x).
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
pt="-d $dev -x $(gid_index) -F"
ucx_env="env UCX_TLS=rc UCX_NET_DEVICES=$dev:1 UCX_UD_ETH_DGID_CHECK=n"

# A busy loop on the server's vCPU (the "busy" runs): the server answers
# later, so the client makes more empty poll passes per message and a fit
# over the runs separates the cost of a message from that of an empty pass.
busy_pid=""
busy_start() { $pin_srv sh -c 'while :; do :; done' & busy_pid=$!; }
busy_stop() { [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; wait "$busy_pid" 2>/dev/null; busy_pid=""; }
trap busy_stop EXIT

# env_part "CMD": the VAR=value words of a command that starts with
# "env " (nothing otherwise), each followed by a space.
env_part() {
	local w e=""
	case $1 in env\ *) ;; *) return 0 ;; esac
	for w in ${1#env }; do
		case $w in *=*) e="$e$w " ;; *) break ;; esac
	done
	printf '%s' "$e"
}

# one CASE IMPL RUN N WAIT "SERVER CMD" "CLIENT CMD": the client under
# callgrind, the server too where its side is in the table (srv_vg=1).
# WAIT: ez (the server's "listening" line) or tcp (perftest/UCX's TCP port).
one() {
	local c=$1 impl=$2 run=$3 n=$4 wait=$5 scmd=$6 ccmd=$7 base spid rc t0
	base=$out/$c.$impl.$run
	port=$((port + 1))
	scmd=${scmd//@PORT@/$port} ccmd=${ccmd//@PORT@/$port}
	t0=$(date +%s)
	[ "$run" = busy ] && busy_start
	# An "env VAR=... tool" command's variables go before valgrind: under
	# it, callgrind would count env, not the tool env executes (UCX's).
	local senv cenv
	senv=$(env_part "$scmd") cenv=$(env_part "$ccmd")
	scmd=${scmd#env "$senv"} ccmd=${ccmd#env "$cenv"}
	# shellcheck disable=SC2086
	if [ "$srv_vg" = 1 ]; then
		timeout -k 10 900 env $senv $pin_srv $vg --callgrind-out-file="$base.srv.out" $scmd >"$base.srv.txt" 2>&1 &
	else
		timeout -k 10 900 env $senv $pin_srv $scmd >"$base.srv.txt" 2>&1 &
	fi
	spid=$!
	if [ "$wait" = ez ]; then
		wait_line "$base.srv.txt" "listening on" || { say "$c $impl $run: server did not start"; }
	else
		wait_tcp "$port" || say "$c $impl $run: server did not listen on $port"
	fi
	# shellcheck disable=SC2086
	timeout -k 10 900 env $cenv $pin_cli $vg --callgrind-out-file="$base.cli.out" $ccmd >"$base.cli.txt" 2>&1
	rc=$?
	wait "$spid"
	local src=$?
	busy_stop
	say "$c $impl $run n=$n: client exit $rc, server exit $src, $(($(date +%s) - t0)) s"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$impl" "$run" "$n" "$rc" "$src" >>"$runs"
}

ezs="$ez -s -a $addr -p @PORT@ --timeout 850"
ezc="$ez -c $addr -p @PORT@ --timeout 850 --warmup 20"
# case_cmds CASE N: sets ez_s ez_c an_s an_c an_impl (an_* empty: no anchor)
case_cmds() {
	local n=$2
	an_impl=perftest an_s="" an_c="" srv_vg=0
	case $1 in
	stream64|stream4k|ucx_am_bw) srv_vg=1 ;;
	esac
	case $1 in
	lat64_spin)
		ez_s="$ezs --poll spin" ez_c="$ezc --lat --poll spin --size 64 --iters $n"
		an_s="ib_send_lat $pt -p @PORT@ -s 64 -n $n" an_c="$an_s $addr" ;;
	lat64_event)
		ez_s="$ezs --poll event" ez_c="$ezc --lat --poll event --size 64 --iters $n"
		an_s="ib_send_lat $pt -e -p @PORT@ -s 64 -n $n" an_c="$an_s $addr" ;;
	stream64)
		ez_s="$ezs --poll spin" ez_c="$ezc --rate --poll spin --size 64 --iters $n --send-depth 128 --depth 512"
		an_s="ib_send_bw $pt -N -p @PORT@ -s 64 -n $n" an_c="$an_s $addr" ;;
	stream4k)
		ez_s="$ezs --poll spin" ez_c="$ezc --bw --op send --poll spin --size 4096 --iters $n --send-depth 128 --depth 512"
		an_s="ib_send_bw $pt -N -p @PORT@ -s 4096 -n $n" an_c="$an_s $addr" ;;
	write64k)
		ez_s="$ezs --poll event" ez_c="$ezc --bw --op write --poll spin --size 65536 --iters $n --send-depth 128"
		an_s="ib_write_bw $pt -N -p @PORT@ -s 65536 -n $n" an_c="$an_s $addr" ;;
	read64)
		ez_s="$ezs --poll event" ez_c="$ezc --lat --op read --poll spin --size 64 --iters $n"
		an_s="ib_read_lat $pt -p @PORT@ -s 64 -n $n" an_c="$an_s $addr" ;;
	ucx_am_lat)
		ez_s="$ezs --poll spin" ez_c="$ezc --lat --poll spin --size 64 --iters $n"
		an_impl=ucx an_s="$ucx_env ucx_perftest -p @PORT@" an_c="$an_s -t ucp_am_lat -s 64 -w 100 -n $n $addr" ;;
	ucx_am_bw)
		ez_s="$ezs --poll spin" ez_c="$ezc --rate --poll spin --size 64 --iters $n --send-depth 128 --depth 512"
		an_impl=ucx an_s="$ucx_env ucx_perftest -p @PORT@" an_c="$an_s -t am_bw -x rc_verbs -d $dev:1 -s 64 -w 100 -n $n $addr" ;;
	*) say "unknown case $1"; return 1 ;;
	esac
}

# Spin cases get the busy-peer run (the fit); UCX rows reuse easyrdma's runs
# of lat64_spin / stream64 when those ran, so only the anchor runs again.
spins=${EZ_INSN_FIT_CASES-lat64_spin}
for c in $cases; do
	runlist="n1 n2"
	case " $spins " in *" $c "*) [ -n "$pin_srv" ] && runlist="n1 n2 busy" ;; esac
	for run in $runlist; do
		n=$n1
		[ "$run" = n1 ] || n=$n2
		case_cmds "$c" "$n" || continue
		case $c in
		ucx_*) ;;
		*) [ "${EZ_INSN_EZ:-1}" = 1 ] && one "$c" ez "$run" "$n" ez "$ez_s" "$ez_c" ;;
		esac
		if [ -n "$an_s" ] && [ "${EZ_INSN_ANCHORS:-1}" = 1 ]; then
			if [ "$an_impl" = ucx ] && ! command -v ucx_perftest >/dev/null; then
				say "$c: ucx_perftest is not installed"
				continue
			fi
			command -v "${an_s%% *}" >/dev/null || [ "$an_impl" = ucx ] || { say "$c: ${an_s%% *} missing"; continue; }
			one "$c" "$an_impl" "$run" "$n" tcp "$an_s" "$an_c"
		fi
	done
done
