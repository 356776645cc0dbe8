/* lossy.c: large messages over a lossy link (run by lossy.sh under `testbed pair`, netem dropping packets on both VMs' eth0): 1-16 MiB objects arrive verified in chunked fetches, small messages' round trips beside them with and without EZ_CONN_SMALL_FIRST, and what one unchunked 16 MiB READ does on the same link. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ev.h>

#include "easyrdma.h"
#include "pair.h"

/*
 * VM a: the server. Accepts four connections, each with the receive
 * options the client names in its private data: 'O' default (every message
 * in send order), 'P' the same (pings only, beside O's objects), 'S'
 * EZ_CONN_SMALL_FIRST, 'U' fetch_chunk 16 MiB (one READ per message, as
 * before chunks). It checks every byte of every object it
 * receives and answers "R" with the object's number and verdict, and echoes
 * every ping at once.
 * VM b: the client. On O: 200 pings alone (the small-message round trip on
 * the lossy link), then the objects with pings going on beside them and on
 * P (another connection: does one connection's bulk hold up another's
 * messages?); on S
 * the same objects and pings; on U one 16 MiB object, whose outcome and
 * time are a figure (its one READ meets ~16 losses at 0.1 %).
 * Asserted: every object on O and S arrives with every byte right, every
 * ping comes back in order, the connections end only when closed, the server
 * fetched each object in exactly ceil(len / 256 KiB) READs, and the loop
 * never waits on the network (its longest gap, the test's own checking and
 * filling left out). The round trips and the loop's CPU are figures.
 */
#define MIB (1u << 20)
#define OBJ_MAX (16 * MIB)
#define CHUNK_DEFAULT (256u << 10)
#define PINGS_ALONE 200
/* The loop never waits on the network: a wait for the transport's
 * retries lasts seconds, which this wall-clock bound catches while a TCG
 * vCPU the host did not run (up to ~0.3 s, see linkdown.c) passes. The
 * loop thread's CPU in its longest gap is printed per phase, not held to
 * linkdown.c's 100 ms: registering a fresh 16 MiB fetch buffer (page
 * faults, zeroing, pinning) costs 150-180 ms of it in a TCG guest (O's
 * phase, a cold cache; 45-48 ms with the cache warm in S's and U's), the
 * same with malloc'd memory as with the mapped buffers; preparing such
 * buffers off the loop is the open fix (issue 42's note). */
#define GAP_MAX_S 2.0

static const uint32_t sizes[] = { MIB + 3, 2 * MIB, 3 * MIB + 5, 5 * MIB, 8 * MIB + 1, 13 * MIB,
				  16 * MIB };
#define NOBJ ((int)(sizeof(sizes) / sizeof(sizes[0])))

static struct ez_ctx *ctx;

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the loop's gaps, the test's own work left out ---- */

static double gap_last, gap_cpu_last, gap_max, gap_max_cpu;
static double own_s, own_cpu_s, own_at_last, own_cpu_at_last;
static double t_own, c_own;

static void own_begin(void)
{
	t_own = pair_now();
	c_own = thread_cpu_s();
}

static void own_end(void)
{
	own_s += pair_now() - t_own;
	own_cpu_s += thread_cpu_s() - c_own;
}

static void on_gap_tick(struct ev_loop *l, ev_timer *w, int revents)
{
	double n = pair_now(), c = thread_cpu_s();

	(void)l;
	(void)w;
	(void)revents;
	if (gap_last) {
		double g = n - gap_last - (own_s - own_at_last);
		double gc = c - gap_cpu_last - (own_cpu_s - own_cpu_at_last);

		if (g > gap_max)
			gap_max = g;
		if (gc > gap_max_cpu)
			gap_max_cpu = gc;
	}
	gap_last = n;
	gap_cpu_last = c;
	own_at_last = own_s;
	own_cpu_at_last = own_cpu_s;
}

/* The whole run's, checked; each phase's printed as it ends. */
static double run_gap_max, run_gap_max_cpu;

static void gap_phase(const char *who)
{
	pair_say("%s: longest loop gap %.1f ms, the loop thread's CPU in a gap at most %.1f ms",
		 who, gap_max * 1e3, gap_max_cpu * 1e3);
	if (gap_max > run_gap_max)
		run_gap_max = gap_max;
	if (gap_max_cpu > run_gap_max_cpu)
		run_gap_max_cpu = gap_max_cpu;
	gap_max = gap_max_cpu = 0;
}

static void gap_report(const char *who)
{
	gap_phase(who);
	pair_say("%s: longest loop gap of the run %.1f ms, the loop thread's CPU in a gap at most %.1f ms (the test's own filling and checking, %.1f s, left out)",
		 who, run_gap_max * 1e3, run_gap_max_cpu * 1e3, own_s);
	PAIR_CHECK(run_gap_max < GAP_MAX_S, "%s: loop gap %.1f ms, CPU %.1f ms", who,
		   run_gap_max * 1e3, run_gap_max_cpu * 1e3);
}

/* pair_wait() with its looks at the 9p file left out of the gaps (up to
 * 0.2 s each in a loaded TCG guest: the test's stall, not the library's). */
static int own_wait(const char *name, double secs)
{
	double end = pair_host_now() + secs;
	int has;

	for (;;) {
		own_begin();
		has = pair_has(name);
		own_end();
		if (has || pair_host_now() >= end)
			return has;
		pair_spin(0.05);
	}
}

/* ---- objects ---- */

static uint8_t pat(uint32_t i, size_t k)
{
	return (uint8_t)(i * 131u + k * 7u + (k >> 12));
}

static void fill(uint8_t *p, uint32_t i, uint32_t len)
{
	own_begin();
	for (size_t k = 8; k < len; k++)
		p[k] = pat(i, k);
	memcpy(p, &i, 4);
	memcpy(p + 4, &len, 4);
	own_end();
}

/* The first wrong byte, or -1. */
static long check(const uint8_t *p, size_t len, uint32_t *num)
{
	uint32_t i, l;
	long bad = -1;

	own_begin();
	memcpy(&i, p, 4);
	memcpy(&l, p + 4, 4);
	*num = i;
	if (l != len)
		bad = 4;
	for (size_t k = 8; bad < 0 && k < len; k++)
		if (p[k] != pat(i, k))
			bad = (long)k;
	own_end();
	return bad;
}

/* ---- a: the server ---- */

struct sconn {
	struct ez_conn *conn;
	char kind;
	int ended, end_status;
	char msg[256];
	int objs_ok, objs_bad, pings;
	uint64_t reads_expected;
	uint32_t chunk;
	struct ez_conn_stats st;
};

static struct sconn sc[8];
static int nsc;

static void s_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct sconn *s = arg;
	const uint8_t *p = ez_buf_data(buf);
	size_t len = ez_buf_len(buf);
	uint8_t reply[12];
	uint32_t num;
	int ret;

	if (len >= 8 && p[0] == 'P' && len < 64) {
		s->pings++;
		ret = ez_send(conn, p, len, NULL, NULL);
		PAIR_CHECK(ret == 0, "a/%c: echo: %d %s", s->kind, ret, ez_errmsg());
	} else if (len >= MIB) {
		long bad = check(p, len, &num);

		if (bad < 0)
			s->objs_ok++;
		else
			s->objs_bad++;
		PAIR_CHECK(bad < 0, "a/%c: object %u of %zu bytes: first wrong byte at %ld", s->kind,
			   num, len, bad);
		s->reads_expected += (len + s->chunk - 1) / s->chunk;
		reply[0] = 'R';
		reply[1] = bad < 0;
		memcpy(reply + 4, &num, 4);
		memcpy(reply + 8, &s->objs_ok, 4);
		ret = ez_send(conn, reply, sizeof(reply), NULL, NULL);
		PAIR_CHECK(ret == 0, "a/%c: reply: %d %s", s->kind, ret, ez_errmsg());
	} else {
		PAIR_CHECK(0, "a/%c: a message of %zu bytes", s->kind, len);
	}
	ez_buf_release(buf);
}

static void s_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct sconn *s = arg;

	s->ended = 1;
	s->end_status = status;
	snprintf(s->msg, sizeof(s->msg), "%s", ez_conn_errmsg(conn));
	/* Its counters, before the connection is closed. */
	ez_conn_stats(conn, &s->st);
	pair_say("a/%c: on_disconnect(%d, \"%s\"): %d objects verified, %d bad, %d pings, %llu READs, %llu small messages ahead of a fetch",
		 s->kind, status, s->msg, s->objs_ok, s->objs_bad, s->pings,
		 (unsigned long long)s->st.fetch_reads, (unsigned long long)s->st.small_first);
	if (s->kind != 'P') {
		char who[8];

		snprintf(who, sizeof(who), "a/%c", s->kind);
		gap_phase(who);
	}
}

static const struct ez_conn_cbs s_cbs = { .on_recv = s_recv, .on_disconnect = s_disconnect };

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	size_t len;
	const char *d = ez_conn_req_data(req, &len);
	struct ez_conn_opts o = { .max_msg_size = OBJ_MAX, .connect_timeout_ms = 20000 };
	struct sconn *s;

	(void)l;
	(void)arg;
	if (nsc == 8 || !len) {
		ez_reject(req, "no", 2);
		return;
	}
	s = &sc[nsc];
	s->kind = d[0];
	if (s->kind == 'S')
		o.flags = EZ_CONN_SMALL_FIRST;
	if (s->kind == 'U')
		o.fetch_chunk = OBJ_MAX;
	s->chunk = o.fetch_chunk ? o.fetch_chunk : CHUNK_DEFAULT;
	if (ez_accept(req, &o, &s_cbs, s, &s->conn)) {
		pair_say("ez_accept: %s", ez_errmsg());
		pair_failures++;
		return;
	}
	nsc++;
}

static int all_ended(void)
{
	for (int i = 0; i < nsc; i++)
		if (!sc[i].ended)
			return 0;
	return 1;
}

static int server(void)
{
	struct ez_listener *l;
	char port[16];
	int i;

	if (ez_listen(ctx, getenv("EZ_TEST_ADDR"), "0", NULL, on_request, NULL, &l)) {
		pair_say("ez_listen: %s", ez_errmsg());
		return 1;
	}
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	pair_put("port", port);
	PAIR_CHECK(own_wait("done", 900), "no word from the client in 900 s");
	/* The client closed every connection before it said so: their ends
	 * are on the way. */
	for (double end = pair_host_now() + 60; !all_ended() && pair_host_now() < end;)
		pair_spin(0.05);
	gap_report("a");
	for (i = 0; i < nsc; i++) {
		struct sconn *s = &sc[i];

		if (s->kind == 'U')
			continue;	/* a figure (the client prints it) */
		PAIR_CHECK(s->ended && s->end_status == 0,
			   "a/%c: ended %d status %d (%s)", s->kind, s->ended, s->end_status, s->msg);
		if (s->kind == 'P')
			continue;	/* pings only */
		PAIR_CHECK(s->objs_ok == NOBJ && s->objs_bad == 0, "a/%c: %d objects verified, %d bad",
			   s->kind, s->objs_ok, s->objs_bad);
		PAIR_CHECK(s->st.fetch_reads == s->reads_expected,
			   "a/%c: %llu READs fetched the objects, expected %llu (ceil(len / %u) each)",
			   s->kind, (unsigned long long)s->st.fetch_reads,
			   (unsigned long long)s->reads_expected, s->chunk);
		if (s->kind == 'O')
			PAIR_CHECK(s->st.small_first == 0, "a/O: %llu small messages passed a fetch",
				   (unsigned long long)s->st.small_first);
	}
	PAIR_CHECK(nsc == 4, "%d connections accepted", nsc);
	for (i = 0; i < nsc; i++)
		ez_conn_close(sc[i].conn);
	ez_listener_close(l);
	pair_spin(0.3);
	pair_put("server-done", "1");
	return pair_failures != 0;
}

/* ---- b: the client ---- */

struct cconn {
	char kind;
	struct ez_conn *conn;
	int connected, connect_status, ended, end_status;
	char msg[256];
	/* objects */
	int sent, done, replies_ok, replies_bad, outstanding, send_errs;
	/* pings: one at a time */
	int pinging, ping_out;
	uint32_t ping_seq, pongs, pong_bad;
	double ping_t0;
	double *rtt;
	int nrtt, cap;
};

static struct ez_mr *mr;
static uint8_t *arena;	/* two halves of OBJ_MAX: two objects in flight */

static void ping_send(struct cconn *c)
{
	uint8_t p[16] = { 'P' };
	int ret;

	memcpy(p + 4, &c->ping_seq, 4);
	c->ping_t0 = pair_now();
	ret = ez_send(c->conn, p, sizeof(p), NULL, NULL);
	PAIR_CHECK(ret == 0, "b/%c: ping: %d %s", c->kind, ret, ez_errmsg());
	c->ping_out = ret == 0;
}

static void c_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct cconn *c = arg;
	const uint8_t *p = ez_buf_data(buf);
	size_t len = ez_buf_len(buf);
	uint32_t n;

	(void)conn;
	if (len == 16 && p[0] == 'P') {
		memcpy(&n, p + 4, 4);
		if (n != c->ping_seq)
			c->pong_bad++;
		if (c->nrtt == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 1024;
			c->rtt = realloc(c->rtt, (size_t)c->cap * sizeof(*c->rtt));
		}
		if (c->rtt)
			c->rtt[c->nrtt++] = pair_now() - c->ping_t0;
		c->pongs++;
		c->ping_seq++;
		c->ping_out = 0;
		if (c->pinging)
			ping_send(c);
	} else if (len == 12 && p[0] == 'R') {
		if (p[1])
			c->replies_ok++;
		else
			c->replies_bad++;
	} else {
		PAIR_CHECK(0, "b/%c: a message of %zu bytes", c->kind, len);
	}
	ez_buf_release(buf);
}

static void c_connect(struct ez_conn *conn, int status, void *arg)
{
	struct cconn *c = arg;

	c->connected = 1;
	c->connect_status = status;
	if (status)
		snprintf(c->msg, sizeof(c->msg), "%s", ez_conn_errmsg(conn));
}

static void c_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct cconn *c = arg;

	c->ended = 1;
	c->end_status = status;
	snprintf(c->msg, sizeof(c->msg), "%s", ez_conn_errmsg(conn));
}

static const struct ez_conn_cbs c_cbs = { .on_connect = c_connect, .on_recv = c_recv,
					  .on_disconnect = c_disconnect };

static void obj_send(struct cconn *c);

static void on_obj_done(struct ez_conn *conn, int status, void *arg)
{
	struct cconn *c = arg;

	(void)conn;
	c->outstanding--;
	c->done++;
	if (status) {
		c->send_errs++;
		return;
	}
	obj_send(c);
}

/* The next object, from the arena half the one before it left free. */
static void obj_send(struct cconn *c)
{
	int n = c->kind == 'U' ? 1 : NOBJ;
	uint32_t len = c->kind == 'U' ? OBJ_MAX : sizes[c->sent < n ? c->sent : 0];
	size_t off = (size_t)(c->sent % 2) * OBJ_MAX;
	int ret;

	if (c->sent >= n || c->outstanding >= 2 || c->ended)
		return;
	fill(arena + off, (uint32_t)c->sent, len);
	ret = ez_send_mr(c->conn, mr, off, len, on_obj_done, c);
	PAIR_CHECK(ret == 0, "b/%c: ez_send_mr(object %d, %u bytes): %d %s", c->kind, c->sent, len,
		   ret, ez_errmsg());
	if (ret)
		return;
	c->sent++;
	c->outstanding++;
}

static double total_mib(void)
{
	double t = 0;

	for (int i = 0; i < NOBJ; i++)
		t += sizes[i];
	return t / MIB;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void rtt_report(struct cconn *c, const char *what)
{
	if (!c->nrtt) {
		pair_say("b/%c: %s: no round trips", c->kind, what);
		return;
	}
	qsort(c->rtt, (size_t)c->nrtt, sizeof(*c->rtt), cmp_d);
	pair_say("b/%c: %s: %d round trips of 16 bytes: p50 %.2f ms, p99 %.2f ms, max %.2f ms",
		 c->kind, what, c->nrtt, c->rtt[c->nrtt / 2] * 1e3,
		 c->rtt[(c->nrtt * 99) / 100] * 1e3, c->rtt[c->nrtt - 1] * 1e3);
	c->nrtt = 0;
}

static int c_open(struct cconn *c, char kind, const char *port)
{
	struct ez_conn_opts o = { .max_msg_size = OBJ_MAX, .connect_timeout_ms = 20000,
				  .private_data = &c->kind, .private_data_len = 1 };

	memset(c, 0, sizeof(*c));
	c->kind = kind;
	if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &o, &c_cbs, c, &c->conn)) {
		pair_say("ez_connect: %s", ez_errmsg());
		return -1;
	}
	for (double end = pair_host_now() + 120; !c->connected && pair_host_now() < end;)
		pair_spin(0.02);
	PAIR_CHECK(c->connected && c->connect_status == 0, "b/%c: connect: %d %s", kind,
		   c->connect_status, c->msg);
	return c->connected && c->connect_status == 0 ? 0 : -1;
}

static void c_close(struct cconn *c)
{
	ez_conn_close(c->conn);
	for (double end = pair_host_now() + 60; !c->ended && pair_host_now() < end;)
		pair_spin(0.02);
	free(c->rtt);
	c->rtt = NULL;
}

/* Pings until n round trips (n > 0) or, with n 0, until every object is
 * answered, the connection ended, or the ceiling (a hang) passed. */
static void run(struct cconn *c, int n, double ceiling_s)
{
	double end = pair_host_now() + ceiling_s;
	int nobj = c->kind == 'U' ? 1 : NOBJ;

	c->pinging = c->kind != 'U';
	if (c->pinging && !c->ping_out)
		ping_send(c);
	while (!c->ended && pair_host_now() < end &&
	       (n ? (int)c->pongs < n : c->replies_ok + c->replies_bad < nobj || c->done < nobj))
		pair_spin(0.02);
	c->pinging = 0;
	while (c->ping_out && !c->ended && pair_host_now() < end)
		pair_spin(0.02);
	PAIR_CHECK(pair_host_now() < end, "b/%c: not done within %.0f s: %d objects answered, %d done, %u pongs",
		   c->kind, ceiling_s, c->replies_ok + c->replies_bad, c->done, c->pongs);
}

static int client(void)
{
	struct cconn c, pc;
	char port[16];
	double t0;
	int ret;

	own_begin();	/* registering 32 MiB is the test's own work */
	arena = malloc(2 * (size_t)OBJ_MAX);
	ret = arena ? ez_mr_reg(ctx, NULL, arena, 2 * (size_t)OBJ_MAX, EZ_MR_REMOTE_READ, &mr) : -ENOMEM;
	own_end();
	if (ret) {
		pair_say("ez_mr_reg: %s", ez_errmsg());
		return 1;
	}
	PAIR_CHECK(own_wait("port", 120) && pair_get("port", port, sizeof(port)), "no port from a");

	/* O: every message in send order; P: another connection of the same
	 * contexts, pinging while O carries the objects. */
	if (c_open(&c, 'O', port) == 0 && c_open(&pc, 'P', port) == 0) {
		run(&c, PINGS_ALONE, 300);
		rtt_report(&c, "no bulk");
		t0 = pair_now();
		obj_send(&c);
		obj_send(&c);
		pc.pinging = 1;
		ping_send(&pc);
		run(&c, 0, 600);
		pc.pinging = 0;
		for (double end = pair_host_now() + 60; pc.ping_out && !pc.ended && pair_host_now() < end;)
			pair_spin(0.02);
		rtt_report(&pc, "another connection, beside O's objects");
		PAIR_CHECK(pc.pong_bad == 0 && !pc.ended && pc.pongs > 0, "b/P: %u pongs, %u out of order, ended %d (%d %s)",
			   pc.pongs, pc.pong_bad, pc.ended, pc.end_status, pc.msg);
		c_close(&pc);
		PAIR_CHECK(pc.ended && pc.end_status == 0, "b/P: close: %d %s", pc.end_status, pc.msg);
		pair_say("b/O: %d objects (%.1f MiB) answered in %.2f s", c.replies_ok + c.replies_bad,
			 total_mib(), pair_now() - t0);
		rtt_report(&c, "beside the objects, in send order");
		PAIR_CHECK(c.replies_ok == NOBJ && c.replies_bad == 0 && c.send_errs == 0 && !c.ended &&
			   c.pong_bad == 0,
			   "b/O: %d verified, %d bad, %d send errors, pongs out of order %u, ended %d (%d %s)",
			   c.replies_ok, c.replies_bad, c.send_errs, c.pong_bad, c.ended, c.end_status,
			   c.msg);
		c_close(&c);
		PAIR_CHECK(c.ended && c.end_status == 0, "b/O: close: %d %s", c.end_status, c.msg);
	}
	/* S: small messages first. */
	if (c_open(&c, 'S', port) == 0) {
		t0 = pair_now();
		obj_send(&c);
		obj_send(&c);
		run(&c, 0, 600);
		pair_say("b/S: %d objects answered in %.2f s", c.replies_ok + c.replies_bad,
			 pair_now() - t0);
		rtt_report(&c, "beside the objects, EZ_CONN_SMALL_FIRST");
		PAIR_CHECK(c.replies_ok == NOBJ && c.replies_bad == 0 && c.send_errs == 0 && !c.ended &&
			   c.pong_bad == 0,
			   "b/S: %d verified, %d bad, %d send errors, pongs out of order %u, ended %d (%d %s)",
			   c.replies_ok, c.replies_bad, c.send_errs, c.pong_bad, c.ended, c.end_status,
			   c.msg);
		c_close(&c);
		PAIR_CHECK(c.ended && c.end_status == 0, "b/S: close: %d %s", c.end_status, c.msg);
	}
	gap_report("b");
	/* U: one 16 MiB READ, as before chunks: a figure. */
	if (c_open(&c, 'U', port) == 0) {
		t0 = pair_now();
		obj_send(&c);
		run(&c, 0, 300);
		pair_say("b/U (fetch_chunk 16 MiB, one READ): %s after %.2f s%s%s",
			 c.replies_ok ? "the object arrived" : "the object did not arrive",
			 pair_now() - t0, c.ended ? "; the connection ended: " : "",
			 c.ended ? c.msg : "");
		if (!c.ended)
			c_close(&c);
		else
			free(c.rtt);
	}
	pair_put("done", "1");
	own_wait("server-done", 120);
	ez_mr_dereg(mr);
	free(arena);
	return pair_failures != 0;
}

int main(void)
{
	ev_timer gap;
	const char *host = getenv("EZ_HOST");
	int ret;

	if (pair_init() || !host || !getenv("EZ_TEST_ADDR") || !getenv("EZ_PEER_ADDR")) {
		fprintf(stderr, "lossy: run me under `testbed pair` (see lossy.sh)\n");
		return 2;
	}
	pair_loop = ev_default_loop(0);
	if (ez_ctx_new(pair_loop, 0, &ctx)) {
		pair_say("ez_ctx_new: %s", ez_errmsg());
		return 1;
	}
	ev_timer_init(&gap, on_gap_tick, 0.01, 0.01);
	ev_timer_start(pair_loop, &gap);
	ret = strcmp(host, "a") == 0 ? server() : client();
	ev_timer_stop(pair_loop, &gap);
	if (ez_ctx_free(ctx))
		pair_say("ez_ctx_free: %s", ez_errmsg());
	pair_say("%s: %s (%d failed checks)", host, ret ? "FAILED" : "passed", pair_failures);
	return ret;
}
