/* test_penalty.c: the peer penalty table (wire/penalty.c): failures counted per address in a window, the refusal and its end, IPv4 and IPv6 apart, the least recently failed address forgotten when full. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "wire/penalty.h"
#include "../checkmain.h"

static struct sockaddr_in v4(uint32_t host)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(host) };

	return a;
}

#define SA(x) ((const struct sockaddr *)&(x))

START_TEST(refused_at_limit_until_ban_ends)
{
	static struct penalty_table t;
	struct sockaddr_in a = v4(0xC0000201), b = v4(0xC0000202);
	uint32_t fails;

	memset(&t, 0, sizeof(t));
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1000, 3, 500, &fails), 0);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1000, 60000), 1);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1100, 60000), 2);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1100, 3, 500, &fails), 0);
	ck_assert_uint_eq(fails, 2);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1200, 60000), 3);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1200, 3, 500, &fails), 500);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1699, 3, 500, NULL), 1);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1700, 3, 500, NULL), 0);
	/* Another address, and limit 0, are never refused. */
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(b), 1200, 3, 500, NULL), 0);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1200, 0, 500, NULL), 0);
	/* One more failure after the ban refuses again at once. */
	ck_assert_uint_eq(penalty_record(&t, SA(a), 2000, 60000), 4);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 2000, 3, 500, NULL), 500);
}
END_TEST

START_TEST(window_restarts_the_count)
{
	static struct penalty_table t;
	struct sockaddr_in a = v4(0x0A000001);

	memset(&t, 0, sizeof(t));
	ck_assert_uint_eq(penalty_record(&t, SA(a), 0, 1000), 1);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1000, 1000), 2);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1001, 1000), 1);
}
END_TEST

START_TEST(v4_and_v6_apart_and_eviction)
{
	static struct penalty_table t;
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a = v4(0x0A000001);
	struct sockaddr_un_like { sa_family_t f; char d[14]; } other = { AF_UNIX, { 0 } };
	uint32_t i;

	memset(&t, 0, sizeof(t));
	inet_pton(AF_INET6, "2001:db8::1", &s6.sin6_addr);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 10, 60000), 1);
	ck_assert_uint_eq(penalty_record(&t, SA(s6), 20, 60000), 1);
	ck_assert_uint_eq(penalty_record(&t, SA(other), 20, 60000), 0);
	/* Full: the address failed least recently (a, at 10) goes first. */
	for (i = 0; i < PENALTY_SLOTS - 1; i++) {
		struct sockaddr_in x = v4(0x0B000000 + i);

		penalty_record(&t, SA(x), 100 + i, 60000);
	}
	ck_assert_uint_eq(penalty_record(&t, SA(s6), 1000, 60000), 2);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1000, 60000), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("penalty");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, refused_at_limit_until_ban_ends);
	tcase_add_test(tc, window_restarts_the_count);
	tcase_add_test(tc, v4_and_v6_apart_and_eviction);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
