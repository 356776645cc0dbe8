/* test_conn_handle.c: a freed connection's handle without a device: every entry point refuses it, by name, before reading anything else; the quarantine keeps the last N and no more. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "base/quarantine.h"
#include "conn/conn_handle.h"
#include "../checkmain.h"

/* ---- the quarantine: FIFO, bounded -------------------------------------- */

static void *released[8];
static int nreleased;

static void count_release(void *obj)
{
	released[nreleased++] = obj;
}

START_TEST(quarantine_releases_the_oldest)
{
	void *ring[3] = { NULL };
	struct ezi_quarantine q = EZI_QUARANTINE_INIT(ring, 3, count_release);
	int objs[5];

	nreleased = 0;
	for (int i = 0; i < 3; i++)
		ezi_quarantine_put(&q, &objs[i]);
	ck_assert_int_eq(nreleased, 0);
	ck_assert_uint_eq(ezi_quarantine_count(&q), 3);
	ezi_quarantine_put(&q, &objs[3]);
	ezi_quarantine_put(&q, &objs[4]);
	ck_assert_int_eq(nreleased, 2);
	ck_assert_ptr_eq(released[0], &objs[0]);
	ck_assert_ptr_eq(released[1], &objs[1]);
	ck_assert_uint_eq(ezi_quarantine_count(&q), 3);
}
END_TEST

/* ---- a void connection handle -------------------------------------------- */

static char logged[512];
static int nlogged;

static void on_log(enum ez_log_level level, const char *msg, void *arg)
{
	(void)arg;
	if (level != EZ_LOG_ERR)
		return;
	nlogged++;
	snprintf(logged, sizeof(logged), "%s", msg);
}

/* A connection as conn_free() leaves it: wiped, void, quarantined. */
static struct ez_conn *void_conn(void)
{
	struct ez_conn *conn = malloc(sizeof(*conn));

	ck_assert_ptr_nonnull(conn);
	memset(conn, 0x5a, sizeof(*conn));	/* whatever it held */
	conn_retire(conn);
	return conn;
}

static void want_refusal(const struct ez_conn *conn, const char *fn, int logs_before)
{
	char want[256];

	snprintf(want, sizeof(want), "%s: connection %p already ended and reported (its final "
		 "callback ran); the handle is void", fn, (const void *)conn);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_str_eq(logged, want);
	ck_assert_int_eq(nlogged, logs_before + 1);
}

START_TEST(every_entry_point_refuses)
{
	struct ez_conn *conn = void_conn();
	struct ez_conn_info info;
	struct ez_conn_stats stats;
	struct ez_rkey rkey = { 0 };
	struct iovec iov = { .iov_base = "x", .iov_len = 1 };
	size_t len = 7;
	char mr_stand_in[64];
	int n;

	ez_set_log(on_log, NULL, EZ_LOG_WARN);
	n = nlogged;
	ez_conn_close(conn);
	want_refusal(conn, "ez_conn_close", n++);
	ck_assert_str_eq(ez_conn_errmsg(conn), "");
	want_refusal(conn, "ez_conn_errmsg", n++);
	ck_assert_ptr_null(ez_conn_arg(conn));
	want_refusal(conn, "ez_conn_arg", n++);
	ck_assert_int_eq(ez_send(conn, "x", 1, NULL, NULL), -EBADF);
	want_refusal(conn, "ez_send", n++);
	ck_assert_int_eq(ez_sendv(conn, &iov, 1, NULL, NULL), -EBADF);
	want_refusal(conn, "ez_send", n++);
	ck_assert_int_eq(ez_send_mr(conn, (struct ez_mr *)mr_stand_in, 0, 1, NULL, NULL), -EBADF);
	want_refusal(conn, "ez_send_mr", n++);
	ck_assert_int_eq(ez_write(conn, (struct ez_mr *)mr_stand_in, 0, 1, &rkey, 0, NULL, NULL),
			 -EBADF);
	want_refusal(conn, "ez_write", n++);
	ck_assert_int_eq(ez_read(conn, (struct ez_mr *)mr_stand_in, 0, 1, &rkey, 0, NULL, NULL),
			 -EBADF);
	want_refusal(conn, "ez_read", n++);
	ck_assert_int_eq(ez_atomic_fadd(conn, &rkey, 0, 1, NULL, NULL), -EBADF);
	want_refusal(conn, "ez_atomic_fadd", n++);
	ck_assert_int_eq(ez_conn_info(conn, &info), -EBADF);
	want_refusal(conn, "ez_conn_info", n++);
	ck_assert_int_eq(ez_conn_stats(conn, &stats), -EBADF);
	want_refusal(conn, "ez_conn_stats", n++);
	ck_assert_int_eq(ez_conn_export(conn, (struct ez_mr *)mr_stand_in, 0, 1, 0, &rkey), -EBADF);
	want_refusal(conn, "ez_conn_export", n++);
	ck_assert_int_eq(ez_conn_revoke(conn, &rkey), -EBADF);
	want_refusal(conn, "ez_conn_revoke", n++);
	ck_assert_ptr_null(ez_conn_accept_data(conn, &len));
	ck_assert_uint_eq(len, 0);
	want_refusal(conn, "ez_conn_accept_data", n++);
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
}
END_TEST

/* The last CONN_QUARANTINE freed connections are kept, no more. */
START_TEST(quarantine_is_bounded)
{
	for (uint32_t i = 0; i < CONN_QUARANTINE + 5; i++)
		void_conn();
	ck_assert_uint_eq(conn_quarantine_bytes(), (size_t)CONN_QUARANTINE * sizeof(struct ez_conn));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conn_handle");
	TCase *tc = tcase_create("void");

	tcase_add_test(tc, quarantine_releases_the_oldest);
	tcase_add_test(tc, every_entry_point_refuses);
	tcase_add_test(tc, quarantine_is_bounded);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
