/* test_srqpool.c: the SRQ pool's logic without a device: options, watermark and credit math, modify rules, free list and WR chains, void descriptors. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "srqpool/pool.h"
#include "../checkmain.h"

/* Limits like rxe's (max_srq_wr 16384 there; smaller here to hit the bound). */
static const struct srqpool_limits lim = {
	.max_srq = 1024, .max_srq_wr = 4096, .max_srq_sge = 27,
	.max_mr_size = 1ull << 30, .can_resize = 1, .phys_port_cnt = 1,
};

#define ck_errmsg_has(s) ck_assert_msg(strstr(ez_errmsg(), s), "message \"%s\" lacks \"%s\"", ez_errmsg(), s)

START_TEST(defaults_for_null_and_zero)
{
	struct srqpool_params p;
	struct ez_srqpool_opts o;

	ck_assert_int_eq(srqpool_resolve(NULL, &lim, &p), 0);
	ck_assert_uint_eq(p.buf_size, 4096);
	ck_assert_uint_eq(p.stride, 4096);
	ck_assert_uint_eq(p.nbufs, 256);
	ck_assert_uint_eq(p.watermark, 64);	/* nbufs / 4 */
	ck_assert_uint_eq(p.batch, 32);
	ck_assert_uint_eq(p.max_bufs, 256);	/* no growth */
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), 0);
	ck_assert_uint_eq(p.nbufs, 256);
	ck_assert_uint_eq(p.watermark, 64);
}
END_TEST

START_TEST(values_given_are_kept)
{
	struct ez_srqpool_opts o = { .buf_size = 1000, .nbufs = 64, .low_watermark = 16,
				     .refill_batch = 8, .max_bufs = 512 };
	struct srqpool_params p;

	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), 0);
	ck_assert_uint_eq(p.buf_size, 1000);
	ck_assert_uint_eq(p.stride, 1024);	/* cache-line multiple */
	ck_assert_uint_eq(p.nbufs, 64);
	ck_assert_uint_eq(p.watermark, 16);
	ck_assert_uint_eq(p.batch, 8);
	ck_assert_uint_eq(p.max_bufs, 512);
	ck_assert_uint_eq(p.grow_step, 64);
}
END_TEST

START_TEST(watermark_percentage)
{
	struct ez_srqpool_opts o = { .nbufs = 64, .low_watermark_pct = 25 };
	struct srqpool_params p;

	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), 0);
	ck_assert_uint_eq(p.watermark, 16);
	ck_assert_uint_eq(srqpool_watermark_pct(64, 25), 16);
	ck_assert_uint_eq(srqpool_watermark_pct(200, 99), 198);
	ck_assert_uint_eq(srqpool_watermark_pct(10, 15), 1);	/* 1.5 rounds down */
	ck_assert_uint_eq(srqpool_watermark_pct(64, 1), 1);	/* 0.64: never 0 (0 disarms) */
	ck_assert_uint_eq(srqpool_watermark_pct(4000000000u, 50), 2000000000u); /* no 32-bit overflow */
	ck_assert_uint_eq(srqpool_watermark_pct(2, 25), 1);	/* default for the smallest pool */
}
END_TEST

START_TEST(invalid_options_say_why)
{
	struct srqpool_params p;
	struct ez_srqpool_opts o;
	struct srqpool_limits nosrq = lim;

	o = (struct ez_srqpool_opts){ .nbufs = 64, .low_watermark = 64 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("low_watermark 64 must be below nbufs 64");
	o = (struct ez_srqpool_opts){ .nbufs = 64, .low_watermark = 100 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("low_watermark 100 must be below nbufs 64");
	o = (struct ez_srqpool_opts){ .nbufs = 64, .low_watermark_pct = 100 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("low_watermark_pct 100 must be below 100");
	o = (struct ez_srqpool_opts){ .nbufs = 64, .low_watermark = 8, .low_watermark_pct = 10 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("both set");
	o = (struct ez_srqpool_opts){ .nbufs = 1 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("nbufs 1");
	o = (struct ez_srqpool_opts){ .nbufs = 5000 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("nbufs 5000 exceeds the device's max_srq_wr 4096");
	o = (struct ez_srqpool_opts){ .buf_size = 0x80000001u };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("buf_size 2147483649 exceeds 2 GiB");
	o = (struct ez_srqpool_opts){ .buf_size = 1 << 20, .nbufs = 2048 }; /* 2 GiB > max_mr_size */
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("max_mr_size 1073741824");
	o = (struct ez_srqpool_opts){ .nbufs = 64, .max_bufs = 8192 };
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), -EINVAL);
	ck_errmsg_has("max_bufs 8192 exceeds the device's max_srq_wr 4096");
	nosrq.max_srq = 0;
	ck_assert_int_eq(srqpool_resolve(NULL, &nosrq, &p), -EOPNOTSUPP);
	ck_errmsg_has("the device has no SRQ");
}
END_TEST

START_TEST(batch_and_cap_edges)
{
	struct ez_srqpool_opts o = { .nbufs = 16, .low_watermark = 4, .refill_batch = 100,
				     .max_bufs = 8 };
	struct srqpool_params p;

	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), 0);
	ck_assert_uint_eq(p.batch, 16);		/* clamped to the pool */
	ck_assert_uint_eq(p.max_bufs, 16);	/* a cap below nbufs: no growth, not an error */
	o.max_bufs = 16;
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), 0);
	ck_assert_uint_eq(p.max_bufs, 16);
	o.max_bufs = 17;
	ck_assert_int_eq(srqpool_resolve(&o, &lim, &p), 0);
	ck_assert_uint_eq(p.max_bufs, 17);
}
END_TEST

START_TEST(credit_share)
{
	ck_assert_uint_eq(srqpool_fair_share(256, 50), 5);
	ck_assert_uint_eq(srqpool_fair_share(256, 1), 256);
	ck_assert_uint_eq(srqpool_fair_share(256, 0), 256);
	ck_assert_uint_eq(srqpool_fair_share(256, 256), 1);
	ck_assert_uint_eq(srqpool_fair_share(10, 20), 1);	/* floor of one credit */
	/* The shares never add up to more than the pool while each gets >= 1. */
	for (uint32_t conns = 1; conns <= 300; conns++) {
		uint32_t s = srqpool_fair_share(256, conns);

		if (conns <= 256)
			ck_assert_uint_le((uint64_t)s * conns, 256);
		ck_assert_uint_ge(s, 1);
	}
}
END_TEST

START_TEST(modify_rules)
{
	struct srqpool_limits nores = lim;
	struct ibv_srq_attr a;

	nores.can_resize = 0;
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, 0), -EINVAL);
	ck_errmsg_has("empty attr_mask");
	a.srq_limit = 16;
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, IBV_SRQ_LIMIT | (1 << 5)), -EINVAL);
	ck_errmsg_has("only IBV_SRQ_MAX_WR and IBV_SRQ_LIMIT");
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, IBV_SRQ_LIMIT), 0);
	a.srq_limit = 0;
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, IBV_SRQ_LIMIT), -EINVAL);
	ck_errmsg_has("IBV_SRQ_LIMIT 0");
	a.srq_limit = 127;
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 200, &a, IBV_SRQ_LIMIT), -EINVAL);
	ck_errmsg_has("IBV_SRQ_LIMIT 127: must be below max_wr 127");
	a.srq_limit = 64;
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, IBV_SRQ_LIMIT), -EINVAL);
	ck_errmsg_has("below the 64 buffers registered");

	a.max_wr = 256;
	ck_assert_int_eq(srqpool_check_modify(&nores, 127, 64, &a, IBV_SRQ_MAX_WR), -EOPNOTSUPP);
	ck_errmsg_has("lacks IBV_DEVICE_SRQ_RESIZE");
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, IBV_SRQ_MAX_WR), 0);
	a.max_wr = 5000;
	ck_assert_int_eq(srqpool_check_modify(&lim, 127, 64, &a, IBV_SRQ_MAX_WR), -EINVAL);
	ck_errmsg_has("above the device's max_srq_wr 4096");
	a.max_wr = 100;
	ck_assert_int_eq(srqpool_check_modify(&lim, 255, 128, &a, IBV_SRQ_MAX_WR), -EINVAL);
	ck_errmsg_has("below the 128 buffers registered");
	/* Both at once: the limit is judged against the new max_wr. */
	a.max_wr = 512;
	a.srq_limit = 300;
	ck_assert_int_eq(srqpool_check_modify(&lim, 255, 400, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), 0);
	a.max_wr = 300;
	ck_assert_int_eq(srqpool_check_modify(&lim, 511, 300, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), -EINVAL);
}
END_TEST

/* A pool with no SRQ: only the bookkeeping runs. */
#define NB 100
static struct ez_srqpool fake;
static struct ez_buf bufs[NB];
static char mem[NB][64];

static void fake_pool(uint32_t watermark, uint32_t batch)
{
	memset(&fake, 0, sizeof(fake));
	fake.p.watermark = watermark;
	fake.p.batch = batch;
	fake.p.nbufs = fake.p.max_bufs = NB;
	for (int i = NB; i-- > 0;) {
		srqpool_buf_init(&bufs[i], &fake, mem[i], sizeof(mem[i]), 0x1234);
		srqpool_free_push(&fake, &bufs[i]);
	}
	fake.total = NB;
	fake.lowest_posted = NB;
}

static uint32_t chain_len(struct ibv_recv_wr *wr)
{
	uint32_t n = 0;

	for (; wr; wr = wr->next)
		n++;
	return n;
}

START_TEST(chains_are_linked_batches)
{
	struct ibv_recv_wr *head, *wr;
	uint32_t n, posted = 0, chains = 0, i;

	fake_pool(16, 32);
	ck_assert_uint_eq(fake.nfree, NB);
	while ((head = srqpool_chain(&fake, fake.p.batch, &n))) {
		ck_assert_uint_eq(chain_len(head), n);
		ck_assert_uint_le(n, 32);
		for (wr = head, i = 0; wr; wr = wr->next, i++) {
			struct ez_buf *b = (struct ez_buf *)(uintptr_t)wr->wr_id;

			/* Buffers go out in address order, each WR naming its own buffer. */
			ck_assert_ptr_eq(b, &bufs[posted + i]);
			ck_assert_uint_eq(b->state, SRQPOOL_BUF_POSTED);
			ck_assert_int_eq(wr->num_sge, 1);
			ck_assert_ptr_eq(wr->sg_list, &b->sge);
			ck_assert_uint_eq(b->sge.addr, (uintptr_t)mem[posted + i]);
			ck_assert_uint_eq(b->sge.length, 64);
			ck_assert_uint_eq(b->sge.lkey, 0x1234);
		}
		posted += n;
		chains++;
	}
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(posted, NB);
	ck_assert_uint_eq(chains, 4);	/* 32 + 32 + 32 + 4 */
	ck_assert_uint_eq(fake.nfree, 0);
	ck_assert_ptr_null(fake.free_head);
}
END_TEST

START_TEST(refused_tail_goes_back_free)
{
	struct ibv_recv_wr *head, *bad;
	uint32_t n, ok;

	fake_pool(16, 10);
	head = srqpool_chain(&fake, 10, &n);
	ck_assert_uint_eq(n, 10);
	bad = head->next->next->next;	/* the 4th WR was refused */
	ok = srqpool_unchain(&fake, head, bad);
	ck_assert_uint_eq(ok, 3);
	ck_assert_uint_eq(fake.nfree, NB - 3);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(bufs[i].state, SRQPOOL_BUF_POSTED);
	for (int i = 3; i < NB; i++)
		ck_assert_uint_eq(bufs[i].state, SRQPOOL_BUF_FREE);
	/* The free list is intact: every free buffer can be chained again, once. */
	head = srqpool_chain(&fake, NB, &n);
	ck_assert_uint_eq(n, NB - 3);
	ck_assert_uint_eq(chain_len(head), NB - 3);
	/* All refused: nothing posted. */
	fake_pool(16, 10);
	head = srqpool_chain(&fake, 10, &n);
	ck_assert_uint_eq(srqpool_unchain(&fake, head, head), 0);
	ck_assert_uint_eq(fake.nfree, NB);
}
END_TEST

START_TEST(take_release_bookkeeping)
{
	struct ibv_recv_wr *head;
	uint32_t n;

	fake_pool(16, 8);
	head = srqpool_chain(&fake, NB, &n);
	ck_assert_ptr_nonnull(head);
	fake.posted = n;
	/* Take 90: posted 10, lowest 10. */
	for (int i = 0; i < 90; i++)
		ck_assert_int_eq(srqpool_mark_taken(&fake, &bufs[i], 40), 0);
	ck_assert_uint_eq(bufs[0].len, 40);
	ck_assert_uint_eq(fake.posted, 10);
	ck_assert_uint_eq(fake.in_use, 90);
	ck_assert_uint_eq(fake.lowest_posted, 10);
	/* A byte count above the buffer is clipped, not trusted. */
	ck_assert_int_eq(srqpool_mark_taken(&fake, &bufs[90], 1000), 0);
	ck_assert_uint_eq(bufs[90].len, 64);
	/* Taking a buffer twice is refused. */
	ck_assert_int_eq(srqpool_mark_taken(&fake, &bufs[0], 1), -EINVAL);
	ck_assert_msg(strstr(fake.errmsg, "not a posted buffer"), "%s", fake.errmsg);
	ck_assert_uint_eq(fake.in_use, 91);

	/* Below the watermark: post on the first release. */
	ck_assert_int_eq(srqpool_release_should_post(&fake), 0); /* nothing free yet */
	ck_assert_int_eq(srqpool_mark_released(&fake, &bufs[0]), 0);
	ck_assert_uint_eq(fake.nfree, 1);
	ck_assert_uint_eq(fake.in_use, 90);
	ck_assert_int_eq(srqpool_release_should_post(&fake), 1);
	/* Released twice is refused and changes nothing. */
	ck_assert_int_eq(srqpool_mark_released(&fake, &bufs[0]), -EINVAL);
	ck_assert_msg(strstr(fake.errmsg, "released twice"), "%s", fake.errmsg);
	ck_assert_uint_eq(fake.nfree, 1);

	/* Above the watermark: wait for a full batch (8). */
	fake.posted = 50;
	for (int i = 1; i < 8; i++) {
		ck_assert_int_eq(srqpool_release_should_post(&fake), 0);
		ck_assert_int_eq(srqpool_mark_released(&fake, &bufs[i]), 0);
	}
	ck_assert_uint_eq(fake.nfree, 8);
	ck_assert_int_eq(srqpool_release_should_post(&fake), 1);

	/* Dry: a refill that leaves the SRQ at or below the watermark. */
	fake.posted = 16;
	ck_assert_int_eq(srqpool_is_dry(&fake), 1);
	fake.posted = 17;
	ck_assert_int_eq(srqpool_is_dry(&fake), 0);
}
END_TEST

/* Every delivery gives the buffer a new generation, never 0, and the
 * handle carries it beside the descriptor's address. */
START_TEST(handles_carry_a_generation)
{
	struct ibv_recv_wr *head;
	struct ez_buf *h1, *h2;
	uint32_t n;

	fake_pool(16, 8);
	head = srqpool_chain(&fake, NB, &n);
	ck_assert_ptr_nonnull(head);
	fake.posted = n;
	ck_assert_int_eq(srqpool_mark_taken(&fake, &bufs[3], 8), 0);
	h1 = srqpool_handle(&bufs[3]);
	ck_assert_uint_eq(bufs[3].gen, 1);
	ck_assert_ptr_eq(srqpool_desc(h1), &bufs[3]);
	ck_assert_uint_eq(srqpool_handle_gen(h1), 1);
	ck_assert_ptr_ne(h1, &bufs[3]);	/* not the raw address: a wr_id is no handle */
	ck_assert_int_eq(srqpool_mark_released(&fake, &bufs[3]), 0);
	bufs[3].state = SRQPOOL_BUF_POSTED;
	fake.posted++;
	ck_assert_int_eq(srqpool_mark_taken(&fake, &bufs[3], 8), 0);
	h2 = srqpool_handle(&bufs[3]);
	ck_assert_ptr_ne(h1, h2);
	ck_assert_ptr_eq(srqpool_desc(h2), srqpool_desc(h1));
	ck_assert_uint_eq(srqpool_handle_gen(h2), 2);
	/* The generation wraps past 0. */
	ck_assert_int_eq(srqpool_mark_released(&fake, &bufs[3]), 0);
	bufs[3].state = SRQPOOL_BUF_POSTED;
	fake.posted++;
	bufs[3].gen = 0xffff;
	ck_assert_int_eq(srqpool_mark_taken(&fake, &bufs[3], 8), 0);
	ck_assert_uint_eq(bufs[3].gen, 1);
}
END_TEST

/* ---- void descriptors: released after the pool's free --------------------- */

/* A pool of descriptors from the type-stable spare list (desc.c), with an
 * owner (this thread) and no SRQ: a release never posts (batch above all). */
#define NV 8
static struct ez_buf *vbufs[NV];

static void void_pool(void)
{
	memset(&fake, 0, sizeof(fake));
	ezi_owner_init(&fake.own);
	fake.owner = &fake.own;
	fake.p.watermark = 0;
	fake.p.batch = 1000;
	fake.p.nbufs = fake.p.max_bufs = NV;
	ck_assert_int_eq(srqpool_desc_get(NV, vbufs), 0);
	for (int i = NV; i-- > 0;) {
		ck_assert_uint_eq(vbufs[i]->state, SRQPOOL_BUF_VOID);
		srqpool_buf_init(vbufs[i], &fake, mem[i], sizeof(mem[i]), 0x1234);
		srqpool_free_push(&fake, vbufs[i]);
	}
	fake.total = NV;
}

/* Takes every buffer as a completion would; returns the handle of buffer i. */
static struct ez_buf *void_take(int i)
{
	uint32_t n;

	if (fake.nfree) {
		ck_assert_ptr_nonnull(srqpool_chain(&fake, NV, &n));
		fake.posted += n;
	}
	ck_assert_int_eq(srqpool_mark_taken(&fake, vbufs[i], 8), 0);
	return srqpool_handle(vbufs[i]);
}

START_TEST(release_after_pool_free)
{
	struct ez_buf *h;
	char want[256];

	void_pool();
	h = void_take(2);
	ck_assert_ptr_eq(ez_buf_data(h), mem[2]);
	ez_buf_release(h);
	ck_assert_uint_eq(fake.in_use, 0);
	/* What srqpool_destroy() does with its slabs' descriptors. */
	srqpool_desc_put(vbufs, NV, SRQPOOL_VOID_POOL_FREED);
	memset(&fake, 0xa5, sizeof(fake));	/* the pool is gone: nothing reads it */
	snprintf(want, sizeof(want), "ez_buf_release: buffer %p was released and its pool freed "
		 "(ez_srqpool_free); the handle is void", (void *)h);
	ez_buf_release(h);
	ck_assert_str_eq(ez_errmsg(), want);
	ez_buf_release(h);	/* and again: the same */
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_ptr_null(ez_buf_data(h));
	ck_assert_msg(strstr(ez_errmsg(), "ez_buf_data: buffer "), "%s", ez_errmsg());
	ck_assert_uint_eq(ez_buf_len(h), 0);
	ck_assert_msg(strstr(ez_errmsg(), "its pool freed"), "%s", ez_errmsg());
}
END_TEST

/* The spare list hands the descriptors to the next pool with their
 * generations: the old handle matches none of the new deliveries. */
START_TEST(reused_descriptor_keeps_its_generation)
{
	struct ez_buf *old, *cur, *d;
	uint16_t gen;

	void_pool();
	old = void_take(0);
	d = srqpool_desc(old);
	gen = d->gen;
	ez_buf_release(old);
	srqpool_desc_put(vbufs, NV, SRQPOOL_VOID_POOL_FREED);
	ck_assert_uint_eq(d->gen, gen);
	void_pool();	/* the same descriptors, last in first out */
	ck_assert_ptr_eq(vbufs[0], d);
	cur = void_take(0);
	ck_assert_uint_eq(srqpool_desc(cur)->gen, (uint16_t)(gen + 1));
	ck_assert_ptr_ne(cur, old);
	ez_buf_release(old);
	ck_assert_msg(strstr(ez_errmsg(), "stale handle"), "%s", ez_errmsg());
	ck_assert_uint_eq(fake.in_use, 1);	/* the new message is still held */
	ck_assert_ptr_eq(ez_buf_data(cur), mem[0]);
	ez_buf_release(cur);
	ck_assert_uint_eq(fake.in_use, 0);
	srqpool_desc_put(vbufs, NV, SRQPOOL_VOID_POOL_FREED);
}
END_TEST

static int done_calls;
static void *done_arg;
static uint32_t done_len;

static void big_done(struct ez_srqpool *pool, void *arg, uint32_t len)
{
	ck_assert_ptr_eq(pool, &fake);
	done_calls++;
	done_arg = arg;
	done_len = len;
}

/* A large message's descriptor: released once (done runs once), then void. */
START_TEST(large_message_released_twice)
{
	struct ez_buf *d, *h;
	char want[256];
	int arg;

	void_pool();
	ck_assert_int_eq(srqpool_desc_get(1, &d), 0);
	done_calls = 0;
	h = srqpool_big_deliver(&fake, d, mem[9], 40, big_done, &arg);
	ck_assert_uint_eq(fake.in_use, 1);
	ck_assert_ptr_eq(ez_buf_data(h), mem[9]);
	ez_buf_release(h);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_ptr_eq(done_arg, &arg);
	ck_assert_uint_eq(done_len, 40);
	ck_assert_uint_eq(fake.in_use, 0);
	ck_assert_uint_eq(d->state, SRQPOOL_BUF_VOID);
	ez_buf_release(h);
	snprintf(want, sizeof(want), "ez_buf_release: buffer %p is not held by the application "
		 "(released twice?)", (void *)h);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_uint_eq(fake.in_use, 0);
	/* Its buffer gone (bigbuf_destroy()): the descriptor stays readable. */
	srqpool_desc_put(&d, 1, SRQPOOL_VOID_RELEASED);
	ez_buf_release(h);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(done_calls, 1);
	srqpool_desc_put(vbufs, NV, SRQPOOL_VOID_POOL_FREED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("srqpool");
	TCase *opts = tcase_create("options");
	TCase *fl = tcase_create("freelist");
	TCase *vd = tcase_create("void");

	tcase_add_test(opts, defaults_for_null_and_zero);
	tcase_add_test(opts, values_given_are_kept);
	tcase_add_test(opts, watermark_percentage);
	tcase_add_test(opts, invalid_options_say_why);
	tcase_add_test(opts, batch_and_cap_edges);
	tcase_add_test(opts, credit_share);
	tcase_add_test(opts, modify_rules);
	tcase_add_test(fl, chains_are_linked_batches);
	tcase_add_test(fl, refused_tail_goes_back_free);
	tcase_add_test(fl, take_release_bookkeeping);
	tcase_add_test(fl, handles_carry_a_generation);
	tcase_add_test(vd, release_after_pool_free);
	tcase_add_test(vd, reused_descriptor_keeps_its_generation);
	tcase_add_test(vd, large_message_released_twice);
	suite_add_tcase(s, opts);
	suite_add_tcase(s, fl);
	suite_add_tcase(s, vd);
	return check_run_suite(s, CK_NORMAL);
}
