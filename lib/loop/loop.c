/* loop.c: the event loop under a context: an epoll set of watches, timers in a heap behind one timerfd, deferred work behind an eventfd. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "loop.h"

uint64_t loop_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Every handler reads its fd until EAGAIN (or leaves it readable for the
 * next pass), so the fds must not block. */
static int watch_nonblock(struct loop_watch *w)
{
	int fl = fcntl(w->fd, F_GETFL);

	if (fl < 0 || fcntl(w->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return ezi_fail(-errno, "fcntl(O_NONBLOCK) on fd %d: %s", w->fd, ez_strerror(errno));
	return 0;
}

int loop_watch_add(struct loop *loop, struct loop_watch *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };
	int ret = watch_nonblock(w);

	/* Not on the outer loop: loop_watch_del() reads this, and the
	 * watch's owner need not have zeroed it (a mailbox, a test's). */
	ev_init(&w->io, NULL);
	if (ret)
		return ret;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
		return ezi_fail(-errno, "epoll_ctl(ADD, fd %d): %s", w->fd, ez_strerror(errno));
	return 0;
}

void loop_watch_del(struct loop *loop, struct loop_watch *w)
{
	if (ev_is_active(&w->io))
		ev_io_stop(loop->outer, &w->io);
	else
		epoll_ctl(loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

void loop_set_outer(struct loop *loop, struct ev_loop *outer,
		    void (*run_hot)(struct loop *loop, struct loop_watch *w))
{
	loop->outer = outer;
	loop->run_hot = run_hot;
}

static void on_hot_io(struct ev_loop *outer, ev_io *io, int revents)
{
	struct loop_watch *w = container_of(io, struct loop_watch, io);
	struct loop *loop = io->data;

	loop->run_hot(loop, w);
}

int loop_watch_add_hot(struct loop *loop, struct loop_watch *w)
{
	int ret;

	if (!loop->outer)
		return loop_watch_add(loop, w);
	ret = watch_nonblock(w);
	if (ret)
		return ret;
	ev_io_init(&w->io, on_hot_io, w->fd, EV_READ);
	w->io.data = loop;
	ev_io_start(loop->outer, &w->io);
	return 0;
}

static struct loop_timer *first_timer(const struct loop *loop)
{
	return (struct loop_timer *)heap_min(&loop->timers);
}

/* Arms the timerfd only when the first timer is due before it would fire.
 * When the first timer is stopped (a connect timer, once the connection is
 * made: nearly always the oldest) the fd stays armed for the old time and
 * fires early once; on_timerfd() then finds nothing due and arms it for the
 * next. Re-arming on every stop cost a timerfd_settime() per connection
 * made, on both sides; this costs one wake-up per timeout period. */
static void timerfd_arm(struct loop *loop)
{
	struct itimerspec its = { 0 };
	struct loop_timer *t = first_timer(loop);
	uint64_t due = t ? t->due_ns : 0;

	if (!due || (loop->timerfd_due && loop->timerfd_due <= due))
		return;
	loop->timerfd_due = due;
	/* Absolute time; 0 would disarm, so a due time in the past is fine. */
	its.it_value.tv_sec = due / 1000000000ull;
	its.it_value.tv_nsec = due % 1000000000ull;
	if (timerfd_settime(loop->timer_watch.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		ezi_log_err("timerfd_settime: %s", ez_strerror(errno));
}

static int timer_less(const struct heap_node *a, const struct heap_node *b)
{
	const struct loop_timer *x = container_of(a, struct loop_timer, node);
	const struct loop_timer *y = container_of(b, struct loop_timer, node);

	return x->due_ns != y->due_ns ? x->due_ns < y->due_ns : x->seq < y->seq;
}

void loop_timer_stop(struct loop *loop, struct loop_timer *t)
{
	if (!loop_timer_armed(t))
		return;
	heap_remove(&loop->timers, &t->node);
	timerfd_arm(loop);
}

void loop_timer_start(struct loop *loop, struct loop_timer *t, uint32_t ms)
{
	if (loop_timer_armed(t))
		heap_remove(&loop->timers, &t->node);
	t->due_ns = loop_now_ns() + (uint64_t)ms * 1000000ull;
	t->seq = loop->timer_seq++;
	heap_insert(&loop->timers, &t->node);
	timerfd_arm(loop);
}

static void on_timerfd(struct loop_watch *w)
{
	struct loop *loop = container_of(w, struct loop, timer_watch);
	uint64_t expirations, now;
	struct loop_timer *t;
	unsigned int n;

	while (read(w->fd, &expirations, sizeof(expirations)) > 0)
		;
	loop->timerfd_due = 0;
	now = loop_now_ns();
	/* A callback may stop or start any timer: the heap is asked afresh.
	 * At most LOOP_TIMERS_PER_PASS, within LOOP_PASS_BUDGET_NS: the rest
	 * are still due, so the timerfd armed below fires at once and they
	 * run in the next pass, after the other fds had theirs. */
	for (n = 0; n < LOOP_TIMERS_PER_PASS && (t = first_timer(loop)) && t->due_ns <= now; n++) {
		heap_remove(&loop->timers, &t->node);
		t->fn(t);
		if (loop_now_ns() - now > LOOP_PASS_BUDGET_NS)
			break;
	}
	timerfd_arm(loop);
}

void loop_defer_list_init(struct loop_defer_list *l)
{
	l->head = NULL;
	l->tail = &l->head;
}

int loop_defer_list_push(struct loop_defer_list *l, struct loop_defer *d)
{
	int was_empty = !l->head;

	if (d->queued)
		return 0;
	d->queued = 1;
	d->next = NULL;
	*l->tail = d;
	l->tail = &d->next;
	return was_empty;
}

void loop_defer_list_cancel(struct loop_defer_list *l, struct loop_defer *d)
{
	struct loop_defer **pp;

	if (!d->queued)
		return;
	for (pp = &l->head; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			if (l->tail == &d->next)
				l->tail = pp;
			break;
		}
	}
	d->queued = 0;
}

/* Runs up to the item that was last when called: work that queues more
 * (itself too) goes behind it, so one run always ends. With max (0: no
 * limit) or budget_ns (0: none) it also stops after max items or once that
 * much time went by; what is left stays queued, in order. */
static void defer_list_run(struct loop_defer_list *l, unsigned int max, uint64_t budget_ns)
{
	struct loop_defer *d, *stop;
	uint64_t start = budget_ns ? loop_now_ns() : 0;
	unsigned int n = 0;

	if (!l->head)
		return;
	stop = container_of(l->tail, struct loop_defer, next);
	while ((d = l->head)) {
		l->head = d->next;
		if (!l->head)
			l->tail = &l->head;
		d->queued = 0;
		d->fn(d);
		/* Reached, or cancelled by the work before it. */
		if (d == stop || !stop->queued)
			return;
		if ((max && ++n == max) || (budget_ns && loop_now_ns() - start > budget_ns))
			return;
	}
}

void loop_defer_list_run(struct loop_defer_list *l)
{
	defer_list_run(l, 0, 0);
}

static void defer_fd_reset(struct loop *loop)
{
	uint64_t v;

	while (read(loop->defer_watch.fd, &v, sizeof(v)) > 0)
		;
}

static void defer_wake(struct loop *loop)
{
	uint64_t one = 1;

	if (write(loop->defer_watch.fd, &one, sizeof(one)) < 0)
		ezi_log_err("loop: eventfd write: %s", ez_strerror(errno));
}

void loop_defer(struct loop *loop, struct loop_defer *d)
{
	if (loop_defer_list_push(&loop->deferred, d))
		defer_wake(loop);
}

void loop_defer_cancel(struct loop *loop, struct loop_defer *d)
{
	loop_defer_list_cancel(&loop->deferred, d);
}

int loop_run_deferred(struct loop *loop)
{
	loop->passes++;
	if (loop_defer_list_empty(&loop->deferred))
		return 0;
	defer_fd_reset(loop);
	defer_list_run(&loop->deferred, LOOP_DEFER_PER_PASS, LOOP_PASS_BUDGET_NS);
	/* Work queued by the callbacks behind work of this run found the list
	 * not empty and did not poke the fd. */
	if (!loop_defer_list_empty(&loop->deferred))
		defer_wake(loop);
	return 1;
}

/* The eventfd only keeps the loop's fd readable while work is queued: the
 * work runs at the start of the next pass, as a zero-delay timer did, so
 * work that queues itself again (a CQ that never empties) gets one turn a
 * pass and the fds and the application's own watchers get theirs. Work
 * cancelled after it poked the fd leaves a stale wake-up: cleared here. */
static void on_defer_fd(struct loop_watch *w)
{
	struct loop *loop = container_of(w, struct loop, defer_watch);

	if (loop_defer_list_empty(&loop->deferred))
		defer_fd_reset(loop);
}

#define LOOP_EVENTS 16

int loop_process(struct loop *loop)
{
	struct epoll_event evs[LOOP_EVENTS];
	int n, i, timers_due = 0;
	/* The deferred work counts as one event, as the timerfd that ran it did. */
	int ran = loop_run_deferred(loop);

	n = epoll_wait(loop->epfd, evs, LOOP_EVENTS, 0);
	if (n < 0)
		return errno == EINTR ? 0 : ezi_fail(-errno, "epoll_wait: %s", ez_strerror(errno));
	/* The timers last: a deadline that fell due while the process was not
	 * running is judged after the events that came in meanwhile (a
	 * handshake's establishment read before its deadline's verdict), not
	 * in whatever order epoll lists the fds. */
	for (i = 0; i < n; i++) {
		struct loop_watch *w = evs[i].data.ptr;

		if (w == &loop->timer_watch)
			timers_due = 1;
		else
			w->fn(w);
	}
	if (timers_due)
		on_timerfd(&loop->timer_watch);
	return n + ran;
}

int loop_events_waiting(const struct loop *loop)
{
	struct pollfd p = { .fd = loop->epfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

int loop_timeout_ms(const struct loop *loop)
{
	struct loop_timer *t = first_timer(loop);
	uint64_t now;

	if (!loop_defer_list_empty(&loop->deferred))
		return 0;
	if (!t)
		return -1;
	now = loop_now_ns();
	if (t->due_ns <= now)
		return 0;
	return (int)((t->due_ns - now + 999999) / 1000000);
}

/* The fd of a watch, created by make (which sets errno) and added to the set. */
static int watch_open(struct loop *loop, struct loop_watch *w, int fd, const char *what,
		      void (*fn)(struct loop_watch *w))
{
	if (fd < 0)
		return ezi_fail(-errno, "%s: %s", what, ez_strerror(errno));
	w->fd = fd;
	w->fn = fn;
	return loop_watch_add(loop, w);
}

int loop_init(struct loop *loop)
{
	int ret;

	heap_init(&loop->timers, timer_less);
	loop->timer_seq = 0;
	loop->timerfd_due = 0;
	loop->passes = 0;
	loop->outer = NULL;
	loop->run_hot = NULL;
	loop_defer_list_init(&loop->deferred);
	loop->timer_watch.fd = loop->defer_watch.fd = -1;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0)
		return ezi_fail(-errno, "epoll_create1: %s", ez_strerror(errno));
	ret = watch_open(loop, &loop->timer_watch,
			 timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
			 "timerfd_create", on_timerfd);
	if (!ret)
		ret = watch_open(loop, &loop->defer_watch, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
				 "eventfd", on_defer_fd);
	if (ret)
		loop_fini(loop);
	return ret;
}

void loop_fini(struct loop *loop)
{
	if (loop->defer_watch.fd >= 0)
		close(loop->defer_watch.fd);
	if (loop->timer_watch.fd >= 0)
		close(loop->timer_watch.fd);
	if (loop->epfd >= 0)
		close(loop->epfd);
	loop->epfd = loop->timer_watch.fd = loop->defer_watch.fd = -1;
}
