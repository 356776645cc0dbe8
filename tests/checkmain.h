/* checkmain.h: how every Check test program's main() ends: run the suite, free the runner, exit 1 if any test failed. */
#ifndef EZ_TESTS_CHECKMAIN_H
#define EZ_TESTS_CHECKMAIN_H

#include <check.h>

/* Runs every test case of s (Check forks each unless CK_FORK=no says
 * otherwise) and returns main()'s exit status. */
static inline int check_run_suite(Suite *s, enum print_output mode)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, mode);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

#endif
