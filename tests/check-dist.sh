#!/usr/bin/env bash
# tests/check-dist.sh TARBALL [SRCDIR]: the release tarball holds every file git
# tracks in SRCDIR (default: this tree), but for the few listed below that only
# a git checkout needs. distcheck builds the library, the samples and the unit
# tier from the tarball, not the ~70 device-tier programs (EXTRA_PROGRAMS,
# tests/local.mk): they compile from the same Makefile.am and, with this check,
# from the same files, so a source or header a test needs cannot be missing
# from the tarball without this failing. Exit 1 names every missing file.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 TARBALL [SRCDIR]" >&2; exit 2; }
tarball=$1
src=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
	{ echo "check-dist: $src is not a git checkout: nothing to compare the tarball with" >&2; exit 1; }
# Only a checkout needs these: git's own ignore list, an empty directory's placeholder.
not_distributed='^(\.gitignore|m4/\.keep)$'
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ez-dist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -tzf "$tarball" | sed 's,^[^/]*/,,' | grep -v '/$' | sort -u >"$tmp/tar"
git -C "$src" ls-files | grep -Ev "$not_distributed" | sort -u >"$tmp/git"
comm -23 "$tmp/git" "$tmp/tar" >"$tmp/missing"
n=$(wc -l <"$tmp/missing")
if [ "$n" -ne 0 ]; then
	echo "check-dist: $n tracked file(s) missing from $(basename "$tarball") (add them to EXTRA_DIST or a dist_ variable):" >&2
	sed 's/^/  /' "$tmp/missing" >&2
	exit 1
fi
echo "check-dist: $(basename "$tarball") holds all $(wc -l <"$tmp/git") tracked files"
