# tests/tiers/lib.sh: what every tier script shares: the tree's paths, messages, and the result counting behind "tests: N passed, N failed".
# usage: . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   (bash; from a tier script or dev.sh)
# shellcheck shell=bash
#
# Results go to the file $EZ_RESULTS, one "PASS what" / "FAIL what" /
# "SKIP what" line each, so tiers run as separate scripts add up: dev.sh makes
# the file and prints the summary once at the end. A tier run on its own makes
# its own file and prints its own summary when it exits.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$top/build
# shellcheck disable=SC2034 # used by the scripts that source this one
testbed=$top/tests/testbed/testbed
cd "$top" || exit 1

# A Check test case's timeout (tcase_set_timeout) only catches a hang; the
# verdicts are the assertions. A loaded CI host ran a test 15 times slower
# than a quiet one, so every tier gives the cases three times their time
# (Check reads this; the test bed passes the environment into its VMs).
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-3}

say() { printf '\n==== %s\n' "$*"; }
die() { echo "${0##*/}: $*" >&2; exit 1; }

# This process's own counts (a tier compares them before and after a step).
passed=0 failed=0

# tier_begin: a tier run on its own (no $EZ_RESULTS from dev.sh) makes its
# own results file and prints the summary when it exits.
tier_begin() {
	[ -n "${EZ_RESULTS:-}" ] && return 0
	EZ_RESULTS=$(mktemp "${TMPDIR:-/tmp}/ez-results.XXXXXX") || exit 1
	export EZ_RESULTS
	trap tier_end EXIT
}

tier_end() {
	local st=$?
	report 0 || st=1
	rm -f "$EZ_RESULTS" "$EZ_RESULTS.why"
	exit $st
}

result() {	# result pass|fail WHAT
	if [ "$1" = pass ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	printf '%-4s %s\n' "${1^^}" "$2" >>"$EZ_RESULTS"
}

# What a failed step printed that says why, kept for the summary's end: CI
# keeps only the last lines of a run, and a FAIL line alone (a tier of four
# VMs and 25 minutes of output) cannot be told from a hang or a crash.
# Lines that name a failure, a timeout or a dead process, each with the line
# after it (a pair test's FAIL line names the check, the next its values);
# the last 16.
WHY_RE='FAIL|TIMEOUT|[Tt]imed out|did not|died|gave no exit|exited [1-9]|killed|:[FE]:|Assertion|Sanitizer|Segmentation|Aborted|error:'

why() {	# why WHAT FILE [NOTE]: FILE's lines that say why WHAT failed (none for ""), then NOTE
	{
		printf 'FAIL %s:\n' "$1"
		[ -n "$2" ] && grep -aE -A1 "$WHY_RE" "$2" 2>/dev/null | grep -avE '^--$|paths left' |
			tail -n 16 | cut -c1-300 | sed 's/^/    | /'
		[ -n "${3:-}" ] && printf '    | %s\n' "$3"
	} >>"$EZ_RESULTS.why"
}

# pass_fail WHAT COMMAND...: one result for the command's exit status; the
# output goes on to the terminal as it comes, and on failure its telling
# lines to the summary (why()). The command runs in a subshell (a pipe into
# tee): a shell function given here must not set what its caller reads.
pass_fail() {
	local what=$1 log st
	shift
	# Without a log the step still runs and counts, only its why is lost:
	# a step must never vanish from the summary.
	log=$(mktemp "${TMPDIR:-/tmp}/ez-step.XXXXXX") || log=/dev/null
	"$@" 2>&1 | tee "$log"
	st=${PIPESTATUS[0]}
	if [ "$st" -eq 0 ]; then
		result pass "$what"
	else
		result fail "$what"
		why "$what (exit status $st)" "$log"
	fi
	[ "$log" = /dev/null ] || rm -f "$log"
}

skip() {	# skip WHAT: listed, not counted
	printf 'SKIP %s\n' "$1" >>"$EZ_RESULTS"
}

# Counts the results automake's test driver left in DIR's .trs files. Returns
# 1 when there were none (the tier did not run).
# count_trs DIR [BUILD [DEPTH]]: one result per .trs below BUILD/DIR (BUILD:
# ./build), DEPTH levels down at most (DIR itself: 1).
count_trs() {
	local f r name n=0 b=${2:-$build} depth=()
	[ -n "${3:-}" ] && depth=(-maxdepth "$3")
	while IFS= read -r f; do
		name=${f#"$top"/}; name=${name%.trs}
		r=$(sed -n 's/^:test-result: //p' "$f" | head -1)
		case $r in
		PASS|XFAIL) result pass "$name"; n=$((n + 1)) ;;
		FAIL|ERROR|XPASS) result fail "$name"; n=$((n + 1)); why "$name ($r)" "${f%.trs}.log" ;;
		SKIP) skip "$name" ;;
		esac
	done < <(find "$b/$1" "${depth[@]}" -name '*.trs' 2>/dev/null | sort)
	[ $n -gt 0 ]
}

# Each test log's Check summary ("100%: Checks: N, Failures: N, Errors: N").
check_lines() {
	local f
	find "$build" "$top/build-asan" "$top/build-tsan" -path "*/easyrdma-*" -prune -o -name '*.log' ! -name test-suite.log \
		-print 2>/dev/null | sort | while IFS= read -r f; do
		grep -h '^[0-9]*%: Checks: ' "$f" | sed "s|^|${f#"$top"/}: |"
	done
}

# Fresh results only: a stale .trs must not count.
clean_results() {
	find "$build" -path "$build/easyrdma-*" -prune -o \( -name '*.trs' -o -name 'test-suite.log' \) -print0 |
		xargs -0 rm -f
}

# report T0: the Check summaries, every result, and the final line; fails when anything failed.
report() {
	local np nf
	say "Check summaries"
	check_lines
	say "results ($((SECONDS - $1)) s)"
	if [ -s "$EZ_RESULTS" ]; then cat "$EZ_RESULTS"; else echo; fi
	if [ -s "$EZ_RESULTS.why" ]; then
		say "why they failed (the lines of their output that say so)"
		cat "$EZ_RESULTS.why"
	fi
	np=$(grep -c '^PASS ' "$EZ_RESULTS")
	nf=$(grep -c '^FAIL ' "$EZ_RESULTS")
	echo "tests: $np passed, $nf failed"
	[ "$nf" -eq 0 ]
}

# run_tier SCRIPT: runs a tier script (dev.sh). A tier whose script ended
# non-zero without a FAIL of its own broke before it could say (an unbound
# variable under set -u ends a script there, its results unwritten): that is
# a failure too, or the summary would count only what the tier wrote before.
run_tier() {
	local before st
	before=$(grep -c '^FAIL ' "$EZ_RESULTS")
	"$1"
	st=$?
	if [ $st -ne 0 ] && [ "$(grep -c '^FAIL ' "$EZ_RESULTS")" -eq "$before" ]; then
		result fail "${1##*/}: ended with status $st before writing a failure"
		why "${1##*/}" "" "the script ended with status $st before writing a failure (its output above says where)"
	fi
}

# The tier's own exit status.
tier_status() {
	[ $failed -eq 0 ]
}
