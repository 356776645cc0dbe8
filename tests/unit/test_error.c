/* test_error.c: error strings, the per-thread last-error message, and the version. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "easyrdma.h"
#include "base/error.h"
#include "../checkmain.h"

START_TEST(strerror_takes_both_signs)
{
	ck_assert_str_eq(ez_strerror(-ECONNREFUSED), ez_strerror(ECONNREFUSED));
	ck_assert_str_eq(ez_strerror(-ETIMEDOUT), strerror(ETIMEDOUT));
	ck_assert_str_eq(ez_strerror(0), "Success");
}
END_TEST

START_TEST(fail_sets_message_and_returns_code)
{
	ezi_clear_error();
	ck_assert_str_eq(ez_errmsg(), "");
	ck_assert_int_eq(ezi_fail(-EINVAL, "RC %s: %s required", "INIT->RTR", "IBV_QP_AV"), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "RC INIT->RTR: IBV_QP_AV required");
}
END_TEST

START_TEST(fail_into_copies_to_object_buffer)
{
	char buf[16];

	ck_assert_int_eq(ezi_fail_into(buf, sizeof(buf), -EIO, "rdma_connect: %s", "refused by peer"), -EIO);
	ck_assert_str_eq(buf, "rdma_connect: r"); /* truncated to the buffer, still terminated */
	ck_assert_str_eq(ez_errmsg(), "rdma_connect: refused by peer");
}
END_TEST

static void *other_thread(void *arg)
{
	(void)arg;
	ezi_fail(-EIO, "other thread");
	return NULL;
}

/* The per-message path's failure (a full send window) is formatted only
 * when read, with the same text ezi_fail() would have made. */
START_TEST(lazy_message_reads_as_formatted)
{
	ck_assert_int_eq(ezi_fail_lazy(-ENOBUFS, "%s: %u operations already outstanding (send_depth)",
				       "ez_send", 64u), -ENOBUFS);
	ck_assert_str_eq(ez_errmsg(), "ez_send: 64 operations already outstanding (send_depth)");
	/* read twice: the same text */
	ck_assert_str_eq(ez_errmsg(), "ez_send: 64 operations already outstanding (send_depth)");
	/* a later failure replaces a pending one ... */
	ezi_fail_lazy(-ENOBUFS, "%s: %u", "ez_write", 8u);
	ezi_fail(-EINVAL, "later: %d", 1);
	ck_assert_str_eq(ez_errmsg(), "later: 1");
	/* ... and so does a copy into an object's buffer, whose text is its own */
	char buf[64];

	ezi_fail_lazy(-ENOBUFS, "%s: %u", "ez_write", 8u);
	ezi_fail_into(buf, sizeof(buf), -EIO, "object: %s", "x");
	ck_assert_str_eq(ez_errmsg(), "object: x");
	ck_assert_str_eq(buf, "object: x");
	ezi_fail_lazy(-ENOBUFS, "%s: %u", "ez_read", 2u);
	ezi_clear_error();
	ck_assert_str_eq(ez_errmsg(), "");
}
END_TEST

START_TEST(message_is_per_thread)
{
	pthread_t t;

	ezi_fail(-EINVAL, "mine");
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
	pthread_join(t, NULL);
	ck_assert_str_eq(ez_errmsg(), "mine");
}
END_TEST

/* The header's version macros are configure's (ez_version() returns
 * PACKAGE_VERSION, lib/base/version.c): a release that bumps one and not
 * the other fails here. */
START_TEST(version_is_the_headers)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", EZ_VERSION_MAJOR, EZ_VERSION_MINOR,
		 EZ_VERSION_PATCH);
	ck_assert_str_eq(want, PACKAGE_VERSION);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, version_is_the_headers);
	tcase_add_test(tc, strerror_takes_both_signs);
	tcase_add_test(tc, fail_sets_message_and_returns_code);
	tcase_add_test(tc, fail_into_copies_to_object_buffer);
	tcase_add_test(tc, message_is_per_thread);
	tcase_add_test(tc, lazy_message_reads_as_formatted);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
