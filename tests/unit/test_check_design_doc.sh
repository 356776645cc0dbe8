#!/bin/sh
# tests/unit/test_check_design_doc.sh: tests/check-design-doc.py on copies of this tree, clean and with one drift planted in each.
# usage: tests/unit/test_check_design_doc.sh   (make check runs it; needs python3)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
script=$top/tests/check-design-doc.py
command -v python3 >/dev/null 2>&1 || { echo "test_check_design_doc: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0

# copy NAME: the files the checker reads, copied (lib, include, the page, the
# layer table) or linked (the folders only searched for file names).
copy() {
	t=$tmp/$1
	mkdir -p "$t/doc" "$t/tests"
	cp -R "$top/lib" "$top/include" "$t/"
	cp "$top/doc/design.md" "$t/doc/"
	cp "$top/tests/check-layers.py" "$t/tests/"
	chmod -R u+w "$t"	# make distcheck's source tree is read-only, and so the copies
	for d in tests/unit tests/integration tests/faults tools samples; do
		[ -d "$top/$d" ] && ln -s "$top/$d" "$t/$d"
	done
	echo "$t"
}

# edit FILE SED-SCRIPT: edits a copied file in place, and fails the test if nothing changed.
edit() {
	cp "$1" "$1.orig"
	sed "$2" "$1.orig" >"$1"
	if cmp -s "$1" "$1.orig"; then
		echo "FAIL planting: '$2' changed nothing in $1"
		fails=$((fails + 1))
	fi
}

# expect NAME CODE TREE PATTERN...: the checker on TREE exits CODE and prints every PATTERN (grep -E).
expect() {
	name=$1 code=$2 tree=$3
	shift 3
	n=$((n + 1))
	out=$(python3 "$script" "$tree" 2>&1)
	st=$?
	ok=1
	[ "$st" -eq "$code" ] || { echo "FAIL $name: exit $st, want $code"; ok=0; }
	for pat in "$@"; do
		printf '%s\n' "$out" | grep -Eq -- "$pat" || { echo "FAIL $name: no line matches: $pat"; ok=0; }
	done
	if [ $ok = 1 ]; then
		echo "ok   $name"
	else
		fails=$((fails + 1))
		printf '%s\n' "$out" | sed 's/^/     | /'
	fi
}

t=$(copy clean)
expect "this tree passes" 0 "$t" '^design doc: [0-9]+ states, [0-9]+ events, 7 layers, [0-9]+ files, 0 problems$'

t=$(copy count)
edit "$t/doc/design.md" 's/[0-9][0-9]* states (`enum conn_state`)/14 states (`enum conn_state`)/'
expect "a wrong state count fails" 1 "$t" \
	'^doc/design.md: says 14 states \(`enum conn_state`\); lib/conn/conn_fsm.h has [0-9]+$' ', 1 problems$'

t=$(copy newstate)
edit "$t/lib/conn/conn_fsm.h" 's/^\tCS_COUNT$/\tCS_PARKED,\n\tCS_COUNT/'
expect "a state added to the code alone fails" 1 "$t" \
	'^doc/design.md: says [0-9]+ states \(`enum conn_state`\); lib/conn/conn_fsm.h has [0-9]+$' \
	'^doc/design.md: the drawing lacks state PARKED \(CS_PARKED\)$'

t=$(copy rename)
edit "$t/doc/design.md" 's/| REQ_SENT /| REQ_POSTED /'
expect "a renamed event in the drawing fails" 1 "$t" \
	'^doc/design.md: the drawing lacks event REQ_SENT \(CE_REQ_SENT\)$' \
	'^doc/design.md: the drawing names REQ_POSTED, which lib/conn/conn_fsm.h has not'

t=$(copy star)
edit "$t/doc/design.md" 's/| REPLY_OK \*/| REPLY_OK  /'
expect "an unstarred report-up transition fails" 1 "$t" \
	'^doc/design.md: the drawing does not star REPLY_OK, whose row in lib/conn/conn_fsm.c has CA_REPORT_UP$'

t=$(copy action)
edit "$t/doc/design.md" 's/`CA_CLOSE`/`CA_CLOSE_NOW`/'
expect "a CA_ name the header lacks fails" 1 "$t" \
	'^doc/design.md: names CA_CLOSE_NOW, which lib/conn/conn_fsm.h does not declare$'

t=$(copy newfile)
echo '/* newcodec.c: nothing yet. */' >"$t/lib/wire/newcodec.c"
expect "a lib/ file the page does not name fails" 1 "$t" \
	"^lib/wire/newcodec.c: not named in doc/design.md's \"The layers in one picture\""

t=$(copy gone)
edit "$t/doc/design.md" 's/`lib\/conn\/conn_export.c`/`lib\/conn\/export_gone.c`/'
expect "a path that no longer exists fails" 1 "$t" \
	'^doc/design.md: names lib/conn/export_gone.c, which does not exist$'

t=$(copy layers)
edit "$t/tests/check-layers.py" "s/'loop': \['base'\]/'loop': ['base', 'wire']/"
expect "a layer rule changed in check-layers.py alone fails" 1 "$t" \
	'^doc/design.md: lib/loop/ may include "base" says the table; tests/check-layers.py says "base, wire"$'

echo "test_check_design_doc: $((n - fails)) of $n passed"
[ $fails -eq 0 ]
