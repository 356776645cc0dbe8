/* test_alloc.c: every allocation of ez_connect() failing in turn: -ENOMEM with a message, and nothing it allocated left behind. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fault.h"
#include "../checkmain.h"

/*
 * Linked with -Wl,--wrap=calloc,--wrap=free: the library's objects (linked
 * in statically here) call these; libc's own calls do not. While armed,
 * the fail_at-th calloc fails and every other one is tracked until freed.
 */
void *__real_calloc(size_t n, size_t size);
void __real_free(void *p);
void *__wrap_calloc(size_t n, size_t size);
void __wrap_free(void *p);

#define MAX_TRACKED 64
static int armed, fail_at, ncalls;
static void *tracked[MAX_TRACKED];

void *__wrap_calloc(size_t n, size_t size)
{
	void *p;
	int i;

	if (!armed)
		return __real_calloc(n, size);
	if (ncalls++ == fail_at)
		return NULL;
	p = __real_calloc(n, size);
	for (i = 0; p && i < MAX_TRACKED; i++) {
		if (!tracked[i]) {
			tracked[i] = p;
			break;
		}
	}
	return p;
}

void __wrap_free(void *p)
{
	for (int i = 0; p && i < MAX_TRACKED; i++)
		if (tracked[i] == p)
			tracked[i] = NULL;
	__real_free(p);
}

static int still_held(void)
{
	int i, n = 0;

	for (i = 0; i < MAX_TRACKED; i++)
		n += tracked[i] != NULL;
	return n;
}

/* A keyed connect allocates the handle, its paths and its copy of the key
 * before anything reaches rdma_cm: each failing in turn is -ENOMEM with
 * nothing kept (the paths once leaked when the key's copy failed). */
START_TEST(each_connect_allocation_fails_cleanly)
{
	static const char key[16] = "0123456789abcdef";
	struct ez_conn_opts o = { .auth_key = key, .auth_key_len = sizeof(key), .paths = 2 };
	struct ez_conn *conn = NULL;
	struct fb b;
	int ret, failures = 0;

	fb_init(&b);
	for (fail_at = 0; fail_at < 16; fail_at++) {
		memset(tracked, 0, sizeof(tracked));
		ncalls = 0;
		armed = 1;
		ret = ez_connect(b.ctx, test_addr(), "1", &o, NULL, NULL, &conn);
		armed = 0;
		if (ret == 0)
			break;	/* every allocation of the call succeeded */
		failures++;
		ck_assert_msg(ret == -ENOMEM, "calloc %d failing: ez_connect = %d (%s)", fail_at, ret,
			      ez_errmsg());
		ck_assert_msg(strstr(ez_errmsg(), "out of memory"), "calloc %d failing: message \"%s\"",
			      fail_at, ez_errmsg());
		ck_assert_msg(still_held() == 0, "calloc %d failing: %d allocations not freed", fail_at,
			      still_held());
	}
	/* The handle, the paths and the key: three allocations could fail. */
	ck_assert_int_ge(failures, 3);
	ck_assert_int_eq(ret, 0);
	ez_conn_close(conn);
	fb_spin(&b, 0.5);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("connect");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, each_connect_allocation_fails_cleanly);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
