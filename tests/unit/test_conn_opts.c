/* test_conn_opts.c: connection options: defaults for zero fields, comp_mask's meant zeros, range checks naming the field; the struct-size rule of the copy helpers. */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/abi.h"
#include "wire/opts.h"
#include "../checkmain.h"

START_TEST(null_gives_all_defaults)
{
	struct ez_conn_opts o;

	ck_assert_int_eq(conn_opts_resolve(NULL, 0, &o), 0);
	ck_assert_uint_eq(o.send_depth, 64);
	ck_assert_uint_eq(o.recv_depth, 64);
	ck_assert_uint_eq(o.max_msg_size, 4096);
	ck_assert_uint_eq(o.inline_threshold, 64);
	ck_assert_uint_eq(o.connect_timeout_ms, 5000);
	ck_assert_uint_eq(o.qp_timeout, 14);
	ck_assert_uint_eq(o.retry_count, 6);	/* 7 is for ever on Soft-RoCE */
	ck_assert_uint_eq(o.rnr_retry, 7);
	ck_assert_uint_eq(o.min_rnr_timer, 12);
	ck_assert_uint_eq(o.keepalive_interval_ms, 0);	/* off */
	ck_assert_uint_eq(o.keepalive_probes, 3);
	ck_assert_uint_eq(o.op_timeout_ms, 0);	/* no deadline */
	ck_assert_uint_eq(o.responder_resources, 16);
	ck_assert_uint_eq(o.initiator_depth, 16);
	ck_assert_int_eq(o.path_mtu, 0);	/* the path's own */
	ck_assert_uint_eq(o.udp_sport, 0);
	ck_assert_ptr_null(o.srqpool);
	ck_assert_uint_eq(o.fetch_chunk, 256 * 1024);
	ck_assert_uint_eq(o.flags, 0);	/* every message in send order */
}
END_TEST

START_TEST(set_fields_are_kept)
{
	struct ez_conn_opts in = { .send_depth = 8, .recv_depth = 16, .max_msg_size = 100,
				   .inline_threshold = 500, .connect_timeout_ms = 250,
				   .qp_timeout = 10, .retry_count = 3, .rnr_retry = 1,
				   .path_mtu = IBV_MTU_1024, .tos = 32, .udp_sport = 0xC123 };
	struct ez_conn_opts o;

	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	ck_assert_uint_eq(o.send_depth, 8);
	ck_assert_uint_eq(o.recv_depth, 16);
	ck_assert_uint_eq(o.max_msg_size, 100);
	ck_assert_uint_eq(o.inline_threshold, 100);	/* capped by the message size */
	ck_assert_uint_eq(o.connect_timeout_ms, 250);
	ck_assert_uint_eq(o.qp_timeout, 10);
	ck_assert_uint_eq(o.retry_count, 3);
	ck_assert_uint_eq(o.rnr_retry, 1);
	ck_assert_int_eq(o.path_mtu, IBV_MTU_1024);
	ck_assert_uint_eq(o.tos, 32);
	ck_assert_uint_eq(o.udp_sport, 0xC123);
}
END_TEST

#define BAD_COMMA ,
#define BAD(field_init, accept, msg)                                              \
	do {                                                                      \
		struct ez_conn_opts in = { field_init }, o;                       \
		ck_assert_int_eq(conn_opts_resolve(&in, accept, &o), -EINVAL);    \
		ck_assert_str_eq(ez_errmsg(), msg);                               \
	} while (0)

START_TEST(out_of_range_named)
{
	static const char data[200];

	BAD(.retry_count = 8, 0, "ez_conn_opts.retry_count 8 exceeds 7");
	BAD(.keepalive_interval_ms = 99, 0,
	    "ez_conn_opts.keepalive_interval_ms 99 below 100 (0: no keepalive)");
	BAD(.keepalive_interval_ms = 1000 BAD_COMMA .keepalive_probes = 256, 0,
	    "ez_conn_opts.keepalive_probes 256 not in 1..255");
	BAD(.keepalive_interval_ms = 30000000 BAD_COMMA .keepalive_probes = 200, 0,
	    "ez_conn_opts.keepalive_interval_ms 30000000 x keepalive_probes 200 exceeds 2^32 ms");
	BAD(.op_timeout_ms = 9, 0, "ez_conn_opts.op_timeout_ms 9 below 10 (0: no deadline)");
	BAD(.reserved = 1, 1, "ez_conn_opts.reserved is 1, must be 0");
	BAD(.reserved2 = 1, 1, "ez_conn_opts.reserved2 is 1, must be 0");
	BAD(.queue_depth = 65537, 0, "ez_conn_opts.queue_depth 65537 above 65536");
	BAD(.fetch_chunk = 4095, 1, "ez_conn_opts.fetch_chunk 4095 not in 4096..1073741824 (0: 262144)");
	BAD(.fetch_chunk = (1u << 30) + 1, 0,
	    "ez_conn_opts.fetch_chunk 1073741825 not in 4096..1073741824 (0: 262144)");
	BAD(.flags = EZ_CONN_SMALL_FIRST | 0x40, 0,
	    "ez_conn_opts.flags 0x41 has bits this library does not know (0x40)");
	{
		/* Taken exactly: no rounding to a page or a power of two. */
		struct ez_conn_opts in = { .fetch_chunk = 12289, .flags = EZ_CONN_SMALL_FIRST }, o;

		ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
		ck_assert_uint_eq(o.fetch_chunk, 12289);
		ck_assert_uint_eq(o.flags, EZ_CONN_SMALL_FIRST);
	}
	BAD(.rnr_retry = 9, 0, "ez_conn_opts.rnr_retry 9 exceeds 7");
	BAD(.qp_timeout = 32, 0, "ez_conn_opts.qp_timeout 32 exceeds 31");
	BAD(.recv_depth = 1, 0, "ez_conn_opts.recv_depth 1 not in 2..16384");
	BAD(.send_depth = 20000, 0, "ez_conn_opts.send_depth 20000 exceeds 16384");
	BAD(.path_mtu = 9, 0, "ez_conn_opts.path_mtu 9 is not an enum ibv_mtu value");
	/* issue 42 item 1: silently rounded down to 16777216 before. */
	BAD(.max_msg_size = 16777248, 0,
	    "ez_conn_opts.max_msg_size 16777248: above 65536 it must be a power of two (16777216 or 33554432)");
	BAD(.max_msg_size = 65568, 1,
	    "ez_conn_opts.max_msg_size 65568: above 65536 it must be a power of two (65536 or 131072)");
	{
		struct ez_conn_opts in = { .max_msg_size = 65535 }, o;

		ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);	/* any value up to 64 KiB */
		in.max_msg_size = 1u << 30;
		ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
		ck_assert_uint_eq(o.max_msg_size, 1u << 30);
	}
	BAD(.udp_sport = 4791, 0, "ez_conn_opts.udp_sport 4791 below the RoCEv2 range 0xC000..0xFFFF");
	BAD(.private_data_len = 41, 0, "ez_conn_opts.private_data_len 41 exceeds 40 for a connect");
	BAD(.private_data_len = 5, 0, "ez_conn_opts.private_data is NULL with private_data_len 5");
	{
		struct ez_conn_opts in = { .private_data = data, .private_data_len = 180 }, o;

		ck_assert_int_eq(conn_opts_resolve(&in, 1, &o), 0);
		in.private_data_len = 181;
		ck_assert_int_eq(conn_opts_resolve(&in, 1, &o), -EINVAL);
		ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.private_data_len 181 exceeds 180 for an accept");
	}
}
END_TEST

/* msg "": the same with a NULL key. */
static void bad_key(uint32_t key_len, int accept, uint32_t max_msg, uint32_t pdata_len,
		    const char *msg)
{
	static const char key[EZ_AUTH_KEY_MAX + 1] = "0123456789abcdef", data[40];
	struct ez_conn_opts in = { .auth_key = key,
				   .auth_key_len = key_len, .max_msg_size = max_msg,
				   .private_data = data, .private_data_len = pdata_len }, o;

	if (!msg[0]) {
		in.auth_key = NULL;
		msg = "ez_conn_opts.auth_key: NULL (auth_key_len 16; 16..64 bytes)";
	}
	ck_assert_int_eq(conn_opts_resolve(&in, accept, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), msg);
}

/* Regions given with the connection: what the options alone can tell
 * (the MRs' ranges are the connection's to check, on a device). */
START_TEST(exports_checked)
{
	struct ez_mr *fake = (struct ez_mr *)(uintptr_t)0x1000;	/* never read here */
	struct ez_export ex[EZ_CONN_EXPORTS_MAX + 1];
	struct ez_conn_opts in = { 0 }, o;

	for (int i = 0; i <= EZ_CONN_EXPORTS_MAX; i++)
		ex[i] = (struct ez_export){ .mr = fake, .len = 64, .access = EZ_MR_REMOTE_READ };
	in.exports = ex;
	in.nexports = EZ_CONN_EXPORTS_MAX;
	ck_assert_int_eq(conn_opts_resolve(&in, 1, &o), 0);
	ck_assert_ptr_eq(o.exports, ex);	/* the connection copies them */
	in.nexports = EZ_CONN_EXPORTS_MAX + 1;
	ck_assert_int_eq(conn_opts_resolve(&in, 1, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.nexports 9 with exports set (0..8 regions)");
	in.nexports = 1;
	in.exports = NULL;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.nexports 1 with exports NULL (0..8 regions)");
	in.exports = ex;
	in.send_depth = 2;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.nexports 1 needs send_depth 3 or more (it is 2): each region's bind, the message that carries the keys and a shared-secret proof take an op");
	in.send_depth = 3;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	ex[0].mr = NULL;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.exports[0]: mr is NULL");
	ex[0].mr = fake;
	ex[0].reserved = 1;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.exports[0]: reserved must be 0");
	ex[0].reserved = 0;
	ex[0].access = 0;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ex[0].access = EZ_MR_SHARED;	/* not a remote access */
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.exports[0].access 0x4 (EZ_MR_REMOTE_READ, EZ_MR_REMOTE_WRITE, EZ_MR_REMOTE_ATOMIC)");
	ex[0].access = EZ_MR_REMOTE_WRITE;
	ex[0].len = 0;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ex[0].len = 16;
	ex[0].off = UINT64_MAX - 8;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.exports[0]: [18446744073709551607, +16) is empty or wraps");
	ex[0].off = 0;
	in.reserved3 = 1;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.reserved3 is 1, must be 0");
	/* nexports 0 ignores the pointer, as an older program's zeros do. */
	in.reserved3 = 0;
	in.nexports = 0;
	in.exports = (const struct ez_export *)(uintptr_t)0x1;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
}
END_TEST

START_TEST(auth_key_checked)
{
	static const char key[EZ_AUTH_KEY_MAX] = "0123456789abcdef", data[40];

	bad_key(15, 0, 0, 0, "ez_conn_opts.auth_key: bad length (auth_key_len 15; 16..64 bytes)");
	bad_key(65, 0, 0, 0, "ez_conn_opts.auth_key: bad length (auth_key_len 65; 16..64 bytes)");
	bad_key(16, 0, 0, 0, "");	/* NULL key */
	bad_key(16, 1, 0, 0,
		"ez_conn_opts.auth_key: ez_accept takes the shared secret from the listener (ez_listen_opts.auth_key)");
	bad_key(16, 0, 31, 0,
		"ez_conn_opts.max_msg_size 31 below 32, the size of the shared-secret proof");
	bad_key(16, 0, 0, 9,
		"ez_conn_opts.private_data_len 9 exceeds 8 for a connect with a shared secret");
	{
		struct ez_conn_opts in = { .auth_key = key, .auth_key_len = 64, .private_data = data,
					   .private_data_len = 8 }, o;

		ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
		ck_assert_uint_eq(o.auth_key_len, 64);
		/* A key pointer without a length is no key. */
		in.auth_key_len = 0;
		in.private_data_len = 40;
		ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	}
}
END_TEST

/* With its comp_mask bit a 0 is taken as given; without, it is defaulted. */
START_TEST(comp_mask_keeps_zero)
{
	struct ez_conn_opts in = { .comp_mask = EZ_CONN_OPTS_QP_TIMEOUT | EZ_CONN_OPTS_RETRY_COUNT |
				   EZ_CONN_OPTS_RNR_RETRY | EZ_CONN_OPTS_MIN_RNR_TIMER |
				   EZ_CONN_OPTS_INLINE_THRESHOLD |
				   EZ_CONN_OPTS_RESPONDER_RESOURCES |
				   EZ_CONN_OPTS_INITIATOR_DEPTH }, o;

	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	ck_assert_uint_eq(o.qp_timeout, 0);
	ck_assert_uint_eq(o.retry_count, 0);
	ck_assert_uint_eq(o.rnr_retry, 0);
	ck_assert_uint_eq(o.min_rnr_timer, 0);
	ck_assert_uint_eq(o.inline_threshold, 0);
	ck_assert_uint_eq(o.responder_resources, 0);
	ck_assert_uint_eq(o.initiator_depth, 0);
	ck_assert_uint_eq(o.send_depth, 64);	/* no bit: still defaulted */

	/* One bit: that field alone keeps its 0. */
	in.comp_mask = EZ_CONN_OPTS_RNR_RETRY;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	ck_assert_uint_eq(o.rnr_retry, 0);
	ck_assert_uint_eq(o.retry_count, 6);
	ck_assert_uint_eq(o.qp_timeout, 14);
	ck_assert_uint_eq(o.min_rnr_timer, 12);
	ck_assert_uint_eq(o.inline_threshold, 64);
	ck_assert_uint_eq(o.responder_resources, 16);
	ck_assert_uint_eq(o.initiator_depth, 16);

	/* A set bit with a nonzero value is that value. */
	in.comp_mask = EZ_CONN_OPTS_QP_TIMEOUT;
	in.qp_timeout = 9;
	ck_assert_int_eq(conn_opts_resolve(&in, 0, &o), 0);
	ck_assert_uint_eq(o.qp_timeout, 9);
}
END_TEST

START_TEST(comp_mask_range_still_checked)
{
	BAD(.retry_count = 8 BAD_COMMA .comp_mask = EZ_CONN_OPTS_RETRY_COUNT, 0,
	    "ez_conn_opts.retry_count 8 exceeds 7");
	BAD(.min_rnr_timer = 32 BAD_COMMA .comp_mask = EZ_CONN_OPTS_MIN_RNR_TIMER, 0,
	    "ez_conn_opts.min_rnr_timer 32 exceeds 31");
	BAD(.qp_timeout = 40 BAD_COMMA .comp_mask = EZ_CONN_OPTS_QP_TIMEOUT, 0,
	    "ez_conn_opts.qp_timeout 40 exceeds 31");
	/* A bit for a field this library does not have. */
	BAD(.comp_mask = 1u << 31 | EZ_CONN_OPTS_RNR_RETRY, 0,
	    "ez_conn_opts.comp_mask 0x80000008 has bits this library does not know (0x80000000)");
}
END_TEST

/* A struct as a later header might have it: ours and one more field. */
struct opts_next {
	struct ez_conn_opts o;
	uint64_t next;
};

START_TEST(struct_in_shorter_zero_filled)
{
	struct ez_conn_opts src, dst;

	memset(&src, 0x5a, sizeof(src));
	memset(&dst, 0xff, sizeof(dst));
	ck_assert_int_eq(ezi_struct_in(&dst, sizeof(dst), &src, EZ_V0_CONN_OPTS_SIZE, "ez_connect",
				       "ez_conn_opts"), 0);
	ck_assert_int_eq(memcmp(&dst, &src, EZ_V0_CONN_OPTS_SIZE), 0);
	ck_assert_uint_eq(dst.comp_mask, 0);	/* not in the v0 layout */
	/* NULL: all zero, whatever the size. */
	memset(&dst, 0xff, sizeof(dst));
	ck_assert_int_eq(ezi_struct_in(&dst, sizeof(dst), NULL, sizeof(dst), "ez_connect",
				       "ez_conn_opts"), 0);
	ck_assert_uint_eq(dst.send_depth, 0);
	ck_assert_uint_eq(dst.comp_mask, 0);
}
END_TEST

/* A program built before the liveness fields passes the struct up to
 * reserved's predecessor's end: keepalive and deadlines stay off. */
START_TEST(struct_in_before_liveness_fields)
{
	struct ez_conn_opts src, dst, o;

	memset(&src, 0, sizeof(src));
	src.send_depth = 7;
	src.keepalive_interval_ms = 1000;	/* beyond the old size: not read */
	ck_assert_uint_eq(offsetof(struct ez_conn_opts, keepalive_interval_ms), 96);
	memset(&dst, 0xff, sizeof(dst));
	ck_assert_int_eq(ezi_struct_in(&dst, sizeof(dst), &src, 96, "ez_connect", "ez_conn_opts"), 0);
	ck_assert_int_eq(conn_opts_resolve(&dst, 0, &o), 0);
	ck_assert_uint_eq(o.send_depth, 7);
	ck_assert_uint_eq(o.keepalive_interval_ms, 0);
	ck_assert_uint_eq(o.keepalive_probes, 3);
	ck_assert_uint_eq(o.op_timeout_ms, 0);
}
END_TEST

START_TEST(struct_in_longer_zero_tail_taken)
{
	struct opts_next src = { .o = { .send_depth = 5, .comp_mask = EZ_CONN_OPTS_QP_TIMEOUT } };
	struct ez_conn_opts dst;

	ck_assert_int_eq(ezi_struct_in(&dst, sizeof(dst), &src, sizeof(src), "ez_connect",
				       "ez_conn_opts"), 0);
	ck_assert_uint_eq(dst.send_depth, 5);
	ck_assert_uint_eq(dst.comp_mask, EZ_CONN_OPTS_QP_TIMEOUT);
}
END_TEST

START_TEST(struct_in_longer_set_tail_refused)
{
	struct opts_next src = { .o = { .send_depth = 5 }, .next = 1 };
	struct ez_conn_opts dst;
	char want[200];

	snprintf(want, sizeof(want), "ez_accept: struct ez_conn_opts of %zu bytes has byte %zu set, beyond the %zu this library knows (a field of a newer easyrdma.h)",
		 sizeof(src), offsetof(struct opts_next, next), sizeof(dst));
	ck_assert_int_eq(ezi_struct_in(&dst, sizeof(dst), &src, sizeof(src), "ez_accept",
				       "ez_conn_opts"), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_uint_eq(dst.send_depth, 0);	/* nothing taken */
	/* On x86_64: the exact text a program sees. */
	if (sizeof(void *) == 8)
		ck_assert_str_eq(ez_errmsg(), "ez_accept: struct ez_conn_opts of 160 bytes has byte 152 set, beyond the 152 this library knows (a field of a newer easyrdma.h)");
}
END_TEST

START_TEST(struct_out_never_past_size)
{
	unsigned char out[sizeof(struct ez_conn_stats) + 16];
	struct ez_conn_stats st;
	size_t i;

	memset(&st, 0x11, sizeof(st));
	/* Shorter: the caller's bytes only, the rest untouched. */
	memset(out, 0xa5, sizeof(out));
	ezi_struct_out(out, EZ_V0_CONN_STATS_SIZE - 8, &st, sizeof(st));
	ck_assert_int_eq(memcmp(out, &st, EZ_V0_CONN_STATS_SIZE - 8), 0);
	for (i = EZ_V0_CONN_STATS_SIZE - 8; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xa5);
	/* Longer: what the library does not have reads 0, and no further. */
	memset(out, 0xa5, sizeof(out));
	ezi_struct_out(out, sizeof(st) + 8, &st, sizeof(st));
	ck_assert_int_eq(memcmp(out, &st, sizeof(st)), 0);
	for (i = sizeof(st); i < sizeof(st) + 8; i++)
		ck_assert_uint_eq(out[i], 0);
	for (; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xa5);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conn_opts");
	TCase *tc = tcase_create("defaults");

	tcase_add_test(tc, null_gives_all_defaults);
	tcase_add_test(tc, set_fields_are_kept);
	tcase_add_test(tc, out_of_range_named);
	tcase_add_test(tc, exports_checked);
	tcase_add_test(tc, auth_key_checked);
	tcase_add_test(tc, comp_mask_keeps_zero);
	tcase_add_test(tc, comp_mask_range_still_checked);
	suite_add_tcase(s, tc);
	tc = tcase_create("struct sizes");
	tcase_add_test(tc, struct_in_shorter_zero_filled);
	tcase_add_test(tc, struct_in_before_liveness_fields);
	tcase_add_test(tc, struct_in_longer_zero_tail_taken);
	tcase_add_test(tc, struct_in_longer_set_tail_refused);
	tcase_add_test(tc, struct_out_never_past_size);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
