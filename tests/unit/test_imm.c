/* test_imm.c: the immediate-data bits of lib/wire/imm.h: each field its own bits, and a notice is read as what it is. */
#include <check.h>
#include <stdint.h>

#include "easyrdma.h"
#include "wire/imm.h"
#include "../checkmain.h"

static const struct { const char *name; uint32_t bits; } fields[] = {
	{ "credits", IMM_CREDITS_MASK }, { "path index", IMM_PATH_FIELD },
	{ "IMM_AUTH", IMM_AUTH }, { "IMM_PATH_DOWN", IMM_PATH_DOWN },
	{ "IMM_BYE", IMM_BYE }, { "IMM_CREDIT_ONLY", IMM_CREDIT_ONLY },
	{ "IMM_KEEPALIVE", IMM_KEEPALIVE }, { "IMM_KA_REPLY", IMM_KA_REPLY },
	{ "IMM_RNDV", IMM_RNDV }, { "IMM_PATH_UP", IMM_PATH_UP },
};

START_TEST(fields_are_disjoint)
{
	unsigned int i, j, n = sizeof(fields) / sizeof(fields[0]);

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			ck_assert_msg((fields[i].bits & fields[j].bits) == 0, "%s and %s share bits 0x%08x",
				      fields[i].name, fields[j].name, fields[i].bits & fields[j].bits);
}
END_TEST

START_TEST(path_field_names_every_path)
{
	unsigned int p;

	for (p = 0; p < EZ_MAX_PATHS; p++) {
		uint32_t imm = IMM_CREDIT_ONLY | IMM_PATH_DOWN | (p << IMM_PATH_SHIFT) | 0xffffu;

		ck_assert_uint_eq(imm_path(imm), p);
		ck_assert_uint_eq(imm & IMM_CREDITS_MASK, 0xffffu);
	}
}
END_TEST

/* The defect this header fixed: the auth messages were read as path-down
 * notices (and a path-down notice as an auth proof). */
START_TEST(auth_message_is_not_a_path_notice)
{
	ck_assert_int_eq(imm_is_path_down(IMM_AUTH_PROOF), 0);
	ck_assert_int_eq(imm_is_path_down(IMM_AUTH_OK), 0);
	ck_assert_int_eq(imm_is_path_down(IMM_AUTH_REFUSED), 0);
	ck_assert_int_eq(imm_is_path_down(IMM_CREDIT_ONLY | IMM_PATH_DOWN | (3u << IMM_PATH_SHIFT)), 1);
	/* Without IMM_CREDIT_ONLY it is an application message. */
	ck_assert_int_eq(imm_is_path_down(IMM_PATH_DOWN), 0);
	ck_assert_uint_ne(IMM_CREDIT_ONLY | IMM_PATH_DOWN, IMM_AUTH_PROOF);
	ck_assert_uint_ne(IMM_AUTH_REFUSED, IMM_CREDIT_ONLY | IMM_BYE);
}
END_TEST

/* A probe and its answer are control messages of their own: neither a
 * path notice, a goodbye nor an auth message, and not each other. */
START_TEST(keepalive_messages_are_their_own)
{
	ck_assert_int_eq(imm_is_path_down(IMM_KA_PROBE), 0);
	ck_assert_int_eq(imm_is_path_down(IMM_KA_ANSWER), 0);
	ck_assert_uint_ne(IMM_KA_PROBE, IMM_KA_ANSWER);
	ck_assert_uint_eq(IMM_KA_PROBE & (IMM_AUTH | IMM_BYE | IMM_PATH_DOWN | IMM_CREDITS_MASK), 0);
	ck_assert_uint_eq(IMM_KA_ANSWER & (IMM_AUTH | IMM_BYE | IMM_PATH_DOWN | IMM_CREDITS_MASK), 0);
	ck_assert_uint_eq(IMM_KA_PROBE & IMM_CREDIT_ONLY, IMM_CREDIT_ONLY);
	ck_assert_uint_eq(IMM_KA_ANSWER & IMM_CREDIT_ONLY, IMM_CREDIT_ONLY);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imm");
	TCase *tc = tcase_create("bits");

	tcase_add_test(tc, fields_are_disjoint);
	tcase_add_test(tc, path_field_names_every_path);
	tcase_add_test(tc, auth_message_is_not_a_path_notice);
	tcase_add_test(tc, keepalive_messages_are_their_own);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
