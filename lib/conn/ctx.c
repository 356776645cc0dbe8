/* ctx.c: the context: its loop (lib/loop) with the rdma_cm channel and the devices' fds in it, on libev or polled. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "pool.h"
#include "device/device.h"
#include "device/mr.h"
#include "base/error.h"
#include "base/log.h"

/* A pass reads at most CM_EVENTS_PER_PASS events. Events of existing ids
 * (disconnects, establishments, replies: teardown and connections already
 * made) are handled as they are read, at least one a pass and more within
 * CM_EVENT_BUDGET_NS of the reading's start; new
 * requests wait in a ring (grown
 * from CM_REQUESTS_HELD up to CM_REQUESTS_HELD_MAX) and at most
 * CM_REQUESTS_PER_PASS of them, within CM_REQUEST_BUDGET_NS, are handed to
 * their listener after the others (cheap: ez_accept() defers the accept's
 * costly steps, a pass each, conn.c).
 * The rest waits for the next pass: the channel's fd stays readable, and
 * held requests keep the loop awake as deferred work. The ring grows rather
 * than stop the reading: the events of established connections and
 * teardowns behind a flood of requests would wait with them. Only a full
 * ring at its maximum stops it (the kernel's backlog then holds the flood). */
/* Requests wait in the ring (no handshake deadline runs there) while this
 * many accepts are in their steps (a pass each, conn.c): handed out faster,
 * 1,000 requests would queue 1,000 pool steps, and the last ones' deadlines
 * (handshake_timeout_ms from ez_accept()) would pass in the queue. */
#define CM_ACCEPTS_IN_STEPS 8
#define CM_EVENTS_PER_PASS 32
#define CM_REQUESTS_PER_PASS 32
#define CM_REQUESTS_HELD 64
#define CM_REQUESTS_HELD_MAX 4096
#define CM_REQUEST_BUDGET_NS (10 * 1000000ull)
#define CM_EVENT_BUDGET_NS (10 * 1000000ull)

struct cm_held {
	struct cm_event ev;
	struct cm_handler *h;	/* the listener's, NULL once it closed */
};

/* Copies what the handlers need into ev; the handler, read before the ack
 * (an id handed to the reaper, its context NULL, may be freed on the
 * reaper's thread as soon as its event is acked). */
static struct cm_handler *cm_copy(struct rdma_cm_event *raw, struct cm_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = raw->event;
	ev->status = raw->status;
	ev->id = raw->id;
	ev->listen_id = raw->listen_id;
	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST || ev->type == RDMA_CM_EVENT_CONNECT_RESPONSE ||
	    ev->type == RDMA_CM_EVENT_ESTABLISHED)
		ev->qp_num = raw->param.conn.qp_num;
	if ((ev->type == RDMA_CM_EVENT_CONNECT_REQUEST ||
	     ev->type == RDMA_CM_EVENT_CONNECT_RESPONSE ||
	     ev->type == RDMA_CM_EVENT_REJECTED ||
	     ev->type == RDMA_CM_EVENT_ESTABLISHED) && raw->param.conn.private_data) {
		ev->pdata_len = raw->param.conn.private_data_len;
		memcpy(ev->pdata, raw->param.conn.private_data, ev->pdata_len);
		ev->responder_resources = raw->param.conn.responder_resources;
		ev->initiator_depth = raw->param.conn.initiator_depth;
	}
	/* A request arrives on a new id: its listener's id says whose. */
	return ev->type == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->listen_id->context : ev->id->context;
}

/* The ring of held requests twice as large, in order (0 when at its
 * maximum or out of memory: the reading stops until there is room). */
static int cm_grow(struct ez_ctx *ctx)
{
	int cap = ctx->cm_cap * 2, i;
	struct cm_held *n;

	if (cap > CM_REQUESTS_HELD_MAX)
		return 0;
	n = malloc((size_t)cap * sizeof(*n));
	if (!n)
		return 0;
	for (i = 0; i < ctx->cm_nheld; i++)
		n[i] = ctx->cm_held[(ctx->cm_head + i) % ctx->cm_cap];
	free(ctx->cm_held);
	ctx->cm_held = n;
	ctx->cm_head = 0;
	ctx->cm_cap = cap;
	return 1;
}

/* An event of a request still held: its new id took the listener's
 * context from librdmacm, so the listener would only log it. A peer that
 * gave up (rejected, timed out, gone) leaves a request nobody should
 * answer: it is dropped at its turn, never shown to the application. 1 if
 * the event was one of a held request's. */
static int cm_held_event(struct ez_ctx *ctx, const struct cm_event *ev)
{
	for (int i = 0; i < ctx->cm_nheld; i++) {
		struct cm_held *c = &ctx->cm_held[(ctx->cm_head + i) % ctx->cm_cap];

		if (c->ev.id != ev->id)
			continue;
		ezi_log_debug("a held connect request got %s: dropped", rdma_event_str(ev->type));
		if (ev->type != RDMA_CM_EVENT_ESTABLISHED && c->h) {
			c->ev.id->context = NULL;
			c->h = NULL;
		}
		return 1;
	}
	return 0;
}

/* Reads up to CM_EVENTS_PER_PASS events, acking each before it is handled:
 * rdma_destroy_id() waits for the acks of the events it has reported, so
 * nothing may stay unacked. */
static void cm_read(struct ez_ctx *ctx)
{
	struct rdma_cm_event *raw;
	struct cm_event ev;
	struct cm_handler *h;
	int i;

	/* The budget counts from the reading's own start, not the pass's: the
	 * deferred accept steps run first, and with the budget spent by them
	 * the channel read one event a pass, so 1,000 connects in one loop
	 * waited for their establishments (RTU) past handshake_timeout_ms. A
	 * pass is bounded all the same: at most CM_ACCEPTS_IN_STEPS steps, then
	 * this budget, then the requests'. */
	uint64_t start = loop_now_ns();

	for (i = 0; i < CM_EVENTS_PER_PASS && (i == 0 || loop_now_ns() - start < CM_EVENT_BUDGET_NS);
	     i++) {
		if (ctx->cm_nheld == ctx->cm_cap && !cm_grow(ctx))
			return;
		if (rdma_get_cm_event(ctx->ch, &raw)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				ezi_log_err("rdma_get_cm_event: %s", ez_strerror(errno));
			return;
		}
		if (ctx->handoff_hook)
			ctx->handoff_hook(ctx, CTX_HOOK_CM_EVENT);
		if (raw->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct cm_held *c = &ctx->cm_held[(ctx->cm_head + ctx->cm_nheld) %
							  ctx->cm_cap];

			c->h = cm_copy(raw, &c->ev);
			rdma_ack_cm_event(raw);
			ctx->cm_nheld++;
			continue;
		}
		h = cm_copy(raw, &ev);
		rdma_ack_cm_event(raw);
		if (ctx->cm_nheld && cm_held_event(ctx, &ev))
			continue;
		if (h) {
			uint64_t t = loop_now_ns();

			h->on_event(h, &ev);
			ctx_note_step(ctx, CTX_STEP_EVENT, t);
		}
	}
}

/* A held request whose listener closed is refused as the listener would. */
static void cm_drop_request(struct cm_held *c)
{
	/* Fails when the peer gave up first (nothing to answer). */
	if (rdma_reject(c->ev.id, NULL, 0))
		ezi_log_debug("rdma_reject: %s", ez_strerror(errno));
	if (rdma_destroy_id(c->ev.id))
		ezi_log_warn("rdma_destroy_id: %s", ez_strerror(errno));
}

static void cm_requests(struct ez_ctx *ctx)
{
	uint64_t start = loop_now_ns(), t;
	int i;

	for (i = 0; i < CM_REQUESTS_PER_PASS && ctx->cm_nheld; i++) {
		/* A copy: the handler may close the listener, which edits the ring. */
		if (ctx->naccepting >= CM_ACCEPTS_IN_STEPS)
			break;
		struct cm_held c = ctx->cm_held[ctx->cm_head];

		ctx->cm_head = (ctx->cm_head + 1) % ctx->cm_cap;
		ctx->cm_nheld--;
		t = loop_now_ns();
		if (c.h)
			c.h->on_event(c.h, &c.ev);
		else
			cm_drop_request(&c);
		if (ctx_note_step(ctx, CTX_STEP_REQUEST, t) - start > CM_REQUEST_BUDGET_NS)
			break;
	}
}

/* Once per loop pass, from the fd or from the deferred work. */
static void cm_pass(struct ez_ctx *ctx)
{
	if (ctx->cm_pass == ctx->loop.passes)
		return;
	ctx->cm_pass = ctx->loop.passes;
	cm_read(ctx);
	cm_requests(ctx);
	if (ctx->cm_nheld)
		loop_defer(&ctx->loop, &ctx->cm_more);
}

static void on_cm_channel(struct loop_watch *w)
{
	cm_pass(container_of(w, struct ez_ctx, cm_watch));
}

static void on_cm_more(struct loop_defer *d)
{
	cm_pass(container_of(d, struct ez_ctx, cm_more));
}

void ctx_listener_gone(struct ez_ctx *ctx, struct rdma_cm_id *listen_id)
{
	for (int i = 0; i < ctx->cm_nheld; i++) {
		struct cm_held *c = &ctx->cm_held[(ctx->cm_head + i) % ctx->cm_cap];

		if (c->h && c->ev.listen_id == listen_id) {
			/* Its events go nowhere now (the new id took the
			 * listener's context from librdmacm). */
			c->ev.id->context = NULL;
			c->h = NULL;
		}
	}
}

int ctx_cm_behind(const struct ez_ctx *ctx)
{
	struct pollfd p = { .fd = ctx->ch->fd, .events = POLLIN };

	return ctx->cm_nheld > 0 || poll(&p, 1, 0) > 0;
}

#define BUSY_FD_EVERY 32

int ctx_wrong_thread(const struct ez_ctx *ctx, const char *fn)
{
	if (!ctx_check_thread(ctx, fn))
		return 0;
	ezi_log_err("%s", ez_errmsg());
	return 1;
}

static int ctx_process(struct ez_ctx *ctx);

/* One pass at a time: a callback that calls ez_ctx_process() would poll the
 * CQs and run deferred work under the pass that called it (a completion
 * batch half dispatched, a connection being finished), so it is refused. */
static __attribute__((noinline)) int ctx_process_checked(struct ez_ctx *ctx)
{
	int n;

	if (ctx_check_thread(ctx, "ez_ctx_process"))
		return -EPERM;
	if (!ctx)
		return ezi_fail(-EINVAL, "ez_ctx_process: ctx is NULL");
	if (ctx->processing)
		return ezi_fail(-EBUSY, "ez_ctx_process: called from a callback of the same "
				"context (already processing); return from the callback instead");
	ctx->processing = 1;
	n = ctx_process(ctx);
	if (ctx->handoff_hook)
		ctx->handoff_hook(ctx, CTX_HOOK_PASS);
	ctx->processing = 0;
	return n;
}

/* What a short busy pass polled: dispatched as one pass (a callback that
 * calls ez_ctx_process() is refused, ctx_process_checked()). */
static __attribute__((noinline)) int ctx_dispatch(struct ez_ctx *ctx, struct ibv_wc *wc, int n)
{
	ctx->processing = 1;
	n = device_set_dispatch(&ctx->devices, wc, n);
	ctx->processing = 0;
	return n;
}

/* A busy-polling application calls this in a tight loop and most passes
 * find nothing: no deferred work, no fd due, no hand-off hook, one CQ.
 * Such a pass is the owner's check and the CQ's poll in this one frame,
 * and only a poll that found something goes on (ctx_dispatch()); every
 * other pass (and every refusal) is ctx_process_checked()'s. busy_passes
 * is counted last, so a pass that goes the long way for another reason is
 * counted there once. */
int ez_ctx_process(struct ez_ctx *ctx)
{
	struct ibv_wc wc[DEVICE_POLL_BATCH];
	struct ibv_cq *cq;
	int n;

	if (__builtin_expect(ctx && ctx->busy_fast && !ctx->processing && !ctx->handoff_hook &&
			     ctx->owner.token == ezi_thread_token() &&
			     loop_defer_list_empty(&ctx->loop.deferred) &&
			     (cq = device_set_only_cq(&ctx->devices)) &&
			     ++ctx->busy_passes < BUSY_FD_EVERY, 1)) {
		n = ibv_poll_cq(cq, DEVICE_POLL_BATCH, wc);
		if (__builtin_expect(n == 0, 1))
			return 0;
		return ctx_dispatch(ctx, wc, n);
	}
	return ctx_process_checked(ctx);
}

/* The longest pass, for ctx->stats. */
static void ctx_note_pass(struct ez_ctx *ctx, uint64_t start)
{
	uint64_t t = loop_now_ns() - start;

	ctx->stats.passes++;
	if (t > ctx->stats.max_pass_ns)
		ctx->stats.max_pass_ns = t;
}

static int ctx_process(struct ez_ctx *ctx)
{
	uint64_t t;
	int n;

	/* A busy-polling application calls this in a tight loop: the CQs come
	 * first, and the fds (CM and device events, timers) only on every
	 * BUSY_FD_EVERY-th pass, since epoll_wait() is a system call and
	 * ibv_poll_cq() is not. On a libev loop, which waits in epoll itself,
	 * every pass checks them. */
	if (ctx->busy_fast) {
		int c;

		loop_run_deferred(&ctx->loop);
		c = device_set_poll(&ctx->devices);
		if (++ctx->busy_passes < BUSY_FD_EVERY)
			return c;
		ctx->busy_passes = 0;
	}
	/* Work deferred by earlier passes, then the fds. Timed here, not around
	 * the busy path above: two clock reads would double an empty busy pass
	 * (its steps are timed each, ctx_note_step). */
	t = loop_now_ns();
	n = loop_process(&ctx->loop);
	ctx_note_pass(ctx, t);
	if (n < 0)
		return n;
	if (ctx->flags & EZ_CTX_BUSY_POLL) {
		/* The CQs are never armed in this mode: this poll is the only
		 * way their completions are seen. */
		n += device_set_poll(&ctx->devices);
	}
	return n;
}

/* A hot watch run from the application's libev loop (loop_watch_add_hot():
 * the completion channel in event mode) is a pass of its own, with a
 * pass's checks: the owner's thread, and not under a callback of this
 * context (a callback that runs the loop leaves the fd readable for the
 * pass after it). Deferred work it queues pokes the set's eventfd, and
 * runs in the set's next pass (on_loop_io()). */
static void ctx_run_hot(struct loop *loop, struct loop_watch *w)
{
	struct ez_ctx *ctx = container_of(loop, struct ez_ctx, loop);
	uint64_t t;

	if (ctx_check_thread(ctx, "ez_ctx_process")) {
		ezi_log_err("%s", ez_errmsg());
		return;
	}
	if (ctx->processing)
		return;
	ctx->processing = 1;
	t = loop_now_ns();
	w->fn(w);
	ctx_note_pass(ctx, t);
	if (ctx->handoff_hook)
		ctx->handoff_hook(ctx, CTX_HOOK_PASS);
	ctx->processing = 0;
}

int ez_ctx_fd(const struct ez_ctx *ctx)
{
	if (ctx_check_thread(ctx, "ez_ctx_fd"))
		return -EPERM;
	return ctx ? ctx->loop.epfd : -EINVAL;
}

int ez_ctx_timeout_ms(const struct ez_ctx *ctx)
{
	if (ctx_check_thread(ctx, "ez_ctx_timeout_ms"))
		return -EPERM;
	return ctx ? loop_timeout_ms(&ctx->loop) : -1;
}

/* A libev loop run by a thread that does not own the context gets nothing
 * done: said on every wakeup, since the fd stays readable. */
static void on_loop_io(struct ev_loop *loop, ev_io *io, int revents)
{
	if (ez_ctx_process(io->data) == -EPERM)
		ezi_log_err("%s", ez_errmsg());
}

static void on_loop_idle(struct ev_loop *loop, ev_idle *idle, int revents)
{
	if (ez_ctx_process(idle->data) == -EPERM)
		ezi_log_err("%s", ez_errmsg());
}

int ez_ctx_new(struct ev_loop *loop, unsigned int flags, struct ez_ctx **out)
{
	struct ez_ctx *ctx;
	int ret;

	if (!out)
		return ezi_fail(-EINVAL, "ez_ctx_new: ctx pointer is NULL");
	if (flags & ~(EZ_CTX_NO_LOOP | EZ_CTX_BUSY_POLL | EZ_CTX_EXPORT_PD))
		return ezi_fail(-EINVAL, "ez_ctx_new: unknown flags 0x%x",
				flags & ~(EZ_CTX_NO_LOOP | EZ_CTX_BUSY_POLL | EZ_CTX_EXPORT_PD));
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return ezi_fail(-ENOMEM, "ez_ctx_new: out of memory");
	ctx->flags = flags;
	budget_init(&ctx->staged, STAGED_DEF_MAX, STAGED_DEF_PEER_MAX);
	budget_init(&ctx->recvbufs, RECVBUFS_DEF_MAX, RECVBUFS_DEF_PEER_MAX);
	budget_init(&ctx->bigrecv, BIGRECV_DEF_MAX, BIGRECV_DEF_PEER_MAX);
	ctx->cm_held = calloc(CM_REQUESTS_HELD, sizeof(*ctx->cm_held));
	if (!ctx->cm_held) {
		free(ctx);
		return ezi_fail(-ENOMEM, "ez_ctx_new: out of memory");
	}
	ctx->cm_cap = CM_REQUESTS_HELD;
	ctx->cm_more.fn = on_cm_more;
	ctx->cm_pass = UINT64_MAX;
	ezi_owner_init(&ctx->owner);
	ret = loop_init(&ctx->loop);
	if (ret) {
		free(ctx->cm_held);
		free(ctx);
		return ret;
	}
	lookup_set_init(&ctx->lookups, &ctx->loop);
	device_set_init(&ctx->devices, &ctx->loop, !!(flags & EZ_CTX_BUSY_POLL));
	ctx->ch = rdma_create_event_channel();
	if (!ctx->ch) {
		ret = ezi_fail(errno ? -errno : -ENODEV, "rdma_create_event_channel: %s",
			       ez_strerror(errno ? errno : ENODEV));
		goto err;
	}
	ctx->cm_watch.fd = ctx->ch->fd;
	ctx->cm_watch.fn = on_cm_channel;
	ret = loop_watch_add(&ctx->loop, &ctx->cm_watch);
	if (ret)
		goto err;
	if (!(flags & EZ_CTX_NO_LOOP)) {
		ctx->ev_loop = loop ? loop : ev_default_loop(0);
		if (!ctx->ev_loop) {
			ret = ezi_fail(-ENOMEM, "ev_default_loop: no loop");
			goto err;
		}
		ev_io_init(&ctx->io, on_loop_io, ctx->loop.epfd, EV_READ);
		ctx->io.data = ctx;
		ev_io_start(ctx->ev_loop, &ctx->io);
		/* Event mode: each device's completion channel on this loop
		 * itself (busy-poll mode never arms the CQs). */
		if (!(flags & EZ_CTX_BUSY_POLL))
			loop_set_outer(&ctx->loop, ctx->ev_loop, ctx_run_hot);
		if (flags & EZ_CTX_BUSY_POLL) {
			ev_idle_init(&ctx->idle, on_loop_idle);
			ctx->idle.data = ctx;
			ev_idle_start(ctx->ev_loop, &ctx->idle);
		}
	}
	/* No libev loop: the application's own loop calls ez_ctx_process(),
	 * which may take the short busy pass. */
	ctx->busy_fast = (flags & EZ_CTX_BUSY_POLL) && !ctx->ev_loop;
	*out = ctx;
	return 0;
err:
	if (ctx->ch)
		rdma_destroy_event_channel(ctx->ch);
	device_set_fini(&ctx->devices);
	loop_fini(&ctx->loop);
	free(ctx->cm_held);
	free(ctx);
	return ret;
}

/* Received buffers the application holds pin their pool's memory on the
 * context's PD: freeing the devices under them would leak the PD and leave
 * the handles pointing at freed descriptors. */
int ez_ctx_free(struct ez_ctx *ctx)
{
	uint64_t held;

	if (ctx_check_thread(ctx, "ez_ctx_free"))
		return -EPERM;
	if (!ctx)
		return 0;
	held = pool_held(ctx);
	if (held)
		return ezi_fail(-EBUSY, "ez_ctx_free: %llu received buffer%s still held: "
				"ez_buf_release() them first; nothing freed",
				(unsigned long long)held, held == 1 ? " is" : "s are");
	if (ctx->nconns || ctx->nlisteners || ctx->npools || ctx->nmrs)
		return ezi_fail(-EBUSY, "ez_ctx_free: %d connections, %d listeners, %d pools and %d MRs still alive",
				ctx->nconns, ctx->nlisteners, ctx->npools, ctx->nmrs);
	/* A callback always has a live object of its own (counted above):
	 * this only guards the pass below from being freed under it. */
	if (ctx->processing)
		return ezi_fail(-EBUSY, "ez_ctx_free: called from a callback of the context; "
				"nothing freed");
	/* No more requests from other threads; those queued are rejected. */
	if (ctx->handoff_hook)
		ctx->handoff_hook(ctx, CTX_HOOK_FREE);
	pool_reap(ctx);
	if (ctx->ev_loop) {
		ev_io_stop(ctx->ev_loop, &ctx->io);
		ev_idle_stop(ctx->ev_loop, &ctx->idle);
	}
	/* Deregistered MR handles stayed valid memory until now, so that a
	 * second ez_mr_dereg() is refused rather than a use after free. */
	while (ctx->dead_mrs) {
		struct ez_mr *mr = ctx->dead_mrs;

		ctx->dead_mrs = mr->next_dead;
		free(mr);
	}
	free(ctx->penalty);
	session_index_fini(&ctx->sessions);	/* empty: every connection is gone */
	device_set_fini(&ctx->devices);
	lookup_set_fini(&ctx->lookups);
	/* Requests of closed listeners still held (nlisteners is 0). */
	while (ctx->cm_nheld) {
		cm_drop_request(&ctx->cm_held[ctx->cm_head]);
		ctx->cm_head = (ctx->cm_head + 1) % ctx->cm_cap;
		ctx->cm_nheld--;
	}
	loop_defer_cancel(&ctx->loop, &ctx->cm_more);
	rdma_destroy_event_channel(ctx->ch);
	loop_fini(&ctx->loop);
	free(ctx->cm_held);
	free(ctx);
	return 0;
}
