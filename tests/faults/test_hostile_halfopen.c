/* test_hostile_halfopen.c: floods of half-open requests (no QP behind them, never an RTU) against a listener: capped per peer and per listener, each ended at the handshake deadline, and a good client from another address connects throughout; established connections capped in number and in the receive buffers they pin. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "fault.h"
#include "rawcm.h"
#include "../waits.h"
#include "wire/handshake.h"
#include "../checkmain.h"

/* The attacker's address: the test bed's IPv6 one, on the same device as
 * the good client's IPv4 address, so that the listener sees two peers.
 * Requests go to it with no source given: the kernel's choice for a
 * destination on this host is that address (binding it explicitly failed
 * with EADDRNOTAVAIL in CI's ASan tier after the earlier hostile tests). */
static const char *attacker_addr(void)
{
	const char *a = getenv("EZ_TEST_ADDR6");

	return a && *a ? a : "2001:db8::1";
}

/* A plain easyrdma request, as any client would send (credits 64, 4 KiB). */
static int plain_request(uint8_t *buf, size_t len)
{
	struct hs_msg m = { .kind = HS_REQ, .caps = HS_CAP_CREDITS, .credits = 64, .max_msg = 4096 };

	return hs_encode(&m, buf, len);
}

/* A good client: connects (the time it took in *ms), then as many echo
 * round trips as fit in secs (their rate returned), then closes. */
static double good_client(struct fb *b, const char *port, double secs, double *ms)
{
	struct ep c = { 0 };
	double t0 = now_s(), t1;
	int n = 0;

	ck_assert_int_eq(ep_connect(b, &c, port, NULL), 0);
	ck_assert(fb_run(b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "good client: on_connect(%d) \"%s\"", c.connect_status,
		      c.connect_msg);
	*ms = (now_s() - t0) * 1e3;
	t1 = now_s();
	while (now_s() < t1 + secs) {
		ck_assert_int_eq(ep_send_seq(&c, (uint64_t)n), 0);
		ck_assert(fb_run(b, &c.received, n + 1, 5));
		n++;
	}
	ck_assert_int_eq(c.bad_seq, 0);
	ep_close(&c);
	ck_assert(fb_run(b, &c.disconnected, 1, 5));
	return secs > 0 ? n / (now_s() - t1) : 0;
}

/* Runs the flood: rate requests a second for secs from src, the good
 * client connecting every `every` s meanwhile (its worst connect time and
 * mean round-trip rate returned); the process's QPs sampled. */
struct flood_result {
	double worst_ms, rtt_rate, secs;
	int clients, max_qps;
};

#define FLOOD_CLIENTS 3

static void flood(struct fb *b, struct srv *s, struct rflood *f, const char *src, double rate,
		  double secs, double every, struct flood_result *res)
{
	double t0 = now_s(), next_client = t0 + 0.3, sum_rate = 0, ms;
	int qps;

	memset(res, 0, sizeof(*res));
	/* Until the time is up, every request of it has gone out (a loaded
	 * guest can fall behind the schedule; it then catches up) and
	 * FLOOD_CLIENTS good clients have come and gone: the verdict is on
	 * them, not on how many a busy host fits in the time (a README run at
	 * load 15 fitted one in 5 s). The ceiling only catches a hang. */
	while ((now_s() < t0 + secs || f->sent < (int)(rate * secs) || res->clients < FLOOD_CLIENTS) &&
	       now_s() < t0 + secs + hang_ceiling(60)) {
		while (f->n < (int)((now_s() - t0) * rate) + 1 && f->n < (int)(rate * secs))
			rflood_send(f, NULL, src, s->port);	/* from src: it is this host's */
		rflood_poll(f);
		fb_spin(b, 0.002);
		if (now_s() >= next_client) {
			sum_rate += good_client(b, s->port, 0.2, &ms);
			if (ms > res->worst_ms)
				res->worst_ms = ms;
			res->clients++;
			next_client = now_s() + every;
		}
	}
	/* One sample, at the flood's steady state (a popen() under TCG
	 * stalls the loop for a while). */
	qps = rdma_res_count("qp");
	res->max_qps = qps;
	res->rtt_rate = res->clients ? sum_rate / res->clients : 0;
	res->secs = now_s() - t0;
}

/* Waits until every flooded request has its outcome at the raw side (a
 * reply or a refusal) and every accepted one its end at the server. A slow
 * guest's server falls behind the flood: it takes queued requests late (as
 * the per-peer count frees up), each accepted then and ended 2 s later,
 * well after the flood. Comparing the counts at a fixed time (and the QP
 * count against one taken while the quiet run's QPs were still going)
 * made the request accepted last look unreported (issue 19's "one missing
 * report in six runs"): the reply count moves while this waits. */
static void settle(struct fb *b, struct srv *s, struct rflood *f, double secs)
{
	double end = now_s() + secs;

	while (now_s() < end && (f->replied + f->rejected + f->other < f->sent ||
				 s->connect_failed < f->replied)) {
		rflood_poll(f);
		fb_spin(b, 0.01);
	}
}

/* The server's connections with no final callback yet, for a failure's
 * message: what each handle says. */
static void dump_unreported(const struct srv *s)
{
	int i;

	for (i = 0; i < s->neps; i++) {
		const struct ep *e = &s->eps[i];

		if (!e->connected && !e->disconnected)
			fprintf(stderr, "  server connection %d of %d: no final callback; ez_conn_errmsg \"%s\"\n",
				i, s->neps, ez_conn_errmsg(e->conn));
		else if (e->connect_status == 0)
			fprintf(stderr, "  server connection %d of %d: established, then on_disconnect(%d) \"%s\"\n",
				i, s->neps, e->disconnect_status, e->disconnect_msg);
	}
}

/* Every accepted request of the flood ended at the deadline, with the reason. */
static void assert_deadline_ends(const struct srv *s, int from, uint32_t ms)
{
	char want[300];
	int i, n = 0;

	snprintf(want, sizeof(want), "ez_accept(%s): handshake not completed within %u ms (the listener's handshake_timeout_ms): waiting for the peer's RTU (the CM's ready-to-use)",
		 attacker_addr(), ms);
	for (i = from; i < s->neps; i++) {
		const struct ep *e = &s->eps[i];

		if (strncmp(e->connect_msg, "ez_accept(", 10) || e->connect_status == 0)
			continue;
		ck_assert_int_eq(e->connect_status, -ETIMEDOUT);
		ck_assert_str_eq(e->connect_msg, want);
		n++;
	}
	printf("  %d accepted flood requests ended: on_connect(-ETIMEDOUT) \"%s\"\n", n, want);
}

/* 60 half-open requests a second for 5 s from one address against a
 * listener with 24 per peer (and the defaults: 256 in all, 2000 ms): the
 * attacker holds at most 24, the rest is refused at once with the reason;
 * a good client from another address connects every 0.8 s. */
START_TEST(flood_from_one_peer)
{
	struct fb b;
	/* 24 per peer: a cap the flood reaches even where the server accepts
	 * slowly (ASan under TCG: ~30 a second); the rest is the default. */
	struct srv s = { .any_addr = 1, .lopts = { .max_pending_per_peer = 24 } };
	struct rflood f;
	struct flood_result quiet, loud;
	uint8_t req[HS_REQ_MAX];
	double ms, base_rate;
	int n, qps0;

	fb_init(&b);
	srv_start(&b, &s, 1024);
	/* Without a flood: the good client's connect time and round trips
	 * (after one connection that warms the device up). */
	good_client(&b, s.port, 0, &ms);
	base_rate = good_client(&b, s.port, 1.0, &ms);
	quiet.worst_ms = ms;
	quiet.rtt_rate = base_rate;
	/* The QP count once both quiet connections are gone on both sides
	 * (the server's QP goes before its on_disconnect). */
	ck_assert(fb_run(&b, &s.disconnected, 2, 5));
	qps0 = rdma_res_count("qp");
	n = plain_request(req, sizeof(req));
	rflood_init(&f, req, n);
	snprintf(f.want_reason, sizeof(f.want_reason),
		 "listener busy: 24 handshakes in progress from this address (max_pending_per_peer 24)");
	flood(&b, &s, &f, attacker_addr(), 60, 5.0, 0.8, &loud);
	printf("flood from one peer: %d requests in %.1f s (%.0f/s), %d accepted (left half-open), %d refused (\"%s\"), %d other\n",
	       f.sent, loud.secs, f.sent / loud.secs, f.replied, f.rejected, f.last_reason, f.other);
	printf("  good client: connect %.1f ms quiet, worst %.1f ms in the flood (%d connects); %.0f round trips/s quiet, %.0f in the flood\n",
	       quiet.worst_ms, loud.worst_ms, loud.clients, quiet.rtt_rate, loud.rtt_rate);
	printf("  QPs of the process: %d before, %d at the end of the flood\n", qps0, loud.max_qps);
	ck_assert_int_eq(f.sent, 300);
	ck_assert_int_ge(loud.clients, FLOOD_CLIENTS);
	ck_assert_msg(loud.worst_ms < 2000, "a good client took %.0f ms to connect", loud.worst_ms);
	/* The attacker never held more than its 24 (+ the good client's two
	 * QPs and a few QPs of ended handshakes being destroyed). */
	ck_assert_int_le(loud.max_qps, qps0 + 24 + 2 + 16);
	ck_assert_int_gt(f.rejected, 0);
	ck_assert_int_eq(f.other_reasons, 0);
	/* Every accepted request ends at its deadline (2 s) after it was
	 * accepted, which on a slow guest (ASan under TCG) can be well after
	 * the flood. */
	settle(&b, &s, &f, 20);
	rflood_poll(&f);
	printf("  after the flood: %d sent, %d accepted, %d refused, %d other, %d accepted then ended by the server; server: %d failed handshakes\n",
	       f.sent, f.replied, f.rejected, f.other, f.ended, s.connect_failed);
	assert_deadline_ends(&s, 0, 2000);
	/* What the attacker held is gone: the process's QPs are back to
	 * where they were before the flood (the good clients' closed too). */
	{
		double end = now_s() + 10;
		int qps;

		while ((qps = rdma_res_count("qp")) > qps0 && now_s() < end)
			fb_spin(&b, 0.05);
		ck_assert_msg(qps <= qps0, "QPs: %d before the flood, %d 10 s after it", qps0, qps);
	}
	/* Every accepted request is reported ended by the server, exactly once. */
	if (s.connect_failed != f.replied)
		dump_unreported(&s);
	ck_assert_msg(s.connect_failed == f.replied,
		      "server: %d failed handshakes, %d connected, %d requests, %d accepted, %d accept errors (%s); raw: %d accepted, %d ended, %d refused, %d other",
		      s.connect_failed, s.connected, s.requests, s.neps, s.accept_errors, s.accept_msg,
		      f.replied, f.ended, f.rejected, f.other);
	ck_assert_int_eq(f.replied + f.rejected, f.sent);
	ck_assert_int_eq(f.other, 0);
	rflood_free(&f);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* The listener's own cap: with max_pending 16 (and the per-peer cap out of
 * the way) a flood from one address fills it, every further request is
 * refused naming the limit, the QPs stay at 16, and a good client gets in
 * again as soon as the deadline (2 s here) has cleared the flood. The
 * deadline is long enough that none ends while the 40 are still being
 * answered (CI once saw 17 accepted at 500 ms: an ASan build in a loaded
 * guest took longer than that, and the first handshake's end freed a
 * place). */
START_TEST(flood_to_the_listener_cap)
{
	struct fb b;
	struct srv s = { .any_addr = 1,
			 .lopts = { .max_pending = 16, .max_pending_per_peer = 1000,
				    .handshake_timeout_ms = 2000 } };
	struct rflood f;
	struct ep c = { 0 };
	uint8_t req[HS_REQ_MAX];
	double t0, ms;
	int n, qps0, qps;

	fb_init(&b);
	srv_start(&b, &s, 1024);
	qps0 = rdma_res_count("qp");
	n = plain_request(req, sizeof(req));
	rflood_init(&f, req, n);
	snprintf(f.want_reason, sizeof(f.want_reason),
		 "listener busy: 16 handshakes in progress (max_pending 16)");
	for (n = 0; n < 40; n++)
		rflood_send(&f, NULL, attacker_addr(), s.port);
	t0 = now_s();
	while (f.replied + f.rejected + f.other < 40 && now_s() < t0 + 10) {
		rflood_poll(&f);
		fb_spin(&b, 0.002);
	}
	qps = rdma_res_count("qp");
	printf("40 half-open requests, max_pending 16: %d accepted, %d refused (\"%s\"), QPs %d -> %d\n",
	       f.replied, f.rejected, f.last_reason, qps0, qps);
	ck_assert_int_eq(f.other, 0);
	ck_assert_int_eq(f.other_reasons, 0);
	ck_assert_int_le(f.replied, 16);
	ck_assert_int_eq(f.rejected, 40 - f.replied);
	ck_assert_int_le(qps, qps0 + 16);
	/* While the listener is full a good client is refused too, told why. */
	if (f.replied == 16 && now_s() < t0 + 1.6) {
		ck_assert_int_eq(ep_connect(&b, &c, s.port, NULL), 0);
		ck_assert(fb_run(&b, &c.connected, 1, 10));
		printf("  a good client meanwhile: on_connect(%d) \"%s\"\n", c.connect_status,
		       c.connect_msg);
		if (c.connect_status) {
			ck_assert_int_eq(c.connect_status, -ECONNREFUSED);
			ck_assert_msg(strstr(c.connect_msg, "listener busy: 16 handshakes in progress (max_pending 16)"),
				      "%s", c.connect_msg);
		}
		ez_conn_close(c.conn);
	}
	settle(&b, &s, &f, 10);
	assert_deadline_ends(&s, 0, 2000);
	good_client(&b, s.port, 0, &ms);
	printf("  after the deadline a good client connects in %.1f ms\n", ms);
	rflood_free(&f);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* Requests the application does not answer count too: at the deadline
 * each is rejected with the reason, and ez_accept() of it then fails. */
START_TEST(unanswered_requests_expire)
{
	struct fb b;
	struct srv s = { .any_addr = 1, .hold = 1,
			 .lopts = { .max_pending_per_peer = 4, .handshake_timeout_ms = 300 } };
	struct rflood f;
	struct ez_conn *conn;
	uint8_t req[HS_REQ_MAX];
	double t0;
	int n, i;
	static const char why[] = "handshake not completed within 300 ms (handshake_timeout_ms)";

	fb_init(&b);
	srv_start(&b, &s, 16);
	n = plain_request(req, sizeof(req));
	rflood_init(&f, req, n);
	for (i = 0; i < 6; i++)
		rflood_send(&f, NULL, attacker_addr(), s.port);
	t0 = now_s();
	while (f.rejected < 6 && now_s() < t0 + 5) {
		rflood_poll(&f);
		fb_spin(&b, 0.005);
	}
	printf("6 requests held unanswered (4 per peer): %d on_request, %d rejected, last \"%s\" (%d times) after %.0f ms\n",
	       s.requests, f.rejected, f.last_reason, f.reason_count, (now_s() - t0) * 1e3);
	ck_assert_int_eq(s.requests, 4);
	ck_assert_int_eq(s.nheld, 4);
	ck_assert_int_eq(f.rejected, 6);
	ck_assert_str_eq(f.last_reason, why);
	ck_assert_int_eq(f.reason_count, 4);	/* 2 at once for the cap, then these 4 */
	ck_assert_int_eq(ez_accept(s.held[0], NULL, &ep_cbs, NULL, &conn), -ETIMEDOUT);
	ck_assert_str_eq(ez_errmsg(), "ez_accept: the request waited beyond the listener's handshake_timeout_ms of 300 ms and was rejected");
	for (i = 1; i < 4; i++)
		ck_assert_int_eq(ez_reject(s.held[i], "late", 4), 0);
	s.hold = 0;
	rflood_free(&f);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* Runs both loops (server and client contexts) until *flag >= want. */
static int run_both(struct fb *a, struct fb *b, const volatile int *flag, int want, double secs)
{
	double end = now_s() + hang_ceiling(secs);

	while (*flag < want && now_s() < end) {
		fb_spin(a, 0.002);
		fb_spin(b, 0.002);
	}
	return *flag >= want;
}

/* The deadline times the peer, not us (issue 42 item 9): a request the
 * application answers 70 % into the default 2 s, whose client then takes
 * another 50 % for its part (its context not run meanwhile: the RTU cannot
 * come), is established: from our reply the peer has the whole deadline.
 * Counted from the request's arrival, as it was, this ended the connection
 * ("handshake not completed within 2000 ms: waiting for the peer's RTU"),
 * as a host at load 15 ended handshakes its clients had seen established:
 * a server slow to do its part counted that against the peer. Where the
 * host is so busy that the answer itself comes after the request's
 * deadline, that round cannot tell and another is made. */
START_TEST(late_answer_leaves_the_peer_its_deadline)
{
	enum { ROUNDS = 5 };
	struct fb sb, cb;
	struct srv s = { .hold = 1 };
	struct ep c[ROUNDS];
	int i, ret = -1;

	memset(c, 0, sizeof(c));
	fb_init(&sb);
	fb_init(&cb);
	srv_start(&sb, &s, ROUNDS);
	for (i = 0; i < ROUNDS && ret; i++) {
		ck_assert_int_eq(ep_connect(&cb, &c[i], s.port, NULL), 0);
		ck_assert(run_both(&sb, &cb, &s.nheld, i + 1, 30));
		fb_spin(&sb, 1.4);	/* the application's time: the setup, not a verdict */
		ret = srv_accept(&s, s.held[i]);
		if (ret) {
			ck_assert_int_eq(ret, -ETIMEDOUT);
			printf("  round %d: the answer came after the request's deadline (\"%s\"); again\n",
			       i, s.accept_msg);
			ck_assert(run_both(&sb, &cb, &c[i].connected, 1, 30));
			ck_assert_int_ne(c[i].connect_status, 0);
		}
	}
	ck_assert_msg(ret == 0, "%d rounds, each answered after its deadline", ROUNDS);
	i--;
	fb_spin(&sb, 1.0);	/* the client's time: its context does not run */
	ck_assert(run_both(&sb, &cb, &c[i].connected, 1, 30));
	ck_assert(run_both(&sb, &cb, &s.eps[s.neps - 1].connected, 1, 30));
	ck_assert_msg(s.eps[s.neps - 1].connect_status == 0, "server: on_connect(%d) \"%s\"",
		      s.eps[s.neps - 1].connect_status, s.eps[s.neps - 1].connect_msg);
	ck_assert_msg(c[i].connect_status == 0, "client: on_connect(%d) \"%s\"", c[i].connect_status,
		      c[i].connect_msg);
	ck_assert_int_eq(ep_send_seq(&c[i], 0), 0);
	ck_assert(run_both(&sb, &cb, &c[i].received, 1, 30));
	ck_assert_int_eq(c[i].bad_seq, 0);
	printf("answered 1.4 s into the 2 s deadline (round %d), the client silent 1 s more: established both sides, one echo\n",
	       i);
	for (; i >= 0; i--)
		ep_close(&c[i]);
	s.hold = 0;
	srv_stop(&s);
	fb_fini(&cb);
	fb_fini(&sb);
}
END_TEST

/* An easyrdma client from the attacker's address (the IPv6 one). */
static void attacker_connect(struct fb *b, struct srv *s, struct ep *e)
{
	memset(e, 0, sizeof(*e));
	ck_assert_int_eq(ez_connect(b->ctx, attacker_addr(), s->port, NULL, &ep_cbs, e, &e->conn), 0);
	ck_assert(fb_run(b, &e->connected, 1, 20));
}

/* e's connect was refused, the peer told why (want in its message); closed. */
static void expect_refused(struct ep *e, const char *want)
{
	ck_assert_msg(e->connect_status == -ECONNREFUSED,
		      "on_connect(%d) \"%s\"; want -ECONNREFUSED with \"%s\"", e->connect_status,
		      e->connect_msg, want);
	ck_assert_msg(strstr(e->connect_msg, want), "want \"%s\" in \"%s\"", want, e->connect_msg);
	ez_conn_close(e->conn);
}

/* Established connections are capped per peer address (issue 39 item 3):
 * with max_conns_per_peer 8 one address gets exactly 8 connections, the
 * 9th is refused at once naming the cap (on_request never sees it), the
 * server holds 8, a client from the other address still connects and
 * echoes, and once one of the 8 ends one more gets in. */
START_TEST(established_capped_per_peer)
{
	enum { N = 8 };
	struct fb b;
	struct srv s = { .any_addr = 1, .lopts = { .max_conns_per_peer = N } };
	struct ep a[N + 3];
	char want[128];
	double ms, rate;
	int i;

	fb_init(&b);
	srv_start(&b, &s, 64);
	snprintf(want, sizeof(want),
		 "listener full: %d connections from this address (max_conns_per_peer %d)", N, N);
	for (i = 0; i < N; i++) {
		attacker_connect(&b, &s, &a[i]);
		ck_assert_msg(a[i].connect_status == 0, "attacker connection %d: on_connect(%d) \"%s\"",
			      i, a[i].connect_status, a[i].connect_msg);
	}
	ck_assert(fb_run(&b, &s.connected, N, 20));
	/* The N+1th: refused with the reason, never shown to on_request. */
	attacker_connect(&b, &s, &a[N]);
	printf("established cap: %d connected from %s, the next: on_connect(%d) \"%s\"\n", N,
	       attacker_addr(), a[N].connect_status, a[N].connect_msg);
	expect_refused(&a[N], want);
	ck_assert_int_eq(s.requests, N);
	ck_assert_int_eq(s.connected - s.disconnected, N);
	ck_assert_int_eq(s.connect_failed, 0);
	/* The other address is not this one's cap: connects and echoes. */
	rate = good_client(&b, s.port, 0.2, &ms);
	printf("  a client from %s meanwhile: connected in %.1f ms, %.0f round trips/s\n",
	       test_addr(), ms, rate);
	ck_assert_int_gt(rate, 0);
	ck_assert(fb_run(&b, &s.disconnected, 1, 10));
	ck_assert_int_eq(s.connected - s.disconnected, N);
	/* One of the N ends (at the server too): its place is free. */
	ep_close(&a[0]);
	ck_assert(fb_run(&b, &a[0].disconnected, 1, 10));
	ck_assert(fb_run(&b, &s.disconnected, 2, 10));
	attacker_connect(&b, &s, &a[N + 1]);
	ck_assert_msg(a[N + 1].connect_status == 0, "after one closed: on_connect(%d) \"%s\"",
		      a[N + 1].connect_status, a[N + 1].connect_msg);
	ck_assert(fb_run(&b, &s.connected, N + 2, 10));	/* N, the good client, this one */
	ck_assert_int_eq(s.connected - s.disconnected, N);
	/* Full again. */
	attacker_connect(&b, &s, &a[N + 2]);
	expect_refused(&a[N + 2], want);
	ck_assert_int_eq(s.requests, N + 2);
	printf("  after one closed: one more connected, the next refused again; server requests %d\n",
	       s.requests);
	for (i = 1; i <= N + 1; i++)
		if (i != N)
			ep_close(&a[i]);
	ck_assert(fb_run(&b, &s.disconnected, N + 2, 20));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* Established connections that register receive buffers of their own are
 * held to a byte budget (issue 39 item 3: 200 connections of 16 MiB
 * messages took a 2 GiB server down within the connection caps). Server
 * accepts with 16 buffers of 64 KiB (1 MiB per connection), budgets 4 MiB
 * per address and 6 MiB in all: the attacker's address gets exactly 4,
 * the 5th is refused at ez_accept naming the per-address budget, which
 * the attacker reads; the other address gets 2 more, the 3rd refused
 * naming the context's; once one of the attacker's ends, its megabyte
 * goes to the other address's next connection. */
START_TEST(accepted_buffers_budgeted)
{
	enum { N = 4, MIB = 1 << 20 };
	struct fb b;
	struct srv s = { .any_addr = 1,
			 .opts = { .recv_depth = 16, .max_msg_size = 64 << 10 } };
	struct ep a[N + 1], g[3], g2 = { 0 };
	const char *peer_why = "receive buffers accepted from this address hold 4.0 MiB, +1.0 > 4.0 MiB (EZ_LIMIT_RECV_BUFS_PER_PEER)";
	const char *ctx_why = "accepted receive buffers hold 6.0 MiB, +1.0 > 6.0 MiB (EZ_LIMIT_RECV_BUFS)";
	int i;

	fb_init(&b);
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, EZ_LIMIT_RECV_BUFS_PER_PEER, 4 * MIB), 0);
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, EZ_LIMIT_RECV_BUFS, 6 * MIB), 0);
	srv_start(&b, &s, 64);
	for (i = 0; i < N; i++) {
		attacker_connect(&b, &s, &a[i]);
		ck_assert_msg(a[i].connect_status == 0, "attacker connection %d: on_connect(%d) \"%s\"",
			      i, a[i].connect_status, a[i].connect_msg);
	}
	ck_assert(fb_run(&b, &s.connected, N, 20));
	attacker_connect(&b, &s, &a[N]);
	printf("budget per address: %d connections of 1 MiB from %s, the next: on_connect(%d) \"%s\"; server: \"%s\"\n",
	       N, attacker_addr(), a[N].connect_status, a[N].connect_msg, s.accept_msg);
	expect_refused(&a[N], peer_why);
	ck_assert_int_eq(s.accept_errors, 1);
	ck_assert_str_eq(s.accept_msg, peer_why);
	/* The other address: 2 more fit the context's 6 MiB, the 3rd not. */
	for (i = 0; i < 3; i++) {
		memset(&g[i], 0, sizeof(g[i]));
		ck_assert_int_eq(ep_connect(&b, &g[i], s.port, NULL), 0);
		ck_assert(fb_run(&b, &g[i].connected, 1, 20));
	}
	ck_assert_msg(g[0].connect_status == 0 && g[1].connect_status == 0,
		      "other address: on_connect(%d) \"%s\", (%d) \"%s\"", g[0].connect_status,
		      g[0].connect_msg, g[1].connect_status, g[1].connect_msg);
	printf("  budget of the context: 2 more from %s, the next: on_connect(%d) \"%s\"\n",
	       test_addr(), g[2].connect_status, g[2].connect_msg);
	expect_refused(&g[2], ctx_why);
	ck_assert_int_eq(s.accept_errors, 2);
	ck_assert(fb_run(&b, &s.connected, N + 2, 20));
	/* The honest ones work: an echo each. */
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(ep_send_seq(&g[i], 0), 0);
		ck_assert(fb_run(&b, &g[i].received, 1, 10));
		ck_assert_int_eq(g[i].bad_seq, 0);
	}
	/* One of the attacker's ends, at the server too: its megabyte is back. */
	ep_close(&a[0]);
	ck_assert(fb_run(&b, &a[0].disconnected, 1, 10));
	ck_assert(fb_run(&b, &s.disconnected, 1, 10));
	ck_assert_int_eq(ep_connect(&b, &g2, s.port, NULL), 0);
	ck_assert(fb_run(&b, &g2.connected, 1, 20));
	ck_assert_msg(g2.connect_status == 0, "after one closed: on_connect(%d) \"%s\"",
		      g2.connect_status, g2.connect_msg);
	ck_assert_int_eq(s.accept_errors, 2);
	printf("  after one of %s's closed: one more from %s connected\n", attacker_addr(), test_addr());
	for (i = 1; i < N; i++)
		ep_close(&a[i]);
	ep_close(&g[0]);
	ep_close(&g[1]);
	ep_close(&g2);
	ck_assert(fb_run(&b, &s.disconnected, N + 3, 20));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* A connection that ended but is not closed yet (its CM id gone) still
 * counts as its peer's, and a private pool that outlives its connection
 * (the application holds one of its buffers) keeps its charge until it is
 * destroyed: neither is a way around the budget. */
START_TEST(ended_and_orphaned_still_budgeted)
{
	enum { MIB = 1 << 20 };
	struct fb b;
	struct srv s = { .any_addr = 1, .keep_ended = 1, .keep_bufs = 1,
			 .opts = { .recv_depth = 16, .max_msg_size = 64 << 10 } };
	struct ep a[3], g[3];
	const char *peer_why = "receive buffers accepted from this address hold 2.0 MiB, +1.0 > 2.0 MiB (EZ_LIMIT_RECV_BUFS_PER_PEER)";
	const char *ctx_why = "accepted receive buffers hold 3.0 MiB, +1.0 > 3.0 MiB (EZ_LIMIT_RECV_BUFS)";
	int i;

	memset(g, 0, sizeof(g));
	fb_init(&b);
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, EZ_LIMIT_RECV_BUFS_PER_PEER, 2 * MIB), 0);
	ck_assert_int_eq(ez_ctx_set_limit(b.ctx, EZ_LIMIT_RECV_BUFS, 3 * MIB), 0);
	srv_start(&b, &s, 16);
	for (i = 0; i < 2; i++) {
		attacker_connect(&b, &s, &a[i]);
		ck_assert_msg(a[i].connect_status == 0, "attacker connection %d: on_connect(%d) \"%s\"",
			      i, a[i].connect_status, a[i].connect_msg);
	}
	ck_assert(fb_run(&b, &s.connected, 2, 20));
	/* a[0]'s server side keeps the buffer of its one message. */
	ck_assert_int_eq(ep_send_seq(&a[0], 0), 0);
	ck_assert(fb_run(&b, &s.eps[0].received, 1, 10));
	ck_assert_ptr_nonnull(s.eps[0].kept);
	/* a[0] ends; the server has not closed its side: still the peer's. */
	ep_close(&a[0]);
	ck_assert(fb_run(&b, &s.disconnected, 1, 10));
	attacker_connect(&b, &s, &a[2]);
	printf("ended, not closed: the next from %s: on_connect(%d) \"%s\"\n", attacker_addr(),
	       a[2].connect_status, a[2].connect_msg);
	expect_refused(&a[2], peer_why);
	ck_assert_str_eq(s.accept_msg, peer_why);
	/* Closed with its buffer held: the pool stays, and so does its charge. */
	s.eps[0].closed = 1;
	ez_conn_close(s.eps[0].conn);
	ck_assert_int_eq(ep_connect(&b, &g[0], s.port, NULL), 0);
	ck_assert(fb_run(&b, &g[0].connected, 1, 20));
	ck_assert_msg(g[0].connect_status == 0, "other address: on_connect(%d) \"%s\"",
		      g[0].connect_status, g[0].connect_msg);
	ck_assert_int_eq(ep_connect(&b, &g[1], s.port, NULL), 0);
	ck_assert(fb_run(&b, &g[1].connected, 1, 20));
	printf("  orphaned pool: the 3rd MiB is taken, the next from %s: on_connect(%d) \"%s\"\n",
	       test_addr(), g[1].connect_status, g[1].connect_msg);
	/* The buffer back; the orphan goes at the next close (g[1]'s, in
	 * expect_refused): the megabyte with it. */
	ez_buf_release(s.eps[0].kept);
	s.eps[0].kept = NULL;
	expect_refused(&g[1], ctx_why);
	ck_assert_int_eq(ep_connect(&b, &g[2], s.port, NULL), 0);
	ck_assert(fb_run(&b, &g[2].connected, 1, 20));
	ck_assert_msg(g[2].connect_status == 0, "after the orphan went: on_connect(%d) \"%s\"",
		      g[2].connect_status, g[2].connect_msg);
	ep_close(&a[1]);
	ep_close(&g[0]);
	ep_close(&g[2]);
	ck_assert(fb_run(&b, &s.disconnected, 3, 20));
	for (i = 0; i < s.neps; i++) {
		if (s.eps[i].kept)
			ez_buf_release(s.eps[i].kept);
		ep_close(&s.eps[i]);
	}
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_hostile_halfopen");
	TCase *tc = tcase_create("halfopen");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, flood_from_one_peer);
	tcase_add_test(tc, flood_to_the_listener_cap);
	tcase_add_test(tc, unanswered_requests_expire);
	tcase_add_test(tc, late_answer_leaves_the_peer_its_deadline);
	tcase_add_test(tc, established_capped_per_peer);
	tcase_add_test(tc, accepted_buffers_budgeted);
	tcase_add_test(tc, ended_and_orphaned_still_budgeted);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
