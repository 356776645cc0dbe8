/* test_credit_share.c: receive credits as shares of one pool, without a device: shares, grants, withholding, rebalancing, waiting for reposts. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "srqpool/pool.h"
#include "../checkmain.h"

/* A pool as the share logic sees it: buffers registered and posted, no SRQ. */
static struct ez_srqpool *fake_pool(uint32_t total, uint32_t expected)
{
	struct ez_srqpool *p = calloc(1, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	p->total = total;
	p->posted = total;
	p->expected = expected;
	srqpool_share_update(p);
	return p;
}

static int kicks;

static void count_kick(struct srqpool_acct *a)
{
	(void)a;
	kicks++;
}

/* The peer sends one message on a credit: the pool takes a buffer. */
static void peer_sends(struct ez_srqpool *p, struct srqpool_acct *a)
{
	ck_assert_uint_gt(a->granted, 0);
	ck_assert_uint_gt(p->posted, 0);
	p->posted--;
	srqpool_credit_used(p, a);
}

static void invariant(const struct ez_srqpool *p)
{
	uint64_t sum = 0;

	for (const struct srqpool_acct *a = p->accts; a; a = a->next) {
		sum += a->granted;
		ck_assert_uint_ge(a->granted + a->owed, 1);	/* nobody is left without a window */
	}
	ck_assert_uint_eq(sum, p->granted);
	ck_assert_uint_le(p->granted, p->total);
}

START_TEST(share_math)
{
	/* A shared pool keeps one buffer per connection (at least 8, at most
	 * an eighth of the pool) back for credit-only messages and newcomers;
	 * a private pool one. The rest is split, rounded down. */
	ck_assert_uint_eq(srqpool_share_reserve(4000, 1, 1), 8);
	ck_assert_uint_eq(srqpool_share_reserve(4000, 100, 1), 100);
	ck_assert_uint_eq(srqpool_share_reserve(4000, 1000, 1), 500);
	ck_assert_uint_eq(srqpool_share_reserve(16, 1, 0), 1);
	ck_assert_uint_eq(srqpool_share_reserve(4, 3, 1), 1);
	ck_assert_uint_eq(srqpool_share_of(16, 1, 0, 0), 15);	/* private: recv_depth - 1 */
	ck_assert_uint_eq(srqpool_share_of(8, 1, 1, 0), 7);
	ck_assert_uint_eq(srqpool_share_of(4000, 1000, 0, 1), 3);
	ck_assert_uint_eq(srqpool_share_of(4000, 1, 1000, 1), 3);	/* expected_conns sizes it */
	ck_assert_uint_eq(srqpool_share_of(4000, 1, 0, 1), 3992);
	ck_assert_uint_eq(srqpool_share_of(256, 50, 0, 1), 4);
	ck_assert_uint_eq(srqpool_share_of(1u << 20, 1, 0, 1), 0xffff);	/* 16 bits on the wire */
	ck_assert(srqpool_share_fits(256, 224, 1));
	ck_assert(!srqpool_share_fits(256, 225, 1));
	ck_assert(!srqpool_share_fits(1, 1, 0));
	ck_assert(srqpool_share_fits(2, 1, 0));
	/* Whatever the numbers, shares of the connections that fit never
	 * add up to more than the pool less its reserve, and never reach 0. */
	for (uint32_t total = 2; total <= 600; total += 7)
		for (uint32_t n = 1; n <= total; n++) {
			uint32_t s;

			if (!srqpool_share_fits(total, n, 1))
				break;
			for (uint32_t e = 0; e <= 2 * total; e += total / 3 + 1) {
				s = srqpool_share_of(total, n, e, 1);
				ck_assert_uint_ge(s, 1);
				ck_assert_uint_le((uint64_t)s * n,
						  total - srqpool_share_reserve(total, n, 1));
			}
		}
}
END_TEST

/* The case: 1,000 connections on a pool of 4,000 buffers. */
START_TEST(thousand_connections_grant_math)
{
	const uint32_t total = 4000, n = 1000;
	struct srqpool_acct *a = calloc(n, sizeof(*a));
	struct ez_srqpool *p = fake_pool(total, 0), *e = fake_pool(total, n);
	uint64_t old_sum = 0, old_first = 0;
	uint32_t init, maxg = 0;

	ck_assert_ptr_nonnull(a);
	/* Before: total / attached at attach time, minus one for credit messages. */
	for (uint32_t k = 1; k <= n; k++) {
		uint32_t c = srqpool_fair_share(total, k);

		c = c > 2 ? c - 1 : c;
		if (k == 1)
			old_first = c;
		old_sum += c;
	}
	ck_assert_uint_eq(old_first, 3999);
	ck_assert_uint_gt(old_sum, total);

	/* Now, without expected_conns: everyone starts at one credit. */
	for (uint32_t k = 0; k < n; k++) {
		ck_assert_int_eq(srqpool_share_attach(p, &a[k], 0, &init), 0);
		ck_assert_uint_eq(init, 1);
	}
	invariant(p);
	ck_assert_uint_eq(p->granted, n);
	ck_assert_uint_eq(p->share, 3);
	/* Every peer uses its window flat out for a while: each is topped up
	 * to its share and no further, the sum stays within the pool. */
	for (int round = 0; round < 6; round++) {
		for (uint32_t k = 0; k < n; k++) {
			while (a[k].granted)
				peer_sends(p, &a[k]);
			p->posted = total;	/* the application released, the pool reposted */
			srqpool_share_give(p, &a[k], 0xffff);
			ck_assert_uint_le(a[k].granted, p->share);
			ck_assert_uint_le(p->granted, p->posted - p->reserve);
		}
		invariant(p);
	}
	for (uint32_t k = 0; k < n; k++) {
		ck_assert_uint_eq(a[k].granted, 3);
		if (a[k].max_granted > maxg)
			maxg = a[k].max_granted;
	}
	ck_assert_uint_eq(maxg, 3);
	ck_assert_uint_eq(p->conn_granted_max, 3);
	ck_assert_uint_eq(p->granted_max, 3000);
	printf("1000 connections on 4000 buffers: before, the first got %llu credits and the grants "
	       "summed to %llu; now the share is %u (reserve %u), the first starts with 1, the most "
	       "any one held is %u, the sum peaked at %llu\n",
	       (unsigned long long)old_first, (unsigned long long)old_sum, p->share, p->reserve,
	       p->conn_granted_max, (unsigned long long)p->granted_max);
	for (uint32_t k = 0; k < n; k++)
		srqpool_share_detach(p, &a[k]);
	ck_assert_uint_eq(p->granted, 0);
	ck_assert_uint_eq(p->attached, 0);

	/* With expected_conns 1000: each starts with its whole share. */
	memset(a, 0, n * sizeof(*a));
	for (uint32_t k = 0; k < n; k++) {
		ck_assert_int_eq(srqpool_share_attach(e, &a[k], 0, &init), 0);
		ck_assert_uint_eq(init, 3);
	}
	ck_assert_uint_eq(e->granted, 3000);
	ck_assert_uint_le(e->granted, total - e->reserve);
	printf("with expected_conns 1000: every connection starts with %u credits, %llu in all\n",
	       init, (unsigned long long)e->granted);
	for (uint32_t k = 0; k < n; k++)
		srqpool_share_detach(e, &a[k]);
	free(a);
	free(p);
	free(e);
}
END_TEST

/* An early greedy connection that reached its whole share: newcomers still
 * get a credit, it gets nothing back until it is under its new share, and a
 * detach hands the headroom back out. */
START_TEST(withheld_then_rebalanced)
{
	struct ez_srqpool *p = fake_pool(64, 0);
	struct srqpool_acct g = { .kick = count_kick }, b = { .kick = count_kick },
			    c = { .kick = count_kick };
	uint32_t init, r0, s1, s2, s3;

	ck_assert_int_eq(srqpool_share_attach(p, &g, 0, &init), 0);
	ck_assert_uint_eq(init, 1);
	s1 = p->share;
	ck_assert_uint_eq(s1, 56);	/* 64 - 8 */
	/* Slow start: one credit, the first used comes back alone (a peer
	 * that sends one message and idles holds its floor), then each used
	 * credit comes back doubled. */
	peer_sends(p, &g);
	p->posted = 64;
	ck_assert_uint_eq(srqpool_share_give(p, &g, 0xffff), 1);
	peer_sends(p, &g);
	p->posted = 64;
	ck_assert_uint_eq(srqpool_share_give(p, &g, 0xffff), 2);
	while (g.granted < s1) {
		while (g.granted)
			peer_sends(p, &g);
		p->posted = 64;
		srqpool_share_give(p, &g, 0xffff);
	}
	ck_assert_uint_eq(g.granted, s1);
	r0 = p->rebalances;

	/* A newcomer: the share halves; its one credit comes out of the reserve. */
	ck_assert_int_eq(srqpool_share_attach(p, &b, 0, &init), 0);
	ck_assert_uint_eq(init, 1);
	s2 = p->share;
	ck_assert_uint_eq(s2, 28);
	ck_assert_uint_eq(p->rebalances, r0 + 1);
	ck_assert_uint_le(p->granted, p->posted);
	/* The greedy one uses 20: still over its share, nothing comes back. */
	for (int i = 0; i < 20; i++)
		peer_sends(p, &g);
	p->posted = 64;
	ck_assert_uint_eq(srqpool_share_give(p, &g, 0xffff), 0);
	ck_assert_uint_gt(p->withheld, 0);
	ck_assert_uint_eq(g.granted, s1 - 20);
	/* The newcomer's first credit comes back, then its second doubled,
	 * out of what was withheld. */
	peer_sends(p, &b);
	p->posted = 64;
	ck_assert_uint_eq(srqpool_share_give(p, &b, 0xffff), 1);
	peer_sends(p, &b);
	p->posted = 64;
	ck_assert_uint_eq(srqpool_share_give(p, &b, 0xffff), 2);
	/* Under its share again, the greedy one earns credits back up to it. */
	while (g.granted > 10)
		peer_sends(p, &g);
	p->posted = 64;
	ck_assert_uint_eq(srqpool_share_give(p, &g, 0xffff), s2 - 10);
	ck_assert_uint_eq(g.granted, s2);
	ck_assert_uint_le(p->granted, p->posted - p->reserve);

	/* A third: the share shrinks to (64 - 8) / 3. */
	ck_assert_int_eq(srqpool_share_attach(p, &c, 0, &init), 0);
	s3 = p->share;
	ck_assert_uint_eq(s3, 18);
	/* The greedy peer uses 15 and the newcomer one; then the newcomer
	 * leaves: the share grows back and everyone still owed credits is
	 * kicked to collect them. */
	for (int i = 0; i < 15; i++)
		peer_sends(p, &g);
	peer_sends(p, &c);
	kicks = 0;
	r0 = p->rebalances;
	srqpool_share_detach(p, &c);
	ck_assert_uint_eq(p->share, s2);
	ck_assert_uint_eq(p->rebalances, r0 + 1);
	ck_assert_int_eq(kicks, 1);	/* g is owed 15; b owes nothing */
	ck_assert_uint_eq(p->granted, g.granted + b.granted);
	srqpool_share_detach(p, &g);
	srqpool_share_detach(p, &b);
	ck_assert_uint_eq(p->granted, 0);
	free(p);
}
END_TEST

/* Credits only for buffers posted: received buffers not yet reposted hold
 * the return back, and the reposting wakes the connection. */
START_TEST(credits_wait_for_reposts)
{
	struct ez_srqpool *p = fake_pool(32, 2);
	struct srqpool_acct a = { .kick = count_kick }, b = { .kick = count_kick };
	uint32_t init;

	ck_assert_int_eq(srqpool_share_attach(p, &a, 0, &init), 0);
	ck_assert_uint_eq(init, 14);	/* (32 - 4) / 2 */
	ck_assert_int_eq(srqpool_share_attach(p, &b, 0, &init), 0);
	ck_assert_uint_eq(init, 14);
	ck_assert_int_eq(srqpool_share_room(p), 0);
	/* a's peer sends 14; the application keeps the buffers (nothing reposted). */
	for (int i = 0; i < 14; i++)
		peer_sends(p, &a);
	/* 18 posted, 14 granted, 4 reserved, and a's floor: a holds nothing. */
	ck_assert_int_eq(srqpool_share_room(p), -1);
	ck_assert_uint_eq(p->bare, 1);
	/* Its floor comes out of the reserve; the rest waits. */
	ck_assert_uint_eq(srqpool_share_give(p, &a, 0xffff), 1);
	ck_assert_uint_eq(p->floor_grants, 1);
	ck_assert_uint_eq(p->bare, 0);
	ck_assert(a.waiting);
	ck_assert_ptr_eq(p->waiters, &a);
	ck_assert_uint_eq(p->credit_waits, 1);
	/* 6 come back to the SRQ: a gets 5 of them (the reserve lent one
	 * for its floor), and waits for more. */
	p->posted += 6;
	kicks = 0;
	srqpool_share_wake(p, 0);
	ck_assert_int_eq(kicks, 1);
	ck_assert_ptr_null(p->waiters);
	ck_assert_uint_eq(srqpool_share_give(p, &a, 0xffff), 5);
	ck_assert_uint_le(p->granted, p->posted - p->reserve);
	ck_assert(a.waiting);
	/* Detaching a waiter takes it off the list. */
	srqpool_share_detach(p, &a);
	ck_assert_ptr_null(p->waiters);
	srqpool_share_detach(p, &b);
	free(p);
}
END_TEST

/* Several waiters: one taken off in the middle (a return on the data path
 * does that first), the rest kicked in turn while room is left. */
START_TEST(waiters_list)
{
	struct ez_srqpool *p = fake_pool(64, 3);
	struct srqpool_acct a[3];
	uint32_t init;

	memset(a, 0, sizeof(a));
	for (int i = 0; i < 3; i++) {
		a[i].kick = count_kick;
		ck_assert_int_eq(srqpool_share_attach(p, &a[i], 0, &init), 0);
		ck_assert_uint_eq(init, 18);	/* (64 - 8) / 3 */
	}
	/* Every peer uses all its credits; the application holds the buffers. */
	for (int i = 0; i < 3; i++) {
		while (a[i].granted)
			peer_sends(p, &a[i]);
		/* 64 posted - 54 granted - 8 reserved: the first gets 2, the
		 * others their floor of 1 out of the reserve. */
		ck_assert_uint_eq(srqpool_share_give(p, &a[i], 0xffff), i ? 1 : 2);
		ck_assert(a[i].waiting);
	}
	srqpool_share_unwait(p, &a[1]);
	ck_assert(!a[1].waiting);
	ck_assert_ptr_eq(p->waiters, &a[2]);
	ck_assert_ptr_eq(a[2].wnext, &a[0]);
	p->posted += 40;
	kicks = 0;
	srqpool_share_wake(p, 0);	/* count_kick takes nothing: both are kicked */
	ck_assert_int_eq(kicks, 2);
	ck_assert_ptr_null(p->waiters);
	for (int i = 0; i < 3; i++)
		srqpool_share_detach(p, &a[i]);
	free(p);
}
END_TEST

/* A pool too small for one more connection says so; a newcomer when every
 * posted buffer is granted is refused rather than over-granted. */
START_TEST(attach_refusals)
{
	struct ez_srqpool *p = fake_pool(4, 0);
	struct srqpool_acct a[4] = { 0 };
	uint32_t init;

	ck_assert_int_eq(srqpool_share_attach(p, &a[0], 0, &init), 0);
	ck_assert_int_eq(srqpool_share_attach(p, &a[1], 0, &init), 0);
	ck_assert_int_eq(srqpool_share_attach(p, &a[2], 0, &init), 0);
	ck_assert_int_eq(srqpool_share_attach(p, &a[3], 0, &init), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(p->errmsg, "cannot give 4 connections a receive credit each"));
	ck_assert_uint_eq(p->attached, 3);
	srqpool_share_detach(p, &a[2]);
	/* The application holds 2 of 4 buffers; the 2 posted are granted. */
	p->posted = 2;
	ck_assert_int_eq(srqpool_share_attach(p, &a[2], 0, &init), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(p->errmsg, "all 2 posted buffers are granted"));
	ck_assert_uint_eq(p->attached, 2);
	ck_assert_uint_le(p->granted, p->posted);
	free(p);
}
END_TEST

/* Random traffic over 50 connections with attaches and detaches: the sum of
 * grants never exceeds the posted buffers less the reserve, except by the
 * single credits newcomers took out of the reserve. */
START_TEST(random_traffic_invariant)
{
	enum { N = 50 };
	struct ez_srqpool *p = fake_pool(256, 0);
	struct srqpool_acct a[N];
	int on[N] = { 0 };
	uint32_t init, held = 0;

	memset(a, 0, sizeof(a));
	srand(7);
	for (int step = 0; step < 200000; step++) {
		int k = rand() % N, op = rand() % 100;

		if (!on[k]) {
			if (op < 5 && srqpool_share_attach(p, &a[k], 0, &init) == 0)
				on[k] = 1;
			continue;
		}
		if (op < 1) {
			srqpool_share_detach(p, &a[k]);
			on[k] = 0;
		} else if (op < 60) {
			if (a[k].granted && p->posted) {
				peer_sends(p, &a[k]);
				held++;
			}
		} else if (op < 80) {
			if (held) {	/* released and reposted */
				held--;
				p->posted++;
			}
		} else {
			if (srqpool_share_give(p, &a[k], 0xffff))
				ck_assert_uint_le(a[k].granted, p->share);
			ck_assert_uint_le(p->granted + p->reserve, p->posted + p->attached);
		}
		ck_assert_uint_le(p->granted, p->posted);
		ck_assert_uint_le(p->posted + held, p->total);
		if (step % 64 == 0) {
			uint32_t bare = 0;

			for (int j = 0; j < N; j++)
				bare += on[j] && !a[j].granted;
			ck_assert_uint_eq(p->bare, bare);
		}
	}
	for (int k = 0; k < N; k++)
		if (on[k])
			srqpool_share_detach(p, &a[k]);
	ck_assert_uint_eq(p->granted, 0);
	free(p);
}
END_TEST

/* Issue 22's stall, without a device: 200 connections attach to a pool of
 * 270; the first 37 send two messages right away and earn a second
 * credit while the share is large, the others send one once all are
 * attached (share 1). Then all go idle and keep what they hold (credits are not
 * revoked): every posted buffer beyond the reserve is granted, as
 * test_pool_share measured on rxe (237 of 270). A connection attached last
 * ping-pongs: its peer uses its one credit, and the echo must carry one
 * back every time. Before the floors the first return found no room and
 * waited for idle peers to send: 1 message, then nothing. */
START_TEST(floor_beside_hoarders)
{
	enum { IDLE = 200, PINGS = 1000 };
	const uint32_t total = IDLE + IDLE / 4 + 20;
	struct ez_srqpool *p = fake_pool(total, 0);
	struct srqpool_acct *a = calloc(IDLE, sizeof(*a)), busy = { .kick = count_kick };
	uint32_t init, echoed = 0;
	uint64_t held = 0;

	ck_assert_ptr_nonnull(a);
	for (int k = 0; k < IDLE; k++) {
		a[k].kick = count_kick;
		ck_assert_int_eq(srqpool_share_attach(p, &a[k], 0, &init), 0);
		if (k < 37) {
			for (uint32_t m = 1; m <= 2; m++) {
				peer_sends(p, &a[k]);
				p->posted++;	/* released and reposted */
				ck_assert_uint_eq(srqpool_share_give(p, &a[k], 0xffff), m);
			}
		}
	}
	for (int k = 37; k < IDLE; k++) {
		peer_sends(p, &a[k]);
		p->posted++;
		ck_assert_uint_eq(srqpool_share_give(p, &a[k], 0xffff), 1);
	}
	for (int k = 0; k < IDLE; k++)
		held += a[k].granted;
	ck_assert_uint_eq(p->share, 1);		/* (270 - 33) / 200 */
	ck_assert_uint_eq(p->reserve, 33);
	/* The early ones hold more than their share now: no room is left
	 * beyond the reserve, and only their peers' sends could make some. */
	ck_assert_uint_eq(held, total - p->reserve);
	ck_assert_int_eq(srqpool_share_room(p), 0);
	ck_assert_int_eq(srqpool_share_attach(p, &busy, 0, &init), 0);
	ck_assert_uint_eq(init, 1);
	for (int i = 0; i < PINGS; i++) {
		peer_sends(p, &busy);
		p->posted++;
		if (srqpool_share_give(p, &busy, 0xffff) != 1)
			break;
		echoed++;
		ck_assert_uint_le(p->granted, p->posted);
	}
	ck_assert_msg(echoed == PINGS, "beside %d idle connections holding %llu credits on %u "
		      "buffers the busy one got a credit back %u times of %d", IDLE,
		      (unsigned long long)held, total, echoed, PINGS);
	ck_assert_uint_eq(p->floor_grants, PINGS);
	printf("floor beside hoarders: %d idle connections hold %llu credits of %u buffers "
	       "(share %u, reserve %u); the busy one got its floor back %u times of %d, all out "
	       "of the reserve\n", IDLE, (unsigned long long)held, total, p->share, p->reserve,
	       echoed, PINGS);
	srqpool_share_detach(p, &busy);
	for (int k = 0; k < IDLE; k++)
		srqpool_share_detach(p, &a[k]);
	ck_assert_uint_eq(p->granted, 0);
	ck_assert_uint_eq(p->bare, 0);
	free(a);
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("credit_share");
	TCase *tc = tcase_create("share");

	/* random_traffic_invariant's 200,000 steps take 0.5 s of CPU, but more
	 * than Check's default 4 s of wall time on a loaded 2-core host
	 * (make -j2 check next to test VMs): the bound is for hangs only. */
	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, share_math);
	tcase_add_test(tc, thousand_connections_grant_math);
	tcase_add_test(tc, withheld_then_rebalanced);
	tcase_add_test(tc, credits_wait_for_reposts);
	tcase_add_test(tc, waiters_list);
	tcase_add_test(tc, attach_refusals);
	tcase_add_test(tc, random_traffic_invariant);
	tcase_add_test(tc, floor_beside_hoarders);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
