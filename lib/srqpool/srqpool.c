/* srqpool.c: one SRQ fed from registered slabs: create, refill on the limit event, grow, destroy. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/log.h"
#include "pool.h"

#define POOL_FAIL(pool, err, ...) ezi_fail_into((pool)->errmsg, sizeof((pool)->errmsg), err, __VA_ARGS__)

/* The thread's message (set by a helper that knows no pool) becomes the pool's too. */
static int pool_keep_error(struct ez_srqpool *pool, int err)
{
	snprintf(pool->errmsg, sizeof(pool->errmsg), "%s", ez_errmsg());
	return err;
}

/* Gives a slab's memory and registration back; its descriptors go to the
 * spare list, void (desc.c), never to malloc: handles of them may live on. */
static int slab_release(struct srqpool_slab *s, int deregister)
{
	int rc = deregister ? ibv_dereg_mr(s->mr) : 0;

	if (rc)
		ezi_log_err("srqpool: ibv_dereg_mr of a %zu-byte slab: %s", s->bytes, ez_strerror(rc));
	srqpool_desc_put(s->bufs, s->nbufs, SRQPOOL_VOID_POOL_FREED);
	free(s->mem);
	free(s);
	return rc ? -rc : 0;
}

/* Allocates and registers n buffers; the pool is not touched, so a failure
 * leaves it as it was. */
static int slab_new(struct ez_srqpool *pool, uint32_t n, struct srqpool_slab **out)
{
	struct srqpool_slab *s;
	size_t bytes = (size_t)pool->p.stride * n;
	int rc;

	s = calloc(1, sizeof(*s) + (size_t)n * sizeof(s->bufs[0]));
	if (!s)
		return ezi_fail(-ENOMEM, "srqpool: no memory for a slab of %u buffers", n);
	rc = srqpool_desc_get(n, s->bufs);
	if (rc) {
		free(s);
		return rc;
	}
	s->nbufs = n;
	s->bytes = bytes;
	rc = posix_memalign(&s->mem, 4096, bytes);
	if (rc) {
		s->mem = NULL;
		slab_release(s, 0);
		return ezi_fail(-rc, "srqpool: cannot allocate a slab of %zu bytes (%u x %u)",
				bytes, n, pool->p.stride);
	}
	/* Receives only land here: no remote access, so no rkey to leak. */
	s->mr = ibv_reg_mr(pool->pd, s->mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr) {
		rc = errno ? -errno : -ENOMEM;
		slab_release(s, 0);
		return ezi_fail(rc, "ibv_reg_mr: slab of %zu bytes (%u buffers): %s",
				bytes, n, ez_strerror(rc));
	}
	for (uint32_t i = 0; i < n; i++)
		srqpool_buf_init(s->bufs[i], pool, (char *)s->mem + (size_t)i * pool->p.stride,
				 pool->p.buf_size, s->mr->lkey);
	*out = s;
	return 0;
}

static int slab_free(struct srqpool_slab *s)
{
	return slab_release(s, 1);
}

/* Puts a slab's buffers on the free list; the pool owns it from here on. */
static void slab_adopt(struct ez_srqpool *pool, struct srqpool_slab *s)
{
	/* Pushed in reverse so buffer 0 is posted first: addresses ascend in the WR chains. */
	for (uint32_t i = s->nbufs; i-- > 0;)
		srqpool_free_push(pool, s->bufs[i]);
	s->next = pool->slabs;
	pool->slabs = s;
	pool->total += s->nbufs;
	pool->bytes_registered += s->bytes;
}

int srqpool_flush(struct ez_srqpool *pool)
{
	while (pool->nfree) {
		struct ibv_recv_wr *head, *bad = NULL;
		uint32_t n, ok;
		int rc;

		head = srqpool_chain(pool, pool->p.batch, &n);
		rc = ibv_post_srq_recv(pool->srq, head, &bad);
		if (rc) {
			ok = srqpool_unchain(pool, head, bad);
			pool->posted += ok;
			if (ok)
				pool->refills++;
			return POOL_FAIL(pool, -rc, "ibv_post_srq_recv: %u of a batch of %u WRs posted "
					 "(%u posted, %u free, SRQ max_wr %u): %s", ok, n, pool->posted,
					 pool->nfree, pool->srq_max_wr, ez_strerror(rc));
		}
		pool->posted += n;
		pool->refills++;
	}
	return 0;
}

static int pool_query_max_wr(struct ez_srqpool *pool)
{
	struct ibv_srq_attr a;
	int rc = ibv_query_srq(pool->srq, &a);

	if (rc)
		return POOL_FAIL(pool, -rc, "ibv_query_srq: %s", ez_strerror(rc));
	pool->srq_max_wr = a.max_wr;
	return 0;
}

int srqpool_modify(struct ez_srqpool *pool, struct ibv_srq_attr *attr, int attr_mask)
{
	int rc = srqpool_check_modify(&pool->lim, pool->srq_max_wr, pool->total, attr, attr_mask);

	if (rc)
		return pool_keep_error(pool, rc);
	rc = ibv_modify_srq(pool->srq, attr, attr_mask);
	if (rc)
		return POOL_FAIL(pool, -rc, "ibv_modify_srq%s%s (max_wr %u, srq_limit %u): %s",
				 attr_mask & IBV_SRQ_MAX_WR ? " IBV_SRQ_MAX_WR" : "",
				 attr_mask & IBV_SRQ_LIMIT ? " IBV_SRQ_LIMIT" : "",
				 attr->max_wr, attr->srq_limit, ez_strerror(rc));
	if (attr_mask & IBV_SRQ_LIMIT)
		pool->p.watermark = attr->srq_limit;
	/* The device rounds max_wr up; growth uses whatever room it gave. */
	if (attr_mask & IBV_SRQ_MAX_WR)
		return pool_query_max_wr(pool);
	return 0;
}

/* The limit event is one-shot (the SRQ's limit reads 0 after it fires). */
static int pool_arm(struct ez_srqpool *pool)
{
	struct ibv_srq_attr a = { .srq_limit = pool->p.watermark };

	return srqpool_modify(pool, &a, IBV_SRQ_LIMIT);
}

int srqpool_grow(struct ez_srqpool *pool, uint32_t nbufs)
{
	struct srqpool_slab *s;
	uint32_t room = pool->p.max_bufs > pool->total ? pool->p.max_bufs - pool->total : 0;
	int rc;

	if (!room)
		return POOL_FAIL(pool, -ENOSPC, "srqpool: at its cap of %u buffers (max_bufs); "
				 "senders get RNR NAKs until buffers are released", pool->p.max_bufs);
	if (!nbufs)
		nbufs = pool->p.grow_step;
	if (nbufs > room)
		nbufs = room;
	if (pool->total + nbufs > pool->srq_max_wr && !pool->lim.can_resize)
		return POOL_FAIL(pool, -EOPNOTSUPP, "srqpool: growing to %u buffers needs "
				 "IBV_SRQ_MAX_WR above %u, and the device lacks IBV_DEVICE_SRQ_RESIZE "
				 "(ibv_query_device); the pool stays at %u buffers",
				 pool->total + nbufs, pool->srq_max_wr, pool->total);
	rc = slab_new(pool, nbufs, &s);
	if (rc)
		return pool_keep_error(pool, rc);
	if (pool->total + nbufs > pool->srq_max_wr) {
		struct ibv_srq_attr a = { .max_wr = pool->total + nbufs };

		rc = srqpool_modify(pool, &a, IBV_SRQ_MAX_WR);
		if (rc) {
			slab_free(s);
			return rc;
		}
	}
	slab_adopt(pool, s);
	pool->growths++;
	ezi_log_info("srqpool: grew by %u buffers to %u (SRQ max_wr %u)", nbufs, pool->total,
		     pool->srq_max_wr);
	rc = srqpool_flush(pool);
	/* Credits are granted against posted buffers only: the new ones are
	 * headroom from here on, handed to connections that are owed. */
	srqpool_share_update(pool);
	srqpool_share_wake(pool, 1);
	return rc;
}

int srqpool_grow_to(struct ez_srqpool *pool, uint32_t total)
{
	uint32_t cap = pool->p.max_bufs, before = pool->total, wm;
	int rc;

	if (total <= pool->total)
		return 0;
	pool->p.max_bufs = total;
	rc = srqpool_grow(pool, total - pool->total);
	if (rc) {
		pool->p.max_bufs = cap > pool->total ? cap : pool->total;
		return rc;
	}
	if (pool->p.max_bufs < cap)
		pool->p.max_bufs = cap;
	/* The limit event keeps its share of the pool. */
	wm = (uint32_t)((uint64_t)pool->p.watermark * pool->total / before);
	if (wm > pool->p.watermark && wm < pool->total) {
		struct ibv_srq_attr a = { .srq_limit = wm };

		if (srqpool_modify(pool, &a, IBV_SRQ_LIMIT))
			ezi_log_warn("srqpool: watermark %u after growing to %u: %s", wm, pool->total,
				     pool->errmsg);
	}
	return 0;
}

/* Posts every free buffer, then grows if that left the SRQ at or below the watermark. */
static int pool_replenish(struct ez_srqpool *pool)
{
	int rc = srqpool_flush(pool);

	if (rc || !srqpool_is_dry(pool) || pool->total >= pool->p.max_bufs || pool->grow_refused)
		return rc;
	rc = srqpool_grow(pool, 0);
	if (rc == -EOPNOTSUPP) {
		/* Said once; the cap then behaves as if reached: RNR back-pressure. */
		ezi_log_warn("%s", pool->errmsg);
		pool->grow_refused = 1;
	}
	return rc;
}

int srqpool_on_limit_event(struct ez_srqpool *pool)
{
	int rc, arm;

	pool->limit_events++;
	rc = pool_replenish(pool);
	srqpool_share_wake(pool, 0);
	pool->recheck = !rc && !srqpool_is_dry(pool);
	arm = pool_arm(pool);
	if (arm)
		ezi_log_err("srqpool: re-arming srq_limit %u failed: %s", pool->p.watermark,
			    pool->errmsg);
	return rc ? rc : arm;
}

int srqpool_create(struct ibv_pd *pd, const struct ez_srqpool_opts *opts,
		   struct ez_srqpool **out)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr ia;
	struct ez_srqpool *pool;
	struct srqpool_slab *s;
	int rc;

	if (!pd || !out)
		return ezi_fail(-EINVAL, "srqpool_create: %s is NULL", pd ? "out" : "pd");
	*out = NULL;
	rc = ibv_query_device(pd->context, &da);
	if (rc)
		return ezi_fail(-rc, "ibv_query_device %s: %s",
				ibv_get_device_name(pd->context->device), ez_strerror(rc));
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return ezi_fail(-ENOMEM, "srqpool: no memory");
	pool->pd = pd;
	ezi_owner_init(&pool->own);
	pool->owner = &pool->own;
	pool->expected = opts ? opts->expected_conns : 0;
	pool->big_max = opts && opts->large_max_bytes ? opts->large_max_bytes : SRQPOOL_DEF_LARGE_MAX;
	srqpool_limits_from_device(&da, &pool->lim);
	rc = srqpool_resolve(opts, &pool->lim, &pool->p);
	if (rc)
		goto err_pool;

	memset(&ia, 0, sizeof(ia));
	ia.srq_context = pool;
	ia.attr.max_wr = pool->p.nbufs;
	ia.attr.max_sge = 1;
	pool->srq = ibv_create_srq(pd, &ia);
	if (!pool->srq) {
		rc = errno ? -errno : -ENOMEM;
		rc = ezi_fail(rc, "ibv_create_srq on %s (max_wr %u, max_sge 1): %s",
			      ibv_get_device_name(pd->context->device), pool->p.nbufs, ez_strerror(rc));
		goto err_pool;
	}
	rc = pool_query_max_wr(pool);
	if (rc) {
		ezi_fail(rc, "%s", pool->errmsg);
		goto err_srq;
	}
	rc = slab_new(pool, pool->p.nbufs, &s);
	if (rc)
		goto err_srq;
	slab_adopt(pool, s);
	pool->lowest_posted = pool->total;
	srqpool_share_update(pool);
	pool->rebalances = 0;
	rc = srqpool_flush(pool);
	if (!rc)
		rc = pool_arm(pool);
	if (rc) {
		ezi_fail(rc, "%s", pool->errmsg);
		goto err_slab;
	}
	*out = pool;
	return 0;

err_slab:
	/* The SRQ goes first: its WRs point into the slab. */
	if (ibv_destroy_srq(pool->srq))
		ezi_log_err("srqpool: ibv_destroy_srq after a failed create");
	pool->srq = NULL;
	slab_free(s);
	free(pool);
	return rc;
err_srq:
	if (ibv_destroy_srq(pool->srq))
		ezi_log_err("srqpool: ibv_destroy_srq after a failed create");
err_pool:
	free(pool);
	return rc;
}

int srqpool_destroy(struct ez_srqpool *pool)
{
	int rc;

	if (!pool)
		return 0;
	if (pool->attached)
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -EBUSY,
				     "ez_srqpool_free: %u connection(s) still attached; nothing freed",
				     pool->attached);
	if (pool->in_use)
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -EBUSY,
				     "ez_srqpool_free: the application still holds %u buffer(s) "
				     "(ez_buf_release them first); nothing freed", pool->in_use);
	rc = ibv_destroy_srq(pool->srq);
	if (rc)
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -rc,
				     "ibv_destroy_srq: %s (a QP still uses the SRQ?); nothing freed",
				     ez_strerror(rc));
	rc = 0;
	while (pool->slabs) {
		struct srqpool_slab *s = pool->slabs;
		int r;

		pool->slabs = s->next;
		r = slab_free(s);
		if (r && !rc)
			rc = ezi_fail(r, "ibv_dereg_mr: %s (memory freed anyway)", ez_strerror(r));
	}
	if (pool->owns_pd) {
		int r = ibv_dealloc_pd(pool->pd);

		if (r && !rc)
			rc = ezi_fail(-r, "ibv_dealloc_pd (a connection's own PD): %s (still in use?)",
				      ez_strerror(r));
	}
	free(pool);
	return rc;
}

void srqpool_adopt_pd(struct ez_srqpool *pool)
{
	pool->owns_pd = 1;
}

struct ibv_srq *srqpool_srq(const struct ez_srqpool *pool)
{
	return pool->srq;
}

struct ez_buf *srqpool_take(struct ez_srqpool *pool, uint64_t wr_id, uint32_t byte_len)
{
	struct ez_buf *b = (struct ez_buf *)(uintptr_t)wr_id;

	if (!b || srqpool_mark_taken(pool, b, byte_len)) {
		ezi_log_err("%s", b ? pool->errmsg : "srqpool_take: wr_id 0");
		return NULL;
	}
	if (pool->recheck && srqpool_is_dry(pool)) {
		pool->recheck = 0;
		if (pool_replenish(pool))
			ezi_log_err("srqpool: refill after a limit event: %s", pool->errmsg);
		srqpool_share_wake(pool, 0);
	}
	return srqpool_handle(b);
}

/* A connection that would leave too few buffers for one credit each grows
 * the pool first where it may: grants are only made against buffers that
 * are registered and posted, never against the growth cap itself. */
int srqpool_attach(struct ez_srqpool *pool, struct srqpool_acct *a, int private_pool,
		   uint32_t *initial)
{
	int rc;

	while (!srqpool_share_fits(pool->total, pool->attached + 1, !private_pool) &&
	       pool->total < pool->p.max_bufs && !pool->grow_refused) {
		rc = srqpool_grow(pool, 0);
		if (rc == -EOPNOTSUPP)
			pool->grow_refused = 1;
		if (rc)
			break;
	}
	if (pool->nfree && srqpool_flush(pool))
		ezi_log_warn("srqpool_attach: %s", pool->errmsg);
	return srqpool_share_attach(pool, a, private_pool, initial);
}

void srqpool_detach(struct ez_srqpool *pool, struct srqpool_acct *a)
{
	if (!pool->attached) {
		ezi_log_err("srqpool_detach: no connection attached");
		return;
	}
	srqpool_share_detach(pool, a);
}

/* On the data path: a flush here is the repost the credit needs (one
 * doorbell, no syscall), done only when free buffers are what is missing. */
static __attribute__((noinline)) uint32_t credits_return_now(struct ez_srqpool *pool,
							    struct srqpool_acct *a, uint32_t max)
{
	srqpool_share_unwait(pool, a);
	if (pool->nfree && srqpool_share_room(pool) < (int64_t)a->owed * 2) {
		if (srqpool_flush(pool))
			ezi_log_err("srqpool: repost before returning credits: %s", pool->errmsg);
		else if (srqpool_has_waiters(pool))
			srqpool_share_wake(pool, 0);
	}
	return srqpool_share_give(pool, a, max);
}

/* Amortized: while the peer still holds half its share, the credits wait
 * until a quarter of it is owed, so one message in share / 4 carries them
 * and one doorbell reposts that many buffers (a ping-pong returned a credit
 * on every echo, and reposted a buffer for it). The peer never runs short:
 * it holds at least half. A connection waiting for buffers is served at
 * once. This test is the whole call on most sends: no frame of its own. */
uint32_t srqpool_credits_return(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t max)
{
	if (!a->owed)
		return 0;
	if (pool->share >= 8 && !a->waiting && a->owed < pool->share / 4 &&
	    a->granted >= pool->share / 2)
		return 0;
	return credits_return_now(pool, a, max);
}

void srqpool_credits_unreturn(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t n)
{
	srqpool_share_take_back(pool, a, n);
}

uint32_t srqpool_credit_share(const struct ez_srqpool *pool)
{
	return pool->share;
}

const char *srqpool_errmsg(const struct ez_srqpool *pool)
{
	return pool ? pool->errmsg : "";
}

void srqpool_set_owner(struct ez_srqpool *pool, const struct ezi_owner *owner)
{
	pool->owner = owner;
}

int srqpool_check_thread(const struct ez_srqpool *pool, const char *fn)
{
	return ezi_owner_check(pool->owner, fn, "the context");
}

uint32_t srqpool_in_use(const struct ez_srqpool *pool)
{
	return pool->in_use;
}

/* From another thread: "" (the message is the owner's, and being written). */
const char *ez_srqpool_errmsg(const struct ez_srqpool *pool)
{
	if (pool && srqpool_check_thread(pool, "ez_srqpool_errmsg")) {
		ezi_log_err("%s", ez_errmsg());
		return "";
	}
	return srqpool_errmsg(pool);
}

void srqpool_set_big_report(struct ez_srqpool *pool, const struct srqpool_big_report *rep)
{
	pool->big_report = rep;
}

/* Filled at the library's layout, handed over at the caller's (doc/abi.md). */
int ez_srqpool_stats_sz(const struct ez_srqpool *pool, struct ez_srqpool_stats *stats,
			size_t stats_size)
{
	struct ez_srqpool_stats full, *st = &full;

	if (pool && srqpool_check_thread(pool, "ez_srqpool_stats"))
		return -EPERM;
	if (!pool || !stats)
		return ezi_fail(-EINVAL, "ez_srqpool_stats: %s is NULL", pool ? "stats" : "pool");
	memset(st, 0, sizeof(*st));
	st->posted = pool->posted;
	st->in_use = pool->in_use;
	st->free = pool->nfree;
	st->total = pool->total;
	st->lowest_posted = pool->lowest_posted;
	st->limit_events = pool->limit_events;
	st->refills = pool->refills;
	st->growths = pool->growths;
	st->bytes_registered = pool->bytes_registered;
	st->attached = pool->attached;
	st->low_watermark = pool->p.watermark;
	st->srq_max_wr = pool->srq_max_wr;
	st->max_bufs = pool->grow_refused ? pool->total : pool->p.max_bufs;
	st->expected_conns = pool->expected;
	st->credit_share = pool->share;
	st->credit_reserve = pool->reserve;
	st->credits_granted = pool->granted;
	st->credits_granted_max = pool->granted_max;
	st->conn_granted_max = pool->conn_granted_max;
	st->credits_withheld = pool->withheld;
	st->credit_waits = pool->credit_waits;
	st->rebalances = pool->rebalances;
	st->large_bytes = pool->big_bytes;
	st->large_max_bytes = pool->big_max;
	st->large_waits = pool->big_waits;
	if (pool->big_report) {
		st->large_cached_bytes = pool->big_report->cached;
		st->large_trimmed_bytes = pool->big_report->trimmed;
	}
	srqpool_rnr_counters(pool, &st->rnr_naks_sent, &st->rnr_naks_received);
	ezi_struct_out(stats, stats_size, st, sizeof(*st));
	return 0;
}

uint32_t srqpool_buf_size(const struct ez_srqpool *pool)
{
	return pool->p.buf_size;
}
