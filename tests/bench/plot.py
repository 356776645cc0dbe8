#!/usr/bin/env python3
"""plot.py: the benchmark figures as pictures (gnuplot, SVG) for doc/performance.md.

Usage: plot.py [--compare JSON] [--insn JSON] OUTDIR

--compare: tests/bench/compare's JSON (doc/performance.json): writes
  lat_cdf.svg   64 B ping-pong latency CDF, easyrdma against ib_send_lat (the
                first round's samples, "cdf" in the JSON; skipped with a note
                when the JSON has none)
  rate_bw.svg   message rate and bandwidth, easyrdma against each anchor (bars)
  conn_setup.svg  time per connection against the number of connections N
--insn: tests/bench/insn's JSON: insn.svg, instructions per message by object,
  easyrdma against raw verbs, per case (stacked bars).
Prints each file it wrote; exits 1 when gnuplot is missing or a plot failed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def gnuplot(script, out):
    """Runs a gnuplot script writing OUT; True when OUT is a non-empty SVG."""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0 or not os.path.exists(out) or os.path.getsize(out) == 0:
        sys.stderr.write(f"plot.py: gnuplot failed for {out}: {r.stderr.strip()}\n")
        return False
    print(f"plot.py: wrote {out}")
    return True


HEAD = 'set terminal svg size 800,480 dynamic enhanced font "sans,12" background rgb "white"\n'


def q(s):
    """A gnuplot string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def lat_cdf(cmp, outdir, tmp):
    cdf = cmp.get("cdf") or {}
    sides = [s for s in ("easyrdma", "ib_send_lat") if s in cdf and cdf[s]["samples"]]
    if not sides:
        print("plot.py: no latency samples in the JSON (a compare run before the CDF existed): lat_cdf.svg not written")
        return True
    plots = []
    for side in sides:
        xs = sorted(cdf[side]["samples"])
        path = os.path.join(tmp, f"cdf-{side}.dat")
        with open(path, "w") as f:
            for i, x in enumerate(xs):
                f.write(f"{x} {(i + 1) / len(xs)}\n")
        label = "easyrdma (ezbench --poll spin)" if side == "easyrdma" else "ib\\_send\\_lat (raw verbs)"
        plots.append(f"{q(path)} using 1:2 with steps lw 2 title {q(label)}")
    out = os.path.join(outdir, "lat_cdf.svg")
    return gnuplot(HEAD + f"""set output {q(out)}
set title "64 B ping-pong, half round trip (Soft-RoCE, TCG VM)"
set xlabel "latency (us)"
set ylabel "fraction of messages"
set logscale x
set yrange [0:1]
set grid
set key bottom right
plot {", ".join(plots)}
""", out)


def rows_by_metric(cmp):
    return {r["metric"]: r for r in cmp.get("rows", [])}


def short_anchor(text):
    """The anchor's tool name: the first word of its description."""
    return text.split()[0].replace("_", "\\_") if text else "anchor"


def rate_bw(cmp, outdir, tmp):
    rows = rows_by_metric(cmp)
    panels = [("rate", "message rate, 64 B (Mpps)", ["rate_64", "rate_64_ucx", "rate_64_srq"]),
              ("bw", "bandwidth, 64 KiB (MiB/s)", ["bw_64k_write", "bw_64k_send"])]
    drawn = []
    for name, ylabel, metrics in panels:
        path = os.path.join(tmp, f"{name}.dat")
        n = 0
        with open(path, "w") as f:
            for m in metrics:
                r = rows.get(m)
                if not r or r.get("ez_median") is None or r.get("anchor_median") is None:
                    continue    # a row one side could not measure is in the table, not drawn
                label = m.replace("_", "\\_") + " vs " + short_anchor(r.get("anchor", ""))
                f.write(f"{q(label)} {r['ez_median']} {r['anchor_median']}\n")
                n += 1
        if n:
            drawn.append((path, ylabel))
    if not drawn:
        print("plot.py: no rate or bandwidth rows with both sides in the JSON: rate_bw.svg not written")
        return True
    out = os.path.join(outdir, "rate_bw.svg")
    script = HEAD.replace("800,480", f"{500 * len(drawn)},480") + f"set output {q(out)}\n"
    script += f"""set multiplot layout 1,{len(drawn)} title "easyrdma against its anchors (medians of the rounds)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set xtics rotate by -20 left
set key top left
"""
    for path, ylabel in drawn:
        script += f"""set title {q(ylabel)}
set ylabel {q(ylabel)}
plot {q(path)} using 2:xtic(1) title "easyrdma", '' using 3 title "anchor"
"""
    script += "unset multiplot\n"
    return gnuplot(script, out)


def conn_setup(cmp, outdir, tmp):
    rows = rows_by_metric(cmp)
    series = {"easyrdma, serial (ez\\_connect .. on\\_connect, close)": [],
              "rdma\\_cm serial (cmserial)": [],
              "easyrdma, N at once": [],
              "rdma\\_cm N at once (cmtime)": []}
    for m, r in rows.items():
        g = re.fullmatch(r"conn_(\d+)_(per_conn_ms|async_per_conn_ms)", m)
        if not g or r.get("ez_median") is None:
            continue
        n = int(g.group(1))
        if g.group(2) == "per_conn_ms":
            series["easyrdma, serial (ez\\_connect .. on\\_connect, close)"].append((n, r["ez_median"]))
            if r.get("anchor_median") is not None:
                series["rdma\\_cm serial (cmserial)"].append((n, r["anchor_median"]))
        else:
            series["easyrdma, N at once"].append((n, r["ez_median"]))
            if r.get("anchor_median") is not None:
                series["rdma\\_cm N at once (cmtime)"].append((n, r["anchor_median"]))
    plots = []
    for i, (title, pts) in enumerate(series.items()):
        if not pts:
            continue
        path = os.path.join(tmp, f"conn{i}.dat")
        with open(path, "w") as f:
            for n, v in sorted(pts):
                f.write(f"{n} {v}\n")
        plots.append(f"{q(path)} using 1:2 with linespoints lw 2 pt 7 title {q(title)}")
    if not plots:
        print("plot.py: no connection rows in the JSON: conn_setup.svg not written")
        return True
    out = os.path.join(outdir, "conn_setup.svg")
    return gnuplot(HEAD + f"""set output {q(out)}
set title "connection setup: time per connection against N (Soft-RoCE, TCG VM)"
set xlabel "connections (N)"
set ylabel "ms per connection"
set logscale x
set yrange [0:*]
set grid
set key top right
plot {", ".join(plots)}
""", out)


def insn_rows(ins):
    """Rows of {"case", "side", "objects": {object: instructions per message}}
    from tests/bench/insn's JSON (its "after" run, or the run itself): per case
    easyrdma and its anchor, each the fit's per-message work where the case had
    a fit, else the figure with empty polls excluded, else the plain per-message
    count. A simple {"rows": [{"case", "side", "objects"}]} passes through."""
    run = ins.get("after", ins)
    out = []
    for r in run.get("rows", []):
        if "objects" in r:
            out.append(r)
            continue
        for key, name in (("ez", "easyrdma"), ("anchor", r.get("anchor_name") or "raw verbs")):
            side = r.get(key) or {}
            if not side.get("ok"):
                continue
            if "fit" in side:
                objs = {o: v["msg"] for o, v in side["fit"].items()}
            else:
                objs = side.get("excl_polls") or side.get("per_msg") or {}
            objs = {o: round(v) for o, v in objs.items() if o != "total" and v >= 0.5}
            if objs:
                case = f"{r.get('case', '?')} {r.get('side', '')}".strip()
                out.append({"case": case, "side": name, "objects": objs})
    return out


def insn(ins, outdir, tmp):
    """instructions per message by object, stacked, per case and side."""
    rows = insn_rows(ins)
    objs = []
    for r in rows:
        for o in r.get("objects", {}):
            if o not in objs:
                objs.append(o)
    if not rows or not objs:
        print("plot.py: no rows in the instruction JSON: insn.svg not written")
        return True
    path = os.path.join(tmp, "insn.dat")
    with open(path, "w") as f:
        f.write("label " + " ".join(q(o) for o in objs) + "\n")
        for r in rows:
            label = f"{r.get('case', '?')} {r.get('side', '?')}".replace("_", "\\_")
            f.write(q(label) + " " + " ".join(str(r["objects"].get(o, 0)) for o in objs) + "\n")
    cols = ", ".join(f"'' using {i + 2} title {q(o.replace('_', chr(92) + '_'))}" for i, o in enumerate(objs[1:], 1))
    first = f"{q(path)} using 2:xtic(1) title {q(objs[0].replace('_', chr(92) + '_'))}"
    out = os.path.join(outdir, "insn.svg")
    return gnuplot(HEAD.replace("800,480", "1000,560") + f"""set output {q(out)}
set title "user-space instructions per message, by object (callgrind, Soft-RoCE VM)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.7
set key outside right
set grid ytics
set yrange [0:*]
set xtics rotate by -30 left
plot {first}{", " + cols if cols else ""}
""", out)


def main(argv):
    cmp_path = ins_path = None
    args = argv[1:]
    while args and args[0].startswith("--"):
        if args[0] == "--compare" and len(args) > 1:
            cmp_path, args = args[1], args[2:]
        elif args[0] == "--insn" and len(args) > 1:
            ins_path, args = args[1], args[2:]
        else:
            sys.stderr.write(__doc__)
            return 2
    if len(args) != 1 or not (cmp_path or ins_path):
        sys.stderr.write(__doc__)
        return 2
    if not shutil.which("gnuplot"):
        sys.stderr.write("plot.py: gnuplot not found (apt-get install gnuplot-nox)\n")
        return 1
    outdir = args[0]
    os.makedirs(outdir, exist_ok=True)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if cmp_path:
            with open(cmp_path) as f:
                cmp = json.load(f)
            ok &= lat_cdf(cmp, outdir, tmp)
            ok &= rate_bw(cmp, outdir, tmp)
            ok &= conn_setup(cmp, outdir, tmp)
        if ins_path:
            with open(ins_path) as f:
                ok &= insn(json.load(f), outdir, tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
