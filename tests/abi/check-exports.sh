#!/bin/sh
# check-exports.sh: fails when a function easyrdma.h declares is not exported by libeasyrdma.so, or an exported name is not in the header (lib/libeasyrdma.map lists names by node; doc/abi.md).
top=${srcdir:-.}
so=${top_builddir:-.}/lib/.libs/libeasyrdma.so
[ -f "$so" ] || { echo "no $so (static-only build)"; exit 77; }
hdr=$top/include/easyrdma.h
tmp=${TMPDIR:-/tmp}/check-exports.$$
trap 'rm -f "$tmp".*' EXIT
# Declared functions, less the header's inline wrappers (those are not exported).
sed 's|ez_[a-z0-9_]*([0-9])||g' "$hdr" | grep -oE '\bez_[a-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u >"$tmp.decl"
grep -oE '^static inline [^(]*\bez_[a-z0-9_]+\(' "$hdr" | grep -oE 'ez_[a-z0-9_]+\($' | tr -d '(' |
	sort -u >"$tmp.inline"
comm -23 "$tmp.decl" "$tmp.inline" >"$tmp.want"
# Exported functions at their default version (@@): what a new link binds to.
objdump -T "$so" | awk '$4 == ".text" && $NF ~ /^ez_/ { print $NF }' | sort -u >"$tmp.have"
bad=0
for f in $(comm -23 "$tmp.want" "$tmp.have"); do
	echo "$f is declared in easyrdma.h but not exported: add it to the newest node of lib/libeasyrdma.map"
	bad=1
done
for f in $(comm -13 "$tmp.want" "$tmp.have"); do
	grep -qx "$f" "$tmp.inline" && continue	# an old symbol kept for EASYRDMA_0 binaries
	echo "$f is exported but not declared in easyrdma.h"
	bad=1
done
[ "$bad" -eq 0 ] && echo "the exports match easyrdma.h ($(wc -l <"$tmp.want") functions, $(wc -l <"$tmp.inline") inline wrappers)"
exit $bad
