/* ctx.c: the context: epoll set over the rdma_cm channel, device fds and a timerfd, on libev or polled. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "device/cq.h"
#include "ctx.h"
#include "device/device.h"
#include "base/error.h"
#include "listener.h"
#include "base/log.h"
#include "loop/lookup.h"

uint64_t ctx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ctx_watch_add(struct ez_ctx *ctx, struct ctx_watch *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };
	int fl = fcntl(w->fd, F_GETFL);

	/* Every handler drains its fd until EAGAIN, so the fds must not block. */
	if (fl < 0 || fcntl(w->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return ezi_fail(-errno, "fcntl(O_NONBLOCK) on fd %d: %s", w->fd, ez_strerror(errno));
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
		return ezi_fail(-errno, "epoll_ctl(ADD, fd %d): %s", w->fd, ez_strerror(errno));
	return 0;
}

void ctx_watch_del(struct ez_ctx *ctx, struct ctx_watch *w)
{
	epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

/* Arms the timerfd only when the first timer is due before it would fire.
 * When the first timer is stopped (a connect timer, once the connection is
 * made: nearly always the oldest) the fd stays armed for the old time and
 * fires early once; on_timerfd() then finds nothing due and arms it for the
 * next. Re-arming on every stop cost a timerfd_settime() per connection
 * made, on both sides; this costs one wake-up per timeout period. */
static void timerfd_arm(struct ez_ctx *ctx)
{
	struct itimerspec its = { 0 };
	uint64_t due = ctx->timers ? ctx->timers->due_ns : 0;

	if (!due || (ctx->timerfd_due && ctx->timerfd_due <= due))
		return;
	ctx->timerfd_due = due;
	/* Absolute time; 0 would disarm, so a due time in the past is fine. */
	its.it_value.tv_sec = due / 1000000000ull;
	its.it_value.tv_nsec = due % 1000000000ull;
	if (timerfd_settime(ctx->timer_watch.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		ezi_log_err("timerfd_settime: %s", ez_strerror(errno));
}

void ctx_timer_stop(struct ez_ctx *ctx, struct ctx_timer *t)
{
	struct ctx_timer **pp;

	if (!t->armed)
		return;
	for (pp = &ctx->timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	t->armed = 0;
	timerfd_arm(ctx);
}

void ctx_timer_start(struct ez_ctx *ctx, struct ctx_timer *t, uint32_t ms)
{
	struct ctx_timer **pp;

	ctx_timer_stop(ctx, t);
	t->due_ns = ctx_now_ns() + (uint64_t)ms * 1000000ull;
	for (pp = &ctx->timers; *pp && (*pp)->due_ns <= t->due_ns; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	t->armed = 1;
	timerfd_arm(ctx);
}

static void on_timerfd(struct ctx_watch *w)
{
	struct ez_ctx *ctx = container_of(w, struct ez_ctx, timer_watch);
	uint64_t expirations, now;
	struct ctx_timer *t;

	while (read(w->fd, &expirations, sizeof(expirations)) > 0)
		;
	ctx->timerfd_due = 0;
	now = ctx_now_ns();
	while ((t = ctx->timers) && t->due_ns <= now) {
		ctx->timers = t->next;
		t->armed = 0;
		t->fn(t);
	}
	timerfd_arm(ctx);
}

/* Copies what the handlers need, then acks: rdma_destroy_id() waits for the
 * acks of the events it has reported, so nothing may stay unacked. */
static void on_cm_channel(struct ctx_watch *w)
{
	struct ez_ctx *ctx = container_of(w, struct ez_ctx, cm_watch);
	struct rdma_cm_event *raw;
	struct cm_event ev;
	int *kind;

	while (rdma_get_cm_event(ctx->ch, &raw) == 0) {
		memset(&ev, 0, sizeof(ev));
		ev.type = raw->event;
		ev.status = raw->status;
		ev.id = raw->id;
		ev.listen_id = raw->listen_id;
		if ((ev.type == RDMA_CM_EVENT_CONNECT_REQUEST ||
		     ev.type == RDMA_CM_EVENT_CONNECT_RESPONSE ||
		     ev.type == RDMA_CM_EVENT_REJECTED ||
		     ev.type == RDMA_CM_EVENT_ESTABLISHED) && raw->param.conn.private_data) {
			ev.pdata_len = raw->param.conn.private_data_len;
			memcpy(ev.pdata, raw->param.conn.private_data, ev.pdata_len);
			ev.responder_resources = raw->param.conn.responder_resources;
			ev.initiator_depth = raw->param.conn.initiator_depth;
		}
		rdma_ack_cm_event(raw);

		if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			listener_on_request(ev.listen_id->context, &ev);
			continue;
		}
		kind = ev.id->context;
		if (!kind)
			continue;
		switch (*kind) {
		case CM_CONN:
			conn_on_cm_event(ev.id->context, &ev);
			break;
		case CM_LISTENER:
		case CM_REQ:
			listener_on_event(ev.id->context, &ev);
			break;
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		ezi_log_err("rdma_get_cm_event: %s", ez_strerror(errno));
}

#define BUSY_FD_EVERY 32

int ez_ctx_process(struct ez_ctx *ctx)
{
	struct epoll_event evs[16];
	int n, i;

	if (!ctx)
		return ezi_fail(-EINVAL, "ez_ctx_process: ctx is NULL");
	/* A busy-polling application calls this in a tight loop: the CQs come
	 * first, and the fds (CM and device events, timers) only on every
	 * BUSY_FD_EVERY-th pass, since epoll_wait() is a system call and
	 * ibv_poll_cq() is not. On a libev loop, which waits in epoll itself,
	 * every pass checks them. */
	if ((ctx->flags & EZ_CTX_BUSY_POLL) && !ctx->loop) {
		int c = 0;

		for (struct device *dev = ctx->devices; dev; dev = dev->next)
			c += cq_poll(dev);
		if (++ctx->busy_passes < BUSY_FD_EVERY)
			return c;
		ctx->busy_passes = 0;
	}
	n = epoll_wait(ctx->epfd, evs, 16, 0);
	if (n < 0)
		return errno == EINTR ? 0 : ezi_fail(-errno, "epoll_wait: %s", ez_strerror(errno));
	for (i = 0; i < n; i++) {
		struct ctx_watch *w = evs[i].data.ptr;

		w->fn(w);
	}
	if (ctx->flags & EZ_CTX_BUSY_POLL) {
		/* The CQs are never armed in this mode: this poll is the only
		 * way their completions are seen. */
		for (struct device *dev = ctx->devices; dev; dev = dev->next)
			n += cq_poll(dev);
	}
	return n;
}

int ez_ctx_fd(const struct ez_ctx *ctx)
{
	return ctx ? ctx->epfd : -EINVAL;
}

int ez_ctx_timeout_ms(const struct ez_ctx *ctx)
{
	uint64_t now;

	if (!ctx || !ctx->timers)
		return -1;
	now = ctx_now_ns();
	if (ctx->timers->due_ns <= now)
		return 0;
	return (int)((ctx->timers->due_ns - now + 999999) / 1000000);
}

static void on_loop_io(struct ev_loop *loop, ev_io *io, int revents)
{
	ez_ctx_process(io->data);
}

static void on_loop_idle(struct ev_loop *loop, ev_idle *idle, int revents)
{
	ez_ctx_process(idle->data);
}

int ez_ctx_new(struct ev_loop *loop, unsigned int flags, struct ez_ctx **out)
{
	struct ez_ctx *ctx;
	int ret;

	if (!out)
		return ezi_fail(-EINVAL, "ez_ctx_new: ctx pointer is NULL");
	if (flags & ~(EZ_CTX_NO_LOOP | EZ_CTX_BUSY_POLL))
		return ezi_fail(-EINVAL, "ez_ctx_new: unknown flags 0x%x",
				flags & ~(EZ_CTX_NO_LOOP | EZ_CTX_BUSY_POLL));
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return ezi_fail(-ENOMEM, "ez_ctx_new: out of memory");
	ctx->flags = flags;
	ctx->epfd = -1;
	ctx->timer_watch.fd = -1;
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd < 0) {
		ret = ezi_fail(-errno, "epoll_create1: %s", ez_strerror(errno));
		goto err;
	}
	ctx->timer_watch.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctx->timer_watch.fd < 0) {
		ret = ezi_fail(-errno, "timerfd_create: %s", ez_strerror(errno));
		goto err;
	}
	ctx->timer_watch.fn = on_timerfd;
	ret = ctx_watch_add(ctx, &ctx->timer_watch);
	if (ret)
		goto err;
	ctx->ch = rdma_create_event_channel();
	if (!ctx->ch) {
		ret = ezi_fail(errno ? -errno : -ENODEV, "rdma_create_event_channel: %s",
			       ez_strerror(errno ? errno : ENODEV));
		goto err;
	}
	ctx->cm_watch.fd = ctx->ch->fd;
	ctx->cm_watch.fn = on_cm_channel;
	ret = ctx_watch_add(ctx, &ctx->cm_watch);
	if (ret)
		goto err;
	if (!(flags & EZ_CTX_NO_LOOP)) {
		ctx->loop = loop ? loop : ev_default_loop(0);
		if (!ctx->loop) {
			ret = ezi_fail(-ENOMEM, "ev_default_loop: no loop");
			goto err;
		}
		ev_io_init(&ctx->io, on_loop_io, ctx->epfd, EV_READ);
		ctx->io.data = ctx;
		ev_io_start(ctx->loop, &ctx->io);
		if (flags & EZ_CTX_BUSY_POLL) {
			ev_idle_init(&ctx->idle, on_loop_idle);
			ctx->idle.data = ctx;
			ev_idle_start(ctx->loop, &ctx->idle);
		}
	}
	*out = ctx;
	return 0;
err:
	if (ctx->ch)
		rdma_destroy_event_channel(ctx->ch);
	if (ctx->timer_watch.fd >= 0)
		close(ctx->timer_watch.fd);
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	free(ctx);
	return ret;
}

int ez_ctx_free(struct ez_ctx *ctx)
{
	struct device *dev;

	if (!ctx)
		return 0;
	if (ctx->nconns || ctx->nlisteners || ctx->npools || ctx->nmrs)
		return ezi_fail(-EBUSY, "ez_ctx_free: %d connections, %d listeners, %d pools and %d MRs still alive",
				ctx->nconns, ctx->nlisteners, ctx->npools, ctx->nmrs);
	if (ctx->loop) {
		ev_io_stop(ctx->loop, &ctx->io);
		ev_idle_stop(ctx->loop, &ctx->idle);
	}
	while ((dev = ctx->devices)) {
		ctx->devices = dev->next;
		device_close(dev);
	}
	lookup_ctx_fini(ctx);
	rdma_destroy_event_channel(ctx->ch);
	close(ctx->timer_watch.fd);
	close(ctx->epfd);
	free(ctx);
	return 0;
}
