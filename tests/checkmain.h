/* checkmain.h: how every Check test program's main() ends: run the suite, free the runner, exit 1 if any test failed. */
#ifndef EZ_TESTS_CHECKMAIN_H
#define EZ_TESTS_CHECKMAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* A passing ck_assert wrote its file and line to the runner (Check's mark
 * point, so a crash or a timeout can say where the test last was): a
 * syscall each, 50-200 us in a TCG guest, more under ASan. Tests that
 * assert in loops paid seconds for it: test_srqpool's byte checks cost
 * 18 ms a message (400 messages: 7.5 s plain, 25 s under ASan), and in
 * one guest run test_pool_share took 33 s with them and 21 s without,
 * test_hostile_replay 24 s and 13 s, test_workers 6 s and 3 s. A passing
 * assertion now records nothing; a failing one reports its own file and
 * line as before, a timeout or crash the test's START_TEST, and
 * mark_point() still leaves a trail where a test wants one. Include this
 * header before the first assertion (helpers too: fault.c, testdev.c). */
#undef mark_point
#define mark_point() (_mark_point)(__FILE__, __LINE__)
#define _mark_point(file, line) ((void)0)

/* Runs every test case of s (Check forks each unless CK_FORK=no says
 * otherwise) and returns main()'s exit status. */
static inline int check_run_suite(Suite *s, enum print_output mode)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, mode);
	failed = srunner_ntests_failed(sr);
	/* A run of nothing is not a pass: CK_RUN_CASE or CK_RUN_SUITE naming
	 * no case printed "100%: Checks: 0" and exited 0. */
	if (srunner_ntests_run(sr) == 0) {
		fprintf(stderr, "no test ran (CK_RUN_SUITE '%s', CK_RUN_CASE '%s' name none of this program's)\n",
			getenv("CK_RUN_SUITE") ? getenv("CK_RUN_SUITE") : "",
			getenv("CK_RUN_CASE") ? getenv("CK_RUN_CASE") : "");
		failed = 1;
	}
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
