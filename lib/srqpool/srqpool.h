/* srqpool.h: the SRQ pool's interface to the connection layer (verbs only, no ctx). */
#ifndef EZ_SRQPOOL_H
#define EZ_SRQPOOL_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "easyrdma.h"

/* One receive buffer. The wr_id of its receive WR is its own address, and the
 * SRQ's srq_context is the pool, so completions and async events find both. */
struct ez_buf {
	struct ez_srqpool *pool;
	void *data;
	uint32_t size;		/* capacity */
	uint32_t len;		/* bytes received (set by srqpool_take) */
	uint32_t lkey;
	struct ez_buf *next;	/* free list */
};

/* Creates the SRQ on pd, registers nbufs buffers, posts them, arms srq_limit. */
int srqpool_create(struct ibv_pd *pd, const struct ez_srqpool_opts *opts,
		   struct ez_srqpool **out);
/* -EBUSY while attached; otherwise destroys the SRQ, deregisters and frees. */
int srqpool_destroy(struct ez_srqpool *pool);

struct ibv_srq *srqpool_srq(const struct ez_srqpool *pool);

/* A receive completion (wc->wr_id, wc->byte_len) took this buffer off the SRQ. */
struct ez_buf *srqpool_take(struct ez_srqpool *pool, uint64_t wr_id, uint32_t byte_len);

/* IBV_EVENT_SRQ_LIMIT_REACHED arrived: post every free buffer, grow if dry, re-arm. */
int srqpool_on_limit_event(struct ez_srqpool *pool);

/* Connections drawing from the pool; each gets a fair share of receive credits. */
int srqpool_attach(struct ez_srqpool *pool);
void srqpool_detach(struct ez_srqpool *pool);
uint32_t srqpool_credits_per_conn(const struct ez_srqpool *pool);

#endif
