/* share.c: per-connection receive credits as shares of one pool: who may hold how many, and when they come back. */
#include "config.h"

#include <errno.h>

#include "pool.h"

/* The immediate data and the handshake carry at most 16 bits of credits. */
#define SHARE_MAX 0xffffu

/* Credit-only and goodbye messages use a receive buffer without a credit
 * (at most one of each per connection in flight), and a connection that
 * attaches while every other credit is out takes its first one from here:
 * a shared pool keeps one buffer per connection (at least 8) back, but never
 * more than an eighth of it; a private pool (one connection for ever) one. */
uint32_t srqpool_share_reserve(uint32_t total, uint32_t conns, int shared)
{
	uint32_t r = conns > 8 ? conns : 8;

	if (!shared)
		return 1;
	if (r > total / 8)
		r = total / 8;
	return r ? r : 1;
}

int srqpool_share_fits(uint32_t total, uint32_t conns, int shared)
{
	uint32_t r = srqpool_share_reserve(total, conns, shared);

	return total > r && conns <= total - r;
}

/* Rounded down, so the shares never add up to more than the buffers left
 * after the reserve; never 0, since attach refuses a connection that would
 * leave fewer buffers than connections. */
uint32_t srqpool_share_of(uint32_t total, uint32_t conns, uint32_t expected, int shared)
{
	uint32_t r = srqpool_share_reserve(total, conns, shared);
	uint32_t budget = total > r ? total - r : 0;
	uint32_t div = conns > expected ? conns : expected;
	uint32_t s;

	if (!div)
		div = 1;
	s = budget / div;
	if (!s)
		s = 1;
	return s > SHARE_MAX ? SHARE_MAX : s;
}

/* Every attached connection has a floor of one credit: one it holds, or
 * one it is owed back once its peer used it. A grant beyond the floor that
 * took the floor's buffer would leave the connection with nothing to return
 * while others hold the rest: idle peers never give credits back (they are
 * not revoked), so a busy connection beside thousands of them stalled after
 * its first message (issue 22: 10 messages in 10 s beside 10,000 idle).
 * So the floors of connections holding no credit are kept out of the room. */
int64_t srqpool_share_room(const struct ez_srqpool *pool)
{
	return (int64_t)pool->posted - (int64_t)pool->granted - (int64_t)pool->reserve -
	       (int64_t)pool->bare;
}

/* Posted buffers that no grant stands for, the reserve included. */
static int64_t unbacked(const struct ez_srqpool *pool)
{
	return (int64_t)pool->posted - (int64_t)pool->granted;
}

void srqpool_share_update(struct ez_srqpool *pool)
{
	uint32_t s = srqpool_share_of(pool->total, pool->attached, pool->expected, !pool->single);

	pool->reserve = srqpool_share_reserve(pool->total, pool->attached, !pool->single);
	if (s != pool->share) {
		pool->share = s;
		pool->rebalances++;
	}
}

static void note_grant(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t n)
{
	if (!a->granted && n)
		pool->bare--;
	a->granted += n;
	pool->granted += n;
	if (a->granted > a->max_granted)
		a->max_granted = a->granted;
	if (a->granted > pool->conn_granted_max)
		pool->conn_granted_max = a->granted;
	if (pool->granted > pool->granted_max)
		pool->granted_max = pool->granted;
}

/* A connection holding no credit waits for any posted buffer (its floor);
 * one holding some, for room beyond the reserve and the floors. */
static void wait_for_room(struct ez_srqpool *pool, struct srqpool_acct *a)
{
	struct srqpool_acct **head = a->granted ? &pool->waiters : &pool->bare_waiters;

	pool->credit_waits++;
	if (a->waiting)
		return;
	a->waiting = 1;
	a->wnext = *head;
	if (a->wnext)
		a->wnext->wpprev = &a->wnext;
	a->wpprev = head;
	*head = a;
}

static void unlink_waiter(struct srqpool_acct *a)
{
	*a->wpprev = a->wnext;
	if (a->wnext)
		a->wnext->wpprev = a->wpprev;
	a->wnext = NULL;
	a->wpprev = NULL;
	a->waiting = 0;
}

void srqpool_share_unwait(struct ez_srqpool *pool, struct srqpool_acct *a)
{
	(void)pool;
	if (a->waiting)
		unlink_waiter(a);
}

/* A private pool's one connection, or the first expected_conns of a shared
 * pool sized with expected_conns, start with their whole share. Otherwise a
 * connection starts with one credit and earns more as its peer uses them
 * (srqpool_share_give): credits cannot be revoked, so a peer that connected
 * early and went idle must not sit on the share of those that come later. */
int srqpool_share_attach(struct ez_srqpool *pool, struct srqpool_acct *a, int private_pool,
			 uint32_t *initial)
{
	int64_t room;
	uint32_t init;

	if (pool->attached && private_pool)
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -EBUSY,
				     "srqpool_attach: a private pool already has its connection");
	if (!srqpool_share_fits(pool->total, pool->attached + 1, !pool->single && !private_pool))
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -ENOSPC,
				     "srqpool_attach: a pool of %u buffers (%u kept for credit-only "
				     "messages) cannot give %u connections a receive credit each",
				     pool->total, srqpool_share_reserve(pool->total, pool->attached + 1,
									!private_pool),
				     pool->attached + 1);
	pool->attached++;
	pool->single = private_pool;
	srqpool_share_update(pool);
	room = srqpool_share_room(pool);
	init = private_pool || pool->expected ? pool->share : 1;
	if (room < (int64_t)init)
		init = room > 0 ? (uint32_t)room : 0;
	if (!init) {
		/* Every posted buffer beyond the reserve is granted to peers that
		 * have not used it yet: the newcomer's one credit comes out of the
		 * reserve, while a posted buffer is left that nobody holds. */
		if ((int64_t)pool->posted - (int64_t)pool->granted < 1) {
			pool->attached--;
			pool->single = 0;
			srqpool_share_update(pool);
			return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -ENOSPC,
					     "srqpool_attach: all %u posted buffers are granted as "
					     "credits to %u connections (%u held by the application); "
					     "set expected_conns to keep shares for later connections",
					     pool->posted, pool->attached, pool->in_use);
		}
		init = 1;
	}
	a->granted = 0;
	a->owed = 0;
	a->max_granted = 0;
	a->used = 0;
	a->waiting = 0;
	a->wnext = NULL;
	a->wpprev = NULL;
	pool->bare++;	/* init >= 1: note_grant() takes it off again */
	note_grant(pool, a, init);
	a->prev = NULL;
	a->next = pool->accts;
	if (pool->accts)
		pool->accts->prev = a;
	pool->accts = a;
	*initial = init;
	return 0;
}

void srqpool_share_detach(struct ez_srqpool *pool, struct srqpool_acct *a)
{
	uint32_t share = pool->share;

	srqpool_share_unwait(pool, a);
	if (a->prev)
		a->prev->next = a->next;
	else if (pool->accts == a)
		pool->accts = a->next;
	if (a->next)
		a->next->prev = a->prev;
	a->next = a->prev = NULL;
	pool->granted -= a->granted < pool->granted ? a->granted : pool->granted;
	if (!a->granted && pool->bare)
		pool->bare--;
	a->granted = 0;
	a->owed = 0;
	if (pool->attached)
		pool->attached--;
	if (!pool->attached)
		pool->single = 0;
	srqpool_share_update(pool);
	/* The leaver's credits are headroom for those waiting for room; only
	 * a larger share is news to every connection that is owed (kicking
	 * them all at every close made closing n connections O(n^2): 10,000
	 * on one pool, issue 22). */
	srqpool_share_wake(pool, pool->share > share);
}

/* Each credit the peer used comes back with one more while its window is
 * under the share (a window doubles per round trip while it is used), from
 * its second message on, so a busy connection reaches its share quickly and
 * one that sent a message and went idle holds its floor: credits given to
 * peers that then idle stay theirs, and beside thousands of them the pool
 * had nothing left for the busy ones (issue 22).
 * A connection over its share (the share shrank when others attached) gets
 * nothing back until its peer has used the excess. */
uint32_t srqpool_share_give(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t max)
{
	uint64_t want, got;
	int64_t room;

	if (!a->owed)
		return 0;
	if (a->granted >= pool->share) {
		pool->withheld++;
		if (a->owed > pool->share)
			a->owed = pool->share;
		return 0;
	}
	want = (uint64_t)a->owed * (a->used > 1 ? 2 : 1);
	if (want > pool->share - a->granted)
		want = pool->share - a->granted;
	if (want > max)
		want = max;
	room = srqpool_share_room(pool);
	if (!a->granted)
		room++;		/* its own floor is one of the bare ones' */
	got = want;
	if (room < (int64_t)want) {
		got = room > 0 ? (uint64_t)room : 0;
		/* The floor comes out of the reserve when others hold the
		 * rest, as a newcomer's first credit does (attach), but only
		 * out of its first half: the other half stays for
		 * credit-only messages and newcomers, so floors of idle
		 * peers cannot drain it (test_pool_share refused the
		 * 153rd of 200 connections when they could). */
		if (!got && !a->granted && want && unbacked(pool) > pool->reserve / 2) {
			got = 1;
			pool->floor_grants++;
		}
	}
	note_grant(pool, a, (uint32_t)got);
	if (got < want)
		wait_for_room(pool, a);	/* after the grant: which list depends on it */
	want = got;
	a->owed = a->owed > want ? a->owed - (uint32_t)want : 0;
	/* Demand beyond the share is forgotten, not banked. */
	if (a->owed > pool->share)
		a->owed = pool->share;
	return (uint32_t)want;
}

void srqpool_credit_used(struct ez_srqpool *pool, struct srqpool_acct *a)
{
	/* A peer sending beyond its credits is not believed: the counts
	 * stay within what was granted. */
	if (a->granted) {
		a->granted--;
		pool->granted--;
		if (!a->granted)
			pool->bare++;
	}
	if (a->used < 2)
		a->used++;
	a->owed++;
}

void srqpool_share_take_back(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t n)
{
	if (n > a->granted)
		n = a->granted;
	if (n && n == a->granted)
		pool->bare++;
	a->granted -= n;
	pool->granted -= n;
	a->owed += n;
}

/* Waiters are popped one at a time while posted buffers are left to grant:
 * a kicked connection that still falls short waits again, but only after
 * taking what room there was, so the loop ends. A kick may flush and wake
 * again: the nested call returns, this loop sees the new room. */
void srqpool_share_wake(struct ez_srqpool *pool, int all)
{
	struct srqpool_acct *a, *next;

	if (pool->waking)
		return;
	pool->waking = 1;
	if (all)
		for (a = pool->accts; a; a = next) {
			next = a->next;
			if (a->owed && a->kick) {
				srqpool_share_unwait(pool, a);
				a->kick(a);
			}
		}
	/* Floors first: a kicked one takes a posted buffer or waits again
	 * with none left, so this loop ends too. */
	while (unbacked(pool) > pool->reserve / 2 && (a = pool->bare_waiters)) {
		unlink_waiter(a);
		if (a->kick)
			a->kick(a);
		if (pool->bare_waiters == a)
			break;	/* nothing taken: waits again at the head */
	}
	while (srqpool_share_room(pool) > 0 && (a = pool->waiters)) {
		unlink_waiter(a);
		if (a->kick)
			a->kick(a);
	}
	pool->waking = 0;
}
