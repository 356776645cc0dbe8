/* flowpeer.c: one side of the two-VM flow tests: N connections under a UDP source port policy, their reported ports written out. */
/*
 * Usage:
 *   flowpeer server -a ADDR -p PORT -n CONNS -m MSGS [-P POLICY] [-o FILE] [-t SECS]
 *   flowpeer client -a ADDR -p PORT -n CONNS -m MSGS [-s SIZE] [-P POLICY] [-o FILE] [-t SECS]
 *   either with [-k PATHS]: multi-path connections of PATHS QPs (ez_conn_opts.paths)
 * POLICY: default | auto | fixed:PORT | range:MIN-MAX (ports decimal or 0x hex)
 *
 * The client opens CONNS connections at once and sends MSGS messages of SIZE
 * bytes on each (sequence number and a fill byte derived from it), then
 * closes. The server accepts with its own policy, checks every message
 * (order per connection and content), and exits once CONNS connections have
 * come and gone. Each side writes one line per connection to FILE:
 *   conn I qpn Q remote_qpn R sport P flow_label L mech M policy X
 * With -k PATHS > 1 the file has one such line per path (I = conn * PATHS +
 * path), so flowcheck holds every path to its own port. Messages then
 * arrive in order per path only: the server checks that every sequence
 * number arrives exactly once instead of in order. Both sides print an
 * order-independent checksum of the messages (FNV-1a of each, summed) and
 * the per-path counters of ez_conn_stats().
 * Exit status 0 only when every message arrived intact (server) or every
 * send completed with status 0 (client).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <easyrdma.h>

#define MAX_CONNS 64

struct peer;

struct pconn {
	struct peer *p;
	struct ez_conn *conn;
	int idx;
	int up, down, closed;
	uint32_t sent, acked, recvd, bad;
	uint64_t bytes, sum;
	uint8_t *seen;		/* multi-path: sequence numbers received */
	struct ez_conn_stats stats;	/* taken before the close */
	struct ez_conn_info info;
};

struct peer {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	struct ez_conn_opts o;
	int server;
	int nconns, accepted, finished;
	uint32_t msgs, size;
	struct pconn c[MAX_CONNS];
	const char *out;
	int failed;
	uint8_t *msg;
	uint32_t paths;
};

/* FNV-1a of one message; the sum over messages does not depend on order. */
static uint64_t fnv(const uint8_t *d, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ull;
	return h;
}

static const char *mech_name(enum ez_sport_mech m)
{
	return m == EZ_SPORT_MECH_FLOW_LABEL ? "flow_label" : m == EZ_SPORT_MECH_MLX5DV ? "mlx5dv" : "none";
}

static const char *policy_name(enum ez_sport_policy p)
{
	static const char *n[] = { "default", "auto", "range", "fixed" };

	return (unsigned)p < 4 ? n[p] : "?";
}

static int parse_policy(const char *s, struct ez_conn_opts *o)
{
	char *end;

	if (!strcmp(s, "default"))
		o->sport_policy = EZ_SPORT_DEFAULT;
	else if (!strcmp(s, "auto"))
		o->sport_policy = EZ_SPORT_AUTO;
	else if (!strncmp(s, "fixed:", 6)) {
		o->sport_policy = EZ_SPORT_FIXED;
		o->udp_sport = (uint16_t)strtoul(s + 6, NULL, 0);
	} else if (!strncmp(s, "range:", 6)) {
		o->sport_policy = EZ_SPORT_RANGE;
		o->sport_min = (uint16_t)strtoul(s + 6, &end, 0);
		if (*end != '-')
			return -1;
		o->sport_max = (uint16_t)strtoul(end + 1, NULL, 0);
	} else
		return -1;
	return 0;
}

static void write_out(struct peer *p)
{
	FILE *f;

	if (!p->out)
		return;
	f = fopen(p->out, "w");
	if (!f) {
		fprintf(stderr, "flowpeer: %s: %s\n", p->out, strerror(errno));
		p->failed = 1;
		return;
	}
	for (int i = 0; i < p->nconns; i++) {
		struct pconn *c = &p->c[i];

		if (!c->up)
			continue;
		if (p->paths > 1) {
			for (uint32_t k = 0; k < c->info.paths; k++)
				fprintf(f, "conn %u qpn %u remote_qpn %u sport %u flow_label %u mech %s policy %s\n",
					(uint32_t)i * p->paths + k, c->info.path_qp_num[k],
					c->info.path_remote_qp_num[k], c->info.path_udp_sport[k],
					ez_udp_sport_to_flow_label(c->info.path_udp_sport[k]),
					mech_name(c->info.sport_mech), policy_name(c->info.sport_policy));
			continue;
		}
		fprintf(f, "conn %d qpn %u remote_qpn %u sport %u flow_label %u mech %s policy %s\n",
			i, c->info.qp_num, c->info.remote_qp_num, c->info.udp_sport, c->info.flow_label,
			mech_name(c->info.sport_mech), policy_name(c->info.sport_policy));
	}
	fclose(f);
}

static void maybe_finish(struct peer *p)
{
	if (p->finished < p->nconns)
		return;
	write_out(p);
	if (p->listener) {
		ez_listener_close(p->listener);
		p->listener = NULL;
	}
	ev_break(p->loop, EVBREAK_ALL);
}

static void send_more(struct pconn *c);

static void on_sent(struct ez_conn *conn, int status, void *arg)
{
	struct pconn *c = arg;

	(void)conn;
	if (status) {
		fprintf(stderr, "flowpeer: conn %d: send: %s\n", c->idx, ez_strerror(status));
		c->p->failed = 1;
		return;
	}
	c->acked++;
	if (c->acked == c->p->msgs) {
		ez_conn_stats(c->conn, &c->stats);
		c->closed = 1;
		ez_conn_close(c->conn);	/* on_disconnect follows */
		return;
	}
	send_more(c);
}

static void send_more(struct pconn *c)
{
	struct peer *p = c->p;

	while (c->sent < p->msgs) {
		int ret;

		memcpy(p->msg, &c->sent, 4);
		memset(p->msg + 4, (int)((c->sent * 7 + (uint32_t)c->idx) & 0xff), p->size - 4);
		ret = ez_send(c->conn, p->msg, p->size, on_sent, c);
		if (ret == -ENOBUFS)
			return;	/* on_sent continues */
		if (!ret)
			c->sum += fnv(p->msg, p->size);
		if (ret) {
			fprintf(stderr, "flowpeer: conn %d: ez_send: %s\n", c->idx, ez_errmsg());
			p->failed = 1;
			c->closed = 1;
			ez_conn_close(c->conn);
			return;
		}
		c->sent++;
	}
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct pconn *c = arg;
	const uint8_t *d = ez_buf_data(buf);
	size_t n = ez_buf_len(buf);
	uint32_t seq;

	(void)conn;
	if (n < 4) {
		c->bad++;
	} else {
		memcpy(&seq, d, 4);
		if (c->p->paths > 1) {
			/* Ordered per path only: each number exactly once. */
			if (!c->seen)
				c->seen = calloc(c->p->msgs, 1);
			if (!c->seen || seq >= c->p->msgs || c->seen[seq]++)
				c->bad++;
		} else if (seq != c->recvd) {
			c->bad++;
		}
		/* The fill byte follows the client's own index: check it is uniform. */
		for (size_t i = 5; i < n; i++)
			if (d[i] != d[4]) {
				c->bad++;
				break;
			}
	}
	c->recvd++;
	c->bytes += n;
	c->sum += fnv(d, n);
	ez_buf_release(buf);
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct pconn *c = arg;

	if (status) {
		fprintf(stderr, "flowpeer: conn %d: connect: %s\n", c->idx, ez_conn_errmsg(conn));
		c->p->failed = 1;
		c->down = 1;
		c->p->finished++;
		c->closed = 1;
		ez_conn_close(conn);
		maybe_finish(c->p);
		return;
	}
	c->up = 1;
	if (ez_conn_info(conn, &c->info)) {
		fprintf(stderr, "flowpeer: conn %d: ez_conn_info: %s\n", c->idx, ez_errmsg());
		c->p->failed = 1;
	}
	if (!c->p->server)
		send_more(c);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct pconn *c = arg;
	struct peer *p = c->p;

	if (status) {
		fprintf(stderr, "flowpeer: conn %d: disconnected: %s\n", c->idx, ez_conn_errmsg(conn));
		p->failed = 1;
	}
	c->down = 1;
	p->finished++;
	if (p->server)
		ez_conn_stats(conn, &c->stats);
	if (!c->closed) {
		c->closed = 1;
		ez_conn_close(conn);
	}
	maybe_finish(p);
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct peer *p = arg;
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect };
	struct pconn *c;

	(void)l;
	if (p->accepted >= p->nconns) {
		ez_reject(req, "enough", 6);
		return;
	}
	c = &p->c[p->accepted];
	c->idx = p->accepted++;
	c->p = p;
	if (ez_accept(req, &p->o, &cbs, c, &c->conn)) {
		fprintf(stderr, "flowpeer: ez_accept: %s\n", ez_errmsg());
		p->failed = 1;
		c->down = 1;
		p->finished++;
	}
}

static void on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer *p = w->data;

	(void)revents;
	fprintf(stderr, "flowpeer: timed out with %d of %d connections finished\n", p->finished,
		p->nconns);
	p->failed = 1;
	write_out(p);
	ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	struct peer p = { 0 };
	const char *addr = NULL, *port = NULL;
	double secs = 40;
	ev_timer timer;
	int opt, ret;
	uint32_t total = 0, bad = 0;

	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: flowpeer server|client -a ADDR -p PORT -n CONNS -m MSGS [-s SIZE] [-P POLICY] [-o FILE] [-t SECS]\n");
		return 2;
	}
	p.server = !strcmp(argv[1], "server");
	p.nconns = 8;
	p.msgs = 100;
	p.size = 1024;
	optind = 2;
	while ((opt = getopt(argc, argv, "a:p:n:m:s:P:o:t:k:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'n': p.nconns = atoi(optarg); break;
		case 'm': p.msgs = (uint32_t)atoi(optarg); break;
		case 's': p.size = (uint32_t)atoi(optarg); break;
		case 'o': p.out = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'k': p.paths = (uint32_t)atoi(optarg); break;
		case 'P':
			if (parse_policy(optarg, &p.o)) {
				fprintf(stderr, "flowpeer: bad policy %s\n", optarg);
				return 2;
			}
			break;
		default: return 2;
		}
	}
	if (!addr || !port || p.nconns < 1 || p.nconns > MAX_CONNS || p.size < 8 || p.size > 4096) {
		fprintf(stderr, "flowpeer: need -a and -p, 1..%d connections, size 8..4096\n", MAX_CONNS);
		return 2;
	}
	/* Generous: a TCG guest on a shared host accepts eight at once slowly. */
	p.o.connect_timeout_ms = 30000;
	p.o.paths = p.paths;
	p.msg = malloc(p.size);
	p.loop = EV_DEFAULT;
	ret = ez_ctx_new(p.loop, 0, &p.ctx);
	if (ret) {
		fprintf(stderr, "flowpeer: ez_ctx_new: %s\n", ez_errmsg());
		return 1;
	}
	ev_timer_init(&timer, on_timeout, secs, 0);
	timer.data = &p;
	ev_timer_start(p.loop, &timer);
	if (p.server) {
		ret = ez_listen(p.ctx, addr, port, NULL, on_request, &p, &p.listener);
		if (ret) {
			fprintf(stderr, "flowpeer: ez_listen(%s:%s): %s\n", addr, port, ez_errmsg());
			return 1;
		}
		printf("flowpeer: listening on %s:%s\n", addr, port);
		fflush(stdout);
	} else {
		struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = NULL, .on_disconnect = on_disconnect };

		for (int i = 0; i < p.nconns; i++) {
			p.c[i].p = &p;
			p.c[i].idx = i;
			ret = ez_connect(p.ctx, addr, port, &p.o, &cbs, &p.c[i], &p.c[i].conn);
			if (ret) {
				fprintf(stderr, "flowpeer: ez_connect: %s\n", ez_errmsg());
				return 1;
			}
		}
	}
	ev_run(p.loop, 0);
	for (int i = 0; i < p.nconns; i++) {
		struct pconn *c = &p.c[i];

		printf("flowpeer %s: conn %d qpn %u -> %u sport %u (0x%x) mech %s: %s %u msgs, %u bad\n",
		       p.server ? "server" : "client", i, c->info.qp_num, c->info.remote_qp_num,
		       c->info.udp_sport, c->info.udp_sport, mech_name(c->info.sport_mech),
		       p.server ? "received" : "sent", p.server ? c->recvd : c->acked, c->bad);
		total += p.server ? c->recvd : c->acked;
		bad += c->bad;
		if (p.paths > 1) {
			uint64_t all = 0;

			for (uint32_t k = 0; k < c->info.paths; k++)
				all += p.server ? c->stats.path_msgs_recv[k] : c->stats.path_bytes[k];
			printf("flowpeer %s: conn %d: %u paths, checksum 0x%016llx over %llu bytes\n",
			       p.server ? "server" : "client", i, c->info.paths,
			       (unsigned long long)c->sum,
			       (unsigned long long)(p.server ? c->bytes : (uint64_t)c->acked * p.size));
			for (uint32_t k = 0; k < c->info.paths; k++) {
				uint64_t v = p.server ? c->stats.path_msgs_recv[k] : c->stats.path_bytes[k];

				printf("flowpeer %s: conn %d path %u QP %u -> %u sport %u: %llu %s (%.1f %%)\n",
				       p.server ? "server" : "client", i, k, c->info.path_qp_num[k],
				       c->info.path_remote_qp_num[k], c->info.path_udp_sport[k],
				       (unsigned long long)v, p.server ? "msgs received" : "bytes posted",
				       all ? 100.0 * (double)v / (double)all : 0.0);
			}
		}
	}
	if (total != p.msgs * (uint32_t)p.nconns || bad) {
		fprintf(stderr, "flowpeer: %u of %u messages, %u bad\n", total,
			p.msgs * (uint32_t)p.nconns, bad);
		p.failed = 1;
	}
	if (p.listener)
		ez_listener_close(p.listener);
	/* Connections closed in callbacks are freed by the library; let it finish. */
	for (int i = 0; i < 50 && ez_ctx_free(p.ctx) == -EBUSY; i++)
		ev_run(p.loop, EVRUN_ONCE | EVRUN_NOWAIT), usleep(10000);
	for (int i = 0; i < p.nconns; i++)
		free(p.c[i].seen);
	free(p.msg);
	return p.failed ? 1 : 0;
}
