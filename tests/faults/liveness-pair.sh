#!/usr/bin/env bash
# liveness-pair.sh: two-VM liveness: boots a pair with `testbed pair` and runs liveness_pair in both (a: server; b: storms it, then vanishes under an idle connection a closes).
#
# Usage: tests/faults/liveness-pair.sh BUILD_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
make -C "$bdir" tests/faults/liveness_pair >/dev/null || exit 1
exec "$here/../testbed/testbed" pair --timeout "${EZ_TESTBED_TIMEOUT:-400}" --cwd "$bdir" -- \
	timeout --kill-after=10 300 ./tests/faults/liveness_pair
