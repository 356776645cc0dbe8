/* pool.c: SRQ pools on a device, with the CQ room their buffers need on their one receive CQ; ez_srqpool_free. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/log.h"
#include "base/owner.h"
#include "pool.h"
#include "srqpool/srqpool.h"
#include "device/bigbuf.h"
#include "wire/budget.h"

/* Pools are made on setup paths only; one short list for the process (the
 * pool type is srqpool's, so the extra facts live here). */
struct pool_rec {
	struct pool_rec *next;
	struct ez_srqpool *pool;
	struct ez_ctx *ctx;
	int orphan;	/* its connection is gone; buffers were still held */
	struct budget *charged;	/* an orphan's charge, released with it (pool_orphan) */
	uint64_t charge;
	struct device *dev;
	uint32_t buf_size;
	int cq_share;		/* buffers the pool may have: its room taken */
	struct device_cq_room cqr;	/* on the receive CQ of all its QPs */
	int *count;	/* made by ez_srqpool_new: its context's count of pools */
};

static struct pool_rec *pools;
static unsigned int orphans;	/* records with orphan set: pool_reap() looks only then */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;

static int pool_new(struct ez_ctx *ctx, const struct ezi_owner *owner, struct device *dev,
		    struct ibv_pd *pd, const struct ez_srqpool_opts *opts, uint32_t grow_to,
		    int *count, struct ez_srqpool **out)
{
	struct ez_srqpool_opts o = opts ? *opts : (struct ez_srqpool_opts){ 0 };
	struct pool_rec *rec;
	int ret;

	if (!o.buf_size)
		o.buf_size = 4096;
	if (!o.nbufs)
		o.nbufs = 256;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return ezi_fail(-ENOMEM, "srqpool: out of memory");
	rec->dev = dev;
	rec->ctx = ctx;
	rec->buf_size = o.buf_size;
	rec->count = count;
	/* A receive completes on the recv CQ of the QP that took it, and any
	 * QP on the SRQ may take any posted buffer: a peer that ignores its
	 * credits (nothing from the wire is trusted) consumes as many as are
	 * posted before we poll and see it. So a CQ that the pool's QPs
	 * spread over would each need room for every buffer of the pool, the
	 * pool's size once per CQ. All the pool's QPs take this one CQ as
	 * their recv CQ instead (their sends go to any CQ with room): it holds
	 * at most every buffer the pool can have, whatever the number of
	 * connections (max_bufs, the most it grows to). A connection on the
	 * pool claims only its send room. */
	rec->cq_share = (int)(o.max_bufs > o.nbufs ? o.max_bufs : o.nbufs);
	ret = device_cq_claim(dev, &rec->cqr, rec->cq_share,
			      (int)grow_to > rec->cq_share ? (int)grow_to - rec->cq_share : 0);
	if (ret) {
		free(rec);
		return ret;
	}
	ret = srqpool_create(pd ? pd : dev->pd, &o, &rec->pool);
	if (ret) {
		device_cq_unclaim(dev, &rec->cqr);
		free(rec);
		return ret;
	}
	srqpool_set_owner(rec->pool, owner);
	/* Its stats show the device's large-message cache it fetches into. */
	srqpool_set_big_report(rec->pool, bigbuf_report(dev));
	pthread_mutex_lock(&pools_lock);
	rec->next = pools;
	pools = rec;
	pthread_mutex_unlock(&pools_lock);
	if (count)
		(*count)++;
	*out = rec->pool;
	return 0;
}

int pool_make(struct ez_ctx *ctx, const struct ezi_owner *owner, struct device *dev,
	      const struct ez_srqpool_opts *opts, int *count, struct ez_srqpool **out)
{
	return pool_new(ctx, owner, dev, NULL, opts, 0, count, out);
}

int pool_create(struct ez_ctx *ctx, const struct ezi_owner *owner, struct device *dev,
		struct ibv_pd *pd, const struct ez_srqpool_opts *opts, uint32_t grow_to,
		struct ez_srqpool **out)
{
	return pool_new(ctx, owner, dev, pd, opts, grow_to, NULL, out);
}

static struct pool_rec **find(const struct ez_srqpool *pool)
{
	struct pool_rec **pp;

	for (pp = &pools; *pp; pp = &(*pp)->next)
		if ((*pp)->pool == pool)
			return pp;
	return NULL;
}

int pool_lookup(const struct ez_srqpool *pool, struct device **dev, uint32_t *buf_size,
		struct device_cq **cq)
{
	struct pool_rec **pp;
	int ret = -ENOENT;

	pthread_mutex_lock(&pools_lock);
	pp = find(pool);
	if (pp) {
		*dev = (*pp)->dev;
		*buf_size = (*pp)->buf_size;
		*cq = (*pp)->cqr.cq;
		ret = 0;
	}
	pthread_mutex_unlock(&pools_lock);
	return ret ? ezi_fail(ret, "srqpool %p was not made by ez_srqpool_new()", (const void *)pool) : 0;
}

int pool_destroy(struct ez_srqpool *pool)
{
	struct pool_rec **pp, *rec;
	int ret;

	pthread_mutex_lock(&pools_lock);
	pp = find(pool);
	rec = pp ? *pp : NULL;
	pthread_mutex_unlock(&pools_lock);
	if (!rec)
		return ezi_fail(-EINVAL, "srqpool %p was not made by ez_srqpool_new()", (void *)pool);
	ret = srqpool_destroy(pool);
	if (ret)
		return ret;
	pthread_mutex_lock(&pools_lock);
	pp = find(pool);
	*pp = rec->next;
	if (rec->orphan)
		orphans--;
	pthread_mutex_unlock(&pools_lock);
	if (rec->charged)
		budget_release(rec->charged, rec->charge);
	device_cq_unclaim(rec->dev, &rec->cqr);
	if (rec->count)
		(*rec->count)--;
	free(rec);
	return 0;
}

/* Marks pool an orphan (its charge kept) or not (the charge given back
 * now: the record is no longer reaped, and its context may go first). */
static void set_orphan(struct ez_srqpool *pool, int orphan, struct budget *budget, uint64_t charge)
{
	struct pool_rec **pp, *rec;
	struct budget *release = NULL;
	uint64_t bytes = 0;

	pthread_mutex_lock(&pools_lock);
	pp = find(pool);
	rec = pp ? *pp : NULL;
	if (rec && rec->orphan != orphan) {
		rec->orphan = orphan;
		if (orphan)
			orphans++;
		else
			orphans--;
	}
	if (rec && orphan) {
		rec->charged = budget;
		rec->charge = charge;
	} else if (rec) {
		release = rec->charged;
		bytes = rec->charge;
		rec->charged = NULL;
		rec->charge = 0;
	} else if (orphan) {
		release = budget;	/* not ours: nothing keeps the charge */
		bytes = charge;
	}
	pthread_mutex_unlock(&pools_lock);
	if (release)
		budget_release(release, bytes);
}

void pool_orphan(struct ez_srqpool *pool, struct budget *budget, uint64_t charge)
{
	set_orphan(pool, 1, budget, charge);
}

uint64_t pool_held(const struct ez_ctx *ctx)
{
	struct pool_rec *rec;
	uint64_t n = 0;

	pthread_mutex_lock(&pools_lock);
	for (rec = pools; rec; rec = rec->next)
		if (rec->ctx == ctx)
			n += srqpool_in_use(rec->pool);
	pthread_mutex_unlock(&pools_lock);
	return n;
}

/* One at a time, the lock dropped around pool_destroy() (which takes it). */
void pool_reap(struct ez_ctx *ctx)
{
	for (;;) {
		struct ez_srqpool *victim = NULL;
		struct pool_rec *rec;

		pthread_mutex_lock(&pools_lock);
		/* Called at every close: with 10,000 private pools a walk each
		 * time made closing them all quadratic. */
		for (rec = orphans ? pools : NULL; rec && !victim; rec = rec->next)
			if (rec->ctx == ctx && rec->orphan && !srqpool_in_use(rec->pool))
				victim = rec->pool;
		pthread_mutex_unlock(&pools_lock);
		if (!victim)
			return;
		if (pool_destroy(victim)) {
			ezi_log_err("conn: orphaned private srqpool not destroyed: %s", ez_errmsg());
			set_orphan(victim, 0, NULL, 0);	/* not retried: the loop ends */
		}
	}
}

int pool_grow_to(struct ez_srqpool *pool, uint32_t total)
{
	struct pool_rec **pp, *rec;
	int extra, ret;

	pthread_mutex_lock(&pools_lock);
	pp = find(pool);
	rec = pp ? *pp : NULL;
	pthread_mutex_unlock(&pools_lock);
	if (!rec)
		return ezi_fail(-EINVAL, "srqpool %p was not made by ez_srqpool_new()", (void *)pool);
	extra = (int)total - rec->cq_share;
	if (extra <= 0)
		return 0;
	/* On its own CQ: the pool's QPs are there already. The room stays
	 * taken if the growth fails (given back with the pool). */
	ret = device_cq_take(rec->dev, &rec->cqr, extra);
	if (ret)
		return ret;
	rec->cq_share += extra;
	ret = srqpool_grow_to(pool, total);
	if (ret)
		return ezi_fail(ret, "%s", srqpool_errmsg(pool));
	return 0;
}

int ez_srqpool_free(struct ez_srqpool *pool)
{
	if (pool && srqpool_check_thread(pool, "ez_srqpool_free"))
		return -EPERM;
	if (!pool)
		return 0;
	return pool_destroy(pool);
}
