#!/usr/bin/env bash
# tests/tiers/plain-integration.sh: the integration tier in the plain build (make check-integration in the test bed); dev.sh runs it when EZ_PLAIN_TIER=1.
# usage: tests/tiers/plain-integration.sh
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

plain_integration() {
	say "integration tier: make check-integration in the test bed (plain build)"
	"$testbed" run --cwd "$build" --timeout 1500 -- make check-integration ||
		result fail "integration tier (plain build)"
	count_trs tests/integration || result fail "plain integration tier did not run"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
plain_integration
tier_status
