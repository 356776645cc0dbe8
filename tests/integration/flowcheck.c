/* flowcheck.c: checks a RoCEv2 capture against the UDP source ports each side's connections reported (C: a TCG guest starts it at once). */
/*
 * Usage: flowcheck CAPTURE.pcap CLIENT_PORTS SERVER_PORTS CLIENT_IP SERVER_IP
 *                  CLIENT_POLICY SERVER_POLICY NCONNS [MIN_SHARE_PERCENT]
 *
 * CLIENT_PORTS / SERVER_PORTS are flowpeer -o files ("conn I qpn Q
 * remote_qpn R sport P flow_label L mech M policy X" per connection). Every
 * RoCEv2 packet (UDP destination port 4791) is attributed to a connection by
 * its sender address and BTH destination QP; QP1 (rdma_cm's own messages) is
 * counted apart. Passes (exit 0) when every connection has packets in both
 * directions, each direction carries exactly one UDP source port, equal to
 * the one its sender reported with mechanism flow_label, every packet belongs
 * to a reported connection, and the ports follow each side's policy: auto:
 * 0xC000 + QPN mod 16384, all distinct; fixed:P: all P; range:A-B: every port
 * in the range, used as evenly as possible (round-robin).
 * With MIN_SHARE_PERCENT (the lines being the paths of one multi-path
 * connection), each client line's share of the client's captured bytes is
 * printed and must be at least that.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 64
#define MAXP 8		/* distinct source ports remembered per connection direction */

struct dir {
	uint16_t port[MAXP];
	uint64_t pkts[MAXP], bytes[MAXP];
	int nports;
};

struct rep {
	int conn;
	uint32_t qpn, rqpn;
	unsigned sport;
	char mech[32];
	struct dir got;		/* packets this side sent on the connection */
};

static int errors;

#define ERR(...) do { printf("  ERROR: " __VA_ARGS__); printf("\n"); errors++; } while (0)

static int load(const char *path, struct rep *r)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	if (!f) {
		ERR("%s: cannot open", path);
		return 0;
	}
	while (n < MAXC && fgets(line, sizeof(line), f)) {
		struct rep *x = &r[n];
		char pol[32];
		unsigned fl;

		memset(x, 0, sizeof(*x));
		if (sscanf(line, "conn %d qpn %u remote_qpn %u sport %u flow_label %u mech %31s policy %31s",
			   &x->conn, &x->qpn, &x->rqpn, &x->sport, &fl, x->mech, pol) == 7)
			n++;
	}
	fclose(f);
	return n;
}

static void add(struct dir *d, uint16_t port, uint32_t len)
{
	for (int i = 0; i < d->nports; i++)
		if (d->port[i] == port) {
			d->pkts[i]++;
			d->bytes[i] += len;
			return;
		}
	if (d->nports < MAXP) {
		d->port[d->nports] = port;
		d->pkts[d->nports] = 1;
		d->bytes[d->nports++] = len;
	}
}

static void policy(const char *who, const char *pol, const struct rep *r, int n)
{
	if (!strcmp(pol, "auto")) {
		for (int i = 0; i < n; i++) {
			unsigned want = 0xC000 + (r[i].qpn & 0x3FFF);

			if (r[i].sport != want)
				ERR("%s conn %d: auto port %u, want 0xC000 + QPN %u mod 16384 = %u", who,
				    r[i].conn, r[i].sport, r[i].qpn, want);
			for (int j = i + 1; j < n; j++)
				if (r[i].sport == r[j].sport)
					ERR("%s: conns %d and %d share auto port %u", who, r[i].conn,
					    r[j].conn, r[i].sport);
		}
	} else if (!strncmp(pol, "fixed:", 6)) {
		unsigned want = (unsigned)strtoul(pol + 6, NULL, 0);

		for (int i = 0; i < n; i++)
			if (r[i].sport != want)
				ERR("%s conn %d: fixed port %u, want %u", who, r[i].conn, r[i].sport, want);
	} else if (!strncmp(pol, "range:", 6)) {
		char *end;
		unsigned lo = (unsigned)strtoul(pol + 6, &end, 0), hi = (unsigned)strtoul(end + 1, NULL, 0);
		unsigned cnt[0x4000] = { 0 }, mn = ~0u, mx = 0;

		for (int i = 0; i < n; i++) {
			if (r[i].sport < lo || r[i].sport > hi)
				ERR("%s conn %d: port %u outside %u-%u", who, r[i].conn, r[i].sport, lo, hi);
			else
				cnt[r[i].sport - lo]++;
		}
		for (unsigned p = 0; p <= hi - lo && p < 0x4000; p++) {
			mn = cnt[p] < mn ? cnt[p] : mn;
			mx = cnt[p] > mx ? cnt[p] : mx;
		}
		if (mx - mn > 1)
			ERR("%s: ports of %u-%u used %u to %u times each: not round-robin", who, lo, hi, mn, mx);
	} else if (strcmp(pol, "default")) {
		ERR("unknown policy %s", pol);
	}
}

int main(int argc, char **argv)
{
	static struct rep cl[MAXC], sv[MAXC];
	static uint8_t buf[1 << 16];
	uint32_t cip, sip, hdr[6];
	uint64_t qp1[2] = { 0 }, stray = 0;
	int nc, ns, want, swap;
	FILE *f;

	if (argc != 9 && argc != 10) {
		fprintf(stderr, "usage: flowcheck CAPTURE CLIENT_PORTS SERVER_PORTS CLIENT_IP SERVER_IP CLIENT_POLICY SERVER_POLICY NCONNS [MIN_SHARE_PERCENT]\n");
		return 2;
	}
	nc = load(argv[2], cl);
	ns = load(argv[3], sv);
	want = atoi(argv[8]);
	if (inet_pton(AF_INET, argv[4], &cip) != 1 || inet_pton(AF_INET, argv[5], &sip) != 1) {
		fprintf(stderr, "flowcheck: IPv4 addresses only\n");
		return 2;
	}
	if (nc != want || ns != want)
		ERR("reported connections: client %d, server %d, want %d", nc, ns, want);
	f = fopen(argv[1], "rb");
	if (!f || fread(hdr, 4, 6, f) != 6) {
		printf("  ERROR: %s: not a pcap file\n", argv[1]);
		return 1;
	}
	swap = hdr[0] == 0xd4c3b2a1 || hdr[0] == 0x4d3cb2a1;
	if (!swap && hdr[0] != 0xa1b2c3d4 && hdr[0] != 0xa1b23c4d) {
		printf("  ERROR: %s: not a pcap file\n", argv[1]);
		return 1;
	}
	for (;;) {
		uint32_t ph[4], incl, orig, ihl, src, dqp;
		uint16_t sport, dport;
		const uint8_t *ip, *udp, *bth;
		int hit = 0;

		if (fread(ph, 4, 4, f) != 4)
			break;
		incl = swap ? __builtin_bswap32(ph[2]) : ph[2];
		orig = swap ? __builtin_bswap32(ph[3]) : ph[3];
		if (incl > sizeof(buf) || fread(buf, 1, incl, f) != incl)
			break;
		if (incl < 14 + 20 + 8 + 12 || buf[12] != 0x08 || buf[13] != 0x00)
			continue;
		ip = buf + 14;
		ihl = (ip[0] & 0xFu) * 4;
		if (ip[9] != 17 || 14 + ihl + 8 + 12 > incl)
			continue;
		memcpy(&src, ip + 12, 4);
		udp = ip + ihl;
		sport = (uint16_t)(udp[0] << 8 | udp[1]);
		dport = (uint16_t)(udp[2] << 8 | udp[3]);
		if (dport != 4791)
			continue;
		bth = udp + 8;
		dqp = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
		if (dqp == 1) {
			qp1[src == sip]++;
			continue;
		}
		/* A client packet goes to the server QP its connection reported as remote. */
		for (int i = 0; i < nc && src == cip; i++)
			if (cl[i].rqpn == dqp) {
				add(&cl[i].got, sport, orig);
				hit = 1;
			}
		for (int i = 0; i < ns && src == sip; i++)
			if (sv[i].rqpn == dqp) {
				add(&sv[i].got, sport, orig);
				hit = 1;
			}
		stray += !hit;
	}
	fclose(f);
	printf("  QP1 (rdma_cm) packets: %llu from the client, %llu from the server (not counted)\n",
	       (unsigned long long)qp1[0], (unsigned long long)qp1[1]);
	for (int s = 0; s < 2; s++) {
		const char *who = s ? "server" : "client";
		struct rep *r = s ? sv : cl;
		int n = s ? ns : nc;

		for (int i = 0; i < n; i++) {
			struct dir *d = &r[i].got;

			printf("  %s conn %d QP %u -> %u reported sport %u (0x%x) %s; captured:", who,
			       r[i].conn, r[i].qpn, r[i].rqpn, r[i].sport, r[i].sport, r[i].mech);
			for (int k = 0; k < d->nports; k++)
				printf(" %u (0x%x) %llu pkts %llu B", d->port[k], d->port[k],
				       (unsigned long long)d->pkts[k], (unsigned long long)d->bytes[k]);
			printf("%s\n", d->nports ? "" : " nothing");
			if (strcmp(r[i].mech, "flow_label"))
				ERR("%s conn %d: mechanism %s, want flow_label on rxe", who, r[i].conn, r[i].mech);
			if (!d->nports)
				ERR("%s conn %d: no packet to QP %u captured", who, r[i].conn, r[i].rqpn);
			else if (d->nports != 1 || d->port[0] != r[i].sport)
				ERR("%s conn %d: captured %d port(s), first %u; reported %u", who, r[i].conn,
				    d->nports, d->port[0], r[i].sport);
		}
		policy(who, argv[6 + s], r, n);
	}
	if (stray)
		ERR("%llu packets belong to no reported connection", (unsigned long long)stray);
	if (argc == 10) {
		double min = atof(argv[9]);
		uint64_t all = 0;

		for (int i = 0; i < nc; i++)
			for (int k = 0; k < cl[i].got.nports; k++)
				all += cl[i].got.bytes[k];
		printf("  byte shares of the client's %llu captured bytes (minimum %.0f %%):\n",
		       (unsigned long long)all, min);
		for (int i = 0; i < nc; i++) {
			uint64_t b = 0;
			double share;

			for (int k = 0; k < cl[i].got.nports; k++)
				b += cl[i].got.bytes[k];
			share = all ? 100.0 * (double)b / (double)all : 0;
			printf("    path %d UDP source port %u (0x%x): %llu bytes, %.1f %%\n", cl[i].conn,
			       cl[i].sport, cl[i].sport, (unsigned long long)b, share);
			if (share < min)
				ERR("path %d (port %u) carried %.1f %% of the bytes, under %.0f %%", cl[i].conn,
				    cl[i].sport, share, min);
		}
	}
	printf("  client ports:");
	for (int i = 0; i < nc; i++)
		printf(" 0x%x", cl[i].sport);
	printf("\n  server ports:");
	for (int i = 0; i < ns; i++)
		printf(" 0x%x", sv[i].sport);
	printf("\n");
	return errors ? 1 : 0;
}
