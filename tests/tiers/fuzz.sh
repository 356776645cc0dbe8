#!/usr/bin/env bash
# tests/tiers/fuzz.sh: the libFuzzer targets (make fuzz), EZ_FUZZ_SECONDS (30) each.
# usage: tests/tiers/fuzz.sh
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

fuzz() {
	say "fuzzing: libFuzzer targets, ${EZ_FUZZ_SECONDS:-30} s each (make fuzz)"
	pass_fail "fuzz (handshake decoder, qpfsm validator, receive classifier)" \
		timeout 900 make -C "$build" fuzz FUZZ_SECONDS="${EZ_FUZZ_SECONDS:-30}"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
fuzz
tier_status
