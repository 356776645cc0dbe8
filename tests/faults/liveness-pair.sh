#!/usr/bin/env bash
# liveness-pair.sh: two-VM liveness: boots a pair with `testbed pair` and runs liveness_pair in both (a: server; b: storms it, churns 16 lanes against it, then vanishes under idle connections a closes).
#
# Usage: tests/faults/liveness-pair.sh BUILD_DIR
# EZ_CHURN_SECONDS (8) sets a churn round's length (the soak: 60, with
# EZ_LIVENESS_TIMEOUT=900 EZ_TESTBED_TIMEOUT=1000); EZ_CHURN_LANES (16).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -eq 1 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
bdir=$(cd "$1" && pwd) || exit 2
make -C "$bdir" tests/faults/liveness_pair >/dev/null || exit 1
exec "$here/../testbed/testbed" pair --timeout "${EZ_TESTBED_TIMEOUT:-400}" --cwd "$bdir" -- \
	env EZ_CHURN_SECONDS="${EZ_CHURN_SECONDS:-8}" EZ_CHURN_LANES="${EZ_CHURN_LANES:-16}" \
	timeout --kill-after=10 "${EZ_LIVENESS_TIMEOUT:-300}" ./tests/faults/liveness_pair
