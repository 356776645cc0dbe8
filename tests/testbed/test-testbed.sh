#!/usr/bin/env bash
# test-testbed.sh: tests of the test bed itself (tests/testbed/testbed): a VM whose QEMU
# dies before its command started is booted again and says so, and a pair run
# reports its commands' statuses, also when one VM's command ends long before
# the other's, and a VM that wrote its status but does not stop is killed
# after EZ_VM_POWEROFF_GRACE, and a cluster VM whose NIC stalls voids the run
# (75), and a pair with EZ_VM_RAILS=2 has two rails (eth0/rxe0, eth1/rxe1),
# separate segments, both carrying RoCEv2, and a boot whose clock runs fast is
# given up before its command, and a failed run with a fast clock is void and
# runs again once, and a cluster in which no VM writes anything for
# EZ_VM_IDLE_S is stopped as a hang, and a failed pair whose NIC stalled is
# void. Boots VMs (about 7 boots: minutes
# under TCG), so it is not part of CI; run it after changing the test bed:
#   tests/testbed/test-testbed.sh [BUILD_DIR]
# Prints PASS/FAIL per case and exits 0 only if all passed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tb=$here/testbed
cwd=${1:-$PWD}
out=$(mktemp "${TMPDIR:-/tmp}/test-testbed.XXXXXX")
trap 'rm -f "$out"' EXIT
fails=0 passes=0

# check NAME WANT_STATUS GOT_STATUS [PATTERN...]: every fixed-string pattern in the output.
check() {
	local name=$1 want=$2 got=$3 p ok=1
	shift 3
	[ "$got" = "$want" ] || { echo "  exit status $got, want $want"; ok=0; }
	for p in "$@"; do
		grep -qF -- "$p" "$out" || { echo "  missing in the output: $p"; ok=0; }
	done
	if [ $ok = 1 ]; then
		echo "PASS: $name"; passes=$((passes + 1))
	else
		echo "FAIL: $name (output follows)"; sed 's/^/    | /' "$out"; fails=$((fails + 1))
	fi
}

# 1. run: the VM dies at boot once, boots again, the command's status comes through.
EZ_TESTBED=vm EZ_TESTBED_FAULT=die-before-cmd:a "$tb" run --cwd "$cwd" --timeout 600 -- \
	bash -c 'echo "command ran"; exit 7' >"$out" 2>&1
check "run: a VM that died at boot is retried; the command's status (7) is the run's" 7 $? \
	"testbed: VM a died before its command started (QEMU exited 139); retrying (1 of 2)" \
	"command ran"

# 2. run with no retries: the death is the test bed's failure (125), said so.
EZ_TESTBED=vm EZ_VM_RETRIES=0 EZ_TESTBED_FAULT=die-before-cmd:a "$tb" run --cwd "$cwd" --timeout 600 -- \
	bash -c 'echo "command ran"; exit 0' >"$out" 2>&1
check "run, EZ_VM_RETRIES=0: the death is reported as a test-bed failure (125)" 125 $? \
	"testbed: VM gave no exit status (QEMU exited 139)"

# 3. pair: b dies at boot, boots again alone while a's command already runs;
#    a's command ends at once, b's 8 s later (after rendezvous with a): both
#    statuses (0) come through, the run succeeds.
EZ_TESTBED_FAULT=die-before-cmd:b "$tb" pair --cwd "$cwd" --timeout 900 -- bash -c '
	if [ "$EZ_HOST" = a ]; then
		until [ -e "$EZ_PAIR_DIR/b-up" ]; do sleep 0.2; done
		echo "a done"; exit 0
	fi
	: >"$EZ_PAIR_DIR/b-up"; sleep 8; echo "b done"; exit 0' >"$out" 2>&1
check "pair: b retried; a ends early, b late: both succeed" 0 $? \
	"testbed: VM b died before its command started (QEMU exited 139); retrying (1 of 2)" \
	"[a] a done" "[b] b done" "testbed: pair: both VMs succeeded"

# 4. pair: a dies at boot: the pair boots again; b's status (3) is the run's.
EZ_TESTBED_FAULT=die-before-cmd:a "$tb" pair --cwd "$cwd" --timeout 900 -- bash -c '
	ls "$EZ_PAIR_DIR" | grep -q . && { echo "pair dir not empty"; exit 9; }
	if [ "$EZ_HOST" = b ]; then echo "b fails"; exit 3; fi
	echo "a done"; exit 0' >"$out" 2>&1
check "pair: a retried (both boot again); b's failure (3) is the run's status" 3 $? \
	"testbed: VM a died before its command started (QEMU exited 139); retrying (1 of 2)" \
	"[a] a done" "[b] b fails" "testbed: pair: a exited 0, b exited 3"

# 5. cluster of 2: b writes its status (0) and then does not stop (a guest
#    stuck powering off): once a has ended, b is killed after the grace
#    period and the run succeeds with the written status, long before the
#    timeout.
t5=$SECONDS
EZ_VM_POWEROFF_GRACE=5 "$tb" cluster 2 --cwd "$cwd" --timeout 600 -- bash -c '
	if [ "$EZ_HOST" = b ]; then echo 0 >"$EZ_VM_STATUS"; echo "b stuck"; sleep 1000; fi
	echo "a done"; exit 0' >"$out" 2>&1
st=$?
[ $((SECONDS - t5)) -lt 300 ] || { echo "  took $((SECONDS - t5)) s"; st=99; }
check "cluster: a VM stuck after writing its status is killed after the grace period" 0 $st \
	"[a] a done" "[b] b stuck" \
	"testbed: VM b wrote its command's status and is the last VM, but did not stop within 5 s (EZ_VM_POWEROFF_GRACE): QEMU stopped"

# 6. cluster of 2: b's NIC stalls (its console says so, EZ_TESTBED_FAULT):
#    the run is void (75), b named, every VM stopped long before a's
#    command (sleep 300) or the timeout ends.
#    (The hook fires once b's command has started, which may be before its
#    first line reaches the output: no line of the commands is asked for.)
t6=$SECONDS
EZ_TESTBED_FAULT=nic-stall:b "$tb" cluster 2 --cwd "$cwd" --timeout 600 -- bash -c '
	echo "$EZ_HOST up"; sleep 300; exit 0' >"$out" 2>&1
st=$?
[ $((SECONDS - t6)) -lt 200 ] || { echo "  took $((SECONDS - t6)) s"; st=99; }
check "cluster: a VM whose NIC stalls voids the run (75) and stops every VM" 75 $st \
	"testbed: VM b: its emulated NIC (virtio-net) has sent nothing for 25 s (the guest kernel's netdev watchdog): QEMU's or the guest driver's fault, not the command's; the run is void, every VM stopped"

# 7. pair with EZ_VM_RAILS=2: each VM has rxe0 on eth0 and rxe1 on eth1 and
#    rail 1's addresses in its environment; an RC ping-pong (ibv_rc_pingpong)
#    over rxe1 works and its packets reach b on eth1, not eth0; then, a's eth1
#    down (a's rxe1 port with it), one over rxe0 still works and reaches b on
#    eth0, not eth1. Every missing tool or device fails the case.
rails_check='
set -u
d=$EZ_PAIR_DIR
fail() { echo "FAIL: $*"; : >"$d/failed.$EZ_HOST"; exit 1; }
# waitf FILE: the peer made FILE (within 120 s, and it has not failed).
waitf() {
	local i
	for i in $(seq 1200); do
		[ -e "$d/$1" ] && return 0
		ls "$d" | grep -q "^failed" && fail "the peer failed"
		sleep 0.1
	done
	fail "no $1 after 120 s"
}
# v4gid DEV: the GID index of DEV port 1 RoCE v2 GID of an IPv4 address.
v4gid() {
	local p=/sys/class/infiniband/$1/ports/1 f i
	for f in $p/gids/*; do
		i=${f##*/}
		case $(cat $f) in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
		[ "$(cat $p/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo $i; return 0; }
	done
	return 1
}
rx() { cat /sys/class/net/$1/statistics/rx_packets; }
# serve DEV PORT NAME: b: an ibv_rc_pingpong server on DEV; NAME is made
# once it listens; checks that the ping-pong reached b on DEV netdev only.
serve() {
	local g nd other e0 o0 st i
	nd=eth${1#rxe}; other=eth1; [ $nd = eth1 ] && other=eth0
	g=$(v4gid $1) || fail "$1 has no RoCE v2 IPv4 GID"
	e0=$(rx $nd); o0=$(rx $other)
	timeout 120 ibv_rc_pingpong -d $1 -g $g -p $2 -n 200 -s 64 >/tmp/pp.b.$1 2>&1 & pp=$!
	for i in $(seq 100); do ss -ltn | grep -q ":$2 " && break; sleep 0.1; done
	: >"$d/$3"
	wait $pp; st=$?
	[ $st = 0 ] && grep -q "200 iters in" /tmp/pp.b.$1 || fail "server on $1 exited $st: $(cat /tmp/pp.b.$1)"
	e0=$(( $(rx $nd) - e0 )); o0=$(( $(rx $other) - o0 ))
	echo "$1 ping-pong: $e0 packets in on $nd, $o0 on $other"
	[ $e0 -ge 200 ] && [ $o0 -lt 50 ] || fail "the $1 ping-pong did not stay on $nd"
}
# client DEV PORT ADDR: a: the ping-pong client on DEV to ADDR.
client() {
	local g
	g=$(v4gid $1) || fail "$1 has no RoCE v2 IPv4 GID"
	timeout 120 ibv_rc_pingpong -d $1 -g $g -p $2 -n 200 -s 64 $3 >/tmp/pp.a.$1 2>&1 &&
		grep -q "200 iters in" /tmp/pp.a.$1 || fail "client on $1 to $3: $(cat /tmp/pp.a.$1)"
}
for t in rdma ibv_rc_pingpong ss; do command -v $t >/dev/null || fail "$t missing"; done
n=1; [ $EZ_HOST = b ] && n=2; m=$((3 - n))
[ "${EZ_DEVICE_R1:-} ${EZ_TEST_ADDR_R1:-} ${EZ_PEER_ADDR_R1:-} ${EZ_TEST_ADDR6_R1:-} ${EZ_PEER_ADDR6_R1:-}" = \
  "rxe1 198.51.100.$n 198.51.100.$m 2001:db8:1::$n 2001:db8:1::$m" ] || fail "rail 1 environment: $(env | grep _R1)"
rdma link show rxe0/1 | grep -q "state ACTIVE .*netdev eth0 *$" || fail "rxe0: $(rdma link show)"
rdma link show rxe1/1 | grep -q "state ACTIVE .*netdev eth1 *$" || fail "rxe1: $(rdma link show)"
ip -o addr show dev eth1 | grep -q " 198.51.100.$n/24 " && ip -o addr show dev eth1 | grep -q " 2001:db8:1::$n/64 " ||
	fail "eth1: $(ip -o addr show dev eth1)"
echo "rails: rxe0 on eth0, rxe1 on eth1 ($EZ_TEST_ADDR_R1)"
if [ $EZ_HOST = b ]; then
	serve rxe1 18515 b-rxe1-listening
	: >"$d/b-rxe1-done"
	waitf a-eth1-down
	serve rxe0 18516 b-rxe0-listening
	echo "eth1 of a down: ping-pong over rxe0 ok"
	exit 0
fi
waitf b-rxe1-listening
client rxe1 18515 $EZ_PEER_ADDR_R1
echo "ping-pong over rxe1 ok"
waitf b-rxe1-done
ip link set eth1 down || fail "ip link set eth1 down"
for i in $(seq 50); do rdma link show rxe1/1 | grep -q "state DOWN" && break; sleep 0.1; done
rdma link show rxe1/1 | grep -q "state DOWN" || fail "rxe1 still up with eth1 down: $(rdma link show rxe1/1)"
: >"$d/a-eth1-down"
waitf b-rxe0-listening
client rxe0 18516 $EZ_PEER_ADDR
echo "eth1 down: ping-pong over rxe0 ok"
'
EZ_VM_RAILS=2 "$tb" pair --cwd "$cwd" --timeout 900 -- bash -c "$rails_check" >"$out" 2>&1
check "pair, EZ_VM_RAILS=2: rxe0 on eth0 and rxe1 on eth1, separate rails, both carry RoCEv2" 0 $? \
	"[a] rails: rxe0 on eth0, rxe1 on eth1 (198.51.100.1)" "[b] rails: rxe0 on eth0, rxe1 on eth1 (198.51.100.2)" \
	"[a] ping-pong over rxe1 ok" "[b] rxe1 ping-pong: " \
	"[a] eth1 down: ping-pong over rxe0 ok" "[b] eth1 of a down: ping-pong over rxe0 ok" \
	"testbed: pair: both VMs succeeded"

# 8. run: VM a's first boot measures its clock 20x the host's (EZ_TESTBED_FAULT):
#    that boot is given up before the command and a second boot runs it.
EZ_TESTBED=vm EZ_TESTBED_FAULT=fast-clock:a "$tb" run --cwd "$cwd" --timeout 600 -- \
	bash -c 'echo "command ran"; exit 7' >"$out" 2>&1
check "run: a boot whose clock runs fast is given up before the command and booted again" 7 $? \
	"testbed: VM a died before its command started (QEMU exited 0; guest: this guest's clock runs 20." \
	"x the host's (more than 1.5x, EZ_VM_CLOCK_MAX)" "retrying (1 of 2)" "command ran"
[ "$(grep -cx "command ran" "$out")" = 1 ] || { echo "FAIL: the command ran more than once"; fails=$((fails + 1)); }

# 9. run: a failed command while the clock ran "fast" (EZ_VM_CLOCK_VOID=0.5: any
#    clock) is void (75), run again once, whole, and void again: 75.
EZ_TESTBED=vm EZ_VM_CLOCK_VOID=0.5 "$tb" run --cwd "$cwd" --timeout 600 -- \
	bash -c 'echo "command ran"; sleep 1.5; exit 3' >"$out" 2>&1
check "run: a failed run with a fast clock is void (75) and runs again once" 75 $? \
	"ran more than 0.5x the host's (EZ_VM_CLOCK_VOID)" \
	"testbed: the test bed voided that run (why: above); running it again, whole (try 2 of 2)"
[ "$(grep -cx "command ran" "$out")" = 2 ] || { echo "FAIL: the command did not run twice"; fails=$((fails + 1)); }

# 10. cluster of 2, EZ_VM_IDLE_S=20: a writes a line every 5 s for 40 s (longer
#     than 20 s in all: output resets the idle clock) and ends; b wrote one
#     line and then nothing: 20 s after a ended, every VM is stopped as a
#     hang (124), long before --timeout.
t10=$SECONDS
EZ_VM_IDLE_S=20 "$tb" cluster 2 --cwd "$cwd" --timeout 600 -- bash -c '
	if [ "$EZ_HOST" = b ]; then echo "b up"; sleep 1000; fi
	for i in 1 2 3 4 5 6 7 8; do echo "a tick $i"; sleep 5; done; echo "a done"; exit 0' >"$out" 2>&1
st=$?
[ $((SECONDS - t10)) -lt 300 ] || { echo "  took $((SECONDS - t10)) s"; st=99; }
check "cluster: no VM writes anything for EZ_VM_IDLE_S: every VM stopped as a hang (124)" 124 $st \
	"[a] a tick 8" "[a] a done" "[b] b up" \
	"testbed: TIMEOUT: no VM wrote anything for 20 s (EZ_VM_IDLE_S) though every command had started: the command hangs; every VM stopped" \
	"testbed: TIMEOUT: VM b stopped: no VM wrote anything for 20 s"

# 11. pair: b's NIC stalls (EZ_TESTBED_FAULT) and the command fails: the
#     run is void (75) and runs again once, whole, void again: 75. (A pair
#     whose command succeeds despite a stall is not void.)
EZ_TESTBED_FAULT=nic-stall:b "$tb" pair --cwd "$cwd" --timeout 600 -- bash -c '
	echo "$EZ_HOST up"; sleep 12; exit 3' >"$out" 2>&1
check "pair: a failed run during which a VM's NIC stalled is void (75) and runs again once" 75 $? \
	"the emulated NIC (virtio-net) of VM b had sent nothing for 25 s" \
	"testbed: the test bed voided that run (why: above); running it again, whole (try 2 of 2)"

echo "test-testbed: $passes passed, $fails failed"
[ $fails = 0 ]
