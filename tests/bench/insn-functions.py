#!/usr/bin/env python3
"""insn-functions.py: one object's instructions per message by function, from the callgrind files of tests/bench/insn.

usage: insn-functions.py OUTDIR CASE [SIDE [OBJECT-REGEX]]

SIDE: cli (default) or srv; OBJECT-REGEX: the objects counted (default
libeasyrdma). Per function, the self cost per message: with the busy-peer run
(EZ_INSN_FIT_CASES) the fit I = c + a * messages + b * passes of
insn-summarize.py, so a (per message) and b (per empty poll pass) separate;
else (I(n2) - I(n1)) / (n2 - n1). With the library linked with LTO, a
function's figure holds what was inlined into it.
"""
import importlib.util
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("summ", os.path.join(here, "insn-summarize.py"))
summ = importlib.util.module_from_spec(spec)
spec.loader.exec_module(summ)


def self_cost(path, obrx):
    """-> {function: self cost} of the objects matching obrx"""
    cost = {}
    ob = fn = ""
    skip = False
    with open(path, errors="replace") as f:
        for line in f:
            c0 = line[:1]
            if c0.isdigit() or c0 in "+-*":
                if skip:		# a call's inclusive cost, not self
                    skip = False
                    continue
                p = line.split()
                if len(p) >= 2 and obrx.search(ob):
                    cost[fn] = cost.get(fn, 0) + int(p[1])
            elif line.startswith("ob="):
                ob = summ.strip_id(line[3:])
            elif line.startswith("fn="):
                fn = summ.strip_id(line[3:])
            elif line.startswith("calls="):
                skip = True
    return cost


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        sys.exit(__doc__.strip())
    out, case = a[0], a[1]
    side = a[2] if len(a) > 2 else "cli"
    obrx = re.compile(a[3] if len(a) > 3 else "libeasyrdma")
    runs = {}
    with open(os.path.join(out, "runs.tsv")) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) < 4 or p[0] != case or p[1] != "ez":
                continue
            path = os.path.join(out, "%s.ez.%s.%s.out" % (case, p[2], side))
            if os.path.exists(path):
                calls = summ.parse(path)[1]
                runs[p[2]] = (int(p[3]), summ.passes("ez", calls), self_cost(path, obrx))
    if "n1" not in runs or "n2" not in runs:
        sys.exit("insn-functions: no n1 and n2 runs of %s in %s" % (case, out))
    fns = set()
    for r in runs.values():
        fns |= set(r[2])
    rows = []
    for fn in fns:
        if "busy" in runs:
            s = summ.solve3([(runs[r][0], runs[r][1], runs[r][2].get(fn, 0))
                             for r in ("n1", "n2", "busy")]) or (0.0, 0.0)
        else:
            (n1, _, c1), (n2, _, c2) = runs["n1"], runs["n2"]
            s = ((c2.get(fn, 0) - c1.get(fn, 0)) / (n2 - n1), 0.0)
        rows.append((s[0], s[1], fn))
    rows.sort(reverse=True)
    print("%s %s (%s): per message, per empty pass; passes %s" %
          (case, side, obrx.pattern, {r: v[1] for r, v in runs.items()}))
    for m, p, fn in rows:
        if abs(m) >= 0.5 or abs(p) >= 0.5:
            print("%8.1f %7.1f  %s" % (m, p, fn))
    print("%8.1f %7.1f  total" % (sum(r[0] for r in rows), sum(r[1] for r in rows)))


if __name__ == "__main__":
    main()
