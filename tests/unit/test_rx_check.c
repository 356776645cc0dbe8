/* test_rx_check.c: the receive classifier (lib/wire/rx_check.c): every flag combination, credits, lengths, paths and auth states, without a device. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "wire/auth.h"
#include "wire/bye.h"
#include "wire/exports.h"
#include "wire/imm.h"
#include "wire/rndv.h"
#include "wire/rx_check.h"
#include "wire/settle.h"
#include "../checkmain.h"

static struct rx_track t;

/* A connected, unkeyed, single-path connection whose peer holds credits
 * and that has sent 10 messages. */
static struct rx_view view(void)
{
	memset(&t, 0, sizeof(t));
	t.sent = 10;
	t.granted = 4;
	return (struct rx_view){ .t = &t, .max_msg = 1024, .recv_granted = 4,
				 .recv_max_granted = 4, .send_credits = 3,
				 .max_send_credits = RX_MAX_CREDITS, .npaths = 1, .live = 1,
				 .auth = RX_AUTH_NOKEY, .ka = 1 };
}

static struct rx_in send_in(uint32_t imm, uint32_t len)
{
	return (struct rx_in){ .has_imm = 1, .imm = imm, .byte_len = len };
}

static enum rx_fault check(const struct rx_view *v, uint32_t imm, uint32_t len, struct rx_msg *m)
{
	struct rx_in in = send_in(imm, len);

	return rx_check(&in, v, m);
}

static void want_msg(enum rx_fault f, const struct rx_view *v, uint32_t imm, uint32_t len,
		     const char *msg)
{
	struct rx_in in = send_in(imm, len);
	char buf[200];

	ck_assert_str_eq(rx_fault_format(f, &in, v, buf, sizeof(buf)), msg);
}

START_TEST(data_accepted_and_counted)
{
	struct rx_view v = view();
	struct rx_msg m;

	ck_assert_int_eq(check(&v, 5, 1024, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_DATA);
	ck_assert_uint_eq(m.credits, 5);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.used, 1);
	ck_assert_uint_eq(t.returned, 5);
	ck_assert_uint_eq(rx_return_room(&t), 15);
}
END_TEST

START_TEST(no_credit)
{
	struct rx_view v = view();
	struct rx_in wi = { .write_imm = 1, .has_imm = 1, .imm = 0xffffffffu, .byte_len = 1 << 20 };
	struct rx_msg m;

	v.recv_granted = 0;
	t.used = 4;
	ck_assert_int_eq(check(&v, 0, 10, &m), RX_F_NO_CREDIT);
	want_msg(RX_F_NO_CREDIT, &v, 0, 10, "peer sent a message with no receive credit (4 granted, 4 used)");
	/* A write with immediate takes a receive too. */
	ck_assert_int_eq(rx_check(&wi, &v, &m), RX_F_NO_CREDIT);
	/* A path failure of ours left the peer credits we no longer count. */
	t.recv_slack = 1;
	ck_assert_int_eq(check(&v, 0, 10, &m), RX_OK);
	ck_assert_int_eq(m.slack, 1);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.recv_slack, 0);
	ck_assert_int_eq(check(&v, 0, 10, &m), RX_F_NO_CREDIT);
}
END_TEST

START_TEST(write_imm_is_the_applications)
{
	struct rx_view v = view();
	struct rx_in wi = { .write_imm = 1, .has_imm = 1, .imm = 0xffffffffu, .byte_len = 1 << 20 };
	struct rx_msg m;

	/* Every bit and any length: the immediate and the bytes are not ours. */
	ck_assert_int_eq(rx_check(&wi, &v, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_WRITE_IMM);
	ck_assert_uint_eq(m.credits, 0);
}
END_TEST

START_TEST(too_long)
{
	struct rx_view v = view();
	struct rx_msg m;

	ck_assert_int_eq(check(&v, 0, 1025, &m), RX_F_TOO_LONG);
	want_msg(RX_F_TOO_LONG, &v, 0, 3000, "peer sent 3000 bytes, max_msg_size 1024");
}
END_TEST

START_TEST(no_immediate)
{
	struct rx_view v = view();
	struct rx_in in = { .byte_len = 8 };
	struct rx_msg m;

	ck_assert_int_eq(rx_check(&in, &v, &m), RX_F_NO_IMM);
}
END_TEST

START_TEST(unknown_bits)
{
	struct rx_view v = view();
	struct rx_msg m;
	unsigned int b;

	for (b = 0; b < 32; b++) {
		uint32_t bit = 1u << b;

		if (bit & RX_IMM_KNOWN)
			continue;
		ck_assert_int_eq(check(&v, bit, 0, &m), RX_F_UNKNOWN_BITS);
		ck_assert_int_eq(check(&v, bit | IMM_CREDIT_ONLY | 1, 0, &m), RX_F_UNKNOWN_BITS);
	}
	want_msg(RX_F_UNKNOWN_BITS, &v, 0x00400001u, 0,
		 "peer's immediate 0x00400001 has bits 0x00400000 no easyrdma message uses");
}
END_TEST

/* Rendezvous: a header takes a credit and has its exact length; an ack
 * is credit-only, 4 bytes, and only while a transfer of ours is out; the
 * contents: a length within 1..rndv_max, the id in turn, no flags. */
START_TEST(rndv_rules)
{
	struct rx_view v = view();
	struct rndv_hdr h = { .addr = 0x1000, .rkey = 0x77, .len = 4096, .id = 0 };
	struct rx_msg m;
	char buf[200];

	/* Not announced: refused, whatever the rest. */
	ck_assert_int_eq(check(&v, IMM_RNDV, RNDV_HDR_LEN, &m), RX_F_RNDV_OFF);
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK, RNDV_ACK_LEN, &m), RX_F_RNDV_OFF);
	want_msg(RX_F_RNDV_OFF, &v, IMM_RNDV, RNDV_HDR_LEN,
		 "peer sent a rendezvous message (immediate 0x02000000) but did not announce rendezvous in its handshake");
	v.rndv = 1;
	v.rndv_max = 1u << 24;
	ck_assert_int_eq(check(&v, IMM_RNDV | 2, RNDV_HDR_LEN, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_RNDV);
	ck_assert_uint_eq(m.credits, 2);
	ck_assert_int_eq(check(&v, IMM_RNDV, 8, &m), RX_F_RNDV_HDR_LEN);
	want_msg(RX_F_RNDV_HDR_LEN, &v, IMM_RNDV, 8, "peer sent a 8-byte rendezvous header (24 expected)");
	ck_assert_int_eq(check(&v, IMM_RNDV | IMM_BYE, RNDV_HDR_LEN, &m), RX_F_FLAG_NOT_CONTROL);
	v.recv_granted = 0;
	ck_assert_int_eq(check(&v, IMM_RNDV, RNDV_HDR_LEN, &m), RX_F_NO_CREDIT);
	v.recv_granted = 4;
	/* Contents. */
	ck_assert_int_eq(rx_check_rndv(&h, &v), RX_OK);
	h.len = 0;
	ck_assert_int_eq(rx_check_rndv(&h, &v), RX_F_RNDV_ZERO);
	ck_assert_str_eq(rx_rndv_fault_format(RX_F_RNDV_ZERO, &h, &v, buf, sizeof(buf)),
			 "peer's rendezvous header 0 offers 0 bytes (rkey 0x77)");
	h.len = (1u << 24) + 1;
	ck_assert_int_eq(rx_check_rndv(&h, &v), RX_F_RNDV_TOO_LONG);
	ck_assert_str_eq(rx_rndv_fault_format(RX_F_RNDV_TOO_LONG, &h, &v, buf, sizeof(buf)),
			 "peer's rendezvous header 0 offers 16777217 bytes, max_msg_size 16777216");
	h.len = 4096;
	h.flags = 1;
	ck_assert_int_eq(rx_check_rndv(&h, &v), RX_F_RNDV_FLAGS);
	h.flags = 0;
	h.id = 1;
	ck_assert_int_eq(rx_check_rndv(&h, &v), RX_F_RNDV_SEQ);
	h.id = 0;
	ck_assert_int_eq(check(&v, IMM_RNDV, RNDV_HDR_LEN, &m), RX_OK);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.rndv_recv, 1);
	ck_assert_uint_eq(t.used, 1);
	ck_assert_int_eq(rx_check_rndv(&h, &v), RX_F_RNDV_SEQ);
	ck_assert_str_eq(rx_rndv_fault_format(RX_F_RNDV_SEQ, &h, &v, buf, sizeof(buf)),
			 "peer's rendezvous header carries transfer id 0, expected 1");
	/* Acks. */
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK, RNDV_ACK_LEN, &m), RX_F_RNDV_ACK_NONE);
	want_msg(RX_F_RNDV_ACK_NONE, &v, IMM_RNDV_ACK, RNDV_ACK_LEN,
		 "peer acknowledged a rendezvous transfer while none of ours was outstanding (0 offered, 0 acknowledged)");
	t.rndv_sent = 2;
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK, RNDV_ACK_LEN, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_RNDV_ACK);
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK | 1, RNDV_ACK_LEN, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK, 0, &m), RX_F_RNDV_ACK_LEN);
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK | IMM_BYE, RNDV_ACK_LEN, &m), RX_F_FLAG_MIX);
	ck_assert_int_eq(rx_check_rndv_ack(&v, 1, 1), RX_OK);
	ck_assert_int_eq(rx_check_rndv_ack(&v, 2, 1), RX_F_RNDV_ACK_UNKNOWN);
	ck_assert_int_eq(rx_check_rndv_ack(&v, 0, 0), RX_F_RNDV_ACK_AGAIN);
	h.id = 0;
	ck_assert_str_eq(rx_rndv_fault_format(RX_F_RNDV_ACK_AGAIN, &h, &v, buf, sizeof(buf)),
			 "peer acknowledged rendezvous transfer 0 a second time");
	check(&v, IMM_RNDV_ACK, RNDV_ACK_LEN, &m);
	rx_commit(&t, &v, &m);
	check(&v, IMM_RNDV_ACK, RNDV_ACK_LEN, &m);
	rx_commit(&t, &v, &m);
	ck_assert_int_eq(check(&v, IMM_RNDV_ACK, RNDV_ACK_LEN, &m), RX_F_RNDV_ACK_NONE);
}
END_TEST

START_TEST(credit_only)
{
	struct rx_view v = view();
	struct rx_msg m;

	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 2, 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_CREDIT);
	ck_assert_uint_eq(m.credits, 2);
	/* A credit message takes no credit. */
	v.recv_granted = 0;
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 2, 0, &m), RX_OK);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY, 0, &m), RX_F_CREDIT_EMPTY);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 2, 1, &m), RX_F_CONTROL_PAYLOAD);
	want_msg(RX_F_CONTROL_PAYLOAD, &v, IMM_CREDIT_ONLY | 2, 100,
		 "peer sent 100 bytes on a credit-only message (immediate 0x80000002)");
}
END_TEST

START_TEST(returns_bounded)
{
	struct rx_view v = view();
	struct rx_msg m;

	/* 10 messages sent: at most 20 credits back, in any order. */
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 20, 0, &m), RX_OK);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 21, 0, &m), RX_F_OVER_RETURN);
	ck_assert_int_eq(check(&v, 21, 0, &m), RX_F_OVER_RETURN);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 15, 0, &m), RX_OK);
	rx_commit(&t, &v, &m);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 5, 0, &m), RX_OK);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 6, 0, &m), RX_F_OVER_RETURN);
	/* The 65,535 a fresh connection's peer grants itself. */
	v = view();
	t.sent = 0;
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 0xffff, 0, &m), RX_F_OVER_RETURN);
	want_msg(RX_F_OVER_RETURN, &v, IMM_CREDIT_ONLY | 0xffff, 0,
		 "peer returned 65535 credits; this side sent 0 messages, so at most 0 more could come back");
	/* Past what any pool can grant, however much this side sent. */
	v = view();
	t.sent = 1u << 20;
	v.send_credits = 0xff00;
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 0xff, 0, &m), RX_OK);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 0x100, 0, &m), RX_F_OVER_HOLD);
}
END_TEST

START_TEST(bye)
{
	struct rx_view v = view();
	struct rx_msg m;

	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_BYE);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE | 1, 0, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, 4, &m), RX_F_CONTROL_PAYLOAD);
	/* Without CREDIT_ONLY it would have been read as data and a goodbye. */
	ck_assert_int_eq(check(&v, IMM_BYE, 4, &m), RX_F_FLAG_NOT_CONTROL);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, 0, &m), RX_OK);
	rx_commit(&t, &v, &m);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, 0, &m), RX_F_BYE_AGAIN);
}
END_TEST

/* A goodbye may say why: exactly BYE_REASON_LEN bytes, and it counts
 * as the goodbye it is; any other length is a payload it cannot have. */
START_TEST(bye_may_say_why)
{
	struct rx_view v = view();
	struct rx_msg m;
	uint8_t b[BYE_REASON_LEN];
	uint32_t ms = 0;

	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, BYE_REASON_LEN, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_BYE);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, BYE_REASON_LEN - 1, &m),
			 RX_F_CONTROL_PAYLOAD);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, BYE_REASON_LEN + 1, &m),
			 RX_F_CONTROL_PAYLOAD);
	/* Only a goodbye: a credit message of 8 bytes is still refused. */
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 1, BYE_REASON_LEN, &m), RX_F_CONTROL_PAYLOAD);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, BYE_REASON_LEN, &m), RX_OK);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.byes, 1);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, BYE_REASON_LEN, &m), RX_F_BYE_AGAIN);
	/* The codec: big-endian milliseconds; a reason not known is a plain goodbye. */
	bye_reason_encode(BYE_KEEPALIVE, 0x01020304u, b);
	ck_assert_uint_eq(b[0], 1);
	ck_assert_uint_eq(b[4], 1);
	ck_assert_uint_eq(b[7], 4);
	ck_assert_uint_eq(bye_reason_decode(b, &ms), BYE_KEEPALIVE);
	ck_assert_uint_eq(ms, 0x01020304u);
	b[0] = 7;
	ck_assert_uint_eq(bye_reason_decode(b, &ms), BYE_CLOSED);
	b[0] = BYE_KEEPALIVE;
	b[2] = 1;
	ck_assert_uint_eq(bye_reason_decode(b, &ms), BYE_CLOSED);
}
END_TEST

static uint32_t down(unsigned int path)
{
	return IMM_CREDIT_ONLY | IMM_PATH_DOWN | path << IMM_PATH_SHIFT;
}

START_TEST(path_down_single_path)
{
	struct rx_view v = view();
	struct rx_msg m;
	unsigned int p;

	ck_assert_int_eq(check(&v, down(0), 0, &m), RX_F_PATH_LAST);
	want_msg(RX_F_PATH_LAST, &v, down(0), 0,
		 "peer took the last live path (0) out with a path-down notice");
	for (p = 1; p < 8; p++)
		ck_assert_int_eq(check(&v, down(p), 0, &m), RX_F_PATH_NONE);
	want_msg(RX_F_PATH_NONE, &v, down(3), 0, "peer took path 3 out of a connection of 1 paths");
	/* A path index without the flag. */
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 1 | 2u << IMM_PATH_SHIFT, 0, &m), RX_F_PATH_BITS);
	ck_assert_int_eq(check(&v, 2u << IMM_PATH_SHIFT, 0, &m), RX_F_PATH_BITS);
	ck_assert_int_eq(check(&v, down(0) | 1, 0, &m), RX_F_CONTROL_CREDITS);
}
END_TEST

START_TEST(path_down_multi_path)
{
	struct rx_view v = view();
	struct rx_msg m;

	v.npaths = 3;
	v.live = 7;
	ck_assert_int_eq(check(&v, down(1), 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_PATH_DOWN);
	ck_assert_uint_eq(m.path, 1);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.peer_down, 2);
	ck_assert_uint_eq(t.recv_slack, 4);	/* its window: sends it may count as failed */
	v.live = 5;
	ck_assert_int_eq(check(&v, down(1), 0, &m), RX_F_PATH_AGAIN);
	ck_assert_int_eq(check(&v, down(3), 0, &m), RX_F_PATH_NONE);
	ck_assert_int_eq(check(&v, down(2), 0, &m), RX_OK);
	rx_commit(&t, &v, &m);
	v.live = 1;
	/* Every other path is down by the peer's word: it has none left to
	 * send a notice on but path 0. */
	ck_assert_int_eq(check(&v, down(0), 0, &m), RX_F_PATH_LAST);
}
END_TEST

/* Exact failover (HS_CAP_FAILOVER both ways): a path-down carries the
 * sender's receive count (4 bytes), and settles by it: no slack. */
START_TEST(path_down_exact)
{
	struct rx_view v = view();
	struct rx_msg m;

	v.npaths = 3;
	v.live = 7;
	v.exact = 1;
	ck_assert_int_eq(check(&v, down(1), 0, &m), RX_F_PATH_COUNT_LEN);
	want_msg(RX_F_PATH_COUNT_LEN, &v, down(1), 0,
		 "peer's path-down for path 1 carries 0 bytes (4 with exact failover: its receive count)");
	ck_assert_int_eq(check(&v, down(1), 8, &m), RX_F_PATH_COUNT_LEN);
	ck_assert_int_eq(check(&v, down(1) | 1, 4, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, down(1), 4, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_PATH_DOWN);
	ck_assert_uint_eq(m.path, 1);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.peer_down, 2);
	ck_assert_uint_eq(t.recv_slack, 0);
	ck_assert_uint_eq(t.return_slack, 0);
	ck_assert_int_eq(check(&v, down(1), 4, &m), RX_F_PATH_AGAIN);
	/* Other credit-only messages stay empty. */
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_BYE, 4, &m), RX_F_CONTROL_PAYLOAD);
	/* Without exact failover the count is refused. */
	v.exact = 0;
	ck_assert_int_eq(check(&v, down(2), 4, &m), RX_F_PATH_COUNT_LEN);
	want_msg(RX_F_PATH_COUNT_LEN, &v, down(2), 4,
		 "peer's path-down for path 2 carries 4 bytes (0 without exact failover)");
}
END_TEST

/* A failed path's rebuild messages: exact failover only, 8 bytes, no
 * credits, no other flag, a path 0..K-1; the path's next failure is new. */
START_TEST(path_up_exact)
{
	struct rx_view v = view();
	struct rx_msg m;
	uint32_t up1 = IMM_CREDIT_ONLY | IMM_PATH_UP | 1u << IMM_PATH_SHIFT;

	v.npaths = 3;
	v.live = 5;
	ck_assert_int_eq(check(&v, up1, PATH_UP_LEN, &m), RX_F_PATH_UP_OFF);
	want_msg(RX_F_PATH_UP_OFF, &v, up1, PATH_UP_LEN,
		 "peer sent a path rebuild message (immediate 0x81010000) without announcing exact failover");
	v.exact = 1;
	ck_assert_int_eq(check(&v, up1, 4, &m), RX_F_PATH_UP_LEN);
	want_msg(RX_F_PATH_UP_LEN, &v, up1, 4, "peer's path rebuild message for path 1 carries 4 bytes (8)");
	ck_assert_int_eq(check(&v, up1 | 3, PATH_UP_LEN, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, up1 | IMM_BYE, PATH_UP_LEN, &m), RX_F_FLAG_MIX);
	ck_assert_int_eq(check(&v, up1 | IMM_PATH_DOWN, PATH_UP_LEN, &m), RX_F_FLAG_MIX);
	/* Path 0 is made again as the others are. */
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_PATH_UP, PATH_UP_LEN, &m), RX_OK);
	ck_assert_uint_eq(m.path, 0);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_PATH_UP | 3u << IMM_PATH_SHIFT, PATH_UP_LEN, &m),
			 RX_F_PATH_NONE);
	want_msg(RX_F_PATH_NONE, &v, IMM_CREDIT_ONLY | IMM_PATH_UP | 3u << IMM_PATH_SHIFT, PATH_UP_LEN,
		 "peer's path rebuild message names path 3 of a connection of 3 paths");
	/* Without IMM_CREDIT_ONLY it is a data message with a control flag. */
	ck_assert_int_eq(check(&v, IMM_PATH_UP, 8, &m), RX_F_FLAG_NOT_CONTROL);
	/* Path 1 went down by the peer's word, then the peer makes it again. */
	ck_assert_int_eq(check(&v, down(1), PATH_COUNT_LEN, &m), RX_OK);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.peer_down, 2);
	ck_assert_int_eq(check(&v, up1, PATH_UP_LEN, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_PATH_UP);
	ck_assert_uint_eq(m.path, 1);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.peer_down, 0);
	v.live = 7;
	ck_assert_int_eq(check(&v, down(1), PATH_COUNT_LEN, &m), RX_OK);
}
END_TEST

/* Both sides losing a path at once: the notices cross. */
START_TEST(path_down_crossing)
{
	struct rx_view v = view();
	struct rx_msg m;

	v.npaths = 2;
	v.live = 1;	/* we took path 1 out */
	ck_assert_int_eq(check(&v, down(1), 0, &m), RX_OK);
	/* The peer took path 0 out before our notice for 1 reached it. */
	ck_assert_int_eq(check(&v, down(0), 0, &m), RX_OK);
}
END_TEST

START_TEST(auth_states)
{
	struct rx_view v = view();
	struct rx_msg m;

	ck_assert_int_eq(check(&v, IMM_AUTH_PROOF, AUTH_PROOF_LEN, &m), RX_F_AUTH_NO_KEY);
	want_msg(RX_F_AUTH_NO_KEY, &v, IMM_AUTH_PROOF, 0,
		 "peer sent a shared-secret message (immediate 0x90000000) on a connection without a shared secret");
	ck_assert_int_eq(check(&v, IMM_AUTH_REFUSED, 0, &m), RX_F_AUTH_NO_KEY);
	v.auth = RX_AUTH_DONE;
	ck_assert_int_eq(check(&v, IMM_AUTH_OK, 0, &m), RX_F_AUTH_LATE);
	v.auth = RX_AUTH_AWAIT_PROOF;
	ck_assert_int_eq(check(&v, IMM_AUTH_PROOF, AUTH_PROOF_LEN, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_AUTH_PROOF);
	ck_assert_int_eq(check(&v, IMM_AUTH_PROOF, AUTH_PROOF_LEN - 1, &m), RX_F_AUTH_LEN);
	ck_assert_int_eq(check(&v, IMM_AUTH_PROOF | 1, AUTH_PROOF_LEN, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, IMM_AUTH_REFUSED, 0, &m), RX_F_AUTH_WRONG);
	ck_assert_int_eq(check(&v, 1, 10, &m), RX_F_AUTH_WRONG);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | 1, 0, &m), RX_F_AUTH_WRONG);
	v.auth = RX_AUTH_AWAIT_VERDICT;
	ck_assert_int_eq(check(&v, IMM_AUTH_OK, 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_AUTH_OK);
	ck_assert_int_eq(check(&v, IMM_AUTH_REFUSED, 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_AUTH_REFUSED);
	ck_assert_int_eq(check(&v, IMM_AUTH_OK, 32, &m), RX_F_CONTROL_PAYLOAD);
	ck_assert_int_eq(check(&v, IMM_AUTH, 0, &m), RX_F_FLAG_NOT_CONTROL);
}
END_TEST

/* A probe is answered; those that come while the answer is outstanding
 * are not, up to 255 (an honest prober's most); one more is a flood.
 * Answers only to probes we sent; neither carries credits or bytes, nor
 * comes from a peer that did not announce it. */
START_TEST(keepalive)
{
	struct rx_view v = view();
	struct rx_msg m;
	unsigned int i;

	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_KA_PROBE);
	ck_assert_int_eq(m.answer, 1);
	ck_assert_uint_eq(m.credits, 0);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.rx_msgs, 1);
	v.ka_answer_busy = 1;
	for (i = 0; i < RX_KA_MAX_UNANSWERED; i++) {
		ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_OK);
		ck_assert_int_eq(m.answer, 0);
		rx_commit(&t, &v, &m);
	}
	ck_assert_uint_eq(t.ka_early, 255);
	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_F_KA_FLOOD);
	want_msg(RX_F_KA_FLOOD, &v, IMM_KA_PROBE, 0,
		 "peer sent 256 keepalive probes while this side's answer to an earlier one was outstanding (at most 255)");
	/* Our answer completed: the next probe is answered again. */
	v.ka_answer_busy = 0;
	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_OK);
	ck_assert_int_eq(m.answer, 1);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.ka_early, 0);

	/* Answers: as many as probes sent. */
	ck_assert_int_eq(check(&v, IMM_KA_ANSWER, 0, &m), RX_F_KA_UNASKED);
	want_msg(RX_F_KA_UNASKED, &v, IMM_KA_ANSWER, 0,
		 "peer answered a keepalive probe this side did not send (0 sent, 0 answered)");
	rx_note_ka_probe(&t);
	rx_note_ka_probe(&t);
	ck_assert_int_eq(check(&v, IMM_KA_ANSWER, 0, &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_KA_REPLY);
	rx_commit(&t, &v, &m);
	ck_assert_int_eq(check(&v, IMM_KA_ANSWER, 0, &m), RX_OK);
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.ka_answers, 2);
	ck_assert_int_eq(check(&v, IMM_KA_ANSWER, 0, &m), RX_F_KA_UNASKED);

	/* No credits (it would grant the peer's sends), no bytes. */
	ck_assert_int_eq(check(&v, IMM_KA_PROBE | 5, 0, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, IMM_KA_ANSWER | 1, 0, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 8, &m), RX_F_CONTROL_PAYLOAD);
	/* Only with IMM_CREDIT_ONLY, not with the other flags. */
	ck_assert_int_eq(check(&v, IMM_KEEPALIVE, 0, &m), RX_F_FLAG_NOT_CONTROL);
	ck_assert_int_eq(check(&v, IMM_KA_PROBE | IMM_BYE, 0, &m), RX_F_FLAG_MIX);
	ck_assert_int_eq(check(&v, IMM_CREDIT_ONLY | IMM_KA_REPLY, 0, &m), RX_F_FLAG_MIX);
	/* Not before the shared secret is proved. */
	v.auth = RX_AUTH_AWAIT_PROOF;
	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_F_AUTH_WRONG);
	v.auth = RX_AUTH_DONE;
	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_OK);
	/* A peer that did not announce keepalive sends none. */
	v.ka = 0;
	ck_assert_int_eq(check(&v, IMM_KA_PROBE, 0, &m), RX_F_KA_OFF);
	want_msg(RX_F_KA_OFF, &v, IMM_KA_PROBE, 0,
		 "peer sent a keepalive message (immediate 0x88000000) but did not announce keepalive in its handshake");
}
END_TEST

/* Every combination of the four flags, with and without a path index,
 * credits and bytes, in every auth state: the verdict is the model's. */
static enum rx_fault model(uint32_t imm, uint32_t len, enum rx_auth auth)
{
	uint32_t flags = imm & (IMM_AUTH | IMM_PATH_DOWN | IMM_BYE | IMM_KEEPALIVE | IMM_KA_REPLY);
	uint32_t kaf = IMM_KEEPALIVE | IMM_KA_REPLY;
	uint32_t cr = imm & IMM_CREDITS_MASK;
	int path_bits = !!(imm & IMM_PATH_FIELD);
	int awaiting = auth == RX_AUTH_AWAIT_PROOF || auth == RX_AUTH_AWAIT_VERDICT;

	if (!(imm & IMM_CREDIT_ONLY)) {
		if (flags)
			return RX_F_FLAG_NOT_CONTROL;
		if (path_bits)
			return RX_F_PATH_BITS;
		if (awaiting)
			return RX_F_AUTH_WRONG;
		return len > 1024 ? RX_F_TOO_LONG : RX_OK;
	}
	if (path_bits && !(flags & IMM_PATH_DOWN))
		return RX_F_PATH_BITS;
	if (flags & kaf) {
		if (flags != IMM_KEEPALIVE && flags != kaf)
			return RX_F_FLAG_MIX;
		if (awaiting)
			return RX_F_AUTH_WRONG;
		if (cr)
			return RX_F_CONTROL_CREDITS;
		if (len)
			return RX_F_CONTROL_PAYLOAD;
		/* The view has sent no probe: an answer is unasked for. */
		return flags == kaf ? RX_F_KA_UNASKED : RX_OK;
	}
	if (flags == IMM_AUTH || flags == (IMM_AUTH | IMM_BYE)) {
		if (auth == RX_AUTH_NOKEY)
			return RX_F_AUTH_NO_KEY;
		if (auth == RX_AUTH_DONE)
			return RX_F_AUTH_LATE;
		if (cr)
			return RX_F_CONTROL_CREDITS;
		if (auth == RX_AUTH_AWAIT_PROOF)
			return flags != IMM_AUTH ? RX_F_AUTH_WRONG :
			       len != AUTH_PROOF_LEN ? RX_F_AUTH_LEN : RX_OK;
		return len ? RX_F_CONTROL_PAYLOAD : RX_OK;
	}
	if (flags && flags != IMM_BYE && flags != IMM_PATH_DOWN)
		return RX_F_FLAG_MIX;
	if (awaiting)
		return RX_F_AUTH_WRONG;
	if (flags && cr)
		return RX_F_CONTROL_CREDITS;
	/* The view is without exact failover: a path-down is empty. */
	if (flags == IMM_PATH_DOWN && len)
		return RX_F_PATH_COUNT_LEN;
	if (len)
		return RX_F_CONTROL_PAYLOAD;
	if (flags == IMM_PATH_DOWN)
		return imm_path(imm) == 0 ? RX_F_PATH_LAST : RX_F_PATH_NONE;
	if (!flags && !cr)
		return RX_F_CREDIT_EMPTY;
	return RX_OK;
}

/* The exports message: once, announced, after the shared-secret
 * exchange, exactly its immediate, a length within its header..its most. */
START_TEST(exports_rules)
{
	struct rx_view v = view();
	struct rx_msg m;

	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, EXPORTS_LEN(1), &m), RX_F_EXPORTS_UNASKED);
	want_msg(RX_F_EXPORTS_UNASKED, &v, IMM_EXPORTS_MSG, 28,
		 "peer sent an exports message (28 bytes) that its handshake did not announce, or a second one");
	v.exports_due = 1;
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, EXPORTS_LEN(1), &m), RX_OK);
	ck_assert_int_eq(m.kind, RX_EXPORTS);
	ck_assert_uint_eq(m.credits, 0);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, EXPORTS_MAX_LEN, &m), RX_OK);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, EXPORTS_HDR_LEN, &m), RX_OK);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, EXPORTS_HDR_LEN - 1, &m), RX_F_EXPORTS_LEN);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, EXPORTS_MAX_LEN + 1, &m), RX_F_EXPORTS_LEN);
	want_msg(RX_F_EXPORTS_LEN, &v, IMM_EXPORTS_MSG, 3,
		 "peer's exports message carries 3 bytes (4..196)");
	/* Credits, a path, another flag: not an exports message. */
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG | 1, 28, &m), RX_F_CONTROL_CREDITS);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG | IMM_BYE, 28, &m), RX_F_FLAG_MIX);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG | IMM_RNDV, 28, &m), RX_F_FLAG_MIX);
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG | (1u << IMM_PATH_SHIFT), 28, &m),
			 RX_F_FLAG_MIX);
	/* Without IMM_CREDIT_ONLY it is a data message with a control flag. */
	ck_assert_int_eq(check(&v, IMM_EXPORTS, 28, &m), RX_F_FLAG_NOT_CONTROL);
	/* Not before the shared secret is settled. */
	v.auth = RX_AUTH_AWAIT_VERDICT;
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, 28, &m), RX_F_AUTH_WRONG);
	v.auth = RX_AUTH_DONE;
	ck_assert_int_eq(check(&v, IMM_EXPORTS_MSG, 28, &m), RX_OK);
	/* Counted as a message, no credit used. */
	rx_commit(&t, &v, &m);
	ck_assert_uint_eq(t.rx_msgs, 1);
	ck_assert_uint_eq(t.used, 0);
}
END_TEST

START_TEST(every_combination)
{
	static const uint32_t flagset[] = { IMM_AUTH, IMM_PATH_DOWN, IMM_BYE, IMM_CREDIT_ONLY,
					    IMM_KEEPALIVE, IMM_KA_REPLY };
	static const uint32_t credits[] = { 0, 1, 7 };
	static const uint32_t lens[] = { 0, 1, AUTH_PROOF_LEN, 1024, 1025 };
	unsigned int f, p, c, l, a, i, n = 0;

	for (f = 0; f < 64; f++)
		for (p = 0; p < 8; p += 3)
			for (c = 0; c < 3; c++)
				for (l = 0; l < 5; l++)
					for (a = 0; a < 4; a++) {
						struct rx_view v = view();
						struct rx_msg m;
						uint32_t imm = credits[c] | p << IMM_PATH_SHIFT;
						enum rx_fault got, want;

						for (i = 0; i < 6; i++)
							if (f & (1u << i))
								imm |= flagset[i];
						v.auth = (uint8_t)a;
						got = check(&v, imm, lens[l], &m);
						want = model(imm, lens[l], (enum rx_auth)a);
						ck_assert_msg(got == want,
							      "imm 0x%08x len %u auth %u: %s, model %s",
							      imm, lens[l], a, rx_fault_name(got),
							      rx_fault_name(want));
						n++;
					}
	ck_assert_uint_eq(n, 64 * 3 * 3 * 5 * 4);
}
END_TEST

/* ez_conn's shortcut for a stream's message (rx_plain_data()) takes only
 * what rx_check() accepts as data handing back nothing, and counts it as
 * rx_commit() does: over immediates, lengths, credits held both ways,
 * write-with-immediate and no immediate. */
START_TEST(plain_data_is_rx_checks_verdict)
{
	static const uint32_t imms[] = { 0, 1, IMM_RNDV, IMM_CREDIT_ONLY, IMM_BYE, 1u << 20 };
	static const uint32_t lens[] = { 0, 64, 1024, 1025, RNDV_HDR_LEN };
	static const uint32_t granted[] = { 0, 1, 4 };
	static const uint32_t held[] = { 0, 3, RX_MAX_CREDITS, RX_MAX_CREDITS + 1 };
	unsigned int i, l, g, h, w, n = 0, plain = 0;

	for (i = 0; i < sizeof(imms) / sizeof(imms[0]); i++)
		for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			for (g = 0; g < 3; g++)
				for (h = 0; h < 4; h++)
					for (w = 0; w < 3; w++) {
						struct rx_view v = view();
						struct rx_in in = send_in(imms[i], lens[l]);
						struct rx_track before, fast;
						struct rx_msg m;
						enum rx_fault f;

						in.write_imm = w == 1;
						in.has_imm = w != 2;
						v.recv_granted = granted[g];
						v.send_credits = held[h];
						before = t;
						f = rx_check(&in, &v, &m);
						n++;
						if (!rx_plain_data(&in, v.max_msg, v.recv_granted,
								   v.send_credits))
							continue;
						plain++;
						ck_assert_msg(f == RX_OK && m.kind == RX_DATA &&
							      m.credits == 0 && !m.slack,
							      "imm 0x%x len %u granted %u held %u: %s",
							      imms[i], lens[l], granted[g], held[h],
							      rx_fault_name(f));
						fast = before;
						rx_commit_plain(&fast);
						rx_commit(&t, &v, &m);
						ck_assert_uint_eq(fast.rx_msgs, t.rx_msgs);
						ck_assert_uint_eq(fast.used, t.used);
						ck_assert_uint_eq(fast.returned, t.returned);
						ck_assert_uint_eq(fast.recv_slack, t.recv_slack);
					}
	ck_assert_uint_eq(n, 6 * 5 * 3 * 4 * 3);
	/* imm 0, a SEND, 0/64/1024 bytes or the header's length, granted
	 * 1 or 4, holding up to RX_MAX_CREDITS */
	ck_assert_uint_eq(plain, 4 * 2 * 3);
}
END_TEST

START_TEST(every_fault_named)
{
	struct rx_view v = view();
	struct rx_in in = send_in(0, 0);
	char buf[200];
	unsigned int f;

	for (f = 1; f < RX_NFAULTS; f++) {
		ck_assert_str_ne(rx_fault_name((enum rx_fault)f), "unknown fault");
		rx_fault_format((enum rx_fault)f, &in, &v, buf, sizeof(buf));
		ck_assert_msg(strncmp(buf, "peer", 4) == 0, "fault %u: \"%s\"", f, buf);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rx_check");
	TCase *tc = tcase_create("rx_check");

	tcase_add_test(tc, data_accepted_and_counted);
	tcase_add_test(tc, no_credit);
	tcase_add_test(tc, write_imm_is_the_applications);
	tcase_add_test(tc, too_long);
	tcase_add_test(tc, no_immediate);
	tcase_add_test(tc, unknown_bits);
	tcase_add_test(tc, rndv_rules);
	tcase_add_test(tc, credit_only);
	tcase_add_test(tc, returns_bounded);
	tcase_add_test(tc, bye);
	tcase_add_test(tc, bye_may_say_why);
	tcase_add_test(tc, path_down_single_path);
	tcase_add_test(tc, path_down_multi_path);
	tcase_add_test(tc, path_down_crossing);
	tcase_add_test(tc, path_down_exact);
	tcase_add_test(tc, path_up_exact);
	tcase_add_test(tc, auth_states);
	tcase_add_test(tc, keepalive);
	tcase_add_test(tc, exports_rules);
	tcase_add_test(tc, every_combination);
	tcase_add_test(tc, every_fault_named);
	tcase_add_test(tc, plain_data_is_rx_checks_verdict);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
