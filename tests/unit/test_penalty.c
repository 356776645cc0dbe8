/* test_penalty.c: the peer penalty table (wire/penalty.c): failures counted per address and per prefix in a window, the refusal and its end, IPv4 and IPv6 apart, a ban kept through a flood of single failures, a host rotating addresses in its prefix refused. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
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
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1000, 3, 500, &fails, NULL), 0);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1000, 60000), 1);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1100, 60000), 2);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1100, 3, 500, &fails, NULL), 0);
	ck_assert_uint_eq(fails, 2);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1200, 60000), 3);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1200, 3, 500, &fails, NULL), 500);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1699, 3, 500, NULL, NULL), 1);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1700, 3, 500, NULL, NULL), 0);
	/* Another address, and limit 0, are never refused. */
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(b), 1200, 3, 500, NULL, NULL), 0);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 1200, 0, 500, NULL, NULL), 0);
	/* One more failure after the ban refuses again at once. */
	ck_assert_uint_eq(penalty_record(&t, SA(a), 2000, 60000), 4);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(a), 2000, 3, 500, NULL, NULL), 500);
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
	/* Full of entries of one failure each (an address and its /24 per
	 * failure): of equal weight, the one failed least recently goes first,
	 * a (at 10) and its prefix, then s6 and its. */
	for (i = 0; i < PENALTY_SLOTS / 2 - 1; i++) {
		struct sockaddr_in x = v4(0x0B000000 + (i << 8));

		penalty_record(&t, SA(x), 100 + i, 60000);
	}
	ck_assert_uint_eq(penalty_record(&t, SA(s6), 1000, 60000), 2);
	ck_assert_uint_eq(penalty_record(&t, SA(a), 1000, 60000), 1);
}
END_TEST

/* Issue 39: a banned address was accepted again after 66 other addresses
 * had failed once each (the table forgot the least recently failed). A
 * ban is kept however many single failures come after it. */
START_TEST(ban_survives_a_flood_of_single_failures)
{
	static struct penalty_table t;
	struct sockaddr_in bad = v4(0xC0000263);
	uint32_t fails, i;
	unsigned plen;

	memset(&t, 0, sizeof(t));
	for (i = 0; i < 3; i++)
		penalty_record(&t, SA(bad), 1000 + i, 60000);
	ck_assert_uint_gt(penalty_refused_ms(&t, SA(bad), 1003, 3, 30000, NULL, NULL), 0);
	/* 1,000 addresses, each in a /24 of its own, fail once each. */
	for (i = 0; i < 1000; i++) {
		struct sockaddr_in x = v4(0x0A000000 + (i << 8) + 1);

		ck_assert_uint_eq(penalty_record(&t, SA(x), 2000 + i, 60000), 1);
	}
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(bad), 3000, 3, 30000, &fails, &plen),
			  30000 - (3000 - 1002));
	ck_assert_uint_eq(fails, 3);
	ck_assert_uint_eq(plen, 128);
	/* Once its window is over it weighs nothing and may go. */
	for (i = 0; i < PENALTY_SLOTS; i++) {
		struct sockaddr_in x = v4(0x0B000000 + (i << 8) + 1);

		penalty_record(&t, SA(x), 70000 + i, 60000);
	}
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(bad), 70200, 3, 30000, NULL, NULL), 0);
}
END_TEST

/* A host rotating its addresses inside its /24 (IPv4) or /64 (IPv6): no
 * address reaches the limit, the prefix does at PENALTY_PREFIX_FACTOR
 * times it and refuses every address in it, and none outside. */
START_TEST(rotating_addresses_refused_by_prefix)
{
	static struct penalty_table t;
	struct sockaddr_in fresh = v4(0xC6336401), next_door = v4(0xC6336501);
	struct sockaddr_in6 f6 = { .sin6_family = AF_INET6 }, o6 = { .sin6_family = AF_INET6 };
	uint32_t fails, i, limit = 3, prefix_limit = 3 * PENALTY_PREFIX_FACTOR;
	unsigned plen;
	char s[64];

	memset(&t, 0, sizeof(t));
	for (i = 0; i < prefix_limit; i++) {
		struct sockaddr_in x = v4(0xC6336400 + 10 + i);	/* 198.51.100.10.. */
		struct sockaddr_in6 y = { .sin6_family = AF_INET6 };

		snprintf(s, sizeof(s), "2001:db8:0:7::%x", 100 + i);
		inet_pton(AF_INET6, s, &y.sin6_addr);
		if (i == prefix_limit - 1) {	/* one short of the prefix's limit */
			ck_assert_uint_eq(penalty_refused_ms(&t, SA(fresh), 500, limit, 30000, NULL,
							     NULL), 0);
		}
		ck_assert_uint_eq(penalty_record(&t, SA(x), 500 + i, 60000), 1);
		ck_assert_uint_eq(penalty_record(&t, SA(y), 500 + i, 60000), 1);
	}
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(fresh), 600, limit, 30000, &fails, &plen),
			  30000 - (600 - (500 + prefix_limit - 1)));
	ck_assert_uint_eq(fails, prefix_limit);
	ck_assert_uint_eq(plen, 96 + PENALTY_V4_PREFIX);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(next_door), 600, limit, 30000, NULL, NULL), 0);
	inet_pton(AF_INET6, "2001:db8:0:7:ffff::1", &f6.sin6_addr);
	inet_pton(AF_INET6, "2001:db8:0:8::1", &o6.sin6_addr);
	ck_assert_uint_gt(penalty_refused_ms(&t, SA(f6), 600, limit, 30000, &fails, &plen), 0);
	ck_assert_uint_eq(plen, PENALTY_V6_PREFIX);
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(o6), 600, limit, 30000, NULL, NULL), 0);
	/* The ban ends like an address's. */
	ck_assert_uint_eq(penalty_refused_ms(&t, SA(fresh), 500 + prefix_limit - 1 + 30000, limit,
					     30000, NULL, NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("penalty");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, refused_at_limit_until_ban_ends);
	tcase_add_test(tc, window_restarts_the_count);
	tcase_add_test(tc, v4_and_v6_apart_and_eviction);
	tcase_add_test(tc, ban_survives_a_flood_of_single_failures);
	tcase_add_test(tc, rotating_addresses_refused_by_prefix);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
