/* test_settle.c: exact failover's settling (lib/wire/settle.c): the count codec, the check of a peer's count, and the decision for every class of op. */
#include <check.h>
#include <stdint.h>

#include "wire/settle.h"
#include "../checkmain.h"

START_TEST(count_codec_round_trips)
{
	static const uint32_t counts[] = { 0, 1, 255, 256, 0x01020304u, 0x7fffffffu, 0xffffffffu };
	uint8_t b[PATH_COUNT_LEN];

	for (unsigned int i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		path_count_encode(counts[i], b);
		ck_assert_uint_eq(path_count_decode(b), counts[i]);
	}
	/* Big-endian on the wire. */
	path_count_encode(0x01020304u, b);
	ck_assert_uint_eq(b[0], 1);
	ck_assert_uint_eq(b[3], 4);
}
END_TEST

START_TEST(seq_before_wraps)
{
	ck_assert_int_eq(settle_seq_before(1, 2), 1);
	ck_assert_int_eq(settle_seq_before(2, 2), 0);
	ck_assert_int_eq(settle_seq_before(3, 2), 0);
	ck_assert_int_eq(settle_seq_before(0xfffffffeu, 1), 1);
	ck_assert_int_eq(settle_seq_before(1, 0xfffffffeu), 0);
}
END_TEST

/* tx sent on the path, unacked of them held: an honest count is within
 * [tx - unacked, tx], wrapping included; anything else is named. */
START_TEST(peer_count_checked)
{
	ck_assert_int_eq(settle_check_count(100, 100, 5), SETTLE_OK);
	ck_assert_int_eq(settle_check_count(95, 100, 5), SETTLE_OK);
	ck_assert_int_eq(settle_check_count(97, 100, 5), SETTLE_OK);
	ck_assert_int_eq(settle_check_count(101, 100, 5), SETTLE_F_OVER_SENT);
	ck_assert_int_eq(settle_check_count(94, 100, 5), SETTLE_F_UNDER_ACKED);
	ck_assert_int_eq(settle_check_count(0, 0, 0), SETTLE_OK);
	ck_assert_int_eq(settle_check_count(1, 0, 0), SETTLE_F_OVER_SENT);
	/* Across the wrap of the 32-bit counts. */
	ck_assert_int_eq(settle_check_count(0xfffffffeu, 2, 4), SETTLE_OK);
	ck_assert_int_eq(settle_check_count(0xfffffffdu, 2, 4), SETTLE_F_UNDER_ACKED);
	ck_assert_int_eq(settle_check_count(3, 2, 4), SETTLE_F_OVER_SENT);
	ck_assert_str_eq(settle_fault_str(SETTLE_F_OVER_SENT), "more messages than were sent on the path");
	ck_assert_str_eq(settle_fault_str(SETTLE_F_UNDER_ACKED), "fewer messages than it acknowledged");
}
END_TEST

/* The whole table: class x (path fault, own error) x (counted, not). */
START_TEST(decision_table)
{
	static const struct {
		enum settle_class c;
		int path_fault;
		int counted;	/* seq below the count */
		enum settle_action want;
	} rows[] = {
		{ SETTLE_MSG, 1, 1, SETTLE_DONE },	/* arrived, only the ACK lost */
		{ SETTLE_MSG, 1, 0, SETTLE_REPOST },
		{ SETTLE_MSG, 0, 1, SETTLE_DONE },	/* arrived, whatever the status said */
		{ SETTLE_MSG, 0, 0, SETTLE_FAIL },	/* its own error would repeat */
		{ SETTLE_MSG_BOUND, 1, 1, SETTLE_DONE },
		{ SETTLE_MSG_BOUND, 1, 0, SETTLE_FAIL },	/* its window died with the QP */
		{ SETTLE_MSG_BOUND, 0, 0, SETTLE_FAIL },
		{ SETTLE_RDMA, 1, 1, SETTLE_REPOST },	/* takes no receive: the count says nothing */
		{ SETTLE_RDMA, 1, 0, SETTLE_REPOST },
		{ SETTLE_RDMA, 0, 0, SETTLE_FAIL },
		{ SETTLE_ATOMIC, 1, 0, SETTLE_UNKNOWN },
		{ SETTLE_ATOMIC, 1, 1, SETTLE_UNKNOWN },
		{ SETTLE_ATOMIC, 0, 0, SETTLE_FAIL },
		{ SETTLE_BOUND, 1, 0, SETTLE_FAIL },
		{ SETTLE_BOUND, 0, 1, SETTLE_FAIL },
	};

	for (unsigned int i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t count = 50, seq = rows[i].counted ? 49 : 50;

		ck_assert_msg(settle_decide(rows[i].c, rows[i].path_fault, seq, count) == rows[i].want,
			      "row %u: class %d, path fault %d, counted %d: %d, want %d", i, rows[i].c,
			      rows[i].path_fault, rows[i].counted,
			      settle_decide(rows[i].c, rows[i].path_fault, seq, count), rows[i].want);
	}
	ck_assert_int_eq(settle_takes_recv(SETTLE_MSG), 1);
	ck_assert_int_eq(settle_takes_recv(SETTLE_MSG_BOUND), 1);
	ck_assert_int_eq(settle_takes_recv(SETTLE_RDMA), 0);
	ck_assert_int_eq(settle_takes_recv(SETTLE_ATOMIC), 0);
	ck_assert_int_eq(settle_takes_recv(SETTLE_BOUND), 0);
}
END_TEST

/* A held run of messages settles as a prefix that arrived and a suffix
 * sent again, whatever the count within the honest range: every one
 * exactly once. */
START_TEST(held_run_splits_at_the_count)
{
	const uint32_t tx = 1000, held = 16;

	for (uint32_t count = tx - held; count <= tx; count++) {
		uint32_t done = 0, again = 0, seq = tx - held;

		ck_assert_int_eq(settle_check_count(count, tx, held), SETTLE_OK);
		for (uint32_t i = 0; i < held; i++, seq++) {
			enum settle_action a = settle_decide(SETTLE_MSG, 1, seq, count);

			if (a == SETTLE_DONE) {
				ck_assert_uint_eq(again, 0);	/* a prefix */
				done++;
			} else {
				ck_assert_int_eq(a, SETTLE_REPOST);
				again++;
			}
		}
		ck_assert_uint_eq(done, count - (tx - held));
		ck_assert_uint_eq(done + again, held);
	}
}
END_TEST

/* The rebuild's messages: round trip, and what no easyrdma sends refused. */
START_TEST(path_up_codec)
{
	struct path_up u = { .step = PATH_UP_REQUEST, .qpn = 0x123456, .psn = 0xabcdef }, v;
	uint8_t b[PATH_UP_LEN];

	path_up_encode(&u, b);
	ck_assert_uint_eq(b[0], PATH_UP_REQUEST);
	ck_assert_uint_eq(b[1], 0x12);
	ck_assert_uint_eq(b[7], 0xef);
	ck_assert_int_eq(path_up_decode(b, &v), 0);
	ck_assert_uint_eq(v.step, PATH_UP_REQUEST);
	ck_assert_uint_eq(v.qpn, 0x123456);
	ck_assert_uint_eq(v.psn, 0xabcdef);
	u.step = PATH_UP_REPLY;
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), 0);
	/* READY carries no QP and no PSN. */
	u = (struct path_up){ .step = PATH_UP_READY };
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), 0);
	u.qpn = 5;
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), -1);
	/* HELD carries no QP and a count of windows, at least one. */
	u = (struct path_up){ .step = PATH_UP_HELD, .psn = 3 };
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), 0);
	ck_assert_uint_eq(v.step, PATH_UP_HELD);
	ck_assert_uint_eq(v.psn, 3);
	u.psn = 0;
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), -1);
	u = (struct path_up){ .step = PATH_UP_HELD, .qpn = 77, .psn = 3 };
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), -1);
	/* Steps 0 and 5..255, QP 0 and 1, a PSN above 24 bits. */
	for (unsigned int st = 0; st < 256; st++) {
		u = (struct path_up){ .step = (uint8_t)st, .qpn = 77, .psn = 1 };
		path_up_encode(&u, b);
		ck_assert_int_eq(path_up_decode(b, &v),
				 st == PATH_UP_REQUEST || st == PATH_UP_REPLY ? 0 : -1);
		/* (READY refuses a QP; HELD too.) */
	}
	u = (struct path_up){ .step = PATH_UP_REQUEST, .qpn = 1, .psn = 1 };
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), -1);
	u.qpn = 2;
	u.psn = 0x1000000;
	path_up_encode(&u, b);
	ck_assert_int_eq(path_up_decode(b, &v), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("settle");
	TCase *tc = tcase_create("settle");

	tcase_add_test(tc, count_codec_round_trips);
	tcase_add_test(tc, seq_before_wraps);
	tcase_add_test(tc, peer_count_checked);
	tcase_add_test(tc, decision_table);
	tcase_add_test(tc, held_run_splits_at_the_count);
	tcase_add_test(tc, path_up_codec);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
