#!/usr/bin/env bash
# run-asan.sh: runs the integration tier (or some of its tests), built with --enable-sanitizers, under ASan+UBSan with leak checks, in the Soft-RoCE VM when needed.
#
# Usage: tests/run-asan.sh BUILD_DIR [TEST...]
#   BUILD_DIR was configured with `../configure --enable-sanitizers`. With no
#   TEST, every test of `make check-integration` runs; else only those named
#   (e.g. tests/faults/test_kill). Exits 0 when every test passed and no test
#   log holds a sanitizer report. EZ_TESTBED_TIMEOUT (default 1800 s) bounds
#   the whole run.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -ge 1 ] || { sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
shift
grep -q -- '-fsanitize=address' "$bdir/Makefile" ||
	{ echo "run-asan: $bdir was not configured with --enable-sanitizers" >&2; exit 2; }
if [ $# -gt 0 ]; then
	target=(check TESTS="$*")
	make -C "$bdir" -j2 "$@" >/dev/null || exit 1
else
	target=(check-integration)
	make -C "$bdir" -j2 >/dev/null && make -C "$bdir" -j2 integration-programs >/dev/null || exit 1
fi
# Fresh logs only: a stale one must neither pass nor fail this run.
find "$bdir/tests" \( -name '*.log' -o -name '*.trs' \) -delete 2>/dev/null

# halt_on_error: a report ends the test (its .trs says FAIL); exitcode 23
# tells a sanitizer's exit from a test's own failure in the log.
asan="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=23:strict_string_checks=1"
asan="$asan:detect_stack_use_after_return=1"
t0=$(date +%s)
"$here/testbed/testbed" run --timeout "${EZ_TESTBED_TIMEOUT:-1800}" --cwd "$bdir" -- \
	env ASAN_OPTIONS="$asan" \
	LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0" \
	UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
	make "${target[@]}"
st=$?
reports=$(grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" \
	$(find "$bdir/tests" -name '*.log' ! -name test-suite.log) /dev/null)
if [ -n "$reports" ]; then
	echo "run-asan: sanitizer reports in:"
	echo "$reports" | sed 's/^/  /'
	[ $st -eq 0 ] && st=1
fi
ntests=$(find "$bdir/tests" -name '*.trs' | wc -l)
[ "$ntests" -gt 0 ] || { echo "run-asan: no test ran"; st=1; }
echo "run-asan: $ntests test programs, whole run $(( $(date +%s) - t0 )) s, status $st"
exit $st
