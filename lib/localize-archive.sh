#!/bin/sh
# lib/localize-archive.sh: rewrites the static library as one relocatable object whose only global definitions are its ez_* names.
# usage: lib/localize-archive.sh ARCHIVE   (environment: LD NM OBJCOPY AR RANLIB, as configure found them)
#
# An archive of separate objects must keep its cross-object calls global, so
# every internal name (cq_poll, pool_create...) would be visible to, and could
# collide with, the application linking it. Linked into one object first
# (ld -r), those calls are resolved inside it and the names can become local.
set -eu
a=$1
: "${LD:=ld}" "${NM:=nm}" "${OBJCOPY:=objcopy}" "${AR:=ar}" "${RANLIB:=ranlib}"
[ -f "$a" ] || { echo "localize-archive.sh: $a: no such archive" >&2; exit 1; }
tmp=$(mktemp -d "$(dirname "$a")/localize.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
o=$tmp/libeasyrdma.o

# Without the linker plugin ld -r links the fat LTO objects' real code; their
# LTO sections would be concatenated into one unreadable blob, so they go.
$LD -r --whole-archive "$a" -o "$o"
$OBJCOPY --remove-section='.gnu.lto_*' --remove-section='.gnu.debuglto_*' "$o"
# Hidden names are the internals (-fvisibility=hidden); of the rest only ez_* stays global.
$NM -g --defined-only "$o" | awk 'NF == 3 && $3 ~ /^ez_/ { print $3 }' >"$tmp/keep"
[ -s "$tmp/keep" ] || { echo "localize-archive.sh: $a defines no ez_* symbol" >&2; exit 1; }
$OBJCOPY --localize-hidden --keep-global-symbols="$tmp/keep" "$o"
$AR cr "$tmp/new.a" "$o"
$RANLIB "$tmp/new.a"
# A program linking the old archive right now keeps reading its inode.
mv -f "$tmp/new.a" "$a"
