/* test_assert.c: the invariant macros (lib/base/assert.h): with checks on, ALWAYS and NEVER pass their value through and a broken invariant aborts; the library reports whether its build checks them. */
#include "config.h"

#include <check.h>
#include <signal.h>

/* The macros with checks on, whatever this build's library does. */
#ifndef EZ_ASSERTIONS
#define EZ_ASSERTIONS 1
#define LIB_CHECKS 0
#else
#define LIB_CHECKS 1
#endif
#include "base/assert.h"
#include "../checkmain.h"

static volatile int truth = 1;	/* not a constant the compiler folds */

START_TEST(kept_invariants_pass_their_value)
{
	int n = 0;

	EZ_ASSERT(truth == 1);
	if (ALWAYS(truth))
		n++;
	if (NEVER(!truth))
		n += 10;
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(ALWAYS(truth + 1), 1);	/* normalized to 0/1 as a condition */
}
END_TEST

START_TEST(broken_assert_aborts)
{
	EZ_ASSERT(truth == 0);
	ck_abort_msg("EZ_ASSERT(false) returned");
}
END_TEST

START_TEST(broken_always_aborts)
{
	if (!ALWAYS(truth == 0))
		ck_abort_msg("ALWAYS(false) returned 0 instead of aborting");
	ck_abort_msg("ALWAYS(false) returned 1");
}
END_TEST

START_TEST(broken_never_aborts)
{
	if (NEVER(truth == 1))
		ck_abort_msg("NEVER(true) returned 1 instead of aborting");
	ck_abort_msg("NEVER(true) returned 0");
}
END_TEST

/* The library's own build: checks on with --enable-assertions (the
 * sanitizer builds' default), off in release. */
START_TEST(library_reports_its_build)
{
	ck_assert_int_eq(ezi_assertions_on(), LIB_CHECKS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("assert");
	TCase *tc = tcase_create("assert");

	tcase_add_test(tc, kept_invariants_pass_their_value);
	tcase_add_test_raise_signal(tc, broken_assert_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, broken_always_aborts, SIGABRT);
	tcase_add_test_raise_signal(tc, broken_never_aborts, SIGABRT);
	tcase_add_test(tc, library_reports_its_build);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
