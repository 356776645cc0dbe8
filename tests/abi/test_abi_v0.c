/* test_abi_v0.c: a program built against the first header (tests/abi/v0, frozen) runs on this library: connect, send, info and stats within their old sizes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "easyrdma.h"	/* tests/abi/v0/easyrdma.h: -I tests/abi/v0, not include/ */
#ifdef EZ_CONN_OPTS_QP_TIMEOUT
#error "test_abi_v0 must be built against tests/abi/v0/easyrdma.h, not include/easyrdma.h"
#endif
#include "abibench.h"
#include "../checkmain.h"

/* Where the v0 struct ez_conn_opts ends: after it, trailing padding. */
#define V0_OPTS_END (offsetof(struct ez_conn_opts, auth_key_len) + sizeof(uint32_t))

/* The layout of struct ez_rkey that test_abi_future.c pins for the
 * current header: a key from either kind of program reads the same. */
_Static_assert(sizeof(struct ez_rkey) == 24 && offsetof(struct ez_rkey, rkey) == 16 &&
	       offsetof(struct ez_rkey, reserved) == 20, "struct ez_rkey of v0");

static struct ez_srqpool *srv_pool;

static int ab_accept(struct abench *b, struct ez_conn_req *req, const struct ez_conn_cbs *cbs)
{
	struct ez_conn_opts o = { .srqpool = srv_pool };

	return ez_accept(req, &o, cbs, b, &b->srv);
}

START_TEST(old_symbols_are_versioned)
{
	/* This binary was linked against the EASYRDMA_0 names. */
	static const char *const names[] = { "ez_connect", "ez_accept", "ez_listen",
					     "ez_srqpool_new", "ez_srqpool_stats",
					     "ez_conn_info", "ez_conn_stats" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(dlvsym(RTLD_DEFAULT, names[i], "EASYRDMA_0"), "%s@EASYRDMA_0: %s",
			      names[i], dlerror());
	ck_assert_ptr_eq(dlvsym(RTLD_DEFAULT, "ez_connect", "EASYRDMA_0"), (void *)ez_connect);
}
END_TEST

START_TEST(v0_program_on_this_library)
{
	struct ez_srqpool_opts po = { .nbufs = 32 };
	struct ez_conn_cbs cbs = { ab_on_connect, ab_on_recv, ab_on_disconnect, NULL, NULL };
	struct ez_conn_opts co;
	struct { struct ez_conn_info s; unsigned char canary[64]; } ci, si;
	struct { struct ez_conn_stats s; unsigned char canary[64]; } cs, ss;
	struct { struct ez_srqpool_stats s; unsigned char canary[64]; } ps;
	struct abench b;
	static const char msg[] = "easyrdma v0 program";

	ab_init(&b);
	ck_assert_msg(ez_srqpool_new(b.ctx, getenv("EZ_DEVICE"), &po, &srv_pool) == 0,
		      "ez_srqpool_new: %s", ez_errmsg());
	ck_assert_msg(ez_listen(b.ctx, test_addr(), "0", NULL, ab_on_request, &b, &b.listener) == 0,
		      "ez_listen: %s", ez_errmsg());
	ab_listened(&b);
	/* The v0 struct's trailing padding, garbage as an old program may
	 * leave it: a later field lives there now (comp_mask), and this
	 * library must not read it from a v0 program. */
	memset(&co, 0, sizeof(co));
	if (sizeof(co) > V0_OPTS_END)
		memset((char *)&co + V0_OPTS_END, 0xff, sizeof(co) - V0_OPTS_END);
	ck_assert_msg(ez_connect(b.ctx, test_addr(), b.port, &co, &cbs, &b, &b.cli) == 0,
		      "ez_connect: %s", ez_errmsg());
	ab_exchange(&b, msg);

	memset(&ci, CANARY, sizeof(ci));
	memset(&si, CANARY, sizeof(si));
	ck_assert_msg(ez_conn_info(b.cli, &ci.s) == 0, "ez_conn_info: %s", ez_errmsg());
	ck_assert_int_eq(ez_conn_info(b.srv, &si.s), 0);
	canary_intact(ci.canary, sizeof(ci.canary), "ez_conn_info (client)");
	canary_intact(si.canary, sizeof(si.canary), "ez_conn_info (server)");
	ck_assert_uint_ne(ci.s.qp_num, 0);
	ck_assert_uint_eq(ci.s.remote_qp_num, si.s.qp_num);
	ck_assert_uint_eq(si.s.remote_qp_num, ci.s.qp_num);
	ck_assert_uint_eq(ci.s.paths, 1);
	ck_assert_uint_eq(ci.s.path_qp_num[0], ci.s.qp_num);
	ck_assert_uint_eq(ci.s.max_msg_size, 4096);

	memset(&cs, CANARY, sizeof(cs));
	memset(&ss, CANARY, sizeof(ss));
	ck_assert_int_eq(ez_conn_stats(b.cli, &cs.s), 0);
	ck_assert_int_eq(ez_conn_stats(b.srv, &ss.s), 0);
	canary_intact(cs.canary, sizeof(cs.canary), "ez_conn_stats (client)");
	canary_intact(ss.canary, sizeof(ss.canary), "ez_conn_stats (server)");
	ck_assert_uint_eq(cs.s.msgs_sent, 1);
	ck_assert_uint_eq(cs.s.bytes_sent, strlen(msg));
	ck_assert_uint_eq(cs.s.op_errors, 0);
	ck_assert_uint_eq(ss.s.msgs_recv, 1);
	ck_assert_uint_eq(ss.s.bytes_recv, strlen(msg));
	ck_assert_uint_eq(ss.s.path_msgs_recv[0], 1);

	memset(&ps, CANARY, sizeof(ps));
	ck_assert_int_eq(ez_srqpool_stats(srv_pool, &ps.s), 0);
	canary_intact(ps.canary, sizeof(ps.canary), "ez_srqpool_stats");
	ck_assert_uint_eq(ps.s.attached, 1);
	ck_assert_uint_eq(ps.s.total, 32);
	ck_assert_uint_eq(ps.s.posted + ps.s.in_use + ps.s.free, 32);

	ab_fini(&b);
	ck_assert_msg(ez_srqpool_free(srv_pool) == 0, "ez_srqpool_free: %s", ez_errmsg());
	ab_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("abi_v0");
	TCase *tc = tcase_create("v0");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, old_symbols_are_versioned);
	tcase_add_test(tc, v0_program_on_this_library);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
