/* test_pool_share.c: many connections on one shared pool: receive credits stay within the pool, a greedy peer holds no more than its share, rebalancing on attach and detach, credits only for reposted buffers. */
#include <check.h>
#include <errno.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "easyrdma.h"
#include "testenv.h"
#include "../checkmain.h"
#include "../waits.h"

#define MSG_MIN 16
#define MSG_MAX 200
#define MAXC 1000

struct bench;

/* One client connection and what the server saw of it. */
struct cli {
	struct bench *b;
	int idx;
	struct ez_conn *conn;	/* client side, private pool */
	struct ez_conn *sconn;	/* server side, on the shared pool */
	int connected, connect_status, disconnected, sdisconnected;
	int greedy;		/* keeps send_depth messages queued until told to stop */
	uint32_t queued;	/* ez_send() accepted (sequence numbers 0..queued-1) */
	uint32_t target;	/* queue up to this many (bursts raise it) */
	uint32_t recvd;		/* server side: in order, payload checked */
	uint32_t bad;		/* out of order or wrong bytes */
	uint32_t max_credits;	/* highest send_credits sampled on the client */
	uint32_t max_outstanding; /* highest msgs_sent - recvd, at every arrival */
	int hold;		/* server keeps this connection's buffers */
};

struct bench {
	struct ev_loop *loop;
	ev_timer tick;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	char port[8];
	struct ez_srqpool *pool;
	struct cli *c;
	int n;
	int accepted;
	struct ez_buf *held[256];
	int nheld;
	int hold_at;		/* held buffers are released (from the loop) at this many */
	int releases;
	uint64_t checks;	/* samples of the grant invariant */
	uint32_t mark, limit;	/* for the phase conditions */
	int strict;
	/* Windowed opening (cli_open_windowed): the next to open, its send depth. */
	int next_open;
	uint32_t open_depth;
};

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static size_t msg_len(uint32_t seq)
{
	return MSG_MIN + (seq * 37u) % (MSG_MAX - MSG_MIN + 1);
}

static void fill(uint8_t *p, int idx, uint32_t seq)
{
	size_t len = msg_len(seq);

	memcpy(p, &idx, 4);
	memcpy(p + 4, &seq, 4);
	for (size_t i = 8; i < len; i++)
		p[i] = (uint8_t)(idx * 7 + seq * 13 + i);
}

/* ---- server: checks every message, releases (or holds) the buffer ---- */

static void srv_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct cli *c = arg;
	uint8_t want[MSG_MAX];
	uint32_t seq = c->recvd;

	(void)conn;
	/* Exact, per message: what the client has posted and the server not
	 * yet seen, this one included, each on one of the pool's credits. */
	if (c->conn) {
		struct ez_conn_stats cs;

		ck_assert_int_eq(ez_conn_stats(c->conn, &cs), 0);
		if (cs.msgs_sent - seq > c->max_outstanding)
			c->max_outstanding = (uint32_t)(cs.msgs_sent - seq);
	}
	fill(want, c->idx, seq);
	if (ez_buf_len(buf) != msg_len(seq) || memcmp(ez_buf_data(buf), want, msg_len(seq))) {
		if (c->bad++ < 3)
			fprintf(stderr, "conn %d: message %u: %zu bytes, not the expected %zu (or bytes differ)\n",
				c->idx, seq, ez_buf_len(buf), msg_len(seq));
	}
	c->recvd++;
	if (c->hold && c->b->nheld < (int)(sizeof(c->b->held) / sizeof(c->b->held[0])))
		c->b->held[c->b->nheld++] = buf;
	else
		ez_buf_release(buf);
}

static void srv_connect(struct ez_conn *conn, int status, void *arg)
{
	(void)arg;
	ck_assert_msg(status == 0, "accepted connection failed: %d: %s", status, ez_conn_errmsg(conn));
}

static void srv_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct cli *c = arg;

	(void)status;
	c->sdisconnected = 1;
	ez_conn_close(conn);
	c->sconn = NULL;
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct bench *b = arg;
	struct ez_conn_opts o = { .send_depth = 2, .max_msg_size = MSG_MAX, .srqpool = b->pool };
	struct ez_conn_cbs cbs = { .on_connect = srv_connect, .on_recv = srv_recv,
				   .on_disconnect = srv_disconnect };
	size_t len;
	const void *data = ez_conn_req_data(req, &len);
	struct cli *c;
	int idx;

	(void)l;
	ck_assert_uint_eq(len, sizeof(idx));
	memcpy(&idx, data, sizeof(idx));	/* private data has no alignment */
	ck_assert(idx >= 0 && idx < b->n);
	c = &b->c[idx];
	ck_assert_msg(ez_accept(req, &o, &cbs, c, &c->sconn) == 0, "ez_accept: %s", ez_errmsg());
	b->accepted++;
}

/* ---- clients: the greedy one keeps its queue full, the others burst ---- */

static void pump(struct cli *c);

static void sent_cb(struct ez_conn *conn, int status, void *arg)
{
	struct cli *c = arg;

	(void)conn;
	if (status == 0)
		pump(c);
}

static void pump(struct cli *c)
{
	uint8_t buf[MSG_MAX];

	while (c->connected && c->queued < c->target) {
		int ret;

		fill(buf, c->idx, c->queued);
		ret = ez_send(c->conn, buf, msg_len(c->queued), sent_cb, c);
		if (ret == -ENOBUFS)
			return;		/* send_depth queued; the callback comes back */
		ck_assert_msg(ret == 0, "conn %d: ez_send #%u: %s", c->idx, c->queued, ez_errmsg());
		c->queued++;
	}
}

static void cli_open_depth(struct bench *b, int i, uint32_t target, uint32_t depth);

static void cli_connect(struct ez_conn *conn, int status, void *arg)
{
	struct cli *c = arg;
	struct bench *b = c->b;

	ck_assert_msg(status == 0, "conn %d: %s", c->idx, ez_conn_errmsg(conn));
	c->connected = 1;
	c->connect_status = status;
	/* A windowed bench opens the next one as each connects. */
	if (b->next_open && b->next_open < b->n)
		cli_open_depth(b, b->next_open++, 0, b->open_depth);
	pump(c);
}

static void cli_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct cli *c = arg;

	(void)conn;
	(void)status;
	c->disconnected = 1;
}

static void cli_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	(void)conn;
	(void)arg;
	ez_buf_release(buf);
}

static void bench_init(struct bench *b, int n, const struct ez_srqpool_opts *po)
{
	/* Up to 1000 connects at once, all from one address, into a server
	 * on the same loop: each handshake gets the clients' 60 s, not the
	 * default 2 s (CI saw an accepted one end at 2 s waiting for its RTU,
	 * an ASan build in a loaded guest). Deadlines are test_hostile_*'s. */
	struct ez_listen_opts lo = { .backlog = 1024, .max_pending = 2048,
				     .max_pending_per_peer = 2048, .handshake_timeout_ms = 60000,
				     /* above the connection caps' defaults (4096, 1024 a peer) */
				     .max_conns = 65536, .max_conns_per_peer = 65536,
				     .max_ctx_conns = 65536 };

	memset(b, 0, sizeof(*b));
	b->loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(b->loop);
	ck_assert_int_eq(ez_ctx_new(b->loop, 0, &b->ctx), 0);
	ev_timer_init(&b->tick, on_tick, 0.01, 0.01);
	ev_timer_start(b->loop, &b->tick);
	ck_assert_msg(ez_srqpool_new(b->ctx, getenv("EZ_DEVICE"), po, &b->pool) == 0,
		      "ez_srqpool_new: %s", ez_errmsg());
	b->n = n;
	b->c = calloc(n, sizeof(*b->c));
	ck_assert_ptr_nonnull(b->c);
	ck_assert_msg(ez_listen(b->ctx, test_addr(), "0", &lo, on_request, b, &b->listener) == 0,
		      "ez_listen: %s", ez_errmsg());
	snprintf(b->port, sizeof(b->port), "%u", ez_listener_port(b->listener));
}

static void cli_open_depth(struct bench *b, int i, uint32_t target, uint32_t depth)
{
	/* Small private pools on the client side: the server's pool is the one under test.
	 * The connect deadline is long: 1,000 connects at once into a server on the
	 * same loop take ~25 s under ASan in a TCG guest, and the server's backlog
	 * is not the client's (its deadline waits only for its own CM channel):
	 * conn 994 once timed out "waiting for the peer's CM reply" at 5 s in CI.
	 * What this file tests is the pool, not connect latency. */
	struct ez_conn_opts o = { .send_depth = depth, .recv_depth = 4, .max_msg_size = MSG_MAX,
				  .connect_timeout_ms = 60000 };
	struct ez_conn_cbs cbs = { .on_connect = cli_connect, .on_recv = cli_recv,
				   .on_disconnect = cli_disconnect };
	struct cli *c = &b->c[i];

	c->b = b;
	c->idx = i;
	c->target = target;
	o.private_data = &c->idx;
	o.private_data_len = sizeof(c->idx);
	ck_assert_msg(ez_connect(b->ctx, test_addr(), b->port, &o, &cbs, c, &c->conn) == 0,
		      "ez_connect: %s", ez_errmsg());
}

static void cli_open(struct bench *b, int i, uint32_t target)
{
	cli_open_depth(b, i, target, 16);
}

/* All b->n connections, at most `window` connecting at once: each one's
 * connect deadline then covers its own handshake and a queue `window` deep,
 * not the whole batch. Opened all at once, 1,000 connects into a server on
 * the same loop took 6-42 s under ASan in a TCG guest, and on a busier host
 * conn 998 passed its 60 s deadline "waiting for the peer's CM reply" behind
 * the 997 before it (the server accepts one at a time on this loop). */
static void cli_open_windowed(struct bench *b, uint32_t depth, int window)
{
	b->open_depth = depth;
	b->next_open = window < b->n ? window : b->n;
	for (int i = 0; i < b->next_open; i++)
		cli_open_depth(b, i, 0, depth);
}

/* The invariant, sampled: what the clients hold never exceeds what the pool
 * granted, which never exceeds the pool; nor the pool less its reserve while
 * no connection attached when every other credit was out (b->strict). */
static void sample(struct bench *b, struct ez_srqpool_stats *st)
{
	uint64_t held = 0;

	ck_assert_int_eq(ez_srqpool_stats(b->pool, st), 0);
	for (int i = 0; i < b->n; i++) {
		struct cli *c = &b->c[i];
		struct ez_conn_info ci;
		struct ez_conn_stats cs;
		uint32_t out;

		if (!c->connected || c->disconnected || !c->conn)
			continue;
		ck_assert_int_eq(ez_conn_info(c->conn, &ci), 0);
		ck_assert_int_eq(ez_conn_stats(c->conn, &cs), 0);
		held += ci.send_credits;
		if (ci.send_credits > c->max_credits)
			c->max_credits = ci.send_credits;
		out = (uint32_t)cs.msgs_sent - c->recvd;
		if (out > c->max_outstanding)
			c->max_outstanding = out;
	}
	ck_assert_msg(held <= st->credits_granted, "clients hold %llu credits, the pool granted %llu",
		      (unsigned long long)held, (unsigned long long)st->credits_granted);
	ck_assert_msg(st->credits_granted + (b->strict ? st->credit_reserve : 0) <= st->total,
		      "granted %llu + reserve %u > %llu buffers", (unsigned long long)st->credits_granted,
		      b->strict ? st->credit_reserve : 0, (unsigned long long)st->total);
	ck_assert_uint_le(st->credits_granted_max, st->total);
	b->checks++;
}

/* Runs the loop until cond(b) or secs pass, sampling every `every` turns. */
static int run_until(struct bench *b, int (*cond)(struct bench *), double secs, int every)
{
	double end = now_s() + hang_ceiling(secs);	/* tests/waits.h */
	struct ez_srqpool_stats st;
	int turn = 0;

	while (!cond(b) && now_s() < end) {
		ev_run(b->loop, EVRUN_ONCE);
		if (b->hold_at && b->nheld >= b->hold_at) {
			for (int i = 0; i < b->nheld; i++)
				ez_buf_release(b->held[i]);
			b->nheld = 0;
			b->releases++;
		}
		if (every && ++turn % every == 0)
			sample(b, &st);
	}
	return cond(b);
}

static int all_connected(struct bench *b)
{
	for (int i = 0; i < b->n; i++)
		if (!b->c[i].connected || !b->c[i].sconn)
			return 0;
	return b->accepted == b->n;
}

/* Every burst sender's messages arrived. */
static int bursts_done(struct bench *b)
{
	for (int i = 0; i < b->n; i++)
		if (!b->c[i].greedy && b->c[i].recvd < b->c[i].target)
			return 0;
	return 1;
}

static int everything_arrived(struct bench *b)
{
	for (int i = 0; i < b->n; i++)
		if (b->c[i].recvd < b->c[i].queued || b->c[i].queued < b->c[i].target)
			return 0;
	return 1;
}

static int all_closed(struct bench *b)
{
	for (int i = 0; i < b->n; i++)
		if ((b->c[i].conn && !b->c[i].disconnected) || b->c[i].sconn)
			return 0;
	return 1;
}

static void bench_close(struct bench *b)
{
	for (int i = 0; i < b->n; i++)
		if (b->c[i].conn)
			ez_conn_close(b->c[i].conn);
	ck_assert(run_until(b, all_closed, 30, 0));
	ez_listener_close(b->listener);
	ck_assert_msg(ez_srqpool_free(b->pool) == 0, "ez_srqpool_free: %s", ez_srqpool_errmsg(b->pool));
	ck_assert_msg(ctx_free_when_idle(b->loop, b->ctx, CTX_FREE_CEILING_S) == 0, "ez_ctx_free: %s",
		      ez_errmsg());
	ev_timer_stop(b->loop, &b->tick);
	ev_loop_destroy(b->loop);
	free(b->c);
}

static void check_delivery(struct bench *b)
{
	for (int i = 0; i < b->n; i++) {
		struct cli *c = &b->c[i];

		ck_assert_msg(c->bad == 0, "conn %d: %u messages out of order or damaged", i, c->bad);
		ck_assert_msg(c->recvd == c->queued, "conn %d: %u of %u messages arrived", i, c->recvd,
			      c->queued);
	}
}

/* ---- 50 connections: one greedy sender, 49 bursts, one pool of 256 ---- */

START_TEST(fifty_conns_greedy_and_bursts)
{
	struct ez_srqpool_opts po = { .nbufs = 256, .buf_size = MSG_MAX };
	struct ez_srqpool_stats st0, st;
	struct bench b;
	const int n = 50, rounds = 20, burst = 8;
	double t0, worst = 0;
	uint32_t others_max_out = 0, others_max_cred = 0;

	bench_init(&b, n, &po);
	b.strict = 1;
	for (int i = 0; i < n; i++)
		cli_open(&b, i, 0);
	ck_assert_msg(run_until(&b, all_connected, 60, 0), "%d of %d accepted", b.accepted, n);
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st0), 0);
	ck_assert_uint_eq(st0.attached, n);
	ck_assert_uint_eq(st0.credit_share, (256 - 32) / n);	/* an eighth stays back */
	/* Without expected_conns every connection starts with one credit. */
	for (int i = 0; i < n; i++) {
		struct ez_conn_info ci;

		ck_assert_int_eq(ez_conn_info(b.c[i].conn, &ci), 0);
		ck_assert_uint_eq(ci.peer_credits, 1);
	}

	/* The greedy one streams from now until the bursts are all done. */
	b.c[0].greedy = 1;
	b.c[0].target = UINT32_MAX;
	pump(&b.c[0]);
	t0 = now_s();
	for (int r = 1; r <= rounds; r++) {
		double r0 = now_s();

		for (int i = 1; i < n; i++) {
			b.c[i].target = (uint32_t)(r * burst);
			pump(&b.c[i]);
		}
		ck_assert_msg(run_until(&b, bursts_done, 60, 1), "round %d: bursts not through", r);
		if (now_s() - r0 > worst)
			worst = now_s() - r0;
	}
	/* Stop the greedy one; whatever it queued must still arrive. */
	b.c[0].target = b.c[0].queued;
	ck_assert_msg(run_until(&b, everything_arrived, 30, 1), "greedy: %u of %u arrived",
		      b.c[0].recvd, b.c[0].queued);
	sample(&b, &st);
	check_delivery(&b);
	for (int i = 1; i < n; i++) {
		ck_assert_uint_eq(b.c[i].recvd, (uint32_t)(rounds * burst));
		if (b.c[i].max_outstanding > others_max_out)
			others_max_out = b.c[i].max_outstanding;
		if (b.c[i].max_credits > others_max_cred)
			others_max_cred = b.c[i].max_credits;
	}
	/* The greedy peer never held more than its share, sampled or not. */
	ck_assert_uint_le(b.c[0].max_credits, st.credit_share);
	ck_assert_uint_le(b.c[0].max_outstanding, st.credit_share);
	ck_assert_uint_le(st.conn_granted_max, st.credit_share);
	ck_assert_uint_le(st.credits_granted_max + st.credit_reserve, st.total);
	ck_assert_uint_gt(b.c[0].recvd, (uint32_t)(rounds * burst));	/* it did stream */
	ck_assert_uint_eq(st.growths, 0);
	if (st.rnr_naks_sent >= 0 && st0.rnr_naks_sent >= 0)
		ck_assert_msg(st.rnr_naks_sent == st0.rnr_naks_sent,
			      "%lld RNR NAKs: a peer met an empty SRQ",
			      (long long)(st.rnr_naks_sent - st0.rnr_naks_sent));
	printf("pool share: %d connections on 256 buffers (share %u, reserve %u): greedy sent %u "
	       "(max %u credits held, max %u outstanding), 49 others %d x %d each (max %u credits, "
	       "max %u outstanding), in %.0f ms, slowest round %.0f ms; pool granted at most %llu "
	       "(one connection at most %u), %llu returns withheld, %llu waits, %llu samples, "
	       "RNR NAKs sent %lld\n",
	       n, st.credit_share, st.credit_reserve, b.c[0].recvd, b.c[0].max_credits,
	       b.c[0].max_outstanding, rounds, burst, others_max_cred, others_max_out,
	       (now_s() - t0) * 1e3, worst * 1e3, (unsigned long long)st.credits_granted_max,
	       st.conn_granted_max, (unsigned long long)st.credits_withheld,
	       (unsigned long long)st.credit_waits, (unsigned long long)b.checks,
	       (long long)(st.rnr_naks_sent - st0.rnr_naks_sent));
	bench_close(&b);
}
END_TEST

/* ---- one pool of 64: a greedy peer alone, then with three others, then alone again ---- */

static int greedy_window_over(struct bench *b)
{
	return b->c[0].max_credits > b->limit;
}

static int greedy_advanced(struct bench *b)
{
	return b->c[0].recvd >= b->mark;
}

static int others_closed(struct bench *b)
{
	for (int i = 1; i < b->n; i++)
		if (!b->c[i].disconnected || b->c[i].sconn)
			return 0;
	return 1;
}

static int released_five_times(struct bench *b)
{
	return b->releases >= 5;
}

START_TEST(rebalance_on_attach_and_detach)
{
	struct ez_srqpool_opts po = { .nbufs = 64, .buf_size = MSG_MAX };
	struct ez_srqpool_stats st0, st1, st2, st3, st4;
	struct bench b;
	uint32_t alone_max, shared_max, shared_out, again_max;

	bench_init(&b, 4, &po);
	b.n = 1;
	cli_open(&b, 0, UINT32_MAX);
	b.c[0].greedy = 1;
	ck_assert(run_until(&b, all_connected, 20, 0));
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st0), 0);
	ck_assert_uint_eq(st0.credit_share, 56);	/* 8 kept for credit messages and newcomers */

	/* Alone, the greedy peer's window grows well past what four would each
	 * get (14): a window of 15 could be at 14 again, its excess in flight,
	 * when the share shrinks, and then no return need be withheld. */
	b.limit = 20;
	ck_assert_msg(run_until(&b, greedy_window_over, 20, 1), "window stayed at %u",
		      b.c[0].max_credits);
	alone_max = b.c[0].max_credits;
	sample(&b, &st1);

	/* Three more attach: the share shrinks to (64 - 8) / 4 = 14 and the
	 * greedy peer's returns are withheld until it is back under it. */
	b.n = 4;
	for (int i = 1; i < 4; i++)
		cli_open(&b, i, 0);
	ck_assert(run_until(&b, all_connected, 20, 1));
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st2), 0);
	ck_assert_uint_eq(st2.credit_share, 14);
	ck_assert_uint_ge(st2.rebalances, st1.rebalances + 3);
	/* Once it has used every credit granted before the shrink, it holds
	 * no more than the new share. */
	b.mark = b.c[0].recvd + st0.credit_share;
	ck_assert(run_until(&b, greedy_advanced, 20, 1));
	b.c[0].max_credits = b.c[0].max_outstanding = 0;
	for (int i = 1; i < 4; i++) {
		b.c[i].target = 40;
		pump(&b.c[i]);
	}
	ck_assert_msg(run_until(&b, bursts_done, 30, 1), "the newcomers' bursts did not get through");
	b.mark = b.c[0].recvd + 100;
	ck_assert(run_until(&b, greedy_advanced, 20, 1));
	shared_max = b.c[0].max_credits;
	shared_out = b.c[0].max_outstanding;
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st3), 0);
	ck_assert_uint_le(shared_max, 14);
	ck_assert_uint_le(shared_out, 14);
	/* Not asserted: that credits_withheld grew. A return is withheld only
	 * if the pool computes it while the greedy peer is still over the new
	 * share; under ASan its excess was always used up first (0 withheld in
	 * CI, 2026-12-02). What the shrink must achieve is asserted above. */

	/* They leave: the share grows back and the headroom reaches the greedy peer. */
	for (int i = 1; i < 4; i++) {
		ez_conn_close(b.c[i].conn);
		b.c[i].conn = NULL;
	}
	ck_assert(run_until(&b, others_closed, 20, 0));
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st4), 0);
	ck_assert_uint_eq(st4.attached, 1);
	ck_assert_uint_eq(st4.credit_share, 56);
	ck_assert_uint_ge(st4.rebalances, st3.rebalances + 3);
	b.c[0].max_credits = 0;
	b.limit = 14;
	ck_assert_msg(run_until(&b, greedy_window_over, 20, 1), "window stayed at %u after the detaches",
		      b.c[0].max_credits);
	again_max = b.c[0].max_credits;

	/* The server keeps up to 40 buffers at a time: credits come back only
	 * as buffers are posted again, so the peer waits instead of meeting an
	 * empty SRQ. */
	b.c[0].hold = 1;
	b.hold_at = 40;
	ck_assert_msg(run_until(&b, released_five_times, 60, 1), "%d releases", b.releases);
	b.c[0].hold = 0;
	b.hold_at = 0;
	for (int i = 0; i < b.nheld; i++)
		ez_buf_release(b.held[i]);
	b.nheld = 0;
	b.c[0].target = b.c[0].queued;
	ck_assert(run_until(&b, everything_arrived, 30, 1));
	sample(&b, &st4);
	check_delivery(&b);
	ck_assert_uint_gt(st4.credit_waits, st3.credit_waits);
	if (st4.rnr_naks_sent >= 0 && st0.rnr_naks_sent >= 0)
		ck_assert_msg(st4.rnr_naks_sent == st0.rnr_naks_sent, "%lld RNR NAKs",
			      (long long)(st4.rnr_naks_sent - st0.rnr_naks_sent));
	printf("rebalance on 64 buffers: greedy alone reached %u credits; with 3 more (share 14) "
	       "at most %u held, %u outstanding, newcomers 3 x 40 through; alone again %u; "
	       "%llu returns withheld, %llu rebalances; holding 40 buffers x 5: %llu waits for "
	       "reposts, RNR NAKs sent %lld; greedy delivered %u in order\n",
	       alone_max, shared_max, shared_out, again_max,
	       (unsigned long long)st4.credits_withheld, (unsigned long long)st4.rebalances,
	       (unsigned long long)(st4.credit_waits - st3.credit_waits),
	       (long long)(st4.rnr_naks_sent - st0.rnr_naks_sent), b.c[0].recvd);
	bench_close(&b);
}
END_TEST

/* ---- expected_conns: every connection starts with its whole share ---- */

START_TEST(expected_conns_full_share_at_once)
{
	struct ez_srqpool_opts po = { .nbufs = 256, .buf_size = MSG_MAX, .expected_conns = 20 };
	struct ez_srqpool_stats st;
	struct bench b;
	const int n = 20;
	uint64_t sum = 0;
	uint32_t lo = UINT32_MAX, hi = 0;

	bench_init(&b, n, &po);
	b.strict = 1;
	for (int i = 0; i < n; i++)
		cli_open(&b, i, 0);
	ck_assert(run_until(&b, all_connected, 30, 0));
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st), 0);
	ck_assert_uint_eq(st.expected_conns, 20);
	for (int i = 0; i < n; i++) {
		struct ez_conn_info ci;

		ck_assert_int_eq(ez_conn_info(b.c[i].conn, &ci), 0);
		sum += ci.peer_credits;
		lo = ci.peer_credits < lo ? ci.peer_credits : lo;
		hi = ci.peer_credits > hi ? ci.peer_credits : hi;
	}
	/* (256 - reserve) / 20: 12 while the reserve is 8..16, 11 once it is 17..20;
	 * the first grants are made within the buffers posted less the reserve. */
	ck_assert_uint_eq(st.credit_share, 11);
	ck_assert_uint_ge(lo, st.credit_share);
	ck_assert_uint_le(hi, 12);
	ck_assert_uint_le(sum + st.credit_reserve, st.total);
	for (int i = 0; i < n; i++) {
		b.c[i].target = 3 * hi;
		pump(&b.c[i]);
	}
	ck_assert(run_until(&b, everything_arrived, 30, 1));
	sample(&b, &st);
	check_delivery(&b);
	ck_assert_uint_le(st.conn_granted_max, hi);
	printf("expected_conns 20 on 256 buffers: first grants %u..%u credits, %llu in all (reserve %u, "
	       "share now %u); 20 x %u messages through, %llu returns withheld\n",
	       lo, hi, (unsigned long long)sum, st.credit_reserve, st.credit_share, 3 * hi,
	       (unsigned long long)st.credits_withheld);
	bench_close(&b);
}
END_TEST

/* ---- the case: 1,000 connections on a pool of 4,000 buffers ---- */

START_TEST(thousand_conns_one_pool)
{
	struct ez_srqpool_opts po = { .nbufs = 4000, .buf_size = MSG_MAX };
	struct ez_srqpool_stats st0, st;
	struct bench b;
	const int n = MAXC, burst = 6;
	uint64_t sum_init = 0;
	uint32_t max_init = 0, max_out = 0;
	double t0 = now_s(), t1;

	bench_init(&b, n, &po);
	b.strict = 1;
	cli_open_windowed(&b, 8, 64);
	ck_assert_msg(run_until(&b, all_connected, 120, 0), "%d of %d accepted (%d opened)",
		      b.accepted, n, b.next_open);
	t1 = now_s();
	ck_assert_int_eq(ez_srqpool_stats(b.pool, &st0), 0);
	ck_assert_uint_eq(st0.attached, n);
	ck_assert_uint_eq(st0.credit_share, 3);		/* (4000 - 500) / 1000 */
	ck_assert_uint_eq(st0.credit_reserve, 500);
	for (int i = 0; i < n; i++) {
		struct ez_conn_info ci;

		ck_assert_int_eq(ez_conn_info(b.c[i].conn, &ci), 0);
		sum_init += ci.peer_credits;
		if (ci.peer_credits > max_init)
			max_init = ci.peer_credits;
	}
	/* Every connection started with one credit (before: the first got 3,999). */
	ck_assert_uint_eq(max_init, 1);
	ck_assert_uint_eq(sum_init, n);
	/* One greedy sender, everyone else a burst larger than the share. */
	b.c[0].greedy = 1;
	b.c[0].target = UINT32_MAX;
	pump(&b.c[0]);
	for (int i = 1; i < n; i++) {
		b.c[i].target = burst;
		pump(&b.c[i]);
	}
	ck_assert_msg(run_until(&b, bursts_done, 120, 50), "bursts not through");
	b.c[0].target = b.c[0].queued;
	ck_assert(run_until(&b, everything_arrived, 30, 50));
	sample(&b, &st);
	check_delivery(&b);
	for (int i = 0; i < n; i++)
		if (b.c[i].max_outstanding > max_out)
			max_out = b.c[i].max_outstanding;
	ck_assert_uint_le(max_out, st.credit_share);
	ck_assert_uint_le(st.conn_granted_max, st.credit_share);
	ck_assert_uint_le(st.credits_granted_max + st.credit_reserve, st.total);
	if (st.rnr_naks_sent >= 0 && st0.rnr_naks_sent >= 0)
		ck_assert_msg(st.rnr_naks_sent == st0.rnr_naks_sent, "%lld RNR NAKs",
			      (long long)(st.rnr_naks_sent - st0.rnr_naks_sent));
	printf("1000 connections on 4000 buffers: connected in %.1f s; initial grants: each 1, "
	       "sum %llu; share %u, reserve %u; greedy sent %u, 999 others %d each; pool granted at "
	       "most %llu in all, one connection at most %u, max outstanding on one connection %u; "
	       "RNR NAKs sent %lld; all in %.1f s\n",
	       t1 - t0, (unsigned long long)sum_init, st.credit_share, st.credit_reserve,
	       b.c[0].recvd, burst, (unsigned long long)st.credits_granted_max, st.conn_granted_max,
	       max_out, (long long)(st.rnr_naks_sent - st0.rnr_naks_sent), now_s() - t0);
	bench_close(&b);
}
END_TEST

/* ---- busy connections beside idle ones on a pool of ~1.3 buffers each ---- */

#define ECHO_LEN 24
#define IDLE_N 200
#define PING_N 4
/* The first EARLY idle connections exchange EARLY_MSGS messages before the
 * others connect, earning credits while the share is large, and keep them. */
#define EARLY 20
#define EARLY_MSGS 3

/* One process holds both sides: the server accepts with the default
 * options on one shared pool and echoes every message (ezscale's server);
 * the clients, like ezscale's, sit on shared pools of their own. */
struct echo_bench {
	struct ev_loop *loop;
	ev_timer tick;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	char port[8];
	struct ez_srqpool *spool, *ipool, *ppool;
	struct ez_conn *idle[IDLE_N], *sidle[IDLE_N];
	struct ez_conn *ping[PING_N];
	int idle_up, idle_echoed, sup, sdown, bad, failed;
	uint8_t idle_echoes[IDLE_N];
	int ping_up, ping_closed;
	uint32_t ping_echoed[PING_N];
	double until;
};

struct echo_peer {
	struct echo_bench *b;
	int idx;		/* >= IDLE_N: ping connection idx - IDLE_N */
};

static struct echo_peer echo_peers[IDLE_N + PING_N];

static void echo_fill(uint8_t *p, int idx)
{
	memcpy(p, &idx, sizeof(idx));
	for (int i = 4; i < ECHO_LEN; i++)
		p[i] = (uint8_t)(idx * 31 + i);
}

static void esrv_connect(struct ez_conn *conn, int status, void *arg)
{
	struct echo_peer *p = arg;

	ck_assert_msg(status == 0, "server side of %d: %s", p->idx, ez_conn_errmsg(conn));
	p->b->sup++;
	if (p->idx < IDLE_N)
		p->b->sidle[p->idx] = conn;
}

static void esrv_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct echo_peer *p = arg;
	int ret = ez_send(conn, ez_buf_data(buf), ez_buf_len(buf), NULL, NULL);

	if (ret && p->b->failed++ < 3)
		fprintf(stderr, "server: echo on %d: %s\n", p->idx, ez_errmsg());
	ez_buf_release(buf);
}

static void esrv_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct echo_peer *p = arg;

	(void)status;
	p->b->sdown++;
	if (p->idx < IDLE_N)
		p->b->sidle[p->idx] = NULL;
	ez_conn_close(conn);
}

static void echo_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct echo_bench *b = arg;
	struct ez_conn_opts o = { .srqpool = b->spool };	/* the defaults otherwise */
	struct ez_conn_cbs cbs = { .on_connect = esrv_connect, .on_recv = esrv_recv,
				   .on_disconnect = esrv_disconnect };
	struct ez_conn *c;
	size_t len;
	const void *data = ez_conn_req_data(req, &len);
	int idx;

	(void)l;
	ck_assert_uint_eq(len, sizeof(idx));
	memcpy(&idx, data, sizeof(idx));
	ck_assert(idx >= 0 && idx < IDLE_N + PING_N);
	ck_assert_msg(ez_accept(req, &o, &cbs, &echo_peers[idx], &c) == 0, "ez_accept: %s",
		      ez_errmsg());
}

static void ecli_connect(struct ez_conn *conn, int status, void *arg)
{
	struct echo_peer *p = arg;
	uint8_t m[ECHO_LEN];

	ck_assert_msg(status == 0, "connection %d: %s", p->idx, ez_conn_errmsg(conn));
	if (p->idx < IDLE_N) {
		p->b->idle_up++;
		echo_fill(m, p->idx);
		ck_assert_msg(ez_send(conn, m, sizeof(m), NULL, NULL) == 0, "send: %s", ez_errmsg());
	} else {
		p->b->ping_up++;
	}
}

static void ecli_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct echo_peer *p = arg;
	uint8_t want[ECHO_LEN];

	echo_fill(want, p->idx);
	if (ez_buf_len(buf) != ECHO_LEN || memcmp(ez_buf_data(buf), want, ECHO_LEN)) {
		p->b->bad++;
	} else if (p->idx < IDLE_N) {
		int want_n = p->idx < EARLY ? EARLY_MSGS : 1;

		if (++p->b->idle_echoes[p->idx] == want_n)
			p->b->idle_echoed++;
		else if (p->b->idle_echoes[p->idx] < want_n)
			ck_assert_msg(ez_send(conn, want, sizeof(want), NULL, NULL) == 0, "idle: %s",
				      ez_errmsg());
	} else {
		p->b->ping_echoed[p->idx - IDLE_N]++;
		if (now_s() < p->b->until)
			ck_assert_msg(ez_send(conn, want, sizeof(want), NULL, NULL) == 0, "ping: %s",
				      ez_errmsg());
	}
	ez_buf_release(buf);
}

static void ecli_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct echo_peer *p = arg;

	(void)conn;
	(void)status;
	if (p->idx >= IDLE_N)
		p->b->ping_closed++;
}

static void echo_open(struct echo_bench *b, int idx, struct ez_srqpool *pool, struct ez_conn **out)
{
	/* 204 connects at once into this process's own listener (one loop
	 * answers them in turn): under load the 193rd waited 5.8 s for its
	 * reply, past the default connect_timeout_ms of 5 s. The listener
	 * allows 120 s; the connects 60 s, a ceiling that only catches a hang. */
	struct ez_conn_opts o = { .send_depth = 2, .max_msg_size = 64, .srqpool = pool,
				  .connect_timeout_ms = 60000 };
	struct ez_conn_cbs cbs = { .on_connect = ecli_connect, .on_recv = ecli_recv,
				   .on_disconnect = ecli_disconnect };
	struct echo_peer *p = &echo_peers[idx];

	p->b = b;
	p->idx = idx;
	o.private_data = &p->idx;
	o.private_data_len = sizeof(p->idx);
	ck_assert_msg(ez_connect(b->ctx, test_addr(), b->port, &o, &cbs, p, out) == 0,
		      "ez_connect: %s", ez_errmsg());
}

static int echo_run_until(struct echo_bench *b, int (*cond)(struct echo_bench *), double secs)
{
	double end = now_s() + secs;

	while (!cond(b) && now_s() < end)
		ev_run(b->loop, EVRUN_ONCE);
	return cond(b);
}

static int ping_all_up(struct echo_bench *b) { return b->ping_up == PING_N && b->sup >= b->idle_up + PING_N; }
static int ping_time_over(struct echo_bench *b) { return now_s() >= b->until + 0.5; }
static int ping_all_closed(struct echo_bench *b) { return b->ping_closed == PING_N; }
static int idle_all_echoed(struct echo_bench *b) { return b->idle_echoed == IDLE_N; }
static int early_echoed(struct echo_bench *b) { return b->idle_echoed == EARLY; }
static int idle_all_closed(struct echo_bench *b) { return b->sdown == IDLE_N + 2 * PING_N; }

/* PING_N connections, one message in flight each, for secs: round trips. */
static uint32_t ping_round(struct echo_bench *b, double secs, uint32_t *least)
{
	uint32_t sum = 0;

	b->ping_up = b->ping_closed = 0;
	memset(b->ping_echoed, 0, sizeof(b->ping_echoed));
	for (int i = 0; i < PING_N; i++)
		echo_open(b, IDLE_N + i, b->ppool, &b->ping[i]);
	ck_assert_msg(echo_run_until(b, ping_all_up, 60), "%d of %d ping connections up", b->ping_up,
		      PING_N);
	b->until = now_s() + secs;
	for (int i = 0; i < PING_N; i++) {
		uint8_t m[ECHO_LEN];

		echo_fill(m, IDLE_N + i);
		ck_assert_msg(ez_send(b->ping[i], m, sizeof(m), NULL, NULL) == 0, "%s", ez_errmsg());
	}
	echo_run_until(b, ping_time_over, secs + 1);
	*least = UINT32_MAX;
	for (int i = 0; i < PING_N; i++) {
		sum += b->ping_echoed[i];
		if (b->ping_echoed[i] < *least)
			*least = b->ping_echoed[i];
		ez_conn_close(b->ping[i]);
	}
	ck_assert(echo_run_until(b, ping_all_closed, 30));
	return sum;
}

/* Issue 22's stall: beside 10,000 idle connections on one pool of 12,756
 * buffers, 10 ping-pong connections echoed 10 messages in 10 s, 6,257
 * alone. Here 200 idle on a pool of 270 (share 1 each once they are
 * attached), the first 20 of which exchanged 3 messages while the share
 * was large and hold what they earned, and 4 ping-pong connections: beside
 * the idle ones they must keep at least a third of their rate alone. */
START_TEST(busy_beside_idle_on_one_pool)
{
	/* 200 connects at once on one TCG vCPU: handshakes take seconds. */
	struct ez_listen_opts lo = { .backlog = 1024, .max_pending = 1024,
				     .max_pending_per_peer = 1024, .handshake_timeout_ms = 120000,
				     /* above the connection caps' defaults (4096, 1024 a peer) */
				     .max_conns = 65536, .max_conns_per_peer = 65536,
				     .max_ctx_conns = 65536 };
	struct ez_srqpool_opts so = { .nbufs = IDLE_N + IDLE_N / 4 + 20, .buf_size = 512 };
	struct ez_srqpool_opts io = { .nbufs = IDLE_N + IDLE_N / 4 + 64, .buf_size = 64 };
	struct ez_srqpool_opts pz = { .nbufs = PING_N + 64, .buf_size = 64 };
	struct ez_srqpool_stats st0, st1, st2;
	struct echo_bench b;
	uint32_t alone, beside, alone_least, beside_least;
	const double secs = 3;

	memset(&b, 0, sizeof(b));
	b.loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(b.loop);
	ck_assert_int_eq(ez_ctx_new(b.loop, 0, &b.ctx), 0);
	ev_timer_init(&b.tick, on_tick, 0.01, 0.01);
	ev_timer_start(b.loop, &b.tick);
	ck_assert_msg(ez_srqpool_new(b.ctx, getenv("EZ_DEVICE"), &so, &b.spool) == 0, "%s", ez_errmsg());
	ck_assert_msg(ez_srqpool_new(b.ctx, getenv("EZ_DEVICE"), &io, &b.ipool) == 0, "%s", ez_errmsg());
	ck_assert_msg(ez_srqpool_new(b.ctx, getenv("EZ_DEVICE"), &pz, &b.ppool) == 0, "%s", ez_errmsg());
	ck_assert_msg(ez_listen(b.ctx, test_addr(), "0", &lo, echo_request, &b, &b.listener) == 0,
		      "ez_listen: %s", ez_errmsg());
	snprintf(b.port, sizeof(b.port), "%u", ez_listener_port(b.listener));

	alone = ping_round(&b, secs, &alone_least);
	ck_assert_int_eq(ez_srqpool_stats(b.spool, &st0), 0);

	for (int i = 0; i < EARLY; i++)
		echo_open(&b, i, b.ipool, &b.idle[i]);
	ck_assert_msg(echo_run_until(&b, early_echoed, 60), "%d of %d early connections echoed",
		      b.idle_echoed, EARLY);
	for (int i = EARLY; i < IDLE_N; i++)
		echo_open(&b, i, b.ipool, &b.idle[i]);
	ck_assert_msg(echo_run_until(&b, idle_all_echoed, 120), "%d of %d idle connections echoed",
		      b.idle_echoed, IDLE_N);
	ck_assert_int_eq(ez_srqpool_stats(b.spool, &st1), 0);
	ck_assert_uint_eq(st1.attached, IDLE_N);
	/* The early ones hold more than the share of 1 they have now: every
	 * posted buffer beyond the reserve is granted. */
	ck_assert_uint_eq(st1.credit_share, 1);
	ck_assert_uint_ge(st1.credits_granted + st1.credit_reserve, st1.total);

	beside = ping_round(&b, secs, &beside_least);
	ck_assert_int_eq(ez_srqpool_stats(b.spool, &st2), 0);
	printf("busy beside idle: %d ping connections, one message in flight each, %.0f s: alone "
	       "%u round trips (least %u on one), beside %d idle on a pool of %llu (share %u, "
	       "reserve %u, granted %llu) %u (least %u); credit waits %llu, withheld %llu\n",
	       PING_N, secs, alone, alone_least, IDLE_N, (unsigned long long)st2.total,
	       st1.credit_share, st1.credit_reserve, (unsigned long long)st1.credits_granted,
	       beside, beside_least, (unsigned long long)(st2.credit_waits - st0.credit_waits),
	       (unsigned long long)(st2.credits_withheld - st0.credits_withheld));
	ck_assert_int_eq(b.bad, 0);
	ck_assert_int_eq(b.failed, 0);
	ck_assert_uint_gt(alone_least, 20);
	ck_assert_msg(beside_least * 3 >= alone_least,
		      "beside %d idle connections a ping connection made %u round trips in %.0f s, "
		      "%u alone", IDLE_N, beside_least, secs, alone_least);

	for (int i = 0; i < IDLE_N; i++)
		ez_conn_close(b.idle[i]);
	ck_assert(echo_run_until(&b, idle_all_closed, 60));
	ez_listener_close(b.listener);
	ck_assert_msg(ez_srqpool_free(b.spool) == 0, "%s", ez_srqpool_errmsg(b.spool));
	ck_assert_msg(ez_srqpool_free(b.ipool) == 0, "%s", ez_srqpool_errmsg(b.ipool));
	ck_assert_msg(ez_srqpool_free(b.ppool) == 0, "%s", ez_srqpool_errmsg(b.ppool));
	ck_assert_msg(ez_ctx_free(b.ctx) == 0, "ez_ctx_free: %s", ez_errmsg());
	ev_timer_stop(b.loop, &b.tick);
	ev_loop_destroy(b.loop);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool_share");
	TCase *tc = tcase_create("share"), *busy;

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, fifty_conns_greedy_and_bursts);
	tcase_add_test(tc, rebalance_on_attach_and_detach);
	tcase_add_test(tc, expected_conns_full_share_at_once);
	tcase_add_test(tc, thousand_conns_one_pool);
	suite_add_tcase(s, tc);
	busy = tcase_create("busy_beside_idle");
	tcase_set_timeout(busy, 300);
	tcase_add_test(busy, busy_beside_idle_on_one_pool);
	suite_add_tcase(s, busy);
	return check_run_suite(s, CK_NORMAL);
}
