/* test_abi_future.c: a program built against a later header than this library's (one more field per struct): zero tails work, a set tail is refused by name; comp_mask's meant zeros on the device. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "easyrdma.h"
#include "abibench.h"
#include "../checkmain.h"

/* struct ez_rkey travels in messages between programs built against
 * different headers (doc/abi.md): naming its last word path_binding (an
 * anonymous union with the old name, reserved) moved nothing. The v0 side
 * is pinned in test_abi_v0.c. */
_Static_assert(sizeof(struct ez_rkey) == 24 && offsetof(struct ez_rkey, rkey) == 16 &&
	       offsetof(struct ez_rkey, path_binding) == 20 && offsetof(struct ez_rkey, reserved) == 20,
	       "struct ez_rkey is a wire format: its layout is that of v0");

/* The structs as a later header might have them. */
struct opts_next { struct ez_conn_opts s; uint64_t next; };
struct cbs_next { struct ez_conn_cbs s; void (*on_next)(void); };
struct listen_next { struct ez_listen_opts s; uint64_t next; };
struct pool_next { struct ez_srqpool_opts s; uint32_t next; };

static int ab_accept(struct abench *b, struct ez_conn_req *req, const struct ez_conn_cbs *cbs)
{
	struct opts_next o = { .s = { .max_msg_size = 2048 } };
	struct cbs_next c = { .s = *cbs };

	return ez_accept_sz(req, &o.s, sizeof(o), &c.s, sizeof(c), b, &b->srv);
}

/* The message a longer struct with byte `at` set gets. */
static void expect_refusal(const char *fn, const char *what, size_t size, size_t at, size_t known)
{
	char want[256];

	snprintf(want, sizeof(want), "%s: struct %s of %zu bytes has byte %zu set, beyond the %zu this library knows (a field of a newer easyrdma.h)",
		 fn, what, size, at, known);
	ck_assert_str_eq(ez_errmsg(), want);
}

/* An output struct given longer than the library's: its tail zeroed, the
 * canary after the caller's size untouched. */
static void longer_out_ok(const unsigned char *tail, size_t tail_len, const unsigned char *canary,
			  size_t canary_len, const char *fn)
{
	size_t i;

	for (i = 0; i < tail_len; i++)
		ck_assert_msg(tail[i] == 0, "%s: byte %zu of the tail is 0x%02x, not 0", fn, i, tail[i]);
	canary_intact(canary, canary_len, fn);
}

START_TEST(longer_structs)
{
	struct opts_next co = { .s = { .max_msg_size = 1024 } };
	struct cbs_next cb = { .s = { .on_connect = ab_on_connect, .on_recv = ab_on_recv,
				      .on_disconnect = ab_on_disconnect } };
	struct listen_next lo = { .s = { .backlog = 16 } };
	struct pool_next po = { .s = { .nbufs = 16 } };
	struct { struct ez_conn_info s; unsigned char tail[8]; unsigned char canary[56]; } ci;
	struct { struct ez_conn_stats s; unsigned char tail[8]; unsigned char canary[56]; } cs;
	struct { struct ez_srqpool_stats s; unsigned char tail[8]; unsigned char canary[56]; } ps;
	struct ez_srqpool *pool;
	struct ez_conn *conn = NULL;
	struct abench b;

	ab_init(&b);
	/* A set tail: refused, naming the function, the struct and the sizes. */
	lo.next = 1;
	ck_assert_int_eq(ez_listen_sz(b.ctx, test_addr(), "0", &lo.s, sizeof(lo), ab_on_request, &b,
				      &b.listener), -EINVAL);
	expect_refusal("ez_listen", "ez_listen_opts", sizeof(lo), offsetof(struct listen_next, next),
		       sizeof(lo.s));
	po.next = 7;
	ck_assert_int_eq(ez_srqpool_new_sz(b.ctx, getenv("EZ_DEVICE"), &po.s, sizeof(po), &pool),
			 -EINVAL);
	expect_refusal("ez_srqpool_new", "ez_srqpool_opts", sizeof(po),
		       offsetof(struct pool_next, next), sizeof(po.s));
	/* A zero tail: as if the field were not there. */
	lo.next = 0;
	po.next = 0;
	ck_assert_msg(ez_listen_sz(b.ctx, test_addr(), "0", &lo.s, sizeof(lo), ab_on_request, &b,
				   &b.listener) == 0, "ez_listen_sz: %s", ez_errmsg());
	ab_listened(&b);
	ck_assert_msg(ez_srqpool_new_sz(b.ctx, getenv("EZ_DEVICE"), &po.s, sizeof(po), &pool) == 0,
		      "ez_srqpool_new_sz: %s", ez_errmsg());

	co.next = 1;
	ck_assert_int_eq(ez_connect_sz(b.ctx, test_addr(), b.port, &co.s, sizeof(co), &cb.s,
				       sizeof(cb), &b, &conn), -EINVAL);
	expect_refusal("ez_connect", "ez_conn_opts", sizeof(co), offsetof(struct opts_next, next),
		       sizeof(co.s));
	co.next = 0;
	cb.on_next = (void (*)(void))abort;
	ck_assert_int_eq(ez_connect_sz(b.ctx, test_addr(), b.port, &co.s, sizeof(co), &cb.s,
				       sizeof(cb), &b, &conn), -EINVAL);
	expect_refusal("ez_connect", "ez_conn_cbs", sizeof(cb), offsetof(struct cbs_next, on_next),
		       sizeof(cb.s));
	ck_assert_ptr_null(conn);
	ck_assert_int_eq(b.requests, 0);
	cb.on_next = NULL;
	ck_assert_msg(ez_connect_sz(b.ctx, test_addr(), b.port, &co.s, sizeof(co), &cb.s, sizeof(cb),
				    &b, &b.cli) == 0, "ez_connect_sz: %s", ez_errmsg());
	ab_exchange(&b, "from a later program");

	/* Longer outputs: what this library lacks reads 0, nothing beyond. */
	memset(&ci, CANARY, sizeof(ci));
	ck_assert_int_eq(ez_conn_info_sz(b.cli, &ci.s, sizeof(ci.s) + sizeof(ci.tail)), 0);
	longer_out_ok(ci.tail, sizeof(ci.tail), ci.canary, sizeof(ci.canary), "ez_conn_info_sz");
	ck_assert_uint_ne(ci.s.qp_num, 0);
	ck_assert_uint_eq(ci.s.max_msg_size, 1024);	/* the smaller of both sides */
	memset(&cs, CANARY, sizeof(cs));
	ck_assert_int_eq(ez_conn_stats_sz(b.cli, &cs.s, sizeof(cs.s) + sizeof(cs.tail)), 0);
	longer_out_ok(cs.tail, sizeof(cs.tail), cs.canary, sizeof(cs.canary), "ez_conn_stats_sz");
	ck_assert_uint_eq(cs.s.msgs_sent, 1);
	memset(&ps, CANARY, sizeof(ps));
	ck_assert_int_eq(ez_srqpool_stats_sz(pool, &ps.s, sizeof(ps.s) + sizeof(ps.tail)), 0);
	longer_out_ok(ps.tail, sizeof(ps.tail), ps.canary, sizeof(ps.canary), "ez_srqpool_stats_sz");
	ck_assert_uint_eq(ps.s.total, 16);

	ab_fini(&b);
	ck_assert_int_eq(ez_srqpool_free(pool), 0);
	ab_free(&b);
}
END_TEST

/* With their comp_mask bits, zeros are taken as given on a real QP: no
 * inline sends, no RNR retry, an infinite ACK timeout. */
START_TEST(meant_zeros_on_the_device)
{
	struct ez_conn_cbs cb = { .on_connect = ab_on_connect, .on_recv = ab_on_recv,
				  .on_disconnect = ab_on_disconnect };
	struct ez_conn_opts co = { .comp_mask = EZ_CONN_OPTS_INLINE_THRESHOLD |
				   EZ_CONN_OPTS_RNR_RETRY | EZ_CONN_OPTS_QP_TIMEOUT |
				   EZ_CONN_OPTS_MIN_RNR_TIMER };
	struct ez_conn_info ci, si;
	struct abench b;

	ab_init(&b);
	ck_assert_int_eq(ez_listen(b.ctx, test_addr(), "0", NULL, ab_on_request, &b, &b.listener),
			 0);
	ab_listened(&b);
	ck_assert_msg(ez_connect(b.ctx, test_addr(), b.port, &co, &cb, &b, &b.cli) == 0,
		      "ez_connect: %s", ez_errmsg());
	ab_exchange(&b, "zeros meant");
	ck_assert_int_eq(ez_conn_info(b.cli, &ci), 0);
	ck_assert_int_eq(ez_conn_info(b.srv, &si), 0);
	ck_assert_uint_eq(ci.max_inline, 0);	/* inline_threshold 0 kept */
	ck_assert_uint_gt(si.max_inline, 0);	/* the default where not asked */
	ab_fini(&b);
	ab_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("abi_future");
	TCase *tc = tcase_create("future");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, longer_structs);
	tcase_add_test(tc, meant_zeros_on_the_device);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
