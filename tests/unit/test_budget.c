/* test_budget.c: the two-level byte budget (wire/budget.c): the whole's limit and a peer's, a first hold always fits, 0 is no limit, no overflow near UINT64_MAX, when a peer's share is worth summing, the reasons' exact words, held changed only up and down to zero. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "wire/budget.h"
#include "../checkmain.h"

#define MIB (1024ull * 1024ull)

START_TEST(whole_then_peer)
{
	struct budget b = { .held = 0, .max = 256 * MIB, .peer_max = 64 * MIB };

	ck_assert_int_eq(budget_check(&b, 0, 16 * MIB), BUDGET_OK);
	b.held = 48 * MIB;
	/* The peer holds all 48: 16 more is exactly its limit, 17 is not. */
	ck_assert_int_eq(budget_check(&b, 48 * MIB, 16 * MIB), BUDGET_OK);
	ck_assert_int_eq(budget_check(&b, 48 * MIB, 17 * MIB), BUDGET_PEER_FULL);
	/* Another peer (holding nothing) may. */
	ck_assert_int_eq(budget_check(&b, 0, 17 * MIB), BUDGET_OK);
	b.held = 250 * MIB;
	ck_assert_int_eq(budget_check(&b, 0, 6 * MIB), BUDGET_OK);
	ck_assert_int_eq(budget_check(&b, 0, 7 * MIB), BUDGET_FULL);
	/* The whole is named first even when the peer is full too. */
	ck_assert_int_eq(budget_check(&b, 64 * MIB, 7 * MIB), BUDGET_FULL);
}
END_TEST

START_TEST(first_hold_fits_and_zero_is_no_limit)
{
	struct budget b = { .held = 0, .max = 4 * MIB, .peer_max = 1 * MIB };

	/* Larger than both limits, but nothing is held: it goes, alone. */
	ck_assert_int_eq(budget_check(&b, 0, 16 * MIB), BUDGET_OK);
	b.held = 16 * MIB;
	ck_assert_int_eq(budget_check(&b, 0, 1), BUDGET_FULL);
	/* A peer holding nothing in a context holding some: its own first. */
	b.max = 0;
	ck_assert_int_eq(budget_check(&b, 0, 16 * MIB), BUDGET_OK);
	ck_assert_int_eq(budget_check(&b, 1, 1 * MIB), BUDGET_PEER_FULL);
	b.peer_max = 0;
	ck_assert_int_eq(budget_check(&b, UINT64_MAX / 2, UINT64_MAX / 2), BUDGET_OK);
}
END_TEST

START_TEST(no_overflow)
{
	struct budget b = { .held = UINT64_MAX - 10, .max = UINT64_MAX, .peer_max = UINT64_MAX };

	ck_assert_int_eq(budget_check(&b, 0, 10), BUDGET_OK);
	ck_assert_int_eq(budget_check(&b, 0, 11), BUDGET_FULL);
	ck_assert_int_eq(budget_check(&b, 0, UINT64_MAX), BUDGET_FULL);
	b.held = 1;
	b.max = 100;
	ck_assert_int_eq(budget_check(&b, 0, UINT64_MAX), BUDGET_FULL);
}
END_TEST

START_TEST(peer_matters_only_near_its_limit)
{
	struct budget b = { .held = 10 * MIB, .max = 256 * MIB, .peer_max = 64 * MIB };

	ck_assert(!budget_peer_matters(&b, 54 * MIB));
	ck_assert(budget_peer_matters(&b, 55 * MIB));
	b.held = 0;
	ck_assert(!budget_peer_matters(&b, 100 * MIB));
	b.held = 70 * MIB;
	b.peer_max = 0;
	ck_assert(!budget_peer_matters(&b, 1));
}
END_TEST

/* What the callers change through the functions: held up and down,
 * never below zero, and the limits set. */
START_TEST(hold_release_and_limits)
{
	struct budget b;

	budget_init(&b, 4 * MIB, MIB);
	ck_assert_uint_eq(b.held, 0);
	ck_assert_uint_eq(b.max, 4 * MIB);
	ck_assert_uint_eq(b.peer_max, MIB);
	budget_hold(&b, 3 * MIB);
	ck_assert_int_eq(budget_check(&b, 0, MIB), BUDGET_OK);
	ck_assert_int_eq(budget_check(&b, 0, MIB + 1), BUDGET_FULL);
	budget_release(&b, 2 * MIB);
	ck_assert_uint_eq(b.held, MIB);
	budget_release(&b, 5 * MIB);	/* a miscount: held stops at 0 */
	ck_assert_uint_eq(b.held, 0);
	budget_set_max(&b, 0);
	budget_set_peer_max(&b, 2 * MIB);
	budget_hold(&b, 100 * MIB);
	ck_assert_int_eq(budget_check(&b, 0, 100 * MIB), BUDGET_OK);	/* no whole limit */
	ck_assert_int_eq(budget_check(&b, 2 * MIB, 1), BUDGET_PEER_FULL);
}
END_TEST

START_TEST(reasons)
{
	struct budget b = { .held = 250 * MIB, .max = 256 * MIB, .peer_max = 64 * MIB };
	char why[256];

	budget_reason(&b, BUDGET_FULL, 0, 8 * MIB, "ez_send", why, sizeof(why));
	ck_assert_str_eq(why, "ez_send: large messages waiting for their peers to fetch them hold 250.0 MiB of this context (EZ_LIMIT_STAGED 256.0 MiB); 8.0 MiB more must wait until one is fetched (on_send_ready)");
	budget_reason(&b, BUDGET_PEER_FULL, 64 * MIB, 16 * MIB, "ez_sendv", why, sizeof(why));
	ck_assert_str_eq(why, "ez_sendv: large messages waiting for this peer address to fetch them hold 64.0 MiB (EZ_LIMIT_STAGED_PER_PEER 64.0 MiB); 16.0 MiB more must wait until one is fetched (on_send_ready)");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("budget");
	TCase *tc = tcase_create("budget");

	tcase_add_test(tc, whole_then_peer);
	tcase_add_test(tc, first_hold_fits_and_zero_is_no_limit);
	tcase_add_test(tc, no_overflow);
	tcase_add_test(tc, peer_matters_only_near_its_limit);
	tcase_add_test(tc, hold_release_and_limits);
	tcase_add_test(tc, reasons);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
