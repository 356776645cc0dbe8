#!/bin/sh
# tests/bench/test-plot.sh: plot.py draws every picture of doc/performance.md:
# from the committed doc/performance.json with a latency CDF and an instruction
# table added (fixed samples), each SVG exists, is not empty and carries its title.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ez-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

python3 - "$top/doc/performance.json" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["cdf"] = {"easyrdma": {"size": 64, "unit": "us", "samples": [20 + i / 10 for i in range(200)]},
            "ib_send_lat": {"size": 64, "unit": "us", "samples": [18 + i / 12 for i in range(200)]}}
json.dump(d, open(sys.argv[2] + "/compare.json", "w"))
ins = {"rows": [{"case": "pingpong_64_spin", "side": "easyrdma",
                 "objects": {"libeasyrdma": 886, "provider": 300, "libibverbs": 40, "libc": 200}},
                {"case": "pingpong_64_spin", "side": "raw verbs",
                 "objects": {"provider": 300, "libibverbs": 40, "benchmark": 125}}]}
json.dump(ins, open(sys.argv[2] + "/insn.json", "w"))
d.pop("cdf")
json.dump(d, open(sys.argv[2] + "/nocdf.json", "w"))
PY
python3 "$here/plot.py" --compare "$tmp/compare.json" --insn "$tmp/insn.json" "$tmp/out"
st=0
check() {	# check FILE TITLE
	if [ ! -s "$tmp/out/$1" ]; then
		echo "FAIL: $1 missing or empty"; st=1
	elif ! grep -q '<svg' "$tmp/out/$1" || ! grep -qF "$2" "$tmp/out/$1"; then
		echo "FAIL: $1 is no SVG with the title '$2'"; st=1
	else
		echo "ok: $1 ($(wc -c < "$tmp/out/$1") bytes)"
	fi
}
check lat_cdf.svg "64 B ping-pong, half round trip"
check rate_bw.svg "easyrdma against its anchors"
check conn_setup.svg "connection setup: time per connection against N"
check insn.svg "user-space instructions per message, by object"
# A JSON without samples: the CDF is left out and said so, not faked.
python3 "$here/plot.py" --compare "$tmp/nocdf.json" "$tmp/nocdf" > "$tmp/nocdf.log"
if [ -e "$tmp/nocdf/lat_cdf.svg" ] || ! grep -q "no latency samples" "$tmp/nocdf.log"; then
	echo "FAIL: a JSON without samples drew a CDF or did not say so"; st=1
fi
exit $st
