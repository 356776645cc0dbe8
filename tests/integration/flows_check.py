#!/usr/bin/env python3
# flows_check.py: checks a RoCEv2 capture against the UDP source ports each side's connections reported.
"""
Usage: flows_check.py CAPTURE.pcap CLIENT_PORTS SERVER_PORTS CLIENT_IP SERVER_IP
                      CLIENT_POLICY SERVER_POLICY NCONNS

CLIENT_PORTS / SERVER_PORTS are flowpeer -o files (one line per connection:
"conn I qpn Q remote_qpn R sport P ..."). Every RoCEv2 packet (UDP port 4791)
is attributed to a connection by its BTH destination QP; QP1 (rdma_cm's own
messages) is counted apart. Passes when, for every connection and direction,
the packets carry exactly one UDP source port, equal to the one the sending
side reported, and the ports follow the policy (auto: 0xC000 + QPN mod 16384,
all distinct; fixed:P: all P; range:A-B: round-robin, every port of the range
used as evenly as possible). Prints one line per connection and direction.
"""
import struct
import sys


def parse_ports(path):
    conns = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0] != "conn":
                continue
            d = dict(zip(w[0::2], w[1::2]))
            conns.append({k: (int(v) if v.isdigit() else v) for k, v in d.items()})
    return conns


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise SystemExit("not a pcap file: %s" % path)
    linktype = struct.unpack(e + "I", data[20:24])[0]
    if linktype != 1:
        raise SystemExit("link type %d, want Ethernet" % linktype)
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(pkt) < 14 + 20 + 8 + 12:
            continue
        if struct.unpack(">H", pkt[12:14])[0] != 0x0800:
            continue
        ip = pkt[14:]
        ihl = (ip[0] & 0xF) * 4
        if ip[9] != 17:
            continue
        src = ".".join(str(b) for b in ip[12:16])
        dst = ".".join(str(b) for b in ip[16:20])
        udp = ip[ihl:]
        sport, dport, ulen = struct.unpack(">HHH", udp[:6])
        if dport != 4791:
            continue
        bth = udp[8:]
        opcode = bth[0]
        dqp = int.from_bytes(bth[5:8], "big")
        yield src, dst, sport, dqp, opcode, orig


def policy_ok(policy, conns, who):
    ports = [c["sport"] for c in conns]
    errs = []
    if policy == "auto":
        for c in conns:
            want = 0xC000 + (c["qpn"] & 0x3FFF)
            if c["sport"] != want:
                errs.append("%s conn %d: auto port %d, want 0xC000 + QPN %d mod 16384 = %d"
                            % (who, c["conn"], c["sport"], c["qpn"], want))
        if len(set(ports)) != len(ports):
            errs.append("%s: auto ports not distinct: %s" % (who, ports))
    elif policy.startswith("fixed:"):
        want = int(policy[6:], 0)
        if set(ports) != {want}:
            errs.append("%s: fixed ports %s, want all %d" % (who, ports, want))
    elif policy.startswith("range:"):
        lo, hi = (int(x, 0) for x in policy[6:].split("-"))
        n = hi - lo + 1
        counts = {p: ports.count(p) for p in range(lo, hi + 1)}
        if any(p < lo or p > hi for p in ports):
            errs.append("%s: range ports %s outside %d-%d" % (who, ports, lo, hi))
        elif max(counts.values()) - min(counts.values()) > 1 or \
                sum(counts.values()) != len(ports) or (len(ports) >= n and min(counts.values()) == 0):
            errs.append("%s: range ports not round-robin over %d-%d: %s" % (who, lo, hi, counts))
    return errs


def main():
    if len(sys.argv) != 9:
        raise SystemExit(__doc__)
    cap, cfile, sfile, cip, sip, cpol, spol, n = sys.argv[1:]
    n = int(n)
    cl, sv = parse_ports(cfile), parse_ports(sfile)
    errs = []
    if len(cl) != n or len(sv) != n:
        errs.append("reported connections: client %d, server %d, want %d" % (len(cl), len(sv), n))
    # (sender ip, destination QP) -> {sport: [packets, bytes]}
    seen = {}
    qp1 = {}
    for src, dst, sport, dqp, opcode, length in packets(cap):
        if dqp == 1:
            qp1[(src, sport)] = qp1.get((src, sport), 0) + 1
            continue
        s = seen.setdefault((src, dqp), {})
        e = s.setdefault(sport, [0, 0])
        e[0] += 1
        e[1] += length
    for (src, sport), k in sorted(qp1.items()):
        print("  QP1 (rdma_cm) from %s sport %d: %d packets (not a connection's)" % (src, sport, k))
    for who, ip, conns in (("client", cip, cl), ("server", sip, sv)):
        for c in conns:
            got = seen.pop((ip, c["remote_qpn"]), {})
            desc = ", ".join("%d (0x%x): %d pkts %d B" % (p, p, v[0], v[1]) for p, v in sorted(got.items()))
            print("  %s conn %d QP %d -> %d reported sport %d (0x%x) %s; captured: %s"
                  % (who, c["conn"], c["qpn"], c["remote_qpn"], c["sport"], c["sport"],
                     c.get("mech", "?"), desc or "nothing"))
            if c.get("mech") != "flow_label":
                errs.append("%s conn %d: mechanism %s, want flow_label on rxe" % (who, c["conn"], c.get("mech")))
            if not got:
                errs.append("%s conn %d: no packet to QP %d captured" % (who, c["conn"], c["remote_qpn"]))
            elif set(got) != {c["sport"]}:
                errs.append("%s conn %d: captured ports %s, reported %d"
                            % (who, c["conn"], sorted(got), c["sport"]))
        errs += policy_ok(cpol if who == "client" else spol, conns, who)
    for (src, dqp), got in sorted(seen.items()):
        errs.append("packets from %s to QP %d belong to no reported connection: %s" % (src, dqp, got))
    dports = sorted({c["sport"] for c in cl})
    print("  client data ports: %d distinct: %s" % (len(dports), " ".join("0x%x" % p for p in dports)))
    for e in errs:
        print("  ERROR: " + e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
