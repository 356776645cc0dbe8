/* test_hostile_slowreader.c: peers that never fetch their large replies (issue 39, item 4): the server's staged copies stay within the per-address and per-context budgets (EZ_LIMIT_STAGED*), more connections from the same address get nothing more, an honest client from another address is served throughout, and once the readers fetch, every refused reply goes out (on_send_ready), nothing lost; and a receiver that holds its large messages fetches no more than its context's bound (EZ_LIMIT_LARGE_RECV), nothing lost. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fault.h"
#include "../waits.h"
#include "../checkmain.h"

#define MIB (1024u * 1024u)
#define REPLY (512u * 1024u)	/* a large message: above the 4 KiB buffers */
#define NREQ 8			/* requests of each hostile connection */
#define MAX_PENDING 64

/* The second address of the guest: another peer as the server sees it. */
static const char *addr6(void)
{
	const char *a = getenv("EZ_TEST_ADDR6");

	return a && *a ? a : "2001:db8::1";
}

/* ---- the server: each request (an 8-byte id) gets a 512 KiB reply ---- */

struct sconn {
	struct ez_conn *conn;
	uint64_t pending[MAX_PENDING];	/* ids whose reply was refused, in order */
	int npending;
	int sent;		/* replies ez_send() took */
	int refused;		/* -ENOBUFS answers */
	int ready;		/* on_send_ready calls */
	int ended;
	char why[400];		/* the last refusal's ez_errmsg() */
};

struct server {
	struct sconn sc[8];
	int n;
	uint8_t *reply;
};

static void fill_reply(uint8_t *p, uint64_t id)
{
	memcpy(p, &id, sizeof(id));
	memset(p + sizeof(id), (int)(uint8_t)(id * 7 + 1), REPLY - sizeof(id));
}

static struct server srv;

/* Sends the pending replies in order until one is refused. */
static void sc_flush(struct sconn *s)
{
	while (s->npending) {
		int ret;

		fill_reply(srv.reply, s->pending[0]);
		ret = ez_send(s->conn, srv.reply, REPLY, NULL, NULL);
		if (ret == -ENOBUFS) {
			s->refused++;
			snprintf(s->why, sizeof(s->why), "%s", ez_errmsg());
			return;
		}
		ck_assert_msg(ret == 0, "server ez_send: %d %s", ret, ez_errmsg());
		s->sent++;
		memmove(s->pending, s->pending + 1, (size_t)--s->npending * sizeof(s->pending[0]));
	}
}

static void sc_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct sconn *s = arg;
	uint64_t id;

	(void)conn;
	ck_assert_uint_eq(ez_buf_len(buf), sizeof(id));
	memcpy(&id, ez_buf_data(buf), sizeof(id));
	ez_buf_release(buf);
	ck_assert_int_lt(s->npending, MAX_PENDING);
	s->pending[s->npending++] = id;
	if (s->npending == 1)
		sc_flush(s);
}

static void sc_ready(struct ez_conn *conn, void *arg)
{
	struct sconn *s = arg;

	(void)conn;
	s->ready++;
	sc_flush(s);
}

static void sc_connect(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)arg;
	ck_assert_int_eq(status, 0);
}

static void sc_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct sconn *s = arg;

	(void)status;
	s->ended = 1;
	ez_conn_close(conn);
}

static const struct ez_conn_cbs sc_cbs = { .on_connect = sc_connect, .on_recv = sc_recv,
					   .on_disconnect = sc_disconnect,
					   .on_send_ready = sc_ready };

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct ez_conn_opts o = { .max_msg_size = MIB, .send_depth = 64 };
	struct sconn *s;

	(void)l;
	(void)arg;
	ck_assert_int_lt(srv.n, 8);
	s = &srv.sc[srv.n++];
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(ez_accept(req, &o, &sc_cbs, s, &s->conn), 0);
}

/* ---- clients ---- */

struct client {
	struct ez_conn *conn;
	int connected, status;
	int received, bad;
	int hold;		/* keep every reply (a reader that never lets go) */
	struct ez_buf *held[NREQ * 2];
	int nheld;
	int disconnected;
};

static void cl_connect(struct ez_conn *conn, int status, void *arg)
{
	struct client *c = arg;

	(void)conn;
	c->status = status;
	c->connected = 1;
}

static int reply_ok(struct ez_buf *buf)
{
	const uint8_t *p = ez_buf_data(buf);
	uint64_t id;

	if (ez_buf_len(buf) != REPLY)
		return 0;
	memcpy(&id, p, sizeof(id));
	for (size_t i = sizeof(id); i < REPLY; i++)
		if (p[i] != (uint8_t)(id * 7 + 1))
			return 0;
	return 1;
}

static void cl_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct client *c = arg;

	(void)conn;
	c->received++;
	c->bad += !reply_ok(buf);
	if (c->hold && c->nheld < NREQ * 2)
		c->held[c->nheld++] = buf;
	else
		ez_buf_release(buf);
}

static void cl_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct client *c = arg;

	(void)conn;
	(void)status;
	c->disconnected++;
}

static const struct ez_conn_cbs cl_cbs = { .on_connect = cl_connect, .on_recv = cl_recv,
					   .on_disconnect = cl_disconnect };

static void cl_connect_to(struct fb *b, struct ez_ctx *ctx, struct client *c, const char *host,
			  const char *port, struct ez_srqpool *pool)
{
	struct ez_conn_opts o = { .max_msg_size = MIB, .srqpool = pool };

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(ez_connect(ctx, host, port, &o, &cl_cbs, c, &c->conn), 0);
	ck_assert_msg(fb_run(b, &c->connected, 1, hang_ceiling(30)), "connect to %s: no callback",
		      host);
	ck_assert_msg(c->status == 0, "connect to %s: %d %s", host, c->status,
		      ez_conn_errmsg(c->conn));
}

static void cl_request(struct client *c, uint64_t id)
{
	ck_assert_int_eq(ez_send(c->conn, &id, sizeof(id), NULL, NULL), 0);
}

static void cl_let_go(struct client *c)
{
	c->hold = 0;
	while (c->nheld)
		ez_buf_release(c->held[--c->nheld]);
}

/* A pool whose connections fetch one large message at a time and, holding
 * it, no more: a reader that never lets go fetches nothing after its first. */
static struct ez_srqpool *one_at_a_time_pool(struct ez_ctx *ctx)
{
	struct ez_srqpool_opts po = { .large_max_bytes = REPLY };
	struct ez_srqpool *pool;

	ck_assert_int_eq(ez_srqpool_new(ctx, NULL, &po, &pool), 0);
	return pool;
}

/* Frees pool once its connections have let it go (their teardown ends
 * after their final callbacks). */
static void pool_free_when_idle(struct fb *b, struct ez_srqpool *pool)
{
	double end = now_s() + CTX_FREE_CEILING_S;
	int ret;

	while ((ret = ez_srqpool_free(pool)) == -EBUSY && now_s() < end)
		fb_spin(b, 0.01);
	ck_assert_msg(ret == 0, "ez_srqpool_free: %d %s", ret, ez_errmsg());
}

static struct sconn *sc_of_peer(int i)
{
	ck_assert_int_lt(i, srv.n);
	return &srv.sc[i];
}

START_TEST(slow_readers_held_to_their_share)
{
	struct fb b;
	struct ez_ctx *cctx;
	struct ez_listener *l;
	struct ez_listen_opts lo = { .max_conns_per_peer = 16 };
	struct ez_srqpool *p4, *p4b, *p6;
	struct client h, h2, g, h6;
	struct sconn *sh, *sh2, *sg, *sh6;
	char port[8];
	int i;

	memset(&srv, 0, sizeof(srv));
	srv.reply = malloc(REPLY);
	fb_init(&b);
	ck_assert_int_eq(ez_ctx_new(b.loop, 0, &cctx), 0);
	/* Small limits, so that a test moves megabytes, not gigabytes. */
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, EZ_LIMIT_STAGED, 3 * MIB), 0);
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, EZ_LIMIT_STAGED_PER_PEER, 2 * MIB), 0);
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, (enum ez_ctx_limit)7, 1), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_ctx_set_limit: unknown limit 7 (EZ_LIMIT_STAGED 1, EZ_LIMIT_STAGED_PER_PEER 2, EZ_LIMIT_RECV_BUFS 3, EZ_LIMIT_RECV_BUFS_PER_PEER 4, EZ_LIMIT_LARGE_RECV 5, EZ_LIMIT_LARGE_RECV_PER_PEER 6)");
	ck_assert_int_eq(ez_listen(b.ctx, NULL, "0", &lo, on_request, NULL, &l), 0);
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	p4 = one_at_a_time_pool(cctx);
	p4b = one_at_a_time_pool(cctx);
	p6 = one_at_a_time_pool(cctx);

	/* H, from 192.0.2.1, asks for NREQ replies and holds the first. */
	cl_connect_to(&b, cctx, &h, test_addr(), port, p4);
	h.hold = 1;
	sh = sc_of_peer(0);
	for (i = 0; i < NREQ; i++)
		cl_request(&h, (uint64_t)i);
	/* Reply 0 fetched (and held); 1-4 staged: 2 MiB, the address's share;
	 * 5 refused when 4 went (4 itself was refused once before H's fetch
	 * of 0 gave its bytes back). */
	ck_assert_msg(fb_run(&b, &sh->sent, 5, hang_ceiling(30)), "H: %d replies sent", sh->sent);
	ck_assert_msg(fb_run(&b, &h.received, 1, hang_ceiling(30)), "H: nothing fetched");
	ck_assert_int_eq(sh->sent, 5);
	ck_assert_int_eq(sh->npending, NREQ - 5);
	ck_assert_int_ge(sh->refused, 1);
	ck_assert_str_eq(sh->why, "ez_send: large messages waiting for this peer address to fetch them hold 2.0 MiB (EZ_LIMIT_STAGED_PER_PEER 2.0 MiB); 0.5 MiB more must wait until one is fetched (on_send_ready)");
	printf("slow reader H (%s): 1 reply fetched and held, %d staged (2 MiB, its address's share), %d waiting; refused: \"%s\"\n",
	       test_addr(), sh->sent - 1, sh->npending, sh->why);

	/* A second connection from the same address gets nothing more. */
	cl_connect_to(&b, cctx, &h2, test_addr(), port, p4b);
	h2.hold = 1;
	sh2 = sc_of_peer(1);
	cl_request(&h2, 100);
	ck_assert_msg(fb_run(&b, &sh2->refused, 1, hang_ceiling(30)), "H2: not refused");
	ck_assert_int_eq(sh2->sent, 0);
	ck_assert_str_eq(sh2->why, sh->why);

	/* G, an honest client from the other address, is served throughout. */
	cl_connect_to(&b, cctx, &g, addr6(), port, NULL);
	sg = sc_of_peer(2);
	for (i = 0; i < 10; i++) {
		cl_request(&g, (uint64_t)(200 + i));
		ck_assert_msg(fb_run(&b, &g.received, i + 1, hang_ceiling(30)),
			      "honest G: %d of %d replies", g.received, i + 1);
	}
	ck_assert_int_eq(g.bad, 0);
	ck_assert_int_eq(sg->refused, 0);

	/* H6, a slow reader from G's address: the context's 3 MiB fill (H's 2,
	 * H6's 1) and the next reply is refused for the context. */
	cl_connect_to(&b, cctx, &h6, addr6(), port, p6);
	h6.hold = 1;
	sh6 = sc_of_peer(3);
	for (i = 0; i < 4; i++)
		cl_request(&h6, (uint64_t)(300 + i));
	ck_assert_msg(fb_run(&b, &sh6->sent, 3, hang_ceiling(30)), "H6: %d replies sent", sh6->sent);
	ck_assert_msg(fb_run(&b, &h6.received, 1, hang_ceiling(30)), "H6: nothing fetched");
	ck_assert_int_eq(sh6->sent, 3);
	ck_assert_int_eq(sh6->npending, 1);
	ck_assert_str_eq(sh6->why, "ez_send: large messages waiting for their peers to fetch them hold 3.0 MiB of this context (EZ_LIMIT_STAGED 3.0 MiB); 0.5 MiB more must wait until one is fetched (on_send_ready)");
	printf("slow reader H6 (%s): the context's 3 MiB full; refused: \"%s\"\n", addr6(),
	       sh6->why);

	/* The readers let go: every refused reply goes out, nothing lost. H2's
	 * were refused for bytes H held: its on_send_ready comes from H's
	 * fetches (the context wakes every connection it refused). */
	cl_let_go(&h);
	cl_let_go(&h2);
	cl_let_go(&h6);
	ck_assert_msg(fb_run(&b, &h.received, NREQ, hang_ceiling(60)), "H: %d of %d", h.received,
		      NREQ);
	ck_assert_msg(fb_run(&b, &h2.received, 1, hang_ceiling(60)), "H2: %d of 1", h2.received);
	ck_assert_msg(fb_run(&b, &h6.received, 4, hang_ceiling(60)), "H6: %d of 4", h6.received);
	ck_assert_int_eq(h.bad + h2.bad + h6.bad, 0);
	ck_assert_int_ge(sh2->ready, 1);
	ck_assert_int_eq(sh->sent, NREQ);
	printf("after letting go: H %d/%d, H2 1/1, H6 4/4 replies, bytes intact; on_send_ready: H %d, H2 %d, H6 %d\n",
	       h.received, NREQ, sh->ready, sh2->ready, sh6->ready);

	ez_conn_close(h.conn);
	ez_conn_close(h2.conn);
	ez_conn_close(g.conn);
	ez_conn_close(h6.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, hang_ceiling(30)));
	ck_assert(fb_run(&b, &h2.disconnected, 1, hang_ceiling(30)));
	ck_assert(fb_run(&b, &g.disconnected, 1, hang_ceiling(30)));
	ck_assert(fb_run(&b, &h6.disconnected, 1, hang_ceiling(30)));
	for (i = 0; i < srv.n; i++)
		ck_assert_msg(fb_run(&b, &srv.sc[i].ended, 1, hang_ceiling(30)), "server conn %d", i);
	ez_listener_close(l);
	pool_free_when_idle(&b, p4);
	pool_free_when_idle(&b, p4b);
	pool_free_when_idle(&b, p6);
	ck_assert_int_eq(ctx_free_when_idle(b.loop, cctx, CTX_FREE_CEILING_S), 0);
	fb_fini(&b);
	free(srv.reply);
}
END_TEST

/* The receiving side's bound (EZ_LIMIT_LARGE_RECV): a client context that
 * holds every large reply it got fetches up to its bound (2 MiB: 4 replies
 * of 512 KiB) and then waits, counting the wait, nothing lost; each release
 * lets one more in, and letting go brings the rest, bytes intact. */
START_TEST(holder_held_to_the_large_recv_bound)
{
	struct fb b;
	struct ez_ctx *cctx;
	struct ez_listener *l;
	struct ez_conn_stats st;
	struct client c;
	struct sconn *sc;
	char port[8];
	double end;
	int i;

	memset(&srv, 0, sizeof(srv));
	srv.reply = malloc(REPLY);
	fb_init(&b);
	ck_assert_int_eq(ez_ctx_new(b.loop, 0, &cctx), 0);
	ck_assert_int_eq(ez_ctx_set_limit(cctx, EZ_LIMIT_LARGE_RECV, 2 * MIB), 0);
	ck_assert_int_eq(ez_listen(b.ctx, NULL, "0", NULL, on_request, NULL, &l), 0);
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	cl_connect_to(&b, cctx, &c, test_addr(), port, NULL);
	c.hold = 1;
	sc = sc_of_peer(0);
	for (i = 0; i < NREQ; i++)
		cl_request(&c, (uint64_t)i);
	ck_assert_msg(fb_run(&b, &c.received, 4, hang_ceiling(30)), "%d of 4 replies", c.received);
	/* The fifth's fetch waits: the event is the counter. */
	memset(&st, 0, sizeof(st));
	end = now_s() + hang_ceiling(30);
	while (ez_conn_stats(c.conn, &st) == 0 && !st.large_recv_waits && now_s() < end)
		fb_spin(&b, 0.01);
	ck_assert_msg(st.large_recv_waits >= 1, "no fetch waited (%d received)", c.received);
	/* The wait is the state that matters: all 2 MiB held, so the fifth
	 * was not fetched (no fixed-time look for what does not come). */
	ck_assert_int_eq(c.received, 4);
	ck_assert_int_eq(c.nheld, 4);
	ck_assert_int_eq(sc->sent, NREQ);	/* the server staged them all */
	printf("holder: 4 replies of 512 KiB held (EZ_LIMIT_LARGE_RECV 2 MiB), the next fetch waited (large_recv_waits %llu), %d replies staged at the server\n",
	       (unsigned long long)st.large_recv_waits, sc->sent);
	/* One released: one more fetched. */
	ez_buf_release(c.held[--c.nheld]);
	ck_assert_msg(fb_run(&b, &c.received, 5, hang_ceiling(30)), "after one release: %d",
		      c.received);
	cl_let_go(&c);
	ck_assert_msg(fb_run(&b, &c.received, NREQ, hang_ceiling(60)), "after letting go: %d of %d",
		      c.received, NREQ);
	ck_assert_int_eq(c.bad, 0);
	ck_assert_int_eq(ez_conn_stats(c.conn, &st), 0);
	printf("  one release let one more in; after letting go: %d of %d, bytes intact, %llu waits in all\n",
	       c.received, NREQ, (unsigned long long)st.large_recv_waits);
	ez_conn_close(c.conn);
	ck_assert(fb_run(&b, &c.disconnected, 1, hang_ceiling(30)));
	ck_assert(fb_run(&b, &sc->ended, 1, hang_ceiling(30)));
	ez_listener_close(l);
	ck_assert_int_eq(ctx_free_when_idle(b.loop, cctx, CTX_FREE_CEILING_S), 0);
	fb_fini(&b);
	free(srv.reply);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile_slowreader");
	TCase *tc = tcase_create("slowreader");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, slow_readers_held_to_their_share);
	tcase_add_test(tc, holder_held_to_the_large_recv_bound);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
