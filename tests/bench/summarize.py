#!/usr/bin/env python3
"""summarize.py: medians and ratios of tests/bench/inside-vm.sh's raw results, as a table and as JSON.

Usage: summarize.py RAW.TSV ENV.TXT JSON_OUT [VM_LINE]
"""
import json
import math
import os
import statistics
import sys

# metric -> (what easyrdma measures, what the anchor measures, unit,
#            "lower" or "higher" is better, target on easyrdma/anchor or None)
METRICS = {}


def _lat(size):
    name = {"2": "2 B", "64": "64 B", "4096": "4 KiB"}[size]
    half = "half round trip, median"
    tgt = ("<=", 1.05) if size == "64" else None
    below = ("<", 1.0) if size == "64" else None
    METRICS[f"lat_{size}_poll"] = (
        f"latency {name}: ezbench --poll spin (EZ_CTX_BUSY_POLL, ez_ctx_process() loop), {half}",
        f"ib_send_lat -s {size} (busy-polls the CQ), t_typical", "us", "lower", tgt)
    METRICS[f"lat_{size}_poll_srq"] = (
        f"latency {name}: ezbench --poll spin (the lat_{size}_poll sample of the same round), {half}",
        f"ib_send_lat --use-srq -s {size} (busy-polls; receives through an SRQ, as easyrdma does), t_typical",
        "us", "lower", None)
    METRICS[f"lat_{size}_poll_cm"] = (
        f"latency {name}: ezbench --poll spin (the lat_{size}_poll sample of the same round), {half}",
        f"ib_send_lat -R -s {size} (busy-polls; its QP connected through rdma_cm, as easyrdma's), t_typical",
        "us", "lower", None)
    METRICS[f"lat_{size}_event"] = (
        f"latency {name}: ezbench --poll event (libev, completion channel), {half}",
        f"ib_send_lat -e -s {size} (completion channel), t_typical", "us", "lower", None)
    METRICS[f"lat_{size}_ucx"] = (
        f"latency {name}: ezbench --poll spin, {half}",
        f"ucx_perftest -t ucp_am_lat -s {size} (UCX_TLS=rc), 50th percentile", "us", "lower", below)
    METRICS[f"lat_{size}_fi"] = (
        f"latency {name}: ezbench --poll spin, {half}",
        f"fi_pingpong -p verbs -e msg -S {size}, usec/xfer", "us", "lower", below)


for _s in ("2", "64", "4096"):
    _lat(_s)
METRICS.update({
    "rate_64": ("message rate 64 B: ezbench --rate (ez_send, private SRQ of 512, window 128), at the sender",
                "ib_send_bw -s 64 (tx 128, rx 512), MsgRate", "Mpps", "higher", (">=", 0.90)),
    "rate_64_event": ("message rate 64 B: ezbench --rate --poll event (libev), otherwise as rate_64",
                      "ib_send_bw -s 64 (the rate_64 sample of the same round)", "Mpps", "higher", None),
    "rate_64_srq": ("message rate 64 B: ezbench --rate --srq (server's shared pool of 512)",
                    "ib_send_bw --use-srq -s 64, MsgRate", "Mpps", "higher", None),
    "rate_64_ucx": ("message rate 64 B: ezbench --rate (as rate_64)",
                    "ucx_perftest -t am_bw -x rc_verbs -s 64, overall msg/s", "Mpps", "higher", (">=", 1.0)),
    "bw_64k_write": ("bandwidth 64 KiB RDMA WRITE: ezbench --bw --op write --poll spin (ez_write, window 128; the target sleeps in libev)",
                     "ib_write_bw -s 65536 (tx 128), BW average", "MiB/s", "higher", (">=", 0.97)),
    "bw_64k_write_event": ("bandwidth 64 KiB RDMA WRITE: ezbench --bw --op write --poll event",
                           "ib_write_bw -s 65536 (the bw_64k_write sample of the same round)", "MiB/s", "higher", None),
    "bw_64k_send_event": ("bandwidth 64 KiB SEND: ezbench --bw --op send --poll event",
                          "ib_send_bw -s 65536 (the bw_64k_send sample of the same round)", "MiB/s", "higher", None),
    "bw_64k_send": ("bandwidth 64 KiB SEND: ezbench --bw --op send (ez_send_mr, window 128, rx 512)",
                    "ib_send_bw -s 65536, BW average", "MiB/s", "higher", None),
    "bw_1m_send": ("bandwidth 1 MiB messages: ezbench --bw --op send --size 1048576 (ez_send_mr by rendezvous:"
                   " header, the receiver's RDMA READ, acknowledgement; window 16, 64 KiB receive buffers)",
                   "ib_send_bw -s 1048576 (1 MiB receive buffers), BW average", "MiB/s", "higher", None),
    "bw_1m_send_ucx": ("bandwidth 1 MiB messages: ezbench --bw --op send --size 1048576 (the bw_1m_send sample)",
                       "ucx_perftest -t ucp_am_bw -s 1048576 (UCX's rendezvous), bandwidth average",
                       "MiB/s", "higher", None),
})
for _n in ("20", "50", "100", "500"):
    # Like with like: one connection after the other on both sides. cmtime
    # has no serial mode; cmserial is its serial loop in plain rdma_cm.
    METRICS[f"conn_{_n}_per_conn_ms"] = (
        f"setup N={_n}: ezbench --conn {_n} --send-depth 16, one after the other: wall time / N"
        " (resolve, route, QP, CM, RTS; the server made its pool before listening)",
        f"cmserial -c {_n} (plain rdma_cm, cmtime's QP, against cmtime's server), one after the"
        " other: wall time / N (create id, resolve, route, QP, connect)",
        "ms", "lower", ("<=", 1.0))
    METRICS[f"conn_{_n}_per_conn_ms_spin"] = (
        f"setup N={_n}: as conn_{_n}_per_conn_ms, both sides busy-polling (--poll spin)",
        f"cmserial -c {_n} (the conn_{_n}_per_conn_ms sample of the same round)",
        "ms", "lower", None)
    # cmtime runs every step for all N connections at once: its time per
    # connection is that of N in flight, which easyrdma's all-at-once run
    # matches.
    METRICS[f"conn_{_n}_async_per_conn_ms"] = (
        f"setup N={_n}: ezbench --conn {_n} --async, all at once: wall time to the last on_connect / N",
        f"cmtime -c {_n}: sum of the steps create id .. connect (each step for all N at once) / N",
        "ms", "lower", ("<=", 1.0))
    METRICS[f"conn_{_n}_async_rate"] = (
        f"setup N={_n}: ezbench --conn {_n} --async, all at once: connections / s",
        f"cmserial -c {_n}: the serial rdma_cm rate, N / wall time",
        "conn/s", "higher", (">=", 2.0))
    METRICS[f"conn_{_n}_async_rate_cmtime"] = (
        f"setup N={_n}: ezbench --conn {_n} --async, all at once: connections / s",
        f"cmtime -c {_n}: N / (sum of the step times create id .. connect)",
        "conn/s", "higher", None)
    METRICS[f"conn_{_n}_async_total_ms"] = (
        f"setup N={_n}: ezbench --conn {_n} --async: wall time to the last on_connect",
        f"cmtime -c {_n}: sum of the steps create id .. connect", "ms", "lower", None)
METRICS["conn_1_cmtime_ms"] = (
    "setup, one connection: ezbench --conn 1 (a new process on each side): ez_connect() .. on_connect(0)",
    "cmtime -c 1 (a new process per connection): sum of the steps create id .. connect",
    "ms", "lower", None)
for _n in ("100", "1000"):
    METRICS[f"mem_{_n}_rx_bytes"] = (
        f"receive memory registered for {_n} connections on one SRQ pool of 4 x {_n} buffers of 4 KiB"
        " (ez_srqpool_stats bytes_registered)",
        f"{_n} connections x their own receive queue of 64 x 4 KiB (private pools)",
        "bytes", "lower", ("<=", 0.10))


def read_cdf(raw):
    """The first round's 64 B latency samples beside RAW.TSV (inside-vm.sh's
    cdf-*.txt: sorted half round trips in us), for plot.py's CDF."""
    cdf = {}
    d = os.path.dirname(os.path.abspath(raw))
    for side in ("easyrdma", "ib_send_lat"):
        try:
            with open(os.path.join(d, f"cdf-{side}.txt")) as f:
                xs = [float(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
        if xs:
            cdf[side] = {"size": 64, "unit": "us", "samples": xs}
    return cdf


def main():
    raw, env, out = sys.argv[1], sys.argv[2], sys.argv[3]
    vm = sys.argv[4] if len(sys.argv) > 4 else ""
    vals, errs, notes, order, by_round = {}, {}, {}, [], {}
    with open(raw) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            m, side, rnd, v = parts[:4]
            detail = parts[4] if len(parts) > 4 else ""
            if m not in order:
                order.append(m)
            key = (m, side)
            if v == "ERROR":
                errs.setdefault(key, []).append(f"round {rnd}: {detail}")
                continue
            try:
                x = float(v)
                if not math.isfinite(x):
                    raise ValueError(v)
                vals.setdefault(key, []).append(x)
                by_round.setdefault(key, {})[rnd] = x
            except ValueError:
                errs.setdefault(key, []).append(f"round {rnd}: unusable value {v!r}")
            if detail:
                notes[key] = detail
    envd = {}
    with open(env) as f:
        for line in f:
            k, _, v = line.partition(":")
            envd[k.strip()] = v.strip()
    if vm:
        envd["vm"] = vm

    rows = []
    for m in order:
        what_ez, what_anchor, unit, better, target = METRICS.get(m, (m, m, "", "lower", None))
        row = {"metric": m, "unit": unit, "better": better, "easyrdma": what_ez, "anchor": what_anchor}
        for side in ("ez", "anchor"):
            v = vals.get((m, side), [])
            row[f"{side}_values"] = v
            row[f"{side}_median"] = statistics.median(v) if v else None
            row[f"{side}_errors"] = errs.get((m, side), [])
            row[f"{side}_note"] = notes.get((m, side), "")
        e, a = row["ez_median"], row["anchor_median"]
        row["ratio"] = e / a if e is not None and a else None
        # Each round's own ratio (both sides measured in that round): the
        # paired view, which drift between rounds does not move.
        ez_r, an_r = by_round.get((m, "ez"), {}), by_round.get((m, "anchor"), {})
        row["round_ratios"] = [ez_r[k] / an_r[k] for k in sorted(ez_r, key=int) if k in an_r and an_r[k]]
        row["round_ratio_median"] = statistics.median(row["round_ratios"]) if row["round_ratios"] else None
        row["target"] = f"{target[0]} {target[1]}" if target else None
        if target and row["ratio"] is not None:
            op, t = target
            row["met"] = row["ratio"] <= t if op == "<=" else row["ratio"] < t if op == "<" else row["ratio"] >= t
        else:
            row["met"] = None
        rows.append(row)

    with open(out, "w") as f:
        json.dump({"env": envd, "rows": rows, "cdf": read_cdf(raw)}, f, indent=1)

    def fmt(x):
        if x is None:
            return "-"
        if abs(x) >= 1e5:
            return f"{x:.4g}"
        if abs(x) >= 100:
            return f"{x:.1f}"
        if abs(x) >= 1:
            return f"{x:.2f}"
        return f"{x:.4f}"

    print(f"# easyrdma vs anchors on {envd.get('device', '?')} -- {envd.get('date', '?')}, "
          f"{envd.get('rounds', '?')} interleaved rounds (quick: {envd.get('quick', '?')}), {vm}, "
          f"pinning: {envd.get('pinning', 'none')}")
    print(f"{'metric':26} {'unit':7} {'easyrdma':>10} {'anchor':>10} {'ratio':>7} {'rounds':>7}  target  n")
    for r in rows:
        tgt = ""
        if r["target"]:
            tgt = f"{r['target']:7}" + (" met" if r["met"] else " MISSED" if r["met"] is not None else "")
        n = f"{len(r['ez_values'])}/{len(r['anchor_values'])}"
        print(f"{r['metric']:26} {r['unit']:7} {fmt(r['ez_median']):>10} {fmt(r['anchor_median']):>10} "
              f"{fmt(r['ratio']):>7} {fmt(r['round_ratio_median']):>7}  {tgt:14} {n}")
    print("\nratio: median of easyrdma / median of the anchor (the figure the target is on);"
          " rounds: median of each round's own ratio.")
    print("\nWhat each side measures (easyrdma | anchor):")
    for r in rows:
        print(f"  {r['metric']}: {r['easyrdma']} | {r['anchor']}")
    extra = [(r["metric"], s, r[f"{s}_note"]) for r in rows for s in ("ez", "anchor") if r[f"{s}_note"]]
    if extra:
        print("\nNotes:")
        for m, s, n in extra:
            print(f"  {m} ({s}): {n}")
    bad = [(r["metric"], s, r[f"{s}_errors"]) for r in rows for s in ("ez", "anchor") if r[f"{s}_errors"]]
    if bad:
        print("\nCould not be measured (the tool's own words):")
        for m, s, es in bad:
            print(f"  {m} ({'easyrdma' if s == 'ez' else 'anchor'}): {es[0]}"
                  + (f" [and {len(es) - 1} more rounds]" if len(es) > 1 else ""))
    print(f"\nJSON: {out}")


if __name__ == "__main__":
    main()
