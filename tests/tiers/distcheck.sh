#!/usr/bin/env bash
# tests/tiers/distcheck.sh: make distcheck in ./build (the tarball builds, installs and passes the unit tier),
# then tests/check-dist.sh (it holds every tracked file); EZ_SKIP_DISTCHECK=1 lists them as skipped instead.
# usage: tests/tiers/distcheck.sh
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

distcheck() {
	local t
	if [ "${EZ_SKIP_DISTCHECK:-0}" = 1 ]; then
		skip "make distcheck (EZ_SKIP_DISTCHECK=1)"
		skip "the tarball holds every tracked file (EZ_SKIP_DISTCHECK=1)"
		return
	fi
	say "make distcheck"
	t=$SECONDS
	pass_fail "make distcheck" timeout 1200 make -C "$build" -j2 distcheck
	echo "(distcheck: $((SECONDS - t)) s)"
	local version
	version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")
	pass_fail "the tarball holds every tracked file" \
		"$top/tests/check-dist.sh" "$build/easyrdma-$version.tar.gz" "$top"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
distcheck
tier_status
