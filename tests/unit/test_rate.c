/* test_rate.c: the token bucket (wire/rate.h): the burst, one token per period after it, partial periods kept, the cap, time that runs backwards. */
#include <check.h>
#include <stdint.h>

#include "wire/rate.h"
#include "../checkmain.h"

START_TEST(burst_then_one_per_period)
{
	struct rate r;
	int i;

	rate_init(&r, 4, 1000);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(rate_take(&r, 4, 50, 1000), 1);
	ck_assert_int_eq(rate_take(&r, 4, 50, 1000), 0);
	ck_assert_int_eq(rate_take(&r, 4, 50, 1049), 0);
	ck_assert_int_eq(rate_take(&r, 4, 50, 1050), 1);
	ck_assert_int_eq(rate_take(&r, 4, 50, 1050), 0);
	/* 30 + 30 ms: the first partial period is not lost. */
	ck_assert_int_eq(rate_take(&r, 4, 50, 1080), 0);
	ck_assert_int_eq(rate_take(&r, 4, 50, 1100), 1);
}
END_TEST

START_TEST(capped_at_the_burst)
{
	struct rate r;
	int i, n = 0;

	rate_init(&r, 4, 0);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(rate_take(&r, 4, 50, 0), 1);
	/* An hour of quiet gives back the burst, no more. */
	for (i = 0; i < 10; i++)
		n += rate_take(&r, 4, 50, 3600000);
	ck_assert_int_eq(n, 4);
}
END_TEST

START_TEST(time_backwards_adds_nothing)
{
	struct rate r;

	rate_init(&r, 1, 5000);
	ck_assert_int_eq(rate_take(&r, 1, 50, 5000), 1);
	ck_assert_int_eq(rate_take(&r, 1, 50, 1000), 0);
	ck_assert_int_eq(rate_take(&r, 1, 50, 5049), 0);
	ck_assert_int_eq(rate_take(&r, 1, 50, 5050), 1);
}
END_TEST

START_TEST(honest_prober_never_refused)
{
	/* An easyrdma peer probes at most once per keepalive_interval_ms
	 * (>= 100 ms): against one token per 50 ms, never refused, even
	 * with its probes queued up and read in one burst. */
	struct rate r;
	uint64_t t = 0;
	int i;

	rate_init(&r, 256, t);
	for (i = 0; i < 255; i++)
		ck_assert_int_eq(rate_take(&r, 256, 50, t), 1);
	for (i = 0; i < 100000; i++) {
		t += 100;
		ck_assert_int_eq(rate_take(&r, 256, 50, t), 1);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rate");
	TCase *tc = tcase_create("rate");

	tcase_add_test(tc, burst_then_one_per_period);
	tcase_add_test(tc, capped_at_the_burst);
	tcase_add_test(tc, time_backwards_adds_nothing);
	tcase_add_test(tc, honest_prober_never_refused);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
