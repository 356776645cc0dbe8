#!/usr/bin/env bash
# linkdown.sh: the two-VM link-down fault: boots a pair with `testbed pair` and runs linkdown in both (a: server, b: takes its eth0 down).
#
# Usage: tests/faults/linkdown.sh BUILD_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
make -C "$bdir" tests/faults/linkdown >/dev/null || exit 1
exec "$here/../testbed/testbed" pair --timeout "${EZ_TESTBED_TIMEOUT:-300}" --cwd "$bdir" -- \
	timeout --kill-after=10 200 ./tests/faults/linkdown
