#!/usr/bin/env bash
# deadpeer.sh: two-VM dead-peer detection: boots a pair with `testbed pair` and runs deadpeer in both (b: the server, takes its eth0 down; a: checks that its keepalive, transport and op_timeout_ms connections each end within their bound).
#
# Usage: tests/faults/deadpeer.sh BUILD_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
make -C "$bdir" tests/faults/deadpeer >/dev/null || exit 1
exec "$here/../testbed/testbed" pair --timeout "${EZ_TESTBED_TIMEOUT:-300}" --cwd "$bdir" -- \
	timeout --kill-after=10 150 ./tests/faults/deadpeer
