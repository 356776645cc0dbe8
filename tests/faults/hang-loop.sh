#!/usr/bin/env bash
# hang-loop.sh N CASE [PROG]: (inside the VM) runs one case of a fault program N times; on a hang (HANG_SECS, 40 s) prints every thread's backtrace of the case's processes with gdb and stops.
set -u
n=$1 case=$2 prog=${3:-./tests/faults/test_kill}
for i in $(seq "$n"); do
	t0=$(date +%s.%N)
	CK_RUN_CASE=$case $prog > /tmp/hl.out 2>&1 &
	p=$!
	lim=$(( $(date +%s) + ${HANG_SECS:-40} ))
	while kill -0 $p 2>/dev/null && [ "$(date +%s)" -lt $lim ]; do sleep 0.2; done
	if kill -0 $p 2>/dev/null; then
		echo "run $i: HUNG; backtraces:"
		cat /tmp/hl.out
		for q in $(pgrep -f "$(basename "$prog")"); do
			echo "=== pid $q: $(tr '\0' ' ' < /proc/$q/cmdline) state $(awk '/State/{print $2}' /proc/$q/status)"
			timeout 60 gdb -q -batch -p $q -ex 'thread apply all bt' -ex 'frame 0' 2>&1 | grep -v '^\[' | head -60
		done
		kill -9 $(pgrep -f "$(basename "$prog")") 2>/dev/null
		exit 1
	fi
	wait $p; st=$?
	echo "run $i: exit $st, $(echo "$(date +%s.%N) - $t0" | bc) s: $(grep -E '%:|client killed' /tmp/hl.out | tr '\n' ' ')"
	[ $st = 0 ] || { cat /tmp/hl.out; exit 1; }
done
