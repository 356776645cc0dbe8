#!/usr/bin/env bash
# lossy.sh: large messages over a lossy link: boots a pair with `testbed pair`, makes each VM's eth0 drop EZ_LOSS of its packets (netem, default 0.1 %) and runs lossy in both (a: server, b: client).
#
# Usage: tests/faults/lossy.sh BUILD_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
make -C "$bdir" tests/faults/lossy >/dev/null || exit 1
loss=${EZ_LOSS:-0.1%}
# The qdisc is the guest's own (the test bed loads sch_netem); a VM that
# cannot drop packets fails the test rather than pass it on a clean link.
exec "$here/../testbed/testbed" pair --timeout "${EZ_TESTBED_TIMEOUT:-900}" --cwd "$bdir" -- \
	sh -c "tc qdisc add dev eth0 root netem loss $loss || { echo 'lossy: tc qdisc add dev eth0 root netem loss $loss failed'; exit 1; }
	tc qdisc show dev eth0
	exec timeout --kill-after=10 800 ./tests/faults/lossy"
