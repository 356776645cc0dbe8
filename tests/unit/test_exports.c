/* test_exports.c: the exports message's codec (lib/wire/exports.c): round trips, the byte layout, and every fault of an untrusted message. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "wire/exports.h"
#include "../checkmain.h"

static const struct ez_rkey two[2] = {
	{ .addr = 0x0102030405060708ull, .len = 4096, .rkey = 0xa1b2c3d4u,
	  .path_binding = EZ_RKEY_PATH_BOUND | 1 },
	{ .addr = 0x7f0000001000ull, .len = 1ull << 33, .rkey = 7, .path_binding = 0 },
};

START_TEST(round_trip)
{
	uint8_t b[EXPORTS_MAX_LEN];
	struct ez_rkey out[EZ_CONN_EXPORTS_MAX];
	unsigned int n = 99;

	ck_assert_uint_eq(exports_encode(two, 2, b, sizeof(b)), EXPORTS_LEN(2));
	ck_assert_int_eq(exports_decode(b, EXPORTS_LEN(2), 2, out, &n), EXPORTS_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_mem_eq(out, two, sizeof(two));
}
END_TEST

/* Big-endian, the header first, the records in order. */
START_TEST(layout)
{
	static const uint8_t want[EXPORTS_LEN(1)] = {
		1, 1, 0, 0,
		1, 2, 3, 4, 5, 6, 7, 8,
		0, 0, 0, 0, 0, 0, 0x10, 0,
		0xa1, 0xb2, 0xc3, 0xd4,
		0x80, 0, 0, 1,
	};
	uint8_t b[EXPORTS_LEN(1)];

	ck_assert_uint_eq(exports_encode(two, 1, b, sizeof(b)), sizeof(want));
	ck_assert_mem_eq(b, want, sizeof(want));
	ck_assert_uint_eq(EXPORTS_MAX_LEN, 196);
}
END_TEST

START_TEST(encode_refuses)
{
	uint8_t b[EXPORTS_MAX_LEN + 24];
	struct ez_rkey many[EZ_CONN_EXPORTS_MAX + 1] = { 0 };

	ck_assert_uint_eq(exports_encode(two, 0, b, sizeof(b)), 0);
	ck_assert_uint_eq(exports_encode(many, EZ_CONN_EXPORTS_MAX + 1, b, sizeof(b)), 0);
	ck_assert_uint_eq(exports_encode(two, 2, b, EXPORTS_LEN(2) - 1), 0);
}
END_TEST

static enum exports_fault decode_edited(unsigned int at, uint8_t val, size_t len,
					unsigned int npaths)
{
	uint8_t b[EXPORTS_MAX_LEN + 1] = { 0 };
	struct ez_rkey out[EZ_CONN_EXPORTS_MAX];
	unsigned int n = 99;
	enum exports_fault f;

	exports_encode(two, 2, b, sizeof(b));
	if (at < sizeof(b))
		b[at] = val;
	f = exports_decode(b, len, npaths, out, &n);
	if (f)
		ck_assert_uint_eq(n, 0);
	return f;
}

/* Each lie a peer can tell, named. */
START_TEST(decode_faults)
{
	const size_t len2 = EXPORTS_LEN(2);

	ck_assert_int_eq(decode_edited(99, 0, len2, 2), EXPORTS_OK);
	ck_assert_int_eq(decode_edited(99, 0, 3, 2), EXPORTS_F_SHORT);
	ck_assert_int_eq(decode_edited(0, 2, len2, 2), EXPORTS_F_VERSION);
	ck_assert_int_eq(decode_edited(1, 0, len2, 2), EXPORTS_F_COUNT);
	ck_assert_int_eq(decode_edited(1, EZ_CONN_EXPORTS_MAX + 1, len2, 2), EXPORTS_F_COUNT);
	ck_assert_int_eq(decode_edited(1, 3, len2, 2), EXPORTS_F_LEN);
	ck_assert_int_eq(decode_edited(99, 0, len2 + 1, 2), EXPORTS_F_LEN);
	ck_assert_int_eq(decode_edited(99, 0, len2 - 1, 2), EXPORTS_F_LEN);
	ck_assert_int_eq(decode_edited(3, 1, len2, 2), EXPORTS_F_RESERVED);
	/* The second record's length to 0 (its 8 bytes at 4 + 24 + 8). */
	{
		uint8_t b[EXPORTS_MAX_LEN];
		struct ez_rkey out[EZ_CONN_EXPORTS_MAX], k[1] = { two[0] };
		unsigned int n;

		k[0].len = 0;
		exports_encode(k, 1, b, sizeof(b));
		ck_assert_int_eq(exports_decode(b, EXPORTS_LEN(1), 2, out, &n), EXPORTS_F_EMPTY);
		k[0].len = 2;
		k[0].addr = UINT64_MAX;
		exports_encode(k, 1, b, sizeof(b));
		ck_assert_int_eq(exports_decode(b, EXPORTS_LEN(1), 2, out, &n), EXPORTS_F_WRAP);
	}
	/* Bound to path 1 of a single-path connection; bits no binding has. */
	ck_assert_int_eq(decode_edited(99, 0, len2, 1), EXPORTS_F_PATH);
	ck_assert_int_eq(decode_edited(4 + 21, 0x01, len2, 2), EXPORTS_F_PATH);
	ck_assert_str_eq(exports_fault_str(EXPORTS_F_PATH),
			 "a key bound to a path the connection does not have");
	for (int f = EXPORTS_OK; f <= EXPORTS_F_PATH; f++)
		ck_assert_str_ne(exports_fault_str((enum exports_fault)f), "?");
}
END_TEST

/* Every length of garbage: decoded or refused, never past its bytes
 * (ASan watches), never a key with a fault. */
START_TEST(garbage)
{
	uint8_t b[EXPORTS_MAX_LEN];
	struct ez_rkey out[EZ_CONN_EXPORTS_MAX];
	unsigned int n, ok = 0;
	uint32_t x = 12345;

	for (unsigned int round = 0; round < 20000; round++) {
		size_t len = round % (sizeof(b) + 1);

		for (size_t i = 0; i < sizeof(b); i++) {
			x = x * 1103515245u + 12345u;
			b[i] = (uint8_t)(x >> 16);
		}
		if (round & 1) {	/* a plausible header */
			b[0] = EXPORTS_VERSION;
			b[1] = (uint8_t)(1 + round % EZ_CONN_EXPORTS_MAX);
			b[2] = b[3] = 0;
			len = EXPORTS_LEN(b[1]);
		}
		if (exports_decode(b, len, 8, out, &n) == EXPORTS_OK) {
			ck_assert_uint_eq(len, EXPORTS_LEN(n));
			ok++;
		} else {
			ck_assert_uint_eq(n, 0);
		}
	}
	(void)ok;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("exports");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, layout);
	tcase_add_test(tc, encode_refuses);
	tcase_add_test(tc, decode_faults);
	tcase_add_test(tc, garbage);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
