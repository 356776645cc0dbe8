#!/bin/sh
# check-man-pages.sh: fails when a public function of easyrdma.h has no man page in doc/man3.
top=${srcdir:-.}
missing=0
for f in $(grep -oE '\bez_[a-z0-9_]+[[:space:]]*\(' "$top/include/easyrdma.h" | tr -d '( \t' | sort -u); do
	if [ ! -f "$top/doc/man3/$f.3" ]; then
		echo "no man page for $f: expected doc/man3/$f.3"
		missing=$((missing + 1))
	fi
done
# Every page must be listed for installation, or make install would drop it.
for p in "$top"/doc/man3/*.3; do
	name=doc/man3/$(basename "$p")
	grep -rqF "$name" "$top"/doc/local.mk "$top"/lib/*/local.mk "$top"/lib/local.mk 2>/dev/null ||
		{ echo "$name is not listed in any local.mk (dist_man3_MANS)"; missing=$((missing + 1)); }
done
[ "$missing" -eq 0 ] && echo "every public function has a listed man page"
exit $((missing > 0))
