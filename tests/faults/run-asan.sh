#!/usr/bin/env bash
# run-asan.sh: runs the fault suite, built with --enable-sanitizers, under ASan+UBSan with leak checks (in the Soft-RoCE VM when needed).
#
# Usage: tests/faults/run-asan.sh BUILD_DIR
#   BUILD_DIR was configured with `../configure --enable-sanitizers` (the script
#   builds the fault tests there first). Exits 0 when every test passed with no
#   sanitizer report. EZ_TESTBED_TIMEOUT (default 900 s) bounds the whole run.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tests="test_api test_handshake test_kill test_storm test_exhaust test_leak"

if [ "${1:-}" = --inside ]; then
	# In the VM (or wherever a device is): every test, each under its own timeout.
	bdir=$2 st=0
	export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=23:strict_string_checks=1:detect_stack_use_after_return=1"
	export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
	for t in $tests; do
		t0=$(date +%s)
		(cd "$bdir" && timeout --kill-after=10 240 "./tests/faults/$t") 2>&1 | tee "/tmp/asan-$t.$$.log"
		s=${PIPESTATUS[0]}
		if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "/tmp/asan-$t.$$.log"; then
			echo "run-asan: $t: sanitizer report above"
			[ "$s" = 0 ] && s=1
		fi
		rm -f "/tmp/asan-$t.$$.log"
		echo "run-asan: $t exited $s after $(( $(date +%s) - t0 )) s"
		[ "$s" = 0 ] || st=1
	done
	exit $st
fi

[ $# -eq 1 ] || { sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
grep -q -- '-fsanitize=address' "$bdir/Makefile" ||
	{ echo "run-asan: $bdir was not configured with --enable-sanitizers" >&2; exit 2; }
progs=""
for t in $tests; do progs="$progs tests/faults/$t"; done
make -C "$bdir" -j2 $progs >/dev/null || exit 1
t0=$(date +%s)
"$here/../testbed/testbed" run --timeout "${EZ_TESTBED_TIMEOUT:-900}" --cwd "$bdir" -- \
	"$here/run-asan.sh" --inside "$bdir"
st=$?
echo "run-asan: whole run $(( $(date +%s) - t0 )) s, status $st"
exit $st
