#!/usr/bin/env bash
# tests/tiers/tsan.sh: the threaded test programs built with ThreadSanitizer (./build-tsan) and run in the test bed, halting on the first report.
# usage: tests/tiers/tsan.sh   (EZ_VM_ACCEL and the rest of tests/testbed/testbed's environment apply)
#
# Where threads meet: tests/faults/test_misuse calls every entry point from a
# thread that does not own the context, and runs ez_ctx_process() from two
# threads at once; tests/integration/test_workers hands connection requests
# to worker threads' contexts (ez_handoff, a listener's workers) while they
# run, stall, and are freed, and a session's resume request from the
# listener's thread to its worker's (session_route.c's lock);
# tests/unit/test_mailbox posts to a loop from four threads (the mailbox
# under those handoffs); tests/unit/test_session_route registers and
# removes sessions' routes on four threads while another looks them up.
# Only what it needs is built (the static core and the one program: about a
# minute), so the tier stays small in CI. Each program's
# output goes to build-tsan/tests/faults/NAME.log and its result to NAME.trs
# (written here in the test driver's format, so count_trs counts it).
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

tsan_dir=$top/build-tsan
tsan_programs=(tests/faults/test_misuse tests/integration/test_workers tests/unit/test_mailbox
	tests/unit/test_session_route)

tsan_build() {
	mkdir -p "$tsan_dir"
	if [ ! -f "$tsan_dir/Makefile" ]; then
		(cd "$tsan_dir" && timeout 600 ../configure --enable-tsan >/dev/null) ||
			{ echo "${0##*/}: configure --enable-tsan failed" >&2; return 1; }
	fi
	timeout 1800 make -C "$tsan_dir" -j2 "${tsan_programs[@]}" >/dev/null
}

# One VM run for all programs; each writes its log and its .trs. exitcode 66
# tells a TSan report from a test's own failure.
tsan_run() {
	local p script=""
	for p in "${tsan_programs[@]}"; do
		rm -f "$tsan_dir/$p.log" "$tsan_dir/$p.trs"
		script="$script ./$p >$p.log 2>&1; st=\$?;"
		script="$script if [ \$st -eq 0 ] && ! grep -q 'WARNING: ThreadSanitizer' $p.log; then r=PASS; else r=FAIL; fi;"
		script="$script printf ':test-result: %s\\n:exit-status: %s\\n' \$r \$st >$p.trs;"
	done
	"$testbed" run --timeout 900 --cwd "$tsan_dir" -- \
		env TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1" sh -c "$script"
}

tsan_tier() {
	local t p
	say "threaded tests under ThreadSanitizer (build-tsan/, in the test bed)"
	t=$SECONDS
	if ! tsan_build; then
		result fail "TSan build"
		return
	fi
	tsan_run
	for p in "${tsan_programs[@]}"; do
		grep -h '^[0-9]*%: Checks: \|ThreadSanitizer' "$tsan_dir/$p.log" 2>/dev/null | sed "s|^|build-tsan/$p: |"
	done
	echo "(TSan tier: $((SECONDS - t)) s)"
	count_trs tests/faults "$tsan_dir" || result fail "TSan tests did not run"
	count_trs tests/integration "$tsan_dir" || result fail "TSan threaded integration tests did not run"
	count_trs tests/unit "$tsan_dir" || result fail "TSan threaded unit tests did not run"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
tsan_tier
tier_status
