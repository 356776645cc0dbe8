/* test_handshake.c: malformed handshakes from raw rdma_cm peers: each is refused with a reason, and the other side carries on. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "fault.h"
#include "rawcm.h"
#include "../checkmain.h"

/* The wire header (see lib/wire/handshake.h), written by hand on purpose:
 * the test must not trust the codec it tests. */
static size_t hdr(uint8_t *p, uint32_t magic, uint8_t version, uint8_t kind, uint8_t user_len,
		  uint16_t credits, uint32_t max_msg)
{
	p[0] = magic >> 24;
	p[1] = magic >> 16;
	p[2] = magic >> 8;
	p[3] = magic;
	p[4] = version;
	p[5] = kind;
	p[6] = user_len;
	p[7] = 0;
	p[8] = 0;
	p[9] = 1;	/* caps: credits */
	p[10] = credits >> 8;
	p[11] = credits;
	p[12] = max_msg >> 24;
	p[13] = max_msg >> 16;
	p[14] = max_msg >> 8;
	p[15] = max_msg;
	return 16;
}

#define MAGIC 0x455a5244u

/* The reason in an easyrdma REJECT (16-byte header, user_len at [6]). */
static const char *reject_text(const struct raw *r, char *text, size_t size)
{
	int n;

	ck_assert_int_ge(r->pdata_len, 16);
	ck_assert_uint_eq(((uint32_t)r->pdata[0] << 24 | (uint32_t)r->pdata[1] << 16 |
			   (uint32_t)r->pdata[2] << 8 | r->pdata[3]), MAGIC);
	ck_assert_uint_eq(r->pdata[4], 1);	/* version */
	ck_assert_uint_eq(r->pdata[5], 3);	/* a reject */
	n = r->pdata[6];
	ck_assert_int_le(16 + n, r->pdata_len);
	snprintf(text, size, "%.*s", n, (const char *)r->pdata + 16);
	return text;
}

/* A good easyrdma client connects afterwards and exchanges a message each way. */
static void good_client(struct fb *b, struct srv *s)
{
	struct ep c = { 0 };
	int before = s->connected;

	ck_assert_int_eq(ep_connect(b, &c, s->port, NULL), 0);
	ck_assert(fb_run(b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "good client: %d %s", c.connect_status, c.connect_msg);
	ck_assert_int_eq(ep_send_seq(&c, 0), 0);
	ck_assert(fb_run(b, &c.received, 1, 5));
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(s->connected, before + 1);
	ep_close(&c);
	ck_assert(fb_run(b, &c.disconnected, 1, 5));
}

static void expect_rejected(const void *pdata, int len, const char *want)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	char text[160];
	int st;

	fb_init(&b);
	srv_start(&b, &s, 4);
	st = raw_connect_result(&b, &r, s.port, pdata, len);
	ck_assert_msg(r.last == RDMA_CM_EVENT_REJECTED, "raw client got %s, not a REJECT",
		      rdma_event_str(r.last));
	ck_assert_int_eq(st, 28);	/* IB CM: consumer-defined reject */
	reject_text(&r, text, sizeof(text));
	ck_assert_str_eq(text, want);
	printf("%d-byte handshake rejected: \"%s\"\n", len, text);
	raw_free(&r);
	ck_assert_int_eq(s.requests, 0);	/* the application never saw it */
	good_client(&b, &s);
	ck_assert_int_eq(s.requests, 1);
	srv_stop(&s);
	fb_fini(&b);
}

START_TEST(wrong_magic)
{
	uint8_t p[56] = { 0 };

	hdr(p, 0x45414444u, 1, 1, 0, 64, 4096);
	expect_rejected(p, 56, "not an easyrdma handshake: magic 0x45414444, expected 0x455a5244");
}
END_TEST

START_TEST(wrong_version)
{
	uint8_t p[56] = { 0 };

	hdr(p, MAGIC, 9, 1, 0, 64, 4096);
	expect_rejected(p, 56, "easyrdma handshake version 9 not supported (this side speaks 1)");
}
END_TEST

START_TEST(wrong_kind)
{
	uint8_t p[56] = { 0 };

	hdr(p, MAGIC, 1, 2, 0, 64, 4096);
	expect_rejected(p, 56, "easyrdma handshake: got a reply (kind 2), expected a request");
}
END_TEST

/* rdma_cm pads a REQ's private data to 56 bytes with zeros, so the receiver
 * never sees a short buffer: a header cut after its credits reads as a
 * maximum message size of 0. */
START_TEST(truncated_header)
{
	uint8_t p[56] = { 0 };

	hdr(p, MAGIC, 1, 1, 0, 64, 4096);
	expect_rejected(p, 12, "easyrdma handshake: request advertises 64 credits and max message 0");
}
END_TEST

START_TEST(truncated_magic_only)
{
	uint8_t p[56] = { 0 };

	hdr(p, MAGIC, 1, 1, 0, 64, 4096);
	expect_rejected(p, 4, "easyrdma handshake version 0 not supported (this side speaks 1)");
}
END_TEST

START_TEST(no_private_data)
{
	expect_rejected(NULL, 0, "not an easyrdma handshake: magic 0x00000000, expected 0x455a5244");
}
END_TEST

/* The header claims more user bytes than a request can carry. */
START_TEST(oversized_user_len)
{
	uint8_t p[56] = { 0 };

	hdr(p, MAGIC, 1, 1, 200, 64, 4096);
	expect_rejected(p, 56, "easyrdma handshake: user data length 200 exceeds 40 for a request");
}
END_TEST

/* More than rdma_cm carries in a REQ: librdmacm refuses it locally. */
START_TEST(oversized_private_data)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param p = { 0 };
	struct rdma_cm_event *ev;
	uint8_t big[200];

	memset(big, 0xab, sizeof(big));
	hdr(big, MAGIC, 1, 1, 40, 64, 4096);
	fb_init(&b);
	srv_start(&b, &s, 4);
	memset(&r, 0, sizeof(r));
	r.ch = rdma_create_event_channel();
	ck_assert_int_eq(rdma_create_id(r.ch, &r.id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_getaddrinfo(test_addr(), s.port, &hints, &ai), 0);
	ck_assert_int_eq(rdma_resolve_addr(r.id, NULL, ai->ai_dst_addr, 2000), 0);
	rdma_freeaddrinfo(ai);
	ck_assert_int_eq(raw_event(&b, &r, &ev, 10), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	ck_assert_int_eq(rdma_resolve_route(r.id, 2000), 0);
	ck_assert_int_eq(raw_event(&b, &r, &ev, 10), 0);
	ck_assert_int_eq(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
	raw_qp(&r, r.id);
	p.private_data = big;
	p.private_data_len = 57;
	p.responder_resources = 1;
	p.initiator_depth = 1;
	errno = 0;
	ck_assert_int_eq(rdma_connect(r.id, &p), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* Exactly the maximum (56 bytes, 40 of them user data) is a valid request. */
	p.private_data_len = 56;
	ck_assert_int_eq(rdma_connect(r.id, &p), 0);
	fb_run(&b, &s.requests, 1, 10);
	ck_assert_int_eq(s.requests, 1);
	ck_assert_int_eq(raw_event(&b, &r, &ev, 10), 0);
	ck_assert_msg(ev->event == RDMA_CM_EVENT_ESTABLISHED, "%s", rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	printf("57 bytes: rdma_connect EINVAL; 56 bytes (user_len 40): accepted\n");
	raw_free(&r);
	fb_spin(&b, 0.3);
	good_client(&b, &s);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

START_TEST(random_bytes)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	uint8_t p[56];
	char text[160];
	unsigned int seed = 12345;
	int round, i;

	fb_init(&b);
	srv_start(&b, &s, 4);
	for (round = 0; round < 8; round++) {
		for (i = 0; i < 56; i++)
			p[i] = (uint8_t)rand_r(&seed);
		if (p[0] == 0x45)
			p[0] = 0x46;	/* never the magic by chance */
		ck_assert_int_eq(raw_connect_result(&b, &r, s.port, p, 1 + round * 7), 28);
		reject_text(&r, text, sizeof(text));
		ck_assert_msg(strncmp(text, "not an easyrdma handshake: magic 0x", 35) == 0, "%s",
			      text);
		raw_free(&r);
	}
	ck_assert_int_eq(s.requests, 0);
	printf("8 random handshakes (1..50 bytes) rejected, e.g. \"%s\"\n", text);
	good_client(&b, &s);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* ---- a raw server replying with a bad handshake ------------------------ */

static void bad_reply(const void *rep, int len, const char *want_part)
{
	struct fb b;
	struct raw r;
	struct ep c = { 0 };
	struct rdma_conn_param p = { 0 };
	struct rdma_cm_event *ev;
	char port[8], want[256];
	int got_reject = 0, rej_len = 0, i;

	fb_init(&b);
	raw_listen(&r, port, sizeof(port));
	ck_assert_int_eq(ep_connect(&b, &c, port, NULL), 0);
	raw_expect(&b, &r, RDMA_CM_EVENT_CONNECT_REQUEST, &r.conn_id);
	raw_qp(&r, r.conn_id);
	p.private_data = rep;
	p.private_data_len = (uint8_t)len;
	p.responder_resources = 1;
	p.initiator_depth = 1;
	ck_assert_int_eq(rdma_accept(r.conn_id, &p), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_int_eq(c.connect_status, -EPROTO);
	snprintf(want, sizeof(want), "rdma_connect(%s:%s): bad reply: %s", test_addr(), port,
		 want_part);
	ck_assert_str_eq(c.connect_msg, want);
	/* The raw server reads why in the REJECT easyrdma sends back. */
	for (i = 0; i < 3 && !got_reject; i++) {
		if (raw_event(&b, &r, &ev, 3))
			break;
		if (ev->event == RDMA_CM_EVENT_REJECTED) {
			got_reject = 1;
			rej_len = ev->param.conn.private_data_len;
			if (ev->param.conn.private_data)
				memcpy(r.pdata, ev->param.conn.private_data, (size_t)rej_len);
		}
		rdma_ack_cm_event(ev);
	}
	printf("bad reply: easyrdma says \"%s\"; the raw server got %s%s%.*s\n", c.connect_msg,
	       got_reject ? "a REJECT" : "no REJECT", got_reject ? ": " : "",
	       got_reject ? rej_len : 0, (const char *)r.pdata);
	ck_assert_msg(got_reject, "no REJECT at the raw server");
	ck_assert_ptr_nonnull(memmem(r.pdata, (size_t)rej_len, want_part, strlen(want_part)));
	ez_conn_close(c.conn);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(c.connected, 1);
	ck_assert_int_eq(c.disconnected, 0);
	raw_free(&r);
	fb_fini(&b);
}

START_TEST(server_reply_wrong_magic)
{
	uint8_t p[64] = { 0 };

	hdr(p, 0x12345678u, 1, 2, 0, 64, 4096);
	bad_reply(p, 64, "not an easyrdma handshake: magic 0x12345678, expected 0x455a5244");
}
END_TEST

START_TEST(server_reply_is_a_request)
{
	uint8_t p[64] = { 0 };

	hdr(p, MAGIC, 1, 1, 0, 64, 4096);
	bad_reply(p, 64, "easyrdma handshake: got a request (kind 1), expected a reply");
}
END_TEST

START_TEST(server_reply_zero_credits)
{
	uint8_t p[64] = { 0 };

	hdr(p, MAGIC, 1, 2, 0, 0, 4096);
	bad_reply(p, 64, "easyrdma handshake: reply advertises 0 credits and max message 4096");
}
END_TEST

START_TEST(server_reply_empty)
{
	bad_reply(NULL, 0, "not an easyrdma handshake: magic 0x00000000, expected 0x455a5244");
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_handshake");
	TCase *tc = tcase_create("handshake");

	tcase_set_timeout(tc, 40);
	tcase_add_test(tc, wrong_magic);
	tcase_add_test(tc, wrong_version);
	tcase_add_test(tc, wrong_kind);
	tcase_add_test(tc, truncated_header);
	tcase_add_test(tc, truncated_magic_only);
	tcase_add_test(tc, no_private_data);
	tcase_add_test(tc, oversized_user_len);
	tcase_add_test(tc, oversized_private_data);
	tcase_add_test(tc, random_bytes);
	tcase_add_test(tc, server_reply_wrong_magic);
	tcase_add_test(tc, server_reply_is_a_request);
	tcase_add_test(tc, server_reply_zero_credits);
	tcase_add_test(tc, server_reply_empty);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
