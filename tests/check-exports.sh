#!/bin/sh
# tests/check-exports.sh: fails when the installed libraries would leak a name: libeasyrdma.a or .so
# defining a global symbol other than ez_*, or libezcore's objects (the shared library's objects)
# leaving an internal symbol default-visible.
# usage: tests/check-exports.sh [BUILDDIR]   (default: the current directory, as make check runs it)
set -u
lib=${1:-.}/lib/.libs
NM=${NM:-nm}
status=0 checked=0

# What a toolchain must define: the linker gives the shared library one absolute symbol per
# version node of lib/libeasyrdma.map (EASYRDMA_0, and any later EASYRDMA_n); they name the
# versions, not code, and a program cannot call them.
allowed_so='^A EASYRDMA_[0-9_.]*$'

# defined_globals FILE: "TYPE NAME" for every defined global symbol of FILE.
defined_globals() {
	$NM -g --defined-only "$1" 2>/dev/null | awk 'NF == 3 { print $2, $3 }'
}

# leaks FILE ALLOWED: prints FILE's defined globals that are neither ez_* nor ALLOWED.
leaks() {
	defined_globals "$1" | grep -v '^[^ ]* ez_' | grep -v -e "${2:-^\$}" || true
}

report() {	# report FILE WHAT LIST
	[ -z "$3" ] && return 0
	n=$(printf '%s\n' "$3" | wc -l)
	echo "check-exports: $1: $n $2:"
	printf '%s\n' "$3" | head -20 | sed 's/^/  /'
	status=1
}

if [ -f "$lib/libeasyrdma.a" ]; then
	checked=$((checked + 1))
	report "$lib/libeasyrdma.a" "global symbols not named ez_*" "$(leaks "$lib/libeasyrdma.a")"
fi
if [ -f "$lib/libeasyrdma.so" ]; then
	checked=$((checked + 1))
	report "$lib/libeasyrdma.so" "global symbols not named ez_*" "$(leaks "$lib/libeasyrdma.so" "$allowed_so")"
fi
# The objects themselves: an internal name that is not hidden
# (lib/conn/compat_v0.c's ezi_*_v0 must be default-visible to carry a symbol version, and
# the version script keeps them local to the .so) would be exported by any link
# that forgot the version script. readelf shows the real (not the LTO) symbol table.
if [ -f "$lib/libezcore.a" ]; then
	checked=$((checked + 1))
	visible=$(readelf -sW "$lib/libezcore.a" 2>/dev/null |
		awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" && $7 != "UND" && $8 !~ /^ez_/ &&
			$8 !~ /^ezi_[a-z_]*_v0$/ { print $8 }' |
		sort -u)
	report "$lib/libezcore.a" "internal symbols not hidden (compile with -fvisibility=hidden)" "$visible"
fi
if [ $checked -eq 0 ]; then
	echo "check-exports: no library under $lib (not built?)"
	exit 77
fi
[ $status -eq 0 ] && echo "check-exports: $checked files, only ez_* exported"
exit $status
