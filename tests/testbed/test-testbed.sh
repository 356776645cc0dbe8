#!/usr/bin/env bash
# test-testbed.sh: tests of the test bed itself (tests/testbed/testbed): a VM whose QEMU
# dies before its command started is booted again and says so, and a pair run
# reports its commands' statuses, also when one VM's command ends long before
# the other's, and a VM that wrote its status but does not stop is killed
# after EZ_VM_POWEROFF_GRACE, and a cluster VM whose NIC stalls voids the run
# (75). Boots VMs (about 5 boots: minutes under TCG), so it is not part of
# CI; run it after changing the test bed:
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

echo "test-testbed: $passes passed, $fails failed"
[ $fails = 0 ]
