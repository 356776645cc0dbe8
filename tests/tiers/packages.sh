#!/usr/bin/env bash
# tests/tiers/packages.sh: install it like rdma-core: make install's files, then the Debian
# packages built from the tree (tests/packaging/build-debs.sh, lintian with no error),
# installed on this machine, hello.c built against them with pkg-config and CMake and run
# on the device (tests/packaging/check-installed.sh), then removed again.
# usage: tests/tiers/packages.sh      (as root: it installs and purges the packages)
set -uo pipefail
# shellcheck source=tests/tiers/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pkgs=(libeasyrdma1 libeasyrdma-dev easyrdma-tools)

# make install writes the pkg-config and CMake files with the configured paths.
make_install_files() {
	local d libdir inc
	d=$(mktemp -d "${TMPDIR:-/tmp}/ez-destdir.XXXXXX") || return 1
	libdir=$(sed -n 's/^libdir = //p' "$build/Makefile")
	libdir=${libdir/\$\{exec_prefix\}/$(sed -n 's/^exec_prefix = //p' "$build/Makefile")}
	libdir=${libdir/\$\{prefix\}/$(sed -n 's/^prefix = //p' "$build/Makefile")}
	inc=$(sed -n 's/^includedir = //p' "$build/Makefile")
	inc=${inc/\$\{prefix\}/$(sed -n 's/^prefix = //p' "$build/Makefile")}
	make -C "$build" install DESTDIR="$d" > "$d.log" 2>&1 || { tail -20 "$d.log"; rm -rf "$d" "$d.log"; return 1; }
	local st=0 f
	for f in "$libdir/cmake/easyrdma/easyrdma-config.cmake" \
		 "$libdir/cmake/easyrdma/easyrdma-config-version.cmake" \
		 "$libdir/pkgconfig/easyrdma.pc" "$inc/easyrdma.h"; do
		[ -s "$d$f" ] || { echo "make install wrote no $f"; st=1; }
	done
	grep -q "^set(_easyrdma_libdir \"$libdir\")$" "$d$libdir/cmake/easyrdma/easyrdma-config.cmake" ||
		{ echo "easyrdma-config.cmake does not name libdir $libdir"; st=1; }
	[ $st = 0 ] && echo "make install: pkg-config and CMake files in $libdir"
	rm -rf "$d" "$d.log"
	return $st
}

purge() { apt-get purge -y "${pkgs[@]}" > /dev/null 2>&1 || true; }

packages() {
	local t=$SECONDS out multiarch
	if [ "${EZ_SKIP_PACKAGES:-0}" = 1 ]; then
		skip "Debian packages (EZ_SKIP_PACKAGES=1)"
		return
	fi
	say "make install: the pkg-config and CMake files"
	pass_fail "make install (pkg-config, CMake files)" make_install_files
	say "Debian packages: dpkg-buildpackage, lintian"
	out=$(mktemp -d "${TMPDIR:-/tmp}/ez-debs-out.XXXXXX") || return
	# The unit tier ran the tests dh_auto_test would run.
	if DEB_BUILD_OPTIONS="nocheck parallel=2" "$top/tests/packaging/build-debs.sh" "$out"; then
		result pass "Debian packages build, lintian without error"
	else
		result fail "Debian packages build, lintian without error"
		rm -rf "$out"
		return
	fi
	say "Debian packages installed: hello.c with pkg-config and CMake, on the device"
	purge
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	if apt-get install -y "$out"/libeasyrdma1_*.deb "$out"/libeasyrdma-dev_*.deb \
		"$out"/easyrdma-tools_*.deb > "$out/apt.log" 2>&1; then
		pass_fail "hello.c against the installed packages (pkg-config, CMake)" \
			"$top/tests/packaging/check-installed.sh" "/usr/lib/$multiarch"
		pass_fail "packages: ezrdma, its man page and the man3 pages installed" \
			sh -c 'command -v ezrdma >/dev/null &&
				dpkg -L easyrdma-tools | grep -q "/man1/ezrdma\.1" &&
				dpkg -L libeasyrdma-dev | grep -q "/man3/ez_connect\.3"'
	else
		tail -20 "$out/apt.log"
		result fail "hello.c against the installed packages (pkg-config, CMake)"
	fi
	purge
	rm -rf "$out"
	echo "(packages: $((SECONDS - t)) s)"
}

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
tier_begin
packages
tier_status
