/* pool.h: the SRQ pool's private state and its device-free logic (for unit tests). */
#ifndef EZ_SRQPOOL_POOL_H
#define EZ_SRQPOOL_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "base/error.h"
#include "base/owner.h"
#include "srqpool.h"

#define SRQPOOL_DEF_BUF_SIZE 4096u
#define SRQPOOL_DEF_NBUFS 256u
#define SRQPOOL_DEF_BATCH 32u
/* Bytes of large messages (rendezvous) a pool's connections hold at once. */
#define SRQPOOL_DEF_LARGE_MAX (64ull << 20)
/* A RoCE/IB message is at most 2 GiB (port max_msg_sz). */
#define SRQPOOL_MAX_BUF_SIZE (1u << 31)
/* Buffers start on a cache line so the NIC's writes never share one. */
#define SRQPOOL_ALIGN 64u

/* What the device allows, read once from ibv_query_device(). */
struct srqpool_limits {
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint64_t max_mr_size;
	int can_resize;		/* IBV_DEVICE_SRQ_RESIZE */
	uint32_t phys_port_cnt;
};

/* The options once defaults are applied and validated. */
struct srqpool_params {
	uint32_t buf_size;
	uint32_t stride;	/* buf_size rounded up to SRQPOOL_ALIGN */
	uint32_t nbufs;
	uint32_t watermark;	/* srq_limit */
	uint32_t batch;
	uint32_t max_bufs;	/* == nbufs when the pool cannot grow */
	uint32_t grow_step;
};

struct srqpool_slab {
	struct srqpool_slab *next;
	struct ibv_mr *mr;
	void *mem;
	size_t bytes;
	uint32_t nbufs;
	/* Its descriptors, from the type-stable spare list (desc.c): they
	 * outlive the slab, void, for handles the application kept. */
	struct ez_buf *bufs[];
};

struct ez_srqpool {
	struct ibv_pd *pd;
	int owns_pd;	/* srqpool_adopt_pd: deallocated last, by srqpool_destroy */
	/* The thread that may use the pool and its buffers: its context's
	 * (srqpool_set_owner), or the creating thread's (own) until set. */
	const struct ezi_owner *owner;
	struct ezi_owner own;
	struct ibv_srq *srq;
	struct srqpool_params p;
	struct srqpool_limits lim;
	uint32_t srq_max_wr;	/* what the SRQ holds, as the device rounded it */
	struct srqpool_slab *slabs;

	struct ez_buf *free_head;
	uint32_t nfree;
	uint32_t posted;
	uint32_t in_use;
	uint32_t total;
	uint32_t attached;
	uint32_t lowest_posted;
	int grow_refused;	/* -EOPNOTSUPP seen once: not retried on every event */
	/* A limit event came while completions it counted were still unpolled
	 * (the pool's count was above the watermark): the dry check is redone
	 * by srqpool_take() once the count reaches the watermark, since the
	 * re-armed limit may never fire again on an SRQ that is already empty. */
	int recheck;

	/* Receive credits of the attached connections (share.c). */
	struct srqpool_acct *accts;
	struct srqpool_acct *waiters;
	/* Connections holding no credit that wait for a posted buffer: their
	 * floor (share.c) may come out of the reserve, so they are woken on
	 * any posted buffer, not only on room beyond the reserve. */
	struct srqpool_acct *bare_waiters;
	uint32_t bare;		/* attached connections holding no credit now */
	uint64_t floor_grants;	/* floors granted out of the reserve (others held the rest) */
	uint32_t expected;	/* expected_conns: shares sized for this many at least */
	int single;		/* a connection's private pool */
	uint32_t share;		/* credits one connection may hold */
	uint32_t reserve;	/* posted buffers never granted: credit-only and goodbye messages */
	uint64_t granted;	/* credits all attached peers hold or have in flight */
	uint64_t granted_max;
	uint32_t conn_granted_max;
	uint64_t withheld, credit_waits, rebalances;
	int waking;	/* srqpool_share_wake() is running */

	/* Large messages (srqpool_big_reserve): bytes held, the bound, and
	 * refusals; waiting: a connection was refused since the last kick. */
	uint64_t big_bytes, big_max, big_waits;
	int big_waiting;
	/* The device's cache of large-message buffers the pool's fetches
	 * draw from (a layer above keeps it and points here; NULL: none),
	 * for ez_srqpool_stats(). */
	const struct srqpool_big_report *big_report;

	uint64_t limit_events;
	uint64_t refills;
	uint64_t growths;
	uint64_t bytes_registered;

	char errmsg[EZ_ERRMSG_MAX];
};

/* The owner check of the buffer calls, inline (srqpool_check_thread() is
 * the one that formats the refusal). Every pool has an owner: its
 * creator's (own) until srqpool_set_owner(). */
static inline int srqpool_owner_ok(const struct ez_srqpool *pool)
{
	return pool->owner->token == ezi_thread_token();
}

/* desc.c: the pool of void descriptors: its owner matches no thread, so
 * the inline owner check refuses them before anything else is read. */
extern struct ez_srqpool srqpool_no_pool;
/* Voids one descriptor (why) that stays the caller's (a large message's). */
void srqpool_desc_void(struct ez_buf *b, enum srqpool_void_why why);

/* params.c: options, watermark and credit math, ibv_modify_srq rules. */
void srqpool_limits_from_device(const struct ibv_device_attr *da, struct srqpool_limits *lim);
int srqpool_resolve(const struct ez_srqpool_opts *opts, const struct srqpool_limits *lim,
		    struct srqpool_params *p);
uint32_t srqpool_watermark_pct(uint32_t nbufs, uint32_t pct);
uint32_t srqpool_fair_share(uint32_t bufs, uint32_t conns);
int srqpool_check_modify(const struct srqpool_limits *lim, uint32_t cur_max_wr,
			 uint32_t registered, const struct ibv_srq_attr *attr, int attr_mask);

/* share.c: receive credits as shares of the pool (no verbs calls). */
/* Buffers kept back from grants for messages that carry no credit. */
uint32_t srqpool_share_reserve(uint32_t total, uint32_t conns, int shared);
/* The credits one of conns connections may hold (>= 1 while conns fit). */
uint32_t srqpool_share_of(uint32_t total, uint32_t conns, uint32_t expected, int shared);
/* Can total buffers give each of conns connections a credit? */
int srqpool_share_fits(uint32_t total, uint32_t conns, int shared);
/* Posted buffers beyond the reserve that neither a grant nor the floor of a
 * connection holding no credit stands for: what more than a floor may be
 * granted from (negative: none, over by that much). */
int64_t srqpool_share_room(const struct ez_srqpool *pool);
/* Someone waits for buffers to be reposted. */
static inline int srqpool_has_waiters(const struct ez_srqpool *pool)
{
	return pool->waiters || pool->bare_waiters;
}
/* Recomputes share and reserve after attached, total or expected changed. */
void srqpool_share_update(struct ez_srqpool *pool);
int srqpool_share_attach(struct ez_srqpool *pool, struct srqpool_acct *a, int private_pool,
			 uint32_t *initial);
void srqpool_share_detach(struct ez_srqpool *pool, struct srqpool_acct *a);
uint32_t srqpool_share_give(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t max);
void srqpool_share_take_back(struct ez_srqpool *pool, struct srqpool_acct *a, uint32_t n);
void srqpool_share_unwait(struct ez_srqpool *pool, struct srqpool_acct *a);
/* Kicks the connections waiting for reposted buffers (all of them: every
 * attached connection that is owed credits). */
void srqpool_share_wake(struct ez_srqpool *pool, int all);

/* Buffer handles. What the application holds is not the descriptor's
 * address but a handle: the address with the buffer's generation in the top
 * 16 bits (user-space addresses of x86-64 and arm64 fit in 48; desc.c
 * refuses descriptors above). Every delivery bumps the generation (never
 * 0), so a handle kept after its release no longer matches once the buffer
 * holds the next message: ez_buf_release(), ez_buf_data() and ez_buf_len()
 * refuse it. A stale handle passes only if the buffer was delivered a
 * multiple of 65,536 times since. Encoding and checking cost a few ALU
 * instructions and one compare. Where pointers have 32 bits there is no
 * room: the handle is the address and only the state is checked. */
#if UINTPTR_MAX == UINT64_MAX
#define SRQPOOL_GEN_SHIFT 48
#define SRQPOOL_ADDR_MASK ((UINT64_C(1) << SRQPOOL_GEN_SHIFT) - 1)
static inline struct ez_buf *srqpool_handle(const struct ez_buf *b)
{
	return (struct ez_buf *)((uintptr_t)b | (uintptr_t)b->gen << SRQPOOL_GEN_SHIFT);
}

static inline struct ez_buf *srqpool_desc(const struct ez_buf *h)
{
	return (struct ez_buf *)((uintptr_t)h & SRQPOOL_ADDR_MASK);
}

static inline uint16_t srqpool_handle_gen(const struct ez_buf *h)
{
	return (uint16_t)((uintptr_t)h >> SRQPOOL_GEN_SHIFT);
}
#else
#define SRQPOOL_ADDR_MASK UINTPTR_MAX
static inline struct ez_buf *srqpool_handle(const struct ez_buf *b)
{
	return (struct ez_buf *)b;
}

static inline struct ez_buf *srqpool_desc(const struct ez_buf *h)
{
	return (struct ez_buf *)h;
}

static inline uint16_t srqpool_handle_gen(const struct ez_buf *h)
{
	return srqpool_desc(h)->gen;
}
#endif

/* freelist.c: the free list and the linked WR chains, no verbs calls. */
void srqpool_buf_init(struct ez_buf *b, struct ez_srqpool *pool, void *data,
		      uint32_t size, uint32_t lkey);
void srqpool_free_push(struct ez_srqpool *pool, struct ez_buf *b);
/* Pops up to max free buffers, links their WRs (state POSTED) and returns the
 * first WR, or NULL when the free list is empty; *n is the count. */
struct ibv_recv_wr *srqpool_chain(struct ez_srqpool *pool, uint32_t max, uint32_t *n);
/* ibv_post_srq_recv() refused the chain from bad on: those go back free.
 * Returns how many of the chain were posted before bad. */
uint32_t srqpool_unchain(struct ez_srqpool *pool, struct ibv_recv_wr *head,
			 struct ibv_recv_wr *bad);
/* After a release: is it time to post? (below the watermark, or a full batch) */
int srqpool_release_should_post(const struct ez_srqpool *pool);
/* After a limit event's refill: did the pool fail to lift the SRQ above the watermark? */
int srqpool_is_dry(const struct ez_srqpool *pool);
/* take/release bookkeeping; 0, or -EINVAL (message in pool->errmsg) on a wrong state. */
int srqpool_mark_taken(struct ez_srqpool *pool, struct ez_buf *b, uint32_t byte_len);
int srqpool_mark_released(struct ez_srqpool *pool, struct ez_buf *b);
/* mark_released's work on a buffer known to be held (ez_buf_release()
 * checked its handle): back on the free list. */
static inline void srqpool_release_held(struct ez_srqpool *pool, struct ez_buf *b)
{
	pool->in_use--;
	b->len = 0;
	srqpool_free_push(pool, b);
}

/* hwcounters.c: RNR NAK counters of the device, -1 where it has none. */
void srqpool_rnr_counters(const struct ez_srqpool *pool, int64_t *sent, int64_t *received);
/* One counter summed over ports 1..nports under <ibdev_path>/ports/N/hw_counters; -1 if absent. */
int64_t srqpool_read_hw_counter(const char *ibdev_path, uint32_t nports, const char *name);

#endif
