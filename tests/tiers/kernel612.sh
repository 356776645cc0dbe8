#!/usr/bin/env bash
# tests/tiers/kernel612.sh: the tests that touch the device's rules (test_qpfsm_diff, test_multipath, the hostile-peer isolation tests, the samples), plain build, in a test bed VM booting Debian 12's second kernel line (linux-image-6.12-amd64, a newer rxe).
# usage: tests/tiers/kernel612.sh   (after tests/tiers/build.sh; EZ_VM_ACCEL and the rest of tests/testbed/testbed's environment apply)
#
# The other tiers boot the test bed's default kernel, linux-image-amd64's
# (6.1 on Debian 12). rxe's rules differ between the two (its laxness and its
# ACK timing: tests/integration/test_qpfsm_diff.c and test_multipath.c name
# what), so the tests that depend on them run on 6.12 too, in one VM: a few
# minutes. A 6.12 kernel that is not installed or does not boot is a FAIL,
# never a skip. The whole integration tier on 6.12 is in README.md.
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K612_TESTS="tests/integration/test_qpfsm_diff tests/integration/test_multipath
	tests/faults/test_hostile_rkey tests/faults/test_hostile_rndv
	tests/faults/test_hostile_imm tests/integration/test_samples_rpc"

# The 6.12 kernel: the one linux-image-6.12-amd64 depends on (EZ_VM_KERNEL_612 overrides).
kver612() {
	if [ -n "${EZ_VM_KERNEL_612:-}" ]; then
		echo "$EZ_VM_KERNEL_612"; return
	fi
	dpkg-query -W -f='${Depends}' linux-image-6.12-amd64 2>/dev/null |
		sed -n 's/^linux-image-\([^ ,|]*\).*/\1/p'
}

kernel612() {
	local t=$SECONDS kver log st tst r f
	say "device-rule tests on Linux 6.12 (plain build, one test bed VM)"
	kver=$(kver612)
	if [ -z "$kver" ] || [ ! -e "/boot/vmlinuz-$kver" ]; then
		result fail "kernel 6.12: not installed"
		why "kernel 6.12" "" "no /boot/vmlinuz of linux-image-6.12-amd64 (${kver:-package not installed}): tests/tiers/install-packages.sh installs it"
		return
	fi
	# Every program make check builds, here: a TCG guest compiles slowly.
	if ! timeout 1200 make -C "$build" -j2 integration-programs >/dev/null; then
		result fail "kernel 6.12: build of its tests"
		return
	fi
	for tst in $K612_TESTS; do rm -f "$build/$tst.trs" "$build/$tst.log"; done
	log=$(mktemp "${TMPDIR:-/tmp}/ez-k612.XXXXXX") || return 1
	# A VM always (a host device or the running kernel's rxe would not be
	# 6.12); make check writes each test's .trs, read below.
	EZ_TESTBED=vm EZ_VM_KERNEL=$kver "$testbed" run --cwd "$build" --timeout 900 -- \
		make check TESTS="$(echo "$K612_TESTS" | tr -s ' \t\n' '   ')" 2>&1 | tee "$log"
	st=${PIPESTATUS[0]}
	# The VM must have booted that kernel and run the command.
	if ! grep -aq "testbed: VM: .*kernel $kver, .*command exited" "$log"; then
		result fail "kernel 6.12: test bed VM on $kver"
		why "kernel 6.12: the test bed did not run the tests on $kver (exit status $st)" "$log"
	fi
	for tst in $K612_TESTS; do
		f=$build/$tst.trs
		r=$(sed -n 's/^:test-result: //p' "$f" 2>/dev/null | head -1)
		case $r in
		PASS) result pass "$tst on $kver" ;;
		'') result fail "$tst on $kver"; why "$tst on $kver (no result)" "" "it did not run" ;;
		*) result fail "$tst on $kver"; why "$tst on $kver ($r)" "$build/$tst.log" ;;
		esac
	done
	rm -f "$log"
	echo "(device-rule tests on $kver: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
kernel612
tier_status
