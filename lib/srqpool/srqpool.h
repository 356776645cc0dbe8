/* srqpool.h: the SRQ pool's interface to the connection layer (verbs only, no ctx). */
#ifndef EZ_SRQPOOL_H
#define EZ_SRQPOOL_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "easyrdma.h"

/* Where a buffer is; a release or take in the wrong state is refused, not trusted. */
enum srqpool_buf_state {
	SRQPOOL_BUF_FREE = 0,	/* on the free list */
	SRQPOOL_BUF_POSTED,	/* its receive WR is on the SRQ */
	SRQPOOL_BUF_IN_USE,	/* taken by a completion, held by the application */
	SRQPOOL_BUF_VOID,	/* no pool's: a spare descriptor (desc.c), or a large
				 * message's given back; its handles are refused */
};

/* Why a void descriptor is void: what a handle of it is told when it comes back. */
enum srqpool_void_why {
	SRQPOOL_VOID_POOL_FREED,	/* its pool was freed (ez_srqpool_free) */
	SRQPOOL_VOID_RELEASED,		/* a large message's, released */
};

/* One receive buffer's descriptor. The application never sees its address
 * as such: srqpool_take() returns a handle that carries the buffer's
 * generation (pool.h), which ez_buf_release() and ez_buf_data() check.
 * The wr_id of its receive WR is its own address, and the
 * SRQ's srq_context is the pool, so completions and async events find both. */
struct ez_buf {
	struct ez_srqpool *pool;
	void *data;
	uint32_t size;		/* capacity */
	uint32_t len;		/* bytes received (set by srqpool_take) */
	uint32_t lkey;
	struct ez_buf *next;	/* free list */
	/* Added by srqpool: the WR is filled once at registration and only
	 * linked at refill time, so posting copies nothing. */
	uint32_t state;		/* enum srqpool_buf_state */
	uint16_t gen;		/* deliveries so far, mod 65536, never 0 once taken:
				 * the handle the application holds carries it (pool.h);
				 * kept across the descriptor's lives (desc.c) */
	uint8_t why;		/* enum srqpool_void_why, when state is VOID */
	struct ibv_sge sge;
	struct ibv_recv_wr wr;
	/* A large message fetched by rendezvous (srqpool_big_deliver): not a
	 * receive buffer; its release voids the descriptor, then calls this
	 * (with big_arg and the message's length) instead of reposting. */
	void (*big_done)(struct ez_srqpool *pool, void *arg, uint32_t len);
	void *big_arg;
};

/*
 * Descriptors' memory is type-stable (desc.c): taken from a process-wide
 * spare list, given back to it, never to malloc. A handle the application
 * keeps after its pool was freed (or its large message released) points at
 * a void descriptor: the buffer calls refuse it, naming the reason, instead
 * of reading freed memory. The generation survives, so a descriptor reused
 * by another pool does not match the old handle either.
 */
/* n descriptors, void (state VOID), into out[]: 0, or -ENOMEM/-EOPNOTSUPP
 * with the thread's message. */
int srqpool_desc_get(uint32_t n, struct ez_buf **out);
/* Back to the spare list, void for why; the caller keeps no pointer to them. */
void srqpool_desc_put(struct ez_buf *const *descs, uint32_t n, enum srqpool_void_why why);

/* Creates the SRQ on pd, registers nbufs buffers, posts them, arms srq_limit.
 * opts may be NULL (all defaults). The SRQ's srq_context is the pool. */
int srqpool_create(struct ibv_pd *pd, const struct ez_srqpool_opts *opts,
		   struct ez_srqpool **out);
/* -EBUSY while attached or while the application holds buffers (nothing is
 * freed then); otherwise destroys the SRQ, deregisters and frees. Every async
 * event naming the SRQ must have been acked (ibv_destroy_srq waits for it). */
int srqpool_destroy(struct ez_srqpool *pool);
/* The pool's PD is its own (a connection's, EZ_EXPORT_PD): srqpool_destroy
 * deallocates it after the SRQ and slabs, so that a pool the application
 * still holds buffers of keeps its PD alive as long as it lives. */
void srqpool_adopt_pd(struct ez_srqpool *pool);

struct ibv_srq *srqpool_srq(const struct ez_srqpool *pool);

/* A receive completion (wc->wr_id, wc->byte_len) took this buffer off the SRQ.
 * Call it for flushed/error completions too (then release the buffer).
 * When a limit event was handled before its completions were polled, the
 * take that brings the count down to the watermark refills (and grows) then.
 * NULL if wr_id is not a posted buffer of this pool (logged, pool unchanged). */
struct ez_buf *srqpool_take(struct ez_srqpool *pool, uint64_t wr_id, uint32_t byte_len);
/* srqpool_take() returns a handle, not the descriptor: pass it only to
 * ez_buf_data(), ez_buf_len(), ez_buf_release(). */

/* IBV_EVENT_SRQ_LIMIT_REACHED arrived: post every free buffer, grow if dry, re-arm.
 * Poll the CQs first when both are ready: "dry" is judged on the pool's count
 * of posted buffers, which a completion counts off only once it is polled.
 * The limit is re-armed even when a refill or a growth fails. */
int srqpool_on_limit_event(struct ez_srqpool *pool);

/* One connection's receive credits in a pool (embedded in the connection).
 * granted: credits the peer holds or has in flight; owed: messages received
 * whose credits are not back yet. The pool only ever returns a credit for a
 * buffer that is posted (lib/srqpool/share.c has the rules). */
struct srqpool_acct {
	struct srqpool_acct *next, *prev;	/* the pool's attached connections */
	/* Waiting for buffers to be reposted (unlinked in O(1): a return on
	 * the data path takes the connection off first). */
	struct srqpool_acct *wnext, **wpprev;
	int waiting;
	uint32_t granted;
	uint32_t owed;
	uint32_t max_granted;	/* the most this connection ever held */
	/* Credited messages received, up to 2: the window grows only from
	 * the second on, so a peer that sends one message and goes idle
	 * holds one credit, not two (share.c). */
	uint32_t used;
	/* The pool has credits for it again (buffers reposted, a share grew).
	 * May run from ez_buf_release() or an async event; must not re-enter
	 * the pool's share functions other than srqpool_credits_return(). */
	void (*kick)(struct srqpool_acct *a);
	/* Large-message memory came back while this connection may be
	 * waiting for it (srqpool_big_reserve() refused). */
	void (*big_kick)(struct srqpool_acct *a);
};

/* Connections drawing from the pool; each gets a share of its receive credits.
 * attach: 0 with *initial the credits to advertise (>= 1); -ENOSPC when the
 * pool (at its cap) cannot give one more connection a credit. private_pool:
 * the connection owns the pool alone and starts with its whole share. */
int srqpool_attach(struct ez_srqpool *pool, struct srqpool_acct *a, int private_pool,
		   uint32_t *initial);
/* The peer's outstanding credits die with its QP; freed headroom goes to the others. */
void srqpool_detach(struct ez_srqpool *pool, struct srqpool_acct *a);
/* A credited message arrived (not a credit-only one). No verbs calls. */
void srqpool_credit_used(struct ez_srqpool *pool, struct srqpool_acct *a);
/* Credits to hand back now (0..max), counted as granted: within the
 * connection's share and within the buffers posted. Reposts free buffers
 * first when they are what is missing; registers the connection to be
 * kicked when it had to wait. */
uint32_t srqpool_credits_return(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t max);
/* A return that could not be sent is taken back. */
void srqpool_credits_unreturn(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t n);
/* Half the connection's window is owed: worth a credit-only message. */
static inline int srqpool_credits_due(const struct srqpool_acct *a)
{
	return a->owed && a->owed >= a->granted;
}
uint32_t srqpool_credit_share(const struct ez_srqpool *pool);

/* ---- added by srqpool (beyond the first contract) ---- */

/* Posts every free buffer now, in linked batches (e.g. after a CQ poll batch
 * that released many buffers). 0 or a negative errno; unposted buffers stay free. */
int srqpool_flush(struct ez_srqpool *pool);

/* Adds nbufs buffers (0: one step, the initial nbufs) in a new slab, up to
 * max_bufs; raises the SRQ's max_wr first when needed. -ENOSPC at the cap,
 * -EOPNOTSUPP when the SRQ must grow and the device lacks
 * IBV_DEVICE_SRQ_RESIZE. On failure the pool is unchanged. */
int srqpool_grow(struct ez_srqpool *pool, uint32_t nbufs);
/* Raises the cap to total and grows the pool to it (a pool made small for a
 * connection not yet established, taken to its full size); the watermark
 * scales with it. 0 when the pool has total already; on failure the pool
 * and its cap are unchanged. */
int srqpool_grow_to(struct ez_srqpool *pool, uint32_t total);

/* ibv_modify_srq() after checking its rules: only IBV_SRQ_MAX_WR and
 * IBV_SRQ_LIMIT, max_wr within the device and not below the buffers
 * registered, srq_limit (not 0: the pool refills on it) below max_wr. On
 * -EINVAL/-EOPNOTSUPP nothing changed. A new srq_limit becomes the pool's
 * watermark. */
int srqpool_modify(struct ez_srqpool *pool, struct ibv_srq_attr *attr, int attr_mask);

struct ezi_owner;
/* The thread allowed to use the pool and its buffers (its context's, which
 * outlives the pool); until set, the thread that created it. */
void srqpool_set_owner(struct ez_srqpool *pool, const struct ezi_owner *owner);
/* 0 on the owner's thread, else -EPERM with the thread's ez_errmsg() naming fn. */
int srqpool_check_thread(const struct ez_srqpool *pool, const char *fn);
/* Received buffers the application holds now. */
uint32_t srqpool_in_use(const struct ez_srqpool *pool);
/* Bytes of each receive buffer (for messages about a receive that failed). */
uint32_t srqpool_buf_size(const struct ez_srqpool *pool);

/* Large messages (rendezvous): the bytes the pool's connections may hold
 * in fetched messages at once, fetching or held by the application. A
 * reservation beyond the bound is refused (-EAGAIN, the connection waits
 * and is kicked through big_kick when bytes come back), unless nothing is
 * held: one message of any size always fits. */
void srqpool_big_set_max(struct ez_srqpool *pool, uint64_t max);
int srqpool_big_reserve(struct ez_srqpool *pool, uint32_t len);
void srqpool_big_unreserve(struct ez_srqpool *pool, uint32_t len);
/* A fetched message in desc (a descriptor the caller owns, from
 * srqpool_desc_get()) goes to the application: returns its handle, counted
 * as held (srqpool_in_use). Its ez_buf_release() voids desc, then calls
 * done(pool, arg, len), which unreserves and gives the memory back. */
struct ez_buf *srqpool_big_deliver(struct ez_srqpool *pool, struct ez_buf *desc, void *data,
				   uint32_t len,
				   void (*done)(struct ez_srqpool *pool, void *arg, uint32_t len),
				   void *arg);

/* The pool's last error message (same as ez_srqpool_errmsg()). */
const char *srqpool_errmsg(const struct ez_srqpool *pool);

/* What a device keeps of registered large-message buffers once they are
 * given back (lib/device/bigbuf.c fills it): bytes kept for reuse now, and
 * bytes freed because the cache sat idle. */
struct srqpool_big_report {
	uint64_t cached;
	uint64_t trimmed;
};

/* Where ez_srqpool_stats() reads the device's cache (NULL: it reports 0). */
void srqpool_set_big_report(struct ez_srqpool *pool, const struct srqpool_big_report *rep);

#endif
