#!/usr/bin/env bash
# run-asan.sh: runs the integration tier (or some of its tests), built with --enable-sanitizers, under ASan+UBSan with leak checks, in the Soft-RoCE VM when needed.
#
# Usage: tests/run-asan.sh BUILD_DIR [TEST...]
#   BUILD_DIR was configured with `../configure --enable-sanitizers`. With no
#   TEST, every test of `make check-integration` runs; else only those named
#   (e.g. tests/faults/test_kill). Exits 0 when every test passed and no test
#   log holds a sanitizer report. EZ_TESTBED_TIMEOUT (default 1800 s) bounds
#   the whole run (each shard's guest). EZ_ASAN_SHARDS (default 2; 1 with
#   TESTs named) splits the tier over that many guests run in parallel.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -ge 1 ] || { sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
shift
grep -q -- '-fsanitize=address' "$bdir/Makefile" ||
	{ echo "run-asan: $bdir was not configured with --enable-sanitizers" >&2; exit 2; }
if [ $# -gt 0 ]; then
	target=(check TESTS="$*")
	# Every check program, not only those named: the guest's `make check`
	# builds all of them first, and under TCG that took a flake hunt's
	# round more than 20 minutes of compiling once the library had changed.
	make -C "$bdir" -j2 >/dev/null && make -C "$bdir" -j2 integration-programs >/dev/null || exit 1
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
# One guest per shard, in parallel (EZ_ASAN_SHARDS, default 2 for the whole
# tier, 1 for tests named): a TCG guest has one vCPU, so one guest leaves a
# host core idle. The shards are balanced by each test's known time (below);
# each runs the device probe first, writes its own suite
# log, and a test's .log/.trs are its own files either way.
run_shard() {
	local name=$1; shift
	"$here/testbed/testbed" run --timeout "${EZ_TESTBED_TIMEOUT:-1800}" --cwd "$bdir" -- \
		env ASAN_OPTIONS="$asan" \
		LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0" \
		UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
		"$@" 2>&1 | sed -u "s/^/[$name] /"
	return "${PIPESTATUS[0]}"
}
shards=${EZ_ASAN_SHARDS:-2}
[ $# -gt 0 ] && shards=${EZ_ASAN_SHARDS:-1}
# Guests side by side must find nothing to build (each `make check` would
# compile the same objects at once).
if [ "$shards" -gt 1 ] && [ $# -gt 0 ]; then
	make -C "$bdir" -j2 >/dev/null && make -C "$bdir" -j2 integration-programs >/dev/null || exit 1
fi
if [ "$shards" -le 1 ]; then
	run_shard asan make "${target[@]}"
	st=$?
else
	if [ $# -gt 0 ]; then
		all=("$@")
	else
		read -r -a all <<<"$(make -s -C "$bdir" print-integration-tests | tail -n 1)"
	fi
	# Longest first, each to the least loaded shard. Every SHARDS-th test
	# left the shards 130-160 s apart (test_srqpool and test_conn fell in one).
	# Seconds each under ASan in a TCG guest, as this script prints them
	# ("seconds each", from each test's log; stop 56, a third guest running
	# part of the time); an unlisted test counts 8.
	declare -A secs=([test_conn]=84 [test_ezrdma]=70 [test_samples_rpc]=47 [test_ezbench]=41
		[test_samples_storage]=40 [test_liveness]=37 [test_exhaust]=37 [test_scale]=32
		[test_multipath]=32 [test_leak]=28 [test_hostile_halfopen]=27 [test_storm]=25
		[test_rndv]=25 [test_pool_share]=25 [test_keepalive]=25 [test_auth]=25
		[test_hostile_replay]=23 [test_causes]=22 [test_samples_kvstore]=20
		[test_hostile_rkey_pd]=19 [test_hostile_imm]=19 [test_handshake]=19
		[test_hostile_rkey]=17 [test_workers]=15 [test_misuse]=15 [test_api]=14
		[test_qpfsm_ladder]=12)
	mapfile -t all < <(for t in "${all[@]}"; do
		b=${t##*/}; echo "${secs[$b]:-8} $t"; done | sort -s -k1,1nr | cut -d' ' -f2)
	load=() parts=()
	for ((k = 0; k < shards; k++)); do load[k]=0; parts[k]=""; done
	for t in "${all[@]}"; do
		b=${t##*/} m=0
		for ((k = 1; k < shards; k++)); do [ "${load[k]}" -lt "${load[m]}" ] && m=$k; done
		load[m]=$((load[m] + ${secs[$b]:-8}))
		parts[m]="${parts[m]:+${parts[m]} }$t"
	done
	pids=()
	for ((k = 0; k < shards; k++)); do
		read -r -a part <<<"${parts[k]}"
		run_shard "asan$k" sh -c 'EZ_REQUIRE_DEVICE=1 "$3" &&
			exec make check TESTS="$1" TEST_SUITE_LOG="$2"' sh "${part[*]}" \
			"tests/test-suite-asan$k.log" "$here/integration/device-probe.sh" &
		pids+=($!)
	done
	st=0
	for p in "${pids[@]}"; do wait "$p" || st=1; done
fi
reports=$(grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" \
	$(find "$bdir/tests" -name '*.log' ! -name test-suite.log) /dev/null)
if [ -n "$reports" ]; then
	echo "run-asan: sanitizer reports in:"
	echo "$reports" | sed 's/^/  /'
	[ $st -eq 0 ] && st=1
fi
# Each test's seconds, longest first: its log's last write less its
# creation (the test driver makes the log as the test starts; where the
# file system keeps no birth time, less the end of the test before it in
# its guest). The figures to keep the table above from (it is how the
# shards are balanced).
if [ "$shards" -le 1 ]; then
	parts=("$(find "$bdir/tests" -name 'test_*.log' | sed "s|^$bdir/||; s|\.log\$||" | tr '\n' ' ')")
fi
for part in "${parts[@]}"; do
	prev=$t0
	for t in $part; do
		[ -f "$bdir/$t.log" ] && echo "$(stat -c '%Y %W' "$bdir/$t.log") ${t##*/}"
	done | sort -n | while read -r m w b; do
		if [ "$w" -gt 0 ]; then echo "$((m - w)) $b"; else echo "$((m - prev)) $b"; fi
		prev=$m
	done
done | sort -nr | awk '{ s = s sprintf(" [%s]=%s", $2, $1) } END { print "run-asan: seconds each:" s }'
ntests=$(find "$bdir/tests" -name '*.trs' | wc -l)
[ "$ntests" -gt 0 ] || { echo "run-asan: no test ran"; st=1; }
echo "run-asan: $ntests test programs, whole run $(( $(date +%s) - t0 )) s, status $st"
exit $st
