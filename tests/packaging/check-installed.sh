#!/usr/bin/env bash
# tests/packaging/check-installed.sh LIBDIR: builds the README's hello.c against
# the easyrdma installed with its library in LIBDIR (the Debian package's
# /usr/lib/<multiarch>, or a make install's), as a user would: once with
# pkg-config and once with CMake (find_package(easyrdma), the shared and the
# static imported target). It checks that pkg-config, CMake and the dynamic
# loader found that installation and no other, then runs the three programs
# on the RDMA device (the test bed) and checks that each printed
# "echoed: hello".
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 LIBDIR" >&2; exit 2; }
libdir=$1
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$top/tests/packaging
work=$(mktemp -d "${TMPDIR:-/tmp}/ez-installed.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "check-installed: $*" >&2; exit 1; }

"$here/extract-hello.sh" "$top/README.md" "$work/hello.c"

# pkg-config, the README's command line.
got=$(pkg-config --variable=libdir easyrdma) || fail "pkg-config does not know easyrdma"
[ "$got" = "$libdir" ] || fail "pkg-config found easyrdma in $got, not $libdir"
# shellcheck disable=SC2046 # the flags are words
cc -o "$work/hello_pc" "$work/hello.c" $(pkg-config --cflags --libs easyrdma) -lev ||
	fail "hello.c does not build with pkg-config"
# (/lib and /usr/lib are one directory on a merged-/usr system: compare real paths.)
loaded=$(ldd "$work/hello_pc" | awk '$1 == "libeasyrdma.so.1" { print $3 }')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$libdir/libeasyrdma.so.1")" ] ||
	fail "hello_pc loads another libeasyrdma: $(ldd "$work/hello_pc" | grep easyrdma)"

# CMake: find_package(easyrdma) and its imported targets.
cmake -S "$here/cmake-hello" -B "$work/cmake" -DHELLO_SOURCE="$work/hello.c" \
	> "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "the CMake project does not configure"; }
grep -q "^easyrdma_DIR:PATH=$libdir/cmake/easyrdma$" "$work/cmake/CMakeCache.txt" ||
	fail "CMake found $(grep '^easyrdma_DIR' "$work/cmake/CMakeCache.txt"), not $libdir/cmake/easyrdma"
cmake --build "$work/cmake" > "$work/cmake-build.log" 2>&1 ||
	{ cat "$work/cmake-build.log"; fail "the CMake project does not build"; }
[ -x "$work/cmake/hello_cmake_static" ] || fail "no easyrdma::easyrdma_static target (libeasyrdma.a not installed?)"
ldd "$work/cmake/hello_cmake_static" | grep -q libeasyrdma && fail "hello_cmake_static loads libeasyrdma.so"
cp "$work/cmake/hello_cmake" "$work/cmake/hello_cmake_static" "$work/"

# On the device: each program echoes its message through the library.
cat > "$work/run.sh" <<'RUN'
#!/bin/sh
for p in hello_pc hello_cmake hello_cmake_static; do
	printf '%s: %s\n' "$p" "$(./$p 2>&1 | tr '\n' ' ')"
done
RUN
chmod +x "$work/run.sh"
"$top/tests/testbed/testbed" run --cwd "$work" --timeout 300 -- ./run.sh | tee "$work/run.log" ||
	fail "the test bed did not run the programs"
for p in hello_pc hello_cmake hello_cmake_static; do
	grep -q "^$p: echoed: hello $" "$work/run.log" || fail "$p did not print 'echoed: hello'"
done
echo "check-installed: hello.c built with pkg-config and CMake against $libdir and ran on the device"
