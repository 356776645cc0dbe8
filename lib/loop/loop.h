/* loop.h: the event loop under a context: one epoll set, fd watches, timers on one timerfd, deferred work. */
#ifndef EZ_LOOP_LOOP_H
#define EZ_LOOP_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "base/heap.h"

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* An fd in the loop's epoll set, or on the outer loop (loop_watch_add_hot());
 * fn runs when it is readable. */
struct loop_watch {
	int fd;
	void (*fn)(struct loop_watch *w);
	ev_io io;		/* active only while the watch is on the outer loop (set by either add) */
};

/* A one-shot timer driven by the loop's timerfd. */
struct loop_timer {
	struct heap_node node;	/* first: the heap orders timers */
	uint64_t due_ns;
	uint64_t seq;		/* equal due times fire in the order started */
	void (*fn)(struct loop_timer *t);
};

/* Work to run soon, but not inside the caller (a completion batch, an
 * application's call): at the end of the loop's current pass. */
struct loop_defer {
	struct loop_defer *next;
	void (*fn)(struct loop_defer *d);
	int queued;
};

/* A FIFO of deferred work; the loop has one, a device another (work that
 * waits for the end of a completion batch). */
struct loop_defer_list {
	struct loop_defer *head, **tail;
};

/* What one pass of the loop handles at most of each kind, so that no kind
 * holds the others (and the application's own watchers) up: the rest waits
 * for the next pass, its fd still readable or its work still queued.
 * Timers and deferred work also stop once a pass has spent
 * LOOP_PASS_BUDGET_NS on them (each kind its own budget). The CM channel,
 * CQs and async events have bounds of their own (ctx.c, cq.h, device.c). */
#define LOOP_TIMERS_PER_PASS 64
#define LOOP_DEFER_PER_PASS 32
#define LOOP_PASS_BUDGET_NS (10 * 1000000ull)

struct loop {
	int epfd;
	uint64_t passes;	/* loop_run_deferred() calls: once per pass */
	struct loop_watch timer_watch;
	struct heap timers;
	uint64_t timer_seq;
	uint64_t timerfd_due;	/* what the timerfd is armed for (0: not armed) */
	struct loop_defer_list deferred;
	struct loop_watch defer_watch;	/* an eventfd, readable while work is deferred */
	/* The application's libev loop that hot watches go on (NULL: none,
	 * they join the set), and what runs one of them from it. */
	struct ev_loop *outer;
	void (*run_hot)(struct loop *loop, struct loop_watch *w);
};

/* The epoll set, the timerfd and the eventfd; a negative errno (ezi_fail). */
int loop_init(struct loop *loop);
void loop_fini(struct loop *loop);

/* The fd is made non-blocking: every handler drains it until EAGAIN. */
int loop_watch_add(struct loop *loop, struct loop_watch *w);
void loop_watch_del(struct loop *loop, struct loop_watch *w);

/* Hot watches (a completion channel, readable once per wake-up in event
 * mode) go on the application's libev loop itself once an outer loop is
 * set: a wake-up is then libev's one epoll_wait(), not libev's and then
 * the set's. run_hot runs w->fn with the checks a pass makes (the owner's
 * thread, one pass at a time). Set before the first hot watch is added. */
void loop_set_outer(struct loop *loop, struct ev_loop *outer,
		    void (*run_hot)(struct loop *loop, struct loop_watch *w));
int loop_watch_add_hot(struct loop *loop, struct loop_watch *w);

/* Starts (or restarts) t to fire once after ms; stopping a timer that is
 * not running does nothing. */
void loop_timer_start(struct loop *loop, struct loop_timer *t, uint32_t ms);
void loop_timer_stop(struct loop *loop, struct loop_timer *t);
static inline int loop_timer_armed(const struct loop_timer *t)
{
	return heap_node_in_heap(&t->node);
}

/* Queues d (nothing if it is queued already); it runs once, in the order
 * queued, at the start of the loop's next pass (loop_process), outside the
 * call that queued it.
 * While anything is queued the loop's fd is readable and
 * loop_timeout_ms() is 0, so the loop does not sleep on it. */
void loop_defer(struct loop *loop, struct loop_defer *d);
void loop_defer_cancel(struct loop *loop, struct loop_defer *d);
/* Runs the work queued now (work queued meanwhile waits for the next run),
 * at most LOOP_DEFER_PER_PASS items or LOOP_PASS_BUDGET_NS of it; 1 if there
 * was any. Starts a pass: loop->passes counts them. */
int loop_run_deferred(struct loop *loop);

/* The list under loop_defer, for other queues of deferred work. push
 * returns 1 when the list was empty. */
void loop_defer_list_init(struct loop_defer_list *l);
int loop_defer_list_push(struct loop_defer_list *l, struct loop_defer *d);
void loop_defer_list_cancel(struct loop_defer_list *l, struct loop_defer *d);
void loop_defer_list_run(struct loop_defer_list *l);
static inline int loop_defer_list_empty(const struct loop_defer_list *l)
{
	return !l->head;
}

/* One pass without waiting: the deferred work, then the ready watches,
 * the timers' last. Returns the watches that ran, or a negative errno. */
int loop_process(struct loop *loop);
/* Some watch is ready now (an event not read yet): one poll(2) of the
 * epoll set, no wait. */
int loop_events_waiting(const struct loop *loop);
/* Milliseconds until the loop has work: 0 now, -1 none. */
int loop_timeout_ms(const struct loop *loop);

uint64_t loop_now_ns(void);

#endif
