/* test_hostile_imm.c: a raw-verbs peer completes the easyrdma handshake, then sends one forged message each (exports messages too: unannounced, malformed, announced and never sent): the server ends that connection with the exact status and reason; an honest connection on the same pool keeps echoing. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fault.h"
#include "rawcm.h"
#include "wire/handshake.h"
#include "wire/imm.h"
#include "../checkmain.h"

/* A server with max_msg_size mms (4 connections) and an honest client. */
static void bench_start(struct hbench *t, uint32_t mms)
{
	hbench_start(t, mms, 4);
}

/* The server's QP number, as the raw peer's QP was told. */
static uint32_t server_qpn(struct raw *r)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	ck_assert_int_eq(ibv_query_qp(r->id->qp, &a, IBV_QP_DEST_QPN, &ia), 0);
	return a.dest_qp_num;
}

/* A raw peer connects, sends one message (imm, len bytes) and is cut off:
 * the server's side of it reports status and a message starting with
 * want; the raw peer sees the disconnect; the honest connection echoes. */
static void attack(struct hbench *t, uint32_t imm, uint32_t len, int status, const char *want,
		   int whole)
{
	struct raw r;
	struct ep *e;
	int idx = t->s.neps;

	t->s.no_echo = 1;
	raw_ez_connect(&t->b, &r, t->s.port, 8, 65536, 16, 16384);
	ck_assert_uint_eq(r.rep_max_msg, t->s.opts.max_msg_size);
	ck_assert(fb_run(&t->b, &t->s.neps, idx + 1, 5));
	e = &t->s.eps[idx];
	ck_assert(fb_run(&t->b, &e->connected, 1, 5));
	ck_assert_int_eq(raw_ez_send(&r, imm, len), 0);
	ck_assert(fb_run(&t->b, &e->disconnected, 1, 10));
	ck_assert_int_eq(e->connect_status, 0);
	ck_assert_int_eq(e->received, 0);
	ck_assert_msg(e->disconnect_status == status, "status %d (%s), wanted %d", e->disconnect_status,
		      e->disconnect_msg, status);
	if (whole)
		ck_assert_str_eq(e->disconnect_msg, want);
	else
		ck_assert_msg(strncmp(e->disconnect_msg, want, strlen(want)) == 0,
			      "\"%s\" does not start with \"%s\"", e->disconnect_msg, want);
	printf("imm 0x%08x, %u bytes: server on_disconnect(%d) \"%s\"\n", imm, len,
	       e->disconnect_status, e->disconnect_msg);
	raw_ez_wait_disconnect(&t->b, &r, 5);
	hbench_echo(t, 20);
	raw_free(&r);
	t->s.no_echo = 0;
}

START_TEST(path_down_on_the_last_path)
{
	struct hbench t;

	bench_start(&t, 4096);
	hbench_echo(&t, 5);
	attack(&t, IMM_CREDIT_ONLY | IMM_PATH_DOWN, 0, -EPROTO,
	       "peer took the last live path (0) out with a path-down notice", 1);
	attack(&t, IMM_CREDIT_ONLY | IMM_PATH_DOWN | 5u << IMM_PATH_SHIFT, 0, -EPROTO,
	       "peer took path 5 out of a connection of 1 paths", 1);
	hbench_stop(&t);
}
END_TEST

START_TEST(auth_on_an_unkeyed_connection)
{
	struct hbench t;

	bench_start(&t, 4096);
	attack(&t, IMM_AUTH_PROOF, 32, -EPROTO,
	       "peer sent a shared-secret message (immediate 0x90000000) on a connection without a shared secret", 1);
	attack(&t, IMM_AUTH_REFUSED, 0, -EPROTO,
	       "peer sent a shared-secret message (immediate 0xd0000000) on a connection without a shared secret", 1);
	hbench_stop(&t);
}
END_TEST

START_TEST(self_granted_credits)
{
	struct hbench t;

	bench_start(&t, 4096);
	attack(&t, IMM_CREDIT_ONLY | 0xffff, 0, -EPROTO,
	       "peer returned 65535 credits; this side sent 0 messages, so at most 0 more could come back", 1);
	attack(&t, 0xffff, 8, -EPROTO,
	       "peer returned 65535 credits; this side sent 0 messages, so at most 0 more could come back", 1);
	hbench_stop(&t);
}
END_TEST

START_TEST(payload_on_credit_only)
{
	struct hbench t;

	bench_start(&t, 4096);
	attack(&t, IMM_CREDIT_ONLY | 1, 100, -EPROTO,
	       "peer sent 100 bytes on a credit-only message (immediate 0x80000001)", 1);
	attack(&t, IMM_CREDIT_ONLY | IMM_BYE, 10, -EPROTO,
	       "peer sent 10 bytes on a credit-only message (immediate 0xc0000000)", 1);
	attack(&t, IMM_CREDIT_ONLY, 0, -EPROTO,
	       "peer sent a credit message that returns no credit (immediate 0x80000000)", 1);
	hbench_stop(&t);
}
END_TEST

/* A path rebuild's flag: a control flag, and only between peers that
 * announced exact failover (a connection of one path never does). */
START_TEST(path_rebuild_refused)
{
	struct hbench t;

	bench_start(&t, 4096);
	attack(&t, IMM_PATH_UP, 8, -EPROTO,
	       "peer's message (immediate 0x01000000) has control flags 0x01000000 without IMM_CREDIT_ONLY", 1);
	attack(&t, IMM_CREDIT_ONLY | IMM_PATH_UP | 1u << IMM_PATH_SHIFT, 8, -EPROTO,
	       "peer sent a path rebuild message (immediate 0x81010000) without announcing exact failover", 1);
	hbench_stop(&t);
}
END_TEST

START_TEST(unknown_bits)
{
	struct hbench t;

	bench_start(&t, 4096);
	attack(&t, 0x00400000u, 8, -EPROTO,
	       "peer's immediate 0x00400000 has bits 0x00400000 no easyrdma message uses", 1);
	attack(&t, IMM_BYE, 8, -EPROTO,
	       "peer's message (immediate 0x40000000) has control flags 0x40000000 without IMM_CREDIT_ONLY", 1);
	attack(&t, IMM_CREDIT_ONLY | IMM_BYE | IMM_PATH_DOWN, 0, -EPROTO,
	       "peer's control message (immediate 0xe0000000) combines flags 0x60000000 that no easyrdma message combines", 1);
	hbench_stop(&t);
}
END_TEST

/* 8 KiB into 4 KiB buffers: the receive fails on the device; the
 * connection ends with the completion's status, the buffer is back. */
START_TEST(larger_than_the_buffer)
{
	struct hbench t;
	struct ez_srqpool_stats st;
	struct raw r;
	struct ep *e;
	char want[200];

	bench_start(&t, 4096);
	t.s.no_echo = 1;
	raw_ez_connect(&t.b, &r, t.s.port, 8, 65536, 16, 16384);
	ck_assert(fb_run(&t.b, &t.s.neps, 2, 5));
	e = &t.s.eps[1];
	ck_assert(fb_run(&t.b, &e->connected, 1, 5));
	ck_assert_int_eq(raw_ez_send(&r, 0, 8192), 0);
	ck_assert(fb_run(&t.b, &e->disconnected, 1, 10));
	/* The device names the overrun: rxe (6.1) as a local QP operation
	 * error, mlx5 as a local length error. */
	ck_assert_msg(e->disconnect_status == -EIO || e->disconnect_status == -EMSGSIZE, "%d \"%s\"",
		      e->disconnect_status, e->disconnect_msg);
	snprintf(want, sizeof(want),
		 "receive work completion (QP %u): %s into a 4096-byte receive buffer (vendor error 0x",
		 server_qpn(&r), e->disconnect_status == -EIO ? "local QP operation error" :
		 "local length error");
	ck_assert_msg(strncmp(e->disconnect_msg, want, strlen(want)) == 0, "\"%s\"", e->disconnect_msg);
	printf("8 KiB into 4 KiB: server on_disconnect(%d) \"%s\"\n", e->disconnect_status,
	       e->disconnect_msg);
	ck_assert_int_eq(e->received, 0);
	for (double end = now_s() + 5; now_s() < end && !r.send_err && !r.disconnected;) {
		raw_ez_poll(&r);
		fb_spin(&t.b, 0.01);
	}
	printf("8 KiB into 4 KiB: raw peer's send %s, disconnected %d\n",
	       r.send_err ? ibv_wc_status_str(r.send_err) : "completed", r.disconnected);
	ck_assert(r.send_err || r.disconnected);
	hbench_echo(&t, 20);
	ck_assert_int_eq(ez_srqpool_stats(t.pool, &st), 0);
	ck_assert_uint_eq(st.in_use, 0);	/* the failed receive's buffer went back */
	ck_assert_uint_eq(st.total, 128);
	raw_free(&r);
	hbench_stop(&t);
}
END_TEST

/* A shared pool's 4 KiB buffers under max_msg_size 1024: 1024 is
 * advertised, and 3,000 bytes are refused. */
START_TEST(larger_than_max_msg_size)
{
	struct hbench t;

	struct ez_conn_info info;

	bench_start(&t, 1024);
	ck_assert_int_eq(ez_conn_info(t.honest.conn, &info), 0);
	ck_assert_uint_eq(info.max_msg_size, 1024);	/* the server advertised 1024, not 4096 */
	attack(&t, 0, 3000, -EPROTO, "peer sent 3000 bytes, max_msg_size 1024", 1);
	hbench_stop(&t);
}
END_TEST

/* Protocol violations count against the address like refused RDMA
 * requests: with access_fail_limit 2, two peers cut for forged immediates
 * and the third connect from that address is refused, with the reason;
 * the honest connection, established before, goes on. */
START_TEST(violators_refused_for_a_while)
{
	struct hbench t;
	char why[200];

	hbench_start_penalized(&t, 4096, 4, 2, 30000);
	attack(&t, IMM_CREDIT_ONLY | 0xffff, 0, -EPROTO,
	       "peer returned 65535 credits; this side sent 0 messages, so at most 0 more could come back", 1);
	attack(&t, 0x00400000u, 8, -EPROTO,
	       "peer's immediate 0x00400000 has bits 0x00400000 no easyrdma message uses", 1);
	raw_expect_penalized(&t.b, t.s.port, 2, why, sizeof(why));
	printf("after 2 violations: \"%s\"\n", why);
	hbench_echo(&t, 20);
	hbench_stop(&t);
}
END_TEST

/* ---- regions given with the connection: a raw peer lies --------------- */

/* The raw peer's next send carries these bytes (raw_ez_send() sends from
 * xbuf). */
static void raw_fill(struct raw *r, const void *data, uint32_t len)
{
	ck_assert_uint_le(len, r->xlen);
	memcpy(r->xbuf, data, len);
}

/* A raw peer whose handshake announced its regions (HS_CAP_EXPORTS_SENT):
 * the server's side of it, not yet up. */
static struct ep *dial_announcing(struct hbench *t, struct raw *r)
{
	int idx = t->s.neps;

	t->s.no_echo = 1;
	raw_ez_caps = HS_CAP_CREDITS | HS_CAP_EXPORTS | HS_CAP_EXPORTS_SENT;
	raw_ez_connect(&t->b, r, t->s.port, 8, 65536, 16, 16384);
	raw_ez_caps = HS_CAP_CREDITS;
	ck_assert_msg(r->rep_caps & HS_CAP_EXPORTS, "the reply's caps 0x%x lack HS_CAP_EXPORTS",
		      r->rep_caps);
	ck_assert(fb_run(&t->b, &t->s.neps, idx + 1, 5));
	return &t->s.eps[idx];
}

/* Unannounced: an exports message from a peer whose handshake did not say
 * it gives regions is refused like any forged message. */
START_TEST(exports_unannounced)
{
	struct hbench t;

	bench_start(&t, 4096);
	attack(&t, IMM_EXPORTS_MSG, 28, -EPROTO,
	       "peer sent an exports message (28 bytes) that its handshake did not announce, or a second one", 1);
	attack(&t, IMM_EXPORTS_MSG | 3, 28, -EPROTO,
	       "peer's control message (immediate 0x80800003) carries 3 credits", 1);
	hbench_stop(&t);
}
END_TEST

/* Announced, then malformed (a version this library does not know, a
 * region that wraps): the server's side never comes up, on_connect says
 * why, the honest connection is untouched. */
START_TEST(exports_malformed)
{
	static const uint8_t bad_version[28] = { 9, 1 };
	uint8_t wraps[28] = { 1, 1, 0, 0,
			      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 0,	/* address */
			      0, 0, 0, 0, 0, 0, 0x10, 0,			/* 4096 bytes */
			      0, 0, 0, 7,  0, 0, 0, 0 };
	const uint8_t *msgs[2] = { bad_version, wraps };
	const char *why[2] = { "has a version this library does not know",
			       "has a region that wraps the address space" };
	struct hbench t;

	bench_start(&t, 4096);
	for (int i = 0; i < 2; i++) {
		struct raw r;
		struct ep *e = dial_announcing(&t, &r);
		char want[200];

		raw_fill(&r, msgs[i], 28);
		ck_assert_int_eq(raw_ez_send(&r, IMM_EXPORTS_MSG, 28), 0);
		ck_assert(fb_run(&t.b, &e->connected, 1, 10));
		ck_assert_int_eq(e->connect_status, -EPROTO);
		snprintf(want, sizeof(want), ": its exports message (28 bytes) %s", why[i]);
		ck_assert_msg(strncmp(e->connect_msg, "peer ", 5) == 0 && strstr(e->connect_msg, want),
			      "%s", e->connect_msg);
		printf("announced, then malformed: server on_connect(%d) \"%s\"\n", e->connect_status,
		       e->connect_msg);
		raw_ez_wait_disconnect(&t.b, &r, 5);
		hbench_echo(&t, 10);
		raw_free(&r);
	}
	t.s.no_echo = 0;
	hbench_stop(&t);
}
END_TEST

/* Announced and never sent: the listener's handshake timeout ends it and
 * names what it waited for. */
START_TEST(exports_announced_never_sent)
{
	struct hbench t;
	struct raw r;
	struct ep *e;

	bench_start(&t, 4096);
	e = dial_announcing(&t, &r);
	ck_assert(fb_run(&t.b, &e->connected, 1, 30));
	ck_assert_int_eq(e->connect_status, -ETIMEDOUT);
	ck_assert_msg(strstr(e->connect_msg, "handshake not completed within 2000 ms (the listener's handshake_timeout_ms): waiting for the regions the peer gives with the connection (its exports message)"),
		      "%s", e->connect_msg);
	printf("announced, never sent: server on_connect(%d) \"%s\"\n", e->connect_status,
	       e->connect_msg);
	raw_ez_wait_disconnect(&t.b, &r, 5);
	hbench_echo(&t, 10);
	raw_free(&r);
	t.s.no_echo = 0;
	hbench_stop(&t);
}
END_TEST

/* A message before the regions (as one on another path can overtake them)
 * waits for them: delivered after on_connect, not lost, not early. */
START_TEST(exports_message_before_them_held)
{
	static const uint8_t one[28] = { 1, 1, 0, 0,  0, 0, 0x7f, 0, 0, 0, 0x10, 0,
					 0, 0, 0, 0, 0, 0, 0x10, 0,  0, 0, 0x12, 0x34,  0, 0, 0, 0 };
	struct hbench t;
	struct raw r;
	struct ep *e;

	bench_start(&t, 4096);
	e = dial_announcing(&t, &r);
	ck_assert_int_eq(raw_ez_send(&r, 0, 16), 0);	/* data, before the regions */
	{
		double end = now_s() + 10;

		while (r.sends_ok < 1 && !r.send_err && now_s() < end) {
			raw_ez_poll(&r);
			fb_spin(&t.b, 0.01);
		}
	}
	ck_assert_uint_eq(r.sends_ok, 1);	/* in the server's receive queue */
	fb_spin(&t.b, 0.2);
	ck_assert_int_eq(e->connected, 0);	/* not up: the regions are due */
	ck_assert_int_eq(e->received, 0);	/* so nothing delivered */
	raw_fill(&r, one, sizeof(one));
	ck_assert_int_eq(raw_ez_send(&r, IMM_EXPORTS_MSG, sizeof(one)), 0);
	ck_assert(fb_run(&t.b, &e->connected, 1, 10));
	ck_assert_msg(e->connect_status == 0, "%s", e->connect_msg);
	ck_assert(fb_run(&t.b, &e->received, 1, 10));
	ck_assert_int_eq(e->received, 1);
	{
		unsigned int n = 0;
		const struct ez_rkey *k = ez_conn_peer_exports(e->conn, &n);

		ck_assert_uint_eq(n, 1);
		ck_assert_uint_eq(k[0].addr, 0x7f0000001000ull);
		ck_assert_uint_eq(k[0].len, 4096);
		ck_assert_uint_eq(k[0].rkey, 0x1234);
		ck_assert_uint_eq(k[0].path_binding, 0);
	}
	printf("a message before the regions: held, delivered after on_connect\n");
	raw_free(&r);
	t.s.no_echo = 0;
	hbench_echo(&t, 10);
	hbench_stop(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile_imm");
	TCase *tc = tcase_create("forged");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, path_down_on_the_last_path);
	tcase_add_test(tc, auth_on_an_unkeyed_connection);
	tcase_add_test(tc, self_granted_credits);
	tcase_add_test(tc, payload_on_credit_only);
	tcase_add_test(tc, unknown_bits);
	tcase_add_test(tc, path_rebuild_refused);
	tcase_add_test(tc, larger_than_the_buffer);
	tcase_add_test(tc, larger_than_max_msg_size);
	tcase_add_test(tc, violators_refused_for_a_while);
	tcase_add_test(tc, exports_unannounced);
	tcase_add_test(tc, exports_malformed);
	tcase_add_test(tc, exports_announced_never_sent);
	tcase_add_test(tc, exports_message_before_them_held);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
