#!/usr/bin/env bash
# tests/packaging/build-debs.sh OUTDIR: builds the Debian packages of the tree
# (dpkg-buildpackage -us -uc -b on a copy of the committed and working files,
# so ./build and the tree stay as they are), puts the .debs in OUTDIR and runs
# lintian on them: it fails on any lintian error (warnings are printed).
# DEB_BUILD_OPTIONS passes through (nocheck skips the unit tests that
# dh_auto_test runs; parallel=N).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ez-debs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The source: what git knows (tracked and new, not ignored), else the whole
# tree without build products.
# The source directory is named for debian/changelog's version.
src="$work/easyrdma-$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)"
mkdir "$src"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard) |
		(cd "$top" && xargs -0 cp --parents -t "$src" 2>/dev/null || true)
	# cp --parents of a deleted but still listed file fails: the copy above
	# tolerates it; a file that matters shows up as a build failure below.
else
	tar -C "$top" --exclude='./build*' --exclude=./autom4te.cache -cf - . | tar -C "$src" -xf -
fi
cd "$src"
echo "build-debs: dpkg-buildpackage -us -uc -b in $work"
dpkg-buildpackage -us -uc -b > "$work/build.log" 2>&1 || {
	tail -n 60 "$work/build.log"
	echo "build-debs: dpkg-buildpackage failed (the log's end is above)" >&2
	exit 1
}
cd "$work"
cp ./*.deb ./*.changes ./*.buildinfo "$out"/
echo "build-debs: packages:"
for d in "$out"/*.deb; do
	printf '  %s (%s KiB)\n' "$(basename "$d")" "$(( $(stat -c %s "$d") / 1024 ))"
done
# lintian: errors fail the build, warnings are shown.
changes=$(ls "$out"/*.changes)
lintian --no-tag-display-limit "$changes" > "$work/lintian.log" 2>&1 || true
cat "$work/lintian.log"
errors=$(grep -c '^E: ' "$work/lintian.log" || true)
warnings=$(grep -c '^W: ' "$work/lintian.log" || true)
echo "build-debs: lintian: $errors error(s), $warnings warning(s)"
[ "$errors" = 0 ]
