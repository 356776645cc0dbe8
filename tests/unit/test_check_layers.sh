#!/bin/sh
# tests/unit/test_check_layers.sh: tests/check-layers.py on small fake trees (clean, cycle, wire->device, unknown folder; the owner rule: a planted write, its marker, the baseline, type resolution, the report).
# usage: tests/unit/test_check_layers.sh   (make check runs it; needs python3)
set -u
script=$(cd "$(dirname "$0")/.." && pwd)/check-layers.py
command -v python3 >/dev/null 2>&1 || { echo "test_check_layers: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0

# file TREE PATH LINE...: writes PATH under TREE, one argument per line.
file() {
	t=$1 p=$2
	shift 2
	mkdir -p "$(dirname "$t/$p")"
	printf '%s\n' "$@" >"$t/$p"
}

# A tree that follows every rule: base, wire over base, device over wire and qpfsm, conn over all.
clean_tree() {
	t=$tmp/$1
	file "$t" include/easyrdma.h '/* public */'
	file "$t" lib/base/error.h '#include <errno.h>'
	file "$t" lib/base/error.c '#include "config.h"' '#include "error.h"' '#include "easyrdma.h"'
	file "$t" lib/wire/handshake.h '#include "base/error.h"'
	file "$t" lib/wire/handshake.c '#include "handshake.h"' '/* #include "device/device.h" */'
	file "$t" lib/qpfsm/qpfsm.h '#include "base/error.h"'
	file "$t" lib/device/device.h '#include "qpfsm/qpfsm.h"' '#include "wire/handshake.h"'
	file "$t" lib/device/device.c '#include "device.h"'
	file "$t" lib/conn/conn.h '#include "device/device.h"'
	file "$t" lib/conn/conn.c '#include "conn.h"' '#include "wire/handshake.h"' '#include <stdio.h>'
	echo "$t"
}

# expect NAME CODE TREE PATTERN...: check-layers.py on TREE exits CODE and prints every PATTERN (grep -E).
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

t=$(clean_tree clean)
expect "clean tree passes" 0 "$t" '^layers: 9 files, 0 violations, 0 cycles$'

t=$(clean_tree cycle)
file "$t" lib/conn/ctx.h '#include "listener.h"'
file "$t" lib/conn/listener.h ''
file "$t" lib/conn/listener.c '#include "conn.h"'
file "$t" lib/conn/conn.c '#include "ctx.h"'
file "$t" lib/conn/ctx.c '#include "ctx.h"'
expect "a cycle fails, naming its units and includes" 1 "$t" \
	'^cycle among 3 units \(lib/conn/conn lib/conn/ctx lib/conn/listener\): lib/conn/conn -> lib/conn/ctx -> lib/conn/listener -> lib/conn/conn$' \
	'^  lib/conn/conn.c:1 includes "ctx.h"$' \
	'^  lib/conn/ctx.h:1 includes "listener.h"$' \
	'^  lib/conn/listener.c:1 includes "conn.h"$' \
	', 0 violations, 1 cycles$'

t=$(clean_tree updown)
file "$t" lib/wire/auth.c '#include "base/error.h"' '#include "device/device.h"'
expect "wire including device fails" 1 "$t" \
	'^lib/wire/auth.c:2: #include "device/device.h" \(lib/device/device.h\): lib/wire may not include lib/device \(lib/wire may include: lib/base\)$' \
	', 1 violations, 0 cycles$'

# A private header without a .c of its own (srqpool/pool.h) is no unit:
# srqpool.c -> pool.h -> srqpool.h is srqpool including itself.
t=$(clean_tree private)
file "$t" lib/srqpool/srqpool.h ''
file "$t" lib/srqpool/pool.h '#include "srqpool.h"'
file "$t" lib/srqpool/srqpool.c '#include "pool.h"'
file "$t" lib/srqpool/share.c '#include "pool.h"'
expect "a private header makes no cycle" 0 "$t" ', 0 violations, 0 cycles$'

t=$(clean_tree unknown)
file "$t" lib/misc/util.c '#include "base/error.h"'
file "$t" lib/log.h '#include "base/error.h"'
file "$t" lib/conn/conn.c '#include "misc/util.h"' '#include "log.h"'
file "$t" lib/misc/util.h ''
expect "an unknown folder fails" 1 "$t" \
	'^lib/misc/util.c: lib/misc is not in the layer table' \
	'^lib/log.h: lib/ \(top\) is not in the layer table' \
	'^lib/conn/conn.c:1: #include "misc/util.h" \(lib/misc/util.h\): lib/misc is not in the layer table$' \
	'^lib/conn/conn.c:2: #include "log.h" \(lib/log.h\): lib/ \(top\) is not in the layer table$'

t=$(clean_tree missing)
file "$t" lib/base/error.c '#include "nowhere.h"'
expect "an include that resolves nowhere fails" 1 "$t" \
	'^lib/base/error.c:1: #include "nowhere.h": found neither beside the file nor under include/ or lib/$'

# The owner rule. struct ez_conn is conn.c's (ez_ stripped); struct other and
# struct slot have no file of their name, so no owner.
owner_tree() {
	t=$(clean_tree "$1")
	file "$t" lib/conn/conn_types.h 'struct slot { int kind; };' \
		'struct ez_conn {' '	int npaths, posted;' '	struct slot bye;	/* by value */' '	struct slot *free;' '};' \
		'struct other { int posted; struct other *next; };'
	file "$t" lib/conn/conn.c '#include "conn_types.h"' \
		'void conn_set(struct ez_conn *conn)' '{' '	conn->npaths = 1;' '	conn->posted = 0;' '}'
	file "$t" lib/conn/msg.c '#include "conn_types.h"' \
		'int msg_post(struct ez_conn *conn, struct other *o)' '{' \
		'	o->posted++;	/* struct other: no owner */' '	conn->free->kind = 1;	/* struct slot through a pointer */' \
		'	return conn->posted == 0;' '}'
	echo "$t"
}

t=$(owner_tree owner_clean)
expect "owner rule: reads, the owner's writes, ownerless structs pass" 0 "$t" \
	'^owners: 3 structs, 1 owned, 2 without an owner file \(skipped\); 0 field writes outside the owner: 0 in the baseline, 0 new, 0 exempt; 0 ambiguous \(not checked\)$' \
	'^layers: 11 files, 0 violations, 0 cycles$'

t=$(owner_tree owner_planted)
file "$t" lib/conn/keepalive.c '#include "conn_types.h"' \
	'static void ka_tick(struct ez_conn *conn)' '{' '	conn->npaths = 3;' '	conn->bye.kind = 2;' '}'
expect "owner rule: a planted write from another file fails, naming file:line, field, owner" 1 "$t" \
	"^lib/conn/keepalive.c:4: conn->npaths written outside its owner: ez_conn.npaths is lib/conn/conn.c's \\(not in tests/owner-baseline.txt; " \
	"^lib/conn/keepalive.c:5: conn->bye.kind written outside its owner: ez_conn.bye is lib/conn/conn.c's" \
	'; 2 field writes outside the owner: 0 in the baseline, 2 new, 0 exempt; '
n=$((n + 1))
out=$(python3 "$script" --owner-report "$t" 2>&1)
if printf '%s\n' "$out" | grep -Eq '^ez_conn +lib/conn/conn.c +4 +3 +2 +1 +2$' &&
   printf '%s\n' "$out" | grep -Eq '^  npaths +2  conn.c keepalive.c$'; then
	echo "ok   owner rule: --owner-report counts fields and writers per field"
else
	echo "FAIL owner rule: --owner-report counts fields and writers per field"
	fails=$((fails + 1))
	printf '%s\n' "$out" | sed 's/^/     | /'
fi

t=$(owner_tree owner_marked)
file "$t" lib/conn/keepalive.c '#include "conn_types.h"' \
	'static void ka_tick(struct ez_conn *conn)' '{' '	conn->npaths = 3;	/* owner: the test says why */' \
	'	/* owner: and a comment line just above says why too */' '	conn->posted++;' '}'
expect "owner rule: /* owner: why */ on the line or just above allows the write" 0 "$t" \
	'; 2 field writes outside the owner: 0 in the baseline, 0 new, 2 exempt; '

t=$(owner_tree owner_baseline)
file "$t" tests/owner-baseline.txt '# header' 'ez_conn.posted lib/conn/keepalive.c 1'
file "$t" lib/conn/keepalive.c '#include "conn_types.h"' \
	'static void ka_tick(struct ez_conn *conn)' '{' '	conn->posted--;' '}'
expect "owner rule: a write in the baseline passes" 0 "$t" \
	'; 1 field writes outside the owner: 1 in the baseline, 0 new, 0 exempt; '
file "$t" lib/conn/keepalive.c '#include "conn_types.h"' \
	'static void ka_tick(struct ez_conn *conn)' '{' '	conn->posted--;' '	conn->posted -= 2;' '}'
expect "owner rule: more writes of a pair than the baseline allows fails" 1 "$t" \
	"^lib/conn/keepalive.c:5: conn->posted written outside its owner: ez_conn.posted is lib/conn/conn.c's \\(2 writes in this file, tests/owner-baseline.txt allows 1; "
file "$t" lib/conn/keepalive.c ''
expect "owner rule: fewer writes than the baseline is a note" 0 "$t" \
	'^note: ez_conn.posted in lib/conn/keepalive.c: 0 writes, tests/owner-baseline.txt allows 1 '

t=$(owner_tree owner_types)
file "$t" lib/conn/keepalive.c '#include "conn_types.h"' \
	'static void ka_tick(struct other *c, struct other **pp)' '{' '	struct ez_conn *conn = 0;' \
	'	c->posted = 1;	/* struct other by the declared type: not ez_conn'"'"'s */' \
	'	(*pp)->posted = 2;	/* no type found, two structs have posted */' '	(void)conn;' '}'
expect "owner rule: the declared type decides; a shared field of unknown type is ambiguous, not failing" 0 "$t" \
	'; 0 field writes outside the owner: 0 in the baseline, 0 new, 0 exempt; 1 ambiguous \(not checked\)$'

t=$(owner_tree owner_table)
file "$t" lib/conn/path.h 'struct conn_path { int live; };'
expect "owner rule: an OWNERS entry whose file is gone fails" 1 "$t" \
	'^lib/conn/path.h:1: struct conn_path: OWNERS names lib/conn/path.c, which is not in the tree \(tests/check-layers.py\)$'

echo "test_check_layers: $((n - fails)) of $n passed"
[ $fails -eq 0 ]
