#!/usr/bin/env bash
# tests/tiers/build.sh: bootstraps, configures in ./build and builds the library, the programs and the integration tier's programs.
# usage: tests/tiers/build.sh [demo]   (demo: only the library and the two programs ./dev.sh demo runs)
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# autoreconf when configure is missing: once it exists, make reruns autoconf,
# automake and config.status itself when their sources change.
build_tree() {
	if [ ! -x configure ]; then
		say "autoreconf -fi"
		timeout 600 autoreconf -fi || die "autoreconf failed"
	fi
	mkdir -p "$build"
	if [ ! -f "$build/Makefile" ]; then
		say "configure (in build/)"
		(cd "$build" && timeout 600 ../configure) || die "configure failed"
	fi
	if [ "${1:-}" = demo ]; then
		# The demo needs the library and two samples, not the ~60 test
		# programs (those took 6 min of a fresh machine's first demo).
		say "make -j2 samples/rpc_server samples/rpc_client"
		timeout 1800 make -C "$build" -j2 samples/rpc_server samples/rpc_client ||
			die "make failed"
		return
	fi
	say "make -j2"
	timeout 1800 make -C "$build" -j2 || die "make failed"
	timeout 1800 make -C "$build" -j2 integration-programs || die "make integration-programs failed"
}

case ${1:-} in
""|demo) build_tree "${1:-}" ;;
*) echo "usage: $0 [demo]" >&2; exit 2 ;;
esac
