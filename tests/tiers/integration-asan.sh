#!/usr/bin/env bash
# tests/tiers/integration-asan.sh: the integration tier and the fault suite, built with AddressSanitizer+UBSan (./build-asan), in the test bed.
# usage: tests/tiers/integration-asan.sh   (EZ_VM_ACCEL and the rest of tests/testbed/testbed's environment apply)
#
# The integration tier runs once, in the ASan+UBSan build: every test on the
# device with leak checks on (a plain-build run adds nothing a sanitized one
# misses, and CI's time is bounded). EZ_PLAIN_TIER=1 runs it in the plain
# build as well (tests/tiers/plain-integration.sh).
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A second tree configured with --enable-sanitizers, for the fault suite.
asan_build() {
	mkdir -p "$top/build-asan"
	if [ ! -f "$top/build-asan/Makefile" ]; then
		(cd "$top/build-asan" && timeout 600 ../configure --enable-sanitizers >/dev/null) ||
			{ echo "${0##*/}: configure --enable-sanitizers failed" >&2; return 1; }
	fi
	timeout 1800 make -C "$top/build-asan" -j2 >/dev/null
}

asan_tier() {
	local st t f0
	say "integration tier under AddressSanitizer and UBSan (build-asan/, in the test bed)"
	t=$SECONDS
	f0=$failed
	if asan_build; then
		EZ_TESTBED_TIMEOUT=2100 "$top/tests/run-asan.sh" "$top/build-asan"; st=$?
	else
		st=1
		result fail "ASan build"
	fi
	echo "(ASan integration tier: $((SECONDS - t)) s)"
	count_trs tests/faults "$top/build-asan" || result fail "fault suite did not run"
	count_trs tests/abi "$top/build-asan" || result fail "ABI tests did not run"
	if ! count_trs tests/integration "$top/build-asan"; then
		result fail "integration tier could not run (run-asan.sh exited $st)"
	elif [ $st -ne 0 ] && [ $failed -eq $f0 ]; then
		result fail "integration tier under ASan+UBSan (sanitizer report or test bed error; run-asan.sh exited $st)"
	fi
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
asan_tier
tier_status
