#!/usr/bin/env bash
# flakehunt.sh: runs every device test K times with the host loaded and prints each test's failures: the flake hunt of issue 38.
#
# Usage: tests/flakehunt.sh [-k K] [-b BUILD] [--quiet-host] [TEST...]
#   K        rounds (default 5)
#   BUILD    the build to run (default ./build-asan when configured with
#            --enable-sanitizers and present, else ./build); an ASan build runs
#            through tests/run-asan.sh (its sanitizer checks included)
#   TEST...  the tests (default: every integration test, `make print-integration-tests`)
# The load, unless --quiet-host: one busy process per core on the host, and a
# second Soft-RoCE VM doing unrelated work (compressing random data), for the
# whole hunt. Each round's .trs results are kept; the end prints a table:
# test, rounds, failures, and each failure's first telling line. Exits 1 when
# any test failed in any round. Needs nothing else running (it takes a VM
# slot beside the test bed's own).
# The same load for any other command: tests/flakehunt.sh --load-only CMD...
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
k=5 bdir= load=1 load_only=0
while [ $# -gt 0 ]; do
	case $1 in
	-k) k=$2; shift 2 ;;
	-b) bdir=$2; shift 2 ;;
	--quiet-host) load=0; shift ;;
	--load-only) load_only=1; shift; break ;;
	-h|--help) sed -n '4,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) echo "flakehunt: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/flakehunt.XXXXXX") || exit 1
pids=()
stop_load() {
	local p
	for p in "${pids[@]}"; do kill -- "$p" 2>/dev/null; done
	[ -f "$work/loadvm.stop" ] || touch "$work/loadvm.stop"
	wait 2>/dev/null
}
trap 'stop_load; rm -rf "$work"' EXIT

start_load() {
	local i
	for ((i = 0; i < $(nproc); i++)); do
		sh -c 'while :; do :; done' &
		pids+=($!)
	done
	# A second VM with work of its own: its vCPU competes with the test's.
	"$top/tests/testbed/testbed" run --timeout 86400 -- sh -c \
		"while [ ! -e '$work/loadvm.stop' ]; do head -c 64M /dev/urandom | gzip -1 >/dev/null; done" \
		>"$work/loadvm.log" 2>&1 &
	pids+=($!)
	echo "flakehunt: host loaded: $(nproc) busy processes and a second VM (pids ${pids[*]})"
}

if [ "$load_only" = 1 ]; then
	start_load
	"$@"
	exit $?
fi

if [ -z "$bdir" ]; then
	if [ -f "$top/build-asan/Makefile" ]; then bdir=$top/build-asan; else bdir=$top/build; fi
fi
bdir=$(cd "$bdir" && pwd) || exit 2
if [ $# -gt 0 ]; then
	tests=("$@")
else
	read -r -a tests <<<"$(make -s -C "$bdir" print-integration-tests | tail -n 1)"
fi
# Every check program (integration-programs), not only the tests named: a
# guest's `make check` builds them all first, under TCG.
make -C "$bdir" -j2 >/dev/null && make -C "$bdir" -j2 integration-programs >/dev/null ||
	{ echo "flakehunt: build failed" >&2; exit 1; }
asan=0
grep -q -- '-fsanitize=address' "$bdir/Makefile" && asan=1
[ "$load" = 1 ] && start_load
t0=$SECONDS
for ((r = 1; r <= k; r++)); do
	echo "==== flakehunt round $r of $k ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
	find "$bdir/tests" -name '*.trs' -delete
	# Up to date on the host before each round: a guest that finds a
	# source newer than its object compiles it under TCG, for many minutes.
	make -C "$bdir" -j2 >/dev/null && make -C "$bdir" -j2 integration-programs >/dev/null ||
		{ echo "flakehunt: build failed" >&2; exit 1; }
	if [ "$asan" = 1 ]; then
		"$here/run-asan.sh" "$bdir" "${tests[@]}" >"$work/round$r.log" 2>&1
	else
		"$here/testbed/testbed" run --cwd "$bdir" --timeout 3600 -- \
			make check TESTS="${tests[*]}" >"$work/round$r.log" 2>&1
	fi
	echo "round $r: exit $? after $((SECONDS - t0)) s"
	for t in "${tests[@]}"; do
		f=$bdir/$t.trs
		res=$(sed -n 's/^:test-result: //p' "$f" 2>/dev/null | head -1)
		[ -n "$res" ] || res=NORUN
		why=
		[ "$res" = PASS ] ||
			why=$(grep -aE ':[FE]:|Sanitizer|runtime error|Timeout|TIMEOUT' "$bdir/$t.log" 2>/dev/null |
				head -1 | cut -c1-200)
		printf '%s\t%s\t%s\n' "$t" "$res" "$why" >>"$work/results"
	done
done
stop_load
echo
echo "==== flakehunt: $k rounds, $((SECONDS - t0)) s, build $bdir, host $([ "$load" = 1 ] && echo loaded || echo quiet)"
printf '%-44s %6s %8s  %s\n' test rounds failures "first failure"
bad=0
for t in "${tests[@]}"; do
	n=$(awk -F'\t' -v t="$t" '$1 == t' "$work/results" | wc -l)
	nf=$(awk -F'\t' -v t="$t" '$1 == t && $2 != "PASS"' "$work/results" | wc -l)
	w=$(awk -F'\t' -v t="$t" '$1 == t && $2 != "PASS" { print $2 ": " $3; exit }' "$work/results")
	printf '%-44s %6d %8d  %s\n' "$t" "$n" "$nf" "$w"
	[ "$nf" -eq 0 ] || bad=1
done
exit $bad
