/* test_storm.c: connection storms: hundreds of clients at once, connects aborted half-way; the listener stays healthy. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fault.h"
#include "../checkmain.h"

/* Small queues keep 2 x N connections within a 2 GiB guest. The deadlines
 * only catch a hang: this test is about every client getting in, and a
 * loaded ASan guest (load 15 on the host) took more than the listener's
 * default 2 s handshake deadline for 3 of 500 (the deadlines themselves are
 * test_hostile_halfopen's and test_causes' subject). */
#define STORM_DEADLINE_MS 60000
static const struct ez_conn_opts small = {
	.send_depth = 4, .recv_depth = 4, .max_msg_size = 256,
	.connect_timeout_ms = STORM_DEADLINE_MS,
};

static int storm_size(void)
{
	const char *n = getenv("EZ_STORM_CLIENTS");

	return n && atoi(n) > 0 ? atoi(n) : 500;
}

/* Every client whose on_connect said 0 sends one message; the server
 * echoes it: a message each way on every connection. */
static void exchange_all(struct fb *b, struct srv *s, struct ep *c, int n, int *ok_out)
{
	int i, ok = 0, want_recv = 0;
	static int total_recv;

	for (i = 0; i < n; i++) {
		if (c[i].connected == 1 && c[i].connect_status == 0) {
			ck_assert_msg(ep_send_seq(&c[i], 0) == 0, "client %d: %s", i, ez_errmsg());
			ok++;
		}
	}
	want_recv = ok;
	total_recv = 0;
	{
		double end = now_s() + 30;

		while (now_s() < end) {
			total_recv = 0;
			for (i = 0; i < n; i++)
				total_recv += c[i].received;
			if (total_recv >= want_recv)
				break;
			fb_spin(b, 0.02);
		}
	}
	ck_assert_msg(total_recv == want_recv, "%d of %d echoes came back", total_recv, want_recv);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(c[i].bad_seq, 0);
	*ok_out = ok;
	(void)s;
}

static int count_connected(struct ep *c, int n, int *failed, int *pending)
{
	int i, ok = 0;

	*failed = *pending = 0;
	for (i = 0; i < n; i++) {
		if (!c[i].connected)
			(*pending)++;
		else if (c[i].connect_status)
			(*failed)++;
		else
			ok++;
	}
	return ok;
}

START_TEST(storm_of_clients)
{
	struct fb b;
	struct srv s = { 0 };
	int n = storm_size(), i, ok, failed, pending, exchanged;
	struct ep *c = calloc((size_t)n, sizeof(*c));
	double t0, t_all;

	fb_init(&b);
	s.opts = small;
	/* All of them from one address at once: the listener is told to
	 * admit that many handshakes in progress (default 64 per peer). */
	s.lopts.max_pending = s.lopts.max_pending_per_peer = (uint32_t)n + 32;
	s.lopts.handshake_timeout_ms = STORM_DEADLINE_MS;
	srv_start(&b, &s, n + 32);
	t0 = now_s();
	for (i = 0; i < n; i++)
		ck_assert_msg(ep_connect(&b, &c[i], s.port, &small) == 0, "ez_connect %d: %s", i,
			      ez_errmsg());
	for (;;) {
		ok = count_connected(c, n, &failed, &pending);
		if (!pending || now_s() - t0 > STORM_DEADLINE_MS / 1000 + 30)
			break;
		fb_spin(&b, 0.05);
	}
	t_all = now_s() - t0;
	printf("storm: %d clients at once: %d connected, %d failed, %d pending after %.1f s; "
	       "server: %d requests, %d connected, %d accept errors\n",
	       n, ok, failed, pending, t_all, s.requests, s.connected, s.accept_errors);
	for (i = 0; i < n && failed; i++)
		if (c[i].connected && c[i].connect_status) {
			printf("  first failure: client %d: %d %s\n", i, c[i].connect_status,
			       c[i].connect_msg);
			break;
		}
	ck_assert_int_eq(pending, 0);
	ck_assert_int_eq(failed, 0);
	ck_assert_int_eq(ok, n);
	ck_assert(fb_run(&b, &s.connected, n, 10));
	exchange_all(&b, &s, c, n, &exchanged);
	ck_assert_int_eq(exchanged, n);
	for (i = 0; i < s.neps; i++)
		ck_assert_int_eq(s.eps[i].received, 1);
	printf("storm: %d connections each exchanged a message each way\n", exchanged);
	for (i = 0; i < n; i++)
		ep_close(&c[i]);
	ck_assert_msg(fb_run(&b, &s.disconnected, n, 30), "server saw %d/%d disconnects",
		      s.disconnected, n);
	srv_stop(&s);
	fb_fini(&b);
	free(c);
}
END_TEST

/* 200 connects closed half-way (100 at once, 100 after a few loop turns,
 * somewhere in resolve/route/REQ/REP), then 50 good ones: all work. */
START_TEST(aborted_connects)
{
	struct fb b;
	struct srv s = { 0 };
	enum { NABORT = 200, NGOOD = 50 };
	struct ep *a = calloc(NABORT, sizeof(*a));
	struct ep g[NGOOD];
	int i, canceled = 0, connected_first = 0, other = 0, ok, failed, pending, exchanged;
	double t0;

	memset(g, 0, sizeof(g));
	fb_init(&b);
	s.opts = small;
	s.lopts.max_pending = s.lopts.max_pending_per_peer = NABORT + NGOOD + 8;
	srv_start(&b, &s, NABORT + NGOOD + 8);
	for (i = 0; i < NABORT; i++) {
		ck_assert_int_eq(ep_connect(&b, &a[i], s.port, &small), 0);
		if (i >= NABORT / 2)
			fb_spin(&b, 0.001 * (i % 7));
		ep_close(&a[i]);
	}
	/* Each aborted connect ends in one of two ways: on_connect(-ECANCELED), or
	 * on_connect(0) (established before the close got its turn) and then
	 * on_disconnect. Wait for every one to have ended, not for a time: on a
	 * loaded host the teardowns take seconds. The ceiling catches a hang. */
	t0 = now_s();
	for (;;) {
		int done = 0;

		for (i = 0; i < NABORT; i++)
			done += a[i].connected && (a[i].connect_status != 0 || a[i].disconnected);
		if (done == NABORT || now_s() - t0 > 90)
			break;
		fb_spin(&b, 0.05);
	}
	for (i = 0; i < NABORT; i++) {
		ck_assert_msg(a[i].connected == 1, "aborted client %d: %d on_connect", i,
			      a[i].connected);
		ck_assert_int_eq(a[i].received, 0);
		if (a[i].connect_status == -ECANCELED) {
			canceled++;
			ck_assert_int_eq(a[i].disconnected, 0);
		} else if (a[i].connect_status == 0) {
			connected_first++;	/* established before the close got its turn */
			ck_assert_int_eq(a[i].disconnected, 1);
		} else {
			other++;
		}
	}
	printf("aborted: %d connects closed half-way: %d on_connect(-ECANCELED), %d connected "
	       "first, %d other; server: %d requests, %d connected, %d failed after accept, "
	       "%d accepts failed%s%s\n",
	       NABORT, canceled, connected_first, other, s.requests, s.connected, s.connect_failed,
	       s.accept_errors, s.accept_errors ? ", the last: " : "", s.accept_msg);
	ck_assert_int_eq(other, 0);
	ck_assert_int_eq(canceled + connected_first, NABORT);

	/* The listener is healthy: new clients connect and exchange. */
	for (i = 0; i < NGOOD; i++)
		ck_assert_int_eq(ep_connect(&b, &g[i], s.port, &small), 0);
	t0 = now_s();
	do {
		fb_spin(&b, 0.05);
		ok = count_connected(g, NGOOD, &failed, &pending);
	} while (pending && now_s() - t0 < 30);
	ck_assert_msg(ok == NGOOD, "%d good clients connected, %d failed, %d pending", ok, failed,
		      pending);
	exchange_all(&b, &s, g, NGOOD, &exchanged);
	ck_assert_int_eq(exchanged, NGOOD);
	printf("after the aborts: %d/%d new clients connected and exchanged\n", exchanged, NGOOD);
	for (i = 0; i < NGOOD; i++)
		ep_close(&g[i]);
	srv_stop(&s);
	fb_fini(&b);	/* waits for every teardown (ctx_free_when_idle) */
	free(a);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_storm");
	TCase *tc = tcase_create("storm");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, storm_of_clients);
	tcase_add_test(tc, aborted_connects);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
