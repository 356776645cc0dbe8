/* buf.c: the application's side of a received buffer: its handle checked, its bytes, and giving it back. */
#include "config.h"

#include <errno.h>

#include "base/log.h"
#include "pool.h"

/* A void descriptor's handle (desc.c): no pool to check the thread of or
 * to keep the message; the thread's message and the log say why. */
static struct ez_buf *refuse_void(const struct ez_buf *h, const struct ez_buf *b, const char *fn)
{
	if (b->why == SRQPOOL_VOID_RELEASED)
		ezi_fail(-EINVAL, "%s: buffer %p is not held by the application (released twice?)",
			 fn, (const void *)h);
	else
		ezi_fail(-EBADF, "%s: buffer %p was released and its pool freed (ez_srqpool_free); "
			 "the handle is void", fn, (const void *)h);
	ezi_log_err("%s", ez_errmsg());
	return NULL;
}

/* Cold: why a handle was refused, in the thread's message, the pool's (only
 * on the owner's thread: the pool is the owner's to write) and the log. */
static __attribute__((cold, noinline)) struct ez_buf *refuse(const struct ez_buf *h,
							   struct ez_buf *b, const char *fn)
{
	struct ez_srqpool *pool = b->pool;

	/* First: a void descriptor's pool is no pool (its memory may be gone). */
	if (pool == &srqpool_no_pool)
		return refuse_void(h, b, fn);
	if (srqpool_check_thread(pool, fn)) {
		ezi_log_err("%s", ez_errmsg());
		return NULL;
	}
	if (b->state != SRQPOOL_BUF_IN_USE)
		ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -EINVAL,
			      "%s: buffer %p is not held by the application (released twice?)",
			      fn, (const void *)h);
	else
		ezi_fail_into(pool->errmsg, sizeof(pool->errmsg), -ESTALE,
			      "%s: stale handle %p: its buffer was released and now holds another "
			      "message (generation %u, the handle's %u); refused, nothing changed",
			      fn, (const void *)h, b->gen, srqpool_handle_gen(h));
	ezi_log_err("%s", pool->errmsg);
	return NULL;
}

/* The descriptor of a handle the application holds now, on the pool's
 * thread; NULL (refused and logged) for a stale or released handle. The
 * descriptor is always readable (desc.c); a void one names srqpool_no_pool,
 * whose owner no thread matches: no test of its own on this path. */
static inline struct ez_buf *held(const struct ez_buf *h, const char *fn)
{
	struct ez_buf *b = srqpool_desc(h);

	if (__builtin_expect(srqpool_owner_ok(b->pool) &&
			     b->state == SRQPOOL_BUF_IN_USE && b->gen == srqpool_handle_gen(h), 1))
		return b;
	return refuse(h, b, fn);
}

void *ez_buf_data(const struct ez_buf *h)
{
	struct ez_buf *b = h ? held(h, "ez_buf_data") : NULL;

	return b ? b->data : NULL;
}

size_t ez_buf_len(const struct ez_buf *h)
{
	struct ez_buf *b = h ? held(h, "ez_buf_len") : NULL;

	return b ? b->len : 0;
}

/* Back on the free list; posted at once only when the SRQ is below its
 * watermark or a batch is full, so the common case costs no doorbell. */
void ez_buf_release(struct ez_buf *h)
{
	struct ez_srqpool *pool;
	struct ez_buf *b;

	if (!h)
		return;
	b = held(h, "ez_buf_release");
	if (!b)
		return;
	pool = b->pool;
	if (b->big_done) {
		/* A large message's memory, not a receive buffer: the descriptor
		 * is void before done() may give it back to the spare list. */
		void (*done)(struct ez_srqpool *, void *, uint32_t) = b->big_done;
		void *arg = b->big_arg;
		uint32_t len = b->len;

		srqpool_desc_void(b, SRQPOOL_VOID_RELEASED);
		pool->in_use--;
		done(pool, arg, len);
		return;
	}
	/* held() saw it in the application's hands: no second test. */
	srqpool_release_held(pool, b);
	if (!srqpool_release_should_post(pool))
		return;
	if (srqpool_flush(pool))
		ezi_log_err("ez_buf_release: %s", pool->errmsg);
	else if (srqpool_has_waiters(pool))
		srqpool_share_wake(pool, 0);
}

struct ez_buf *srqpool_big_deliver(struct ez_srqpool *pool, struct ez_buf *desc, void *data,
				   uint32_t len,
				   void (*done)(struct ez_srqpool *pool, void *arg, uint32_t len),
				   void *arg)
{
	desc->pool = pool;
	desc->data = data;
	desc->size = len;
	desc->len = len;
	desc->state = SRQPOOL_BUF_IN_USE;
	desc->big_done = done;
	desc->big_arg = arg;
	/* The descriptor is reused with its memory: the generation goes on,
	 * so a handle kept from its last message is refused. */
	if (!++desc->gen)
		desc->gen = 1;
	pool->in_use++;
	return srqpool_handle(desc);
}

void srqpool_big_set_max(struct ez_srqpool *pool, uint64_t max)
{
	pool->big_max = max;
}

int srqpool_big_reserve(struct ez_srqpool *pool, uint32_t len)
{
	if (pool->big_bytes && pool->big_bytes + len > pool->big_max) {
		if (!pool->big_waiting)
			pool->big_waits++;
		pool->big_waiting = 1;
		return -EAGAIN;
	}
	pool->big_bytes += len;
	return 0;
}

void srqpool_big_unreserve(struct ez_srqpool *pool, uint32_t len)
{
	pool->big_bytes -= len <= pool->big_bytes ? len : pool->big_bytes;
	if (!pool->big_waiting)
		return;
	pool->big_waiting = 0;
	/* Every attached connection may have a fetch waiting; each asks
	 * again in turn (and sets waiting again if it still does not fit). */
	for (struct srqpool_acct *a = pool->accts; a; a = a->next)
		if (a->big_kick)
			a->big_kick(a);
}
