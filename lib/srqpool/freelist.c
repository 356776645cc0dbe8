/* freelist.c: the pool's free list, its linked receive-WR chains and buffer bookkeeping (no verbs calls). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "pool.h"

void srqpool_buf_init(struct ez_buf *b, struct ez_srqpool *pool, void *data,
		      uint32_t size, uint32_t lkey)
{
	/* The generation goes on from the descriptor's last life (desc.c). */
	uint16_t gen = b->gen;

	memset(b, 0, sizeof(*b));
	b->gen = gen;
	b->pool = pool;
	b->data = data;
	b->size = size;
	b->lkey = lkey;
	b->state = SRQPOOL_BUF_FREE;
	b->sge.addr = (uintptr_t)data;
	b->sge.length = size;
	b->sge.lkey = lkey;
	b->wr.wr_id = (uintptr_t)b;
	b->wr.sg_list = &b->sge;
	b->wr.num_sge = 1;
}

/* LIFO: the buffer released last is the one most likely still in cache. */
void srqpool_free_push(struct ez_srqpool *pool, struct ez_buf *b)
{
	b->state = SRQPOOL_BUF_FREE;
	b->next = pool->free_head;
	pool->free_head = b;
	pool->nfree++;
}

struct ibv_recv_wr *srqpool_chain(struct ez_srqpool *pool, uint32_t max, uint32_t *n)
{
	struct ibv_recv_wr *head = NULL, **tail = &head;
	uint32_t k = 0;

	while (k < max && pool->free_head) {
		struct ez_buf *b = pool->free_head;

		pool->free_head = b->next;
		b->next = NULL;
		b->state = SRQPOOL_BUF_POSTED;
		b->wr.next = NULL;
		*tail = &b->wr;
		tail = &b->wr.next;
		k++;
	}
	pool->nfree -= k;
	*n = k;
	return head;
}

uint32_t srqpool_unchain(struct ez_srqpool *pool, struct ibv_recv_wr *head,
			 struct ibv_recv_wr *bad)
{
	struct ibv_recv_wr *wr = head;
	uint32_t ok = 0;

	while (wr && wr != bad) {
		ok++;
		wr = wr->next;
	}
	while (wr) {
		struct ibv_recv_wr *next = wr->next;

		wr->next = NULL;
		srqpool_free_push(pool, (struct ez_buf *)(uintptr_t)wr->wr_id);
		wr = next;
	}
	return ok;
}

/* Below the watermark the limit event has fired (or is about to) and every
 * buffer counts; above it, posting one WR per release would cost one doorbell
 * per message, so releases wait for a full batch. */
int srqpool_release_should_post(const struct ez_srqpool *pool)
{
	if (!pool->nfree)
		return 0;
	/* A connection waiting for reposted buffers to return credits is
	 * worth the doorbell too. */
	return pool->posted < pool->p.watermark || pool->nfree >= pool->p.batch ||
	       srqpool_has_waiters(pool);
}

int srqpool_is_dry(const struct ez_srqpool *pool)
{
	return pool->posted <= pool->p.watermark;
}

int srqpool_mark_taken(struct ez_srqpool *pool, struct ez_buf *b, uint32_t byte_len)
{
	if (b->pool != pool || b->state != SRQPOOL_BUF_POSTED)
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -EINVAL,
				     "srqpool_take: wr_id %p is not a posted buffer of this pool "
				     "(state %u)", (void *)b, b->pool == pool ? b->state : 99u);
	b->state = SRQPOOL_BUF_IN_USE;
	/* A new delivery: handles of the earlier ones stop matching (pool.h). */
	if (!++b->gen)
		b->gen = 1;
	b->len = byte_len > b->size ? b->size : byte_len;
	b->next = NULL;
	pool->posted--;
	pool->in_use++;
	if (pool->posted < pool->lowest_posted)
		pool->lowest_posted = pool->posted;
	return 0;
}

int srqpool_mark_released(struct ez_srqpool *pool, struct ez_buf *b)
{
	if (b->state != SRQPOOL_BUF_IN_USE)
		return ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -EINVAL,
				     "ez_buf_release: buffer %p is not held by the application "
				     "(released twice?)", (void *)b);
	srqpool_release_held(pool, b);
	return 0;
}
