/* test_flow_policy.c: UDP source port policies on a real device: the port each side reports, the label on its QP, option errors. */
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

#define NCONN 6

struct side {
	struct ez_conn *conn[NCONN];
	struct ez_conn_info info[NCONN];
	int up, n, failed;
};

struct bench {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *l;
	struct ez_conn_opts srv_opts;
	struct side cli, srv;
	ev_timer tick;
};

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

	if (status) {
		fprintf(stderr, "connect: %s\n", ez_conn_errmsg(conn));
		s->failed++;
		return;
	}
	for (int i = 0; i < NCONN; i++)
		if (s->conn[i] == conn) {
			ck_assert_int_eq(ez_conn_info(conn, &s->info[i]), 0);
			s->up++;
		}
}

static const struct ez_conn_cbs cbs = { .on_connect = on_connect };

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct bench *b = arg;
	int i = b->srv.n++;

	(void)l;
	ck_assert_int_lt(i, NCONN);
	ck_assert_int_eq(ez_accept(req, &b->srv_opts, &cbs, &b->srv, &b->srv.conn[i]), 0);
}

/* n connections, the client with copts, the server with sopts; waits until all are up. */
static void bench_connect(struct bench *b, int n, const struct ez_conn_opts *copts,
			  const struct ez_conn_opts *sopts)
{
	char port[8];
	double end;

	memset(b, 0, sizeof(*b));
	b->loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_int_eq(ez_ctx_new(b->loop, 0, &b->ctx), 0);
	ev_timer_init(&b->tick, on_tick, 0.02, 0.02);
	ev_timer_start(b->loop, &b->tick);
	b->srv_opts = *sopts;
	ck_assert_int_eq(ez_listen(b->ctx, test_addr(), "0", NULL, on_request, b, &b->l), 0);
	snprintf(port, sizeof(port), "%u", ez_listener_port(b->l));
	/* One at a time: the round-robin order is then the connect order. */
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(ez_connect(b->ctx, test_addr(), port, copts, &cbs, &b->cli,
					    &b->cli.conn[i]), 0);
		end = now_s() + 20;
		while ((b->cli.up <= i || b->srv.up <= i) && !b->cli.failed && !b->srv.failed &&
		       now_s() < end)
			ev_run(b->loop, EVRUN_ONCE);
		ck_assert_msg(b->cli.up == i + 1 && b->srv.up == i + 1,
			      "connection %d: client up %d, server up %d", i, b->cli.up, b->srv.up);
	}
}

static void bench_close(struct bench *b)
{
	double end = now_s() + 10;

	for (int i = 0; i < NCONN; i++) {
		if (b->cli.conn[i])
			ez_conn_close(b->cli.conn[i]);
		if (b->srv.conn[i])
			ez_conn_close(b->srv.conn[i]);
	}
	ez_listener_close(b->l);
	while (ez_ctx_free(b->ctx) == -EBUSY && now_s() < end)
		ev_run(b->loop, EVRUN_ONCE);
	ev_timer_stop(b->loop, &b->tick);
	ev_loop_destroy(b->loop);
}

/* The label on the QP must be the one that gives the reported port. */
static void check_info(const struct ez_conn_info *i, enum ez_sport_policy pol, uint16_t want)
{
	ck_assert_int_eq(i->sport_policy, pol);
	ck_assert_int_eq(i->sport_mech, EZ_SPORT_MECH_FLOW_LABEL);	/* rxe: RoCEv2, not mlx5 */
	ck_assert_uint_eq(i->udp_sport, want);
	ck_assert_uint_eq(i->flow_label, ez_udp_sport_to_flow_label(want));
	ck_assert_uint_eq(ez_flow_label_to_udp_sport(i->flow_label), want);
}

START_TEST(auto_port_from_each_sides_qpn)
{
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_AUTO };
	struct bench b;
	uint16_t seen[2 * NCONN];

	bench_connect(&b, NCONN, &o, &o);
	for (int i = 0; i < NCONN; i++) {
		check_info(&b.cli.info[i], EZ_SPORT_AUTO, 0xC000 + (b.cli.info[i].qp_num & 0x3FFF));
		check_info(&b.srv.info[i], EZ_SPORT_AUTO, 0xC000 + (b.srv.info[i].qp_num & 0x3FFF));
		seen[2 * i] = b.cli.info[i].udp_sport;
		seen[2 * i + 1] = b.srv.info[i].udp_sport;
	}
	/* One device, one process here: every QP of both sides has its own port. */
	for (int i = 0; i < 2 * NCONN; i++)
		for (int j = i + 1; j < 2 * NCONN; j++)
			ck_assert_msg(seen[i] != seen[j], "port %u twice", seen[i]);
	bench_close(&b);
}
END_TEST

START_TEST(range_round_robin_per_context)
{
	struct ez_conn_opts c = { .sport_policy = EZ_SPORT_RANGE, .sport_min = 0xE000,
				  .sport_max = 0xE002 };
	struct ez_conn_opts s = { .sport_policy = EZ_SPORT_RANGE, .sport_min = 0xE100,
				  .sport_max = 0xE101 };
	struct bench b;

	bench_connect(&b, NCONN, &c, &s);
	/* Client and server share the context's cursor, and each connection
	 * moves both sides to RTR: server first (at accept), then client. */
	for (int i = 0; i < NCONN; i++) {
		uint16_t sp = b.srv.info[i].udp_sport, cp = b.cli.info[i].udp_sport;

		ck_assert_uint_eq(sp, 0xE100 + (2 * i) % 2);
		ck_assert_uint_eq(cp, 0xE000 + (2 * i + 1) % 3);
		check_info(&b.srv.info[i], EZ_SPORT_RANGE, sp);
		check_info(&b.cli.info[i], EZ_SPORT_RANGE, cp);
	}
	bench_close(&b);
}
END_TEST

START_TEST(fixed_each_direction_its_own)
{
	struct ez_conn_opts c = { .sport_policy = EZ_SPORT_FIXED, .udp_sport = 0xCAFE };
	struct ez_conn_opts s = { .udp_sport = 0xD00D };	/* the older option alone */
	struct bench b;

	bench_connect(&b, 2, &c, &s);
	for (int i = 0; i < 2; i++) {
		check_info(&b.cli.info[i], EZ_SPORT_FIXED, 0xCAFE);
		check_info(&b.srv.info[i], EZ_SPORT_FIXED, 0xD00D);
	}
	bench_close(&b);
}
END_TEST

START_TEST(default_keeps_rdma_cm_label)
{
	struct ez_conn_opts o = { 0 };
	struct bench b;

	bench_connect(&b, 1, &o, &o);
	ck_assert_int_eq(b.cli.info[0].sport_policy, EZ_SPORT_DEFAULT);
	ck_assert_int_eq(b.cli.info[0].sport_mech, EZ_SPORT_MECH_FLOW_LABEL);
	ck_assert_uint_ge(b.cli.info[0].udp_sport, 0xC000);
	bench_close(&b);
}
END_TEST

START_TEST(bad_policy_refused_before_anything)
{
	struct ez_conn_opts o = { .sport_policy = EZ_SPORT_RANGE, .sport_min = 0xE001,
				  .sport_max = 0xE000 };
	struct ez_conn *conn = NULL;
	struct ez_ctx *ctx;

	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	ck_assert_int_eq(ez_connect(ctx, test_addr(), "7", &o, &cbs, NULL, &conn), -EINVAL);
	ck_assert_ptr_null(conn);
	ck_assert_ptr_nonnull(strstr(ez_errmsg(), "sport_min 57345, sport_max 57344"));
	o = (struct ez_conn_opts){ .sport_policy = EZ_SPORT_FIXED };
	ck_assert_int_eq(ez_connect(ctx, test_addr(), "7", &o, &cbs, NULL, &conn), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ez_errmsg(), "EZ_SPORT_FIXED"));
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flow_policy");
	TCase *tc = tcase_create("rxe");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, auto_port_from_each_sides_qpn);
	tcase_add_test(tc, range_round_robin_per_context);
	tcase_add_test(tc, fixed_each_direction_its_own);
	tcase_add_test(tc, default_keeps_rdma_cm_label);
	tcase_add_test(tc, bad_policy_refused_before_anything);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
