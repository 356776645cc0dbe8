#!/bin/sh
# run.sh: builds the libFuzzer targets with clang (ASan+UBSan) and runs each for a bounded time.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET]   (BUILD_DIR holds config.h)
# Exit status: non-zero when a target crashed or a sanitizer reported; the crashing
# input is left in BUILD_DIR/fuzz/ and printed.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [SECONDS]}" && pwd)
secs=${2:-60}
out=$build/fuzz
mkdir -p "$out"
CC=${FUZZ_CC:-clang}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$build -I$top/include -I$top/lib $(pkg-config --cflags libibverbs libcrypto)"

# target name, then the library sources it needs (pure code only: no device).
targets="
qpfsm_validate lib/qpfsm/validate.c lib/qpfsm/table.c lib/qpfsm/names.c
handshake lib/wire/handshake.c lib/wire/auth.c
rx_check lib/wire/rx_check.c lib/wire/rndv.c lib/wire/settle.c
exports lib/wire/exports.c
resume lib/wire/resume.c lib/wire/auth.c lib/wire/handshake.c
"

# Built first, then run FUZZ_JOBS at a time (default: the cores; 2 in CI)
# here): each target still gets its SECONDS, the tier takes half as long.
jobs=${FUZZ_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
names=""
build_one() {	# name srcs...
	name=$1; shift
	files=""
	for s in "$@"; do files="$files $top/$s"; done
	$CC $flags -o "$out/fuzz_$name" "$top/tests/fuzz/fuzz_$name.c" $files $(pkg-config --libs libibverbs libcrypto)
}
run_one() {	# name: 0 when it ran its time without a crash or a report
	name=$1
	seeds=$top/tests/fuzz/corpus/$name
	work=$out/corpus_$name
	mkdir -p "$work" "$seeds"
	echo "fuzz: $name for ${secs}s (seeds: $(ls "$seeds" | wc -l))"
	if ! (cd "$out" && "$out/fuzz_$name" -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$out/crash_${name}_" "$work" "$seeds" >"$out/$name.log" 2>&1); then
		echo "fuzz: $name FAILED; last lines of $out/$name.log:"
		grep -vE "^#[0-9]+" "$out/$name.log" | tail -n 30
		return 1
	fi
	grep -E 'stat::number_of_executed_units|stat::new_units_added' "$out/$name.log" | tr '\n' ' '
	echo
	echo "fuzz: $name passed"
}
while read -r name srcs; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086
	build_one "$name" $srcs || exit 1
	names="$names $name"
done <<EOF_TARGETS
$targets
EOF_TARGETS
status=0
set -- $names
while [ $# -gt 0 ]; do
	pids="" n=0
	while [ $# -gt 0 ] && [ $n -lt "$jobs" ]; do
		run_one "$1" >"$out/$1.summary" 2>&1 &
		pids="$pids $!:$1"
		n=$((n + 1))
		shift
	done
	for pn in $pids; do
		wait "${pn%%:*}" || status=1
		cat "$out/${pn#*:}.summary"
	done
done
exit $status
