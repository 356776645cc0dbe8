/* test_ladder.c: a 4-path connection is laddered against the device's cached limits: no QP, device or port query per step. */
#include "config.h"

#include <check.h>
#include <infiniband/verbs.h>

#include "easyrdma.h"
#include "fault.h"
#include "../checkmain.h"

/*
 * Linked with -Wl,--wrap=ibv_query_qp: the library's objects (linked in
 * statically) call it. ez_qp_modify() queries the QP (and the device and
 * its ports) at every call; the connection's ladder must not (it once did
 * for paths 1..K-1: 3 steps x 3 extra paths on each side). ibv_query_port
 * and ibv_query_device_ex are inline in verbs.h, so the QP query is the
 * one counted.
 */
int __real_ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init);
int __wrap_ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init);
static int qp_queries;

int __wrap_ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init)
{
	qp_queries++;
	return __real_ibv_query_qp(qp, attr, mask, init);
}

START_TEST(multipath_ladder_uses_cached_limits)
{
	const struct ez_conn_opts o = { .paths = 4 };
	struct ez_conn_info info;
	struct fb b;
	struct srv s = { 0 };
	struct ep warm = { 0 }, c = { 0 };

	fb_init(&b);
	s.opts.paths = 4;
	srv_start(&b, &s, 4);
	/* The first connection opens the device (its limits are queried once). */
	ck_assert_int_eq(ep_connect(&b, &warm, s.port, &o), 0);
	ck_assert(fb_run(&b, &warm.connected, 1, 20));
	ck_assert_msg(warm.connect_status == 0, "%s", warm.connect_msg);
	ck_assert(fb_run(&b, &s.connected, 1, 10));

	qp_queries = 0;
	ck_assert_int_eq(ep_connect(&b, &c, s.port, &o), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 20));
	ck_assert_msg(c.connect_status == 0, "%s", c.connect_msg);
	ck_assert(fb_run(&b, &s.connected, 2, 10));
	/* Both sides laddered 4 QPs through INIT, RTR and RTS. */
	ck_assert_msg(qp_queries == 0, "%d ibv_query_qp() calls to set up a 4-path connection",
		      qp_queries);
	ck_assert_int_eq(ez_conn_info(c.conn, &info), 0);
	ck_assert_uint_eq(info.paths, 4);
	ck_assert_int_gt(qp_queries, 0);	/* the wrap does count the library's calls */

	ep_close(&c);
	ep_close(&warm);
	fb_run(&b, &s.disconnected, 2, 10);
	srv_stop(&s);
	fb_spin(&b, 0.5);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ladder");
	TCase *tc = tcase_create("queries");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, multipath_ladder_uses_cached_limits);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
