#!/usr/bin/env bash
# tests/tiers/install-packages.sh: installs the Debian packages the build and every tier need, only those dpkg lacks.
# usage: tests/tiers/install-packages.sh [demo]   (as root when something is missing; a warm machine skips apt; demo: only what ./dev.sh demo needs)
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# python3: make check runs tests/check-layers.py and tests/check-design-doc.py; debhelper, lintian, cmake: the
# packages tier (Debian packages, the CMake package config); gnuplot-nox: the
# benchmark's pictures (tests/bench/plot.py, checked by make check); valgrind:
# the instruction budget (tests/tiers/insn-budget.sh, callgrind); perftest is
# its anchor too. man-db: doc/check-doc-examples.sh renders every man page.
# linux-image-6.12-amd64: Debian 12's second kernel line, a newer rxe, which
# tests/tiers/kernel612.sh boots (the test bed's default stays linux-image-amd64's).
PACKAGES="build-essential autoconf automake libtool pkg-config libev-dev check
	rdma-core ibverbs-providers libibverbs-dev librdmacm-dev libssl-dev ibverbs-utils
	rdmacm-utils perftest qemu-system-x86 linux-image-amd64 linux-image-6.12-amd64
	busybox-static kmod
	iproute2 tcpdump clang xz-utils python3 debhelper lintian cmake
	gnuplot-nox valgrind man-db"

# What the demo needs: the build (configure checks for check too) and the
# Soft-RoCE VM of the test bed.
DEMO_PACKAGES="build-essential autoconf automake libtool pkg-config libev-dev check
	rdma-core ibverbs-providers libibverbs-dev librdmacm-dev libssl-dev ibverbs-utils
	rdmacm-utils qemu-system-x86 linux-image-amd64 busybox-static kmod iproute2"

install_packages() {
	local p missing=""
	for p in $1; do
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	say "installing:$missing"
	[ "$(id -u)" = 0 ] || die "packages missing:$missing (run as root, or apt-get install them)"
	export DEBIAN_FRONTEND=noninteractive
	timeout 900 apt-get update -q || die "apt-get update failed"
	# shellcheck disable=SC2086
	timeout 1800 apt-get install -y -q --no-install-recommends $missing ||
		die "apt-get install failed"
}

case ${1:-} in
"") install_packages "$PACKAGES" ;;
demo) install_packages "$DEMO_PACKAGES" ;;
*) echo "usage: $0 [demo]" >&2; exit 2 ;;
esac
