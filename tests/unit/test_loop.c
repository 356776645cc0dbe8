/* test_loop.c: the loop without a device: timers in due order, stopped and restarted from callbacks, deferred work in order and once, each bounded per pass, the fd and the timeout while work waits. */
#include <check.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "loop/loop.h"
#include "../checkmain.h"

static struct loop lp;
static char fired[64];		/* the names of what ran, in order */

static void note(char c)
{
	size_t n = strlen(fired);

	ck_assert_uint_lt(n, sizeof(fired) - 1);
	fired[n] = c;
}

struct named_timer {
	struct loop_timer t;
	char name;
	struct loop_timer *stop;	/* stopped when this one fires */
	int restarts;			/* times it starts itself again */
};

static void on_named(struct loop_timer *t)
{
	struct named_timer *nt = container_of(t, struct named_timer, t);

	note(nt->name);
	if (nt->stop)
		loop_timer_stop(&lp, nt->stop);
	if (nt->restarts-- > 0)
		loop_timer_start(&lp, t, 1);
}

static int fd_readable(void)
{
	struct pollfd p = { .fd = lp.epfd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/* Waits as an application polling the fd would, until want has run. */
static void run_until(const char *want)
{
	for (int i = 0; i < 1000 && strcmp(fired, want); i++) {
		struct pollfd p = { .fd = lp.epfd, .events = POLLIN };
		int to = loop_timeout_ms(&lp);

		poll(&p, 1, to < 0 || to > 50 ? 50 : to);
		ck_assert_int_ge(loop_process(&lp), 0);
	}
	ck_assert_str_eq(fired, want);
}

static void setup(void)
{
	fired[0] = '\0';
	ck_assert_int_eq(loop_init(&lp), 0);
}

static void teardown(void)
{
	loop_fini(&lp);
}

START_TEST(timers_fire_in_due_order)
{
	struct named_timer a = { .t.fn = on_named, .name = 'a' };
	struct named_timer b = { .t.fn = on_named, .name = 'b' };
	struct named_timer c = { .t.fn = on_named, .name = 'c' };
	struct named_timer d = { .t.fn = on_named, .name = 'd' };

	loop_timer_start(&lp, &a.t, 30);
	loop_timer_start(&lp, &b.t, 10);
	loop_timer_start(&lp, &c.t, 20);
	loop_timer_start(&lp, &d.t, 5);
	loop_timer_stop(&lp, &d.t);	/* the earliest: the fd fires early once */
	ck_assert(loop_timer_armed(&a.t) && !loop_timer_armed(&d.t));
	run_until("bca");
	ck_assert_int_eq(loop_timeout_ms(&lp), -1);
}
END_TEST

START_TEST(stopped_from_another_callback)
{
	struct named_timer b = { .t.fn = on_named, .name = 'b' };
	struct named_timer a = { .t.fn = on_named, .name = 'a', .stop = &b.t };
	struct named_timer c = { .t.fn = on_named, .name = 'c' };

	/* Due at the same time: a fires first (started first) and stops b. */
	loop_timer_start(&lp, &a.t, 5);
	loop_timer_start(&lp, &b.t, 5);
	loop_timer_start(&lp, &c.t, 15);
	run_until("ac");
	ck_assert(!loop_timer_armed(&b.t));
}
END_TEST

START_TEST(restarted_from_its_own_callback)
{
	struct named_timer a = { .t.fn = on_named, .name = 'a', .restarts = 2 };

	loop_timer_start(&lp, &a.t, 1);
	run_until("aaa");
	ck_assert(!loop_timer_armed(&a.t));
}
END_TEST

struct named_defer {
	struct loop_defer d;
	char name;
	struct loop_defer *then;	/* deferred from inside this one */
	struct loop_defer *cancel;	/* cancelled from inside this one */
};

static void on_deferred(struct loop_defer *d)
{
	struct named_defer *nd = container_of(d, struct named_defer, d);

	note(nd->name);
	if (nd->then)
		loop_defer(&lp, nd->then);
	if (nd->cancel)
		loop_defer_cancel(&lp, nd->cancel);
}

START_TEST(deferred_once_in_order)
{
	struct named_defer a = { .d.fn = on_deferred, .name = 'a' };
	struct named_defer b = { .d.fn = on_deferred, .name = 'b' };
	struct named_defer c = { .d.fn = on_deferred, .name = 'c' };

	ck_assert(!fd_readable());
	ck_assert_int_eq(loop_timeout_ms(&lp), -1);
	loop_defer(&lp, &a.d);
	loop_defer(&lp, &b.d);
	loop_defer(&lp, &a.d);	/* already queued: nothing */
	loop_defer(&lp, &c.d);
	loop_defer_cancel(&lp, &c.d);
	/* An application polling the fd is woken and does not sleep. */
	ck_assert(fd_readable());
	ck_assert_int_eq(loop_timeout_ms(&lp), 0);
	ck_assert_int_ge(loop_process(&lp), 1);
	ck_assert_str_eq(fired, "ab");
	ck_assert(!fd_readable());
	ck_assert_int_eq(loop_timeout_ms(&lp), -1);
	ck_assert_int_eq(loop_process(&lp), 0);
	ck_assert_str_eq(fired, "ab");
}
END_TEST

START_TEST(deferred_from_deferred_is_not_lost)
{
	struct named_defer c = { .d.fn = on_deferred, .name = 'c' };
	struct named_defer b = { .d.fn = on_deferred, .name = 'b' };
	struct named_defer a = { .d.fn = on_deferred, .name = 'a', .then = &c.d, .cancel = &b.d };
	struct named_defer self = { .d.fn = on_deferred, .name = 's' };

	self.then = &self.d;	/* queues itself again: one run a pass */
	loop_defer(&lp, &a.d);
	loop_defer(&lp, &b.d);
	loop_defer(&lp, &self.d);
	ck_assert_int_ge(loop_process(&lp), 1);
	/* b was cancelled by a; c and s wait for the next pass, and say so. */
	ck_assert_str_eq(fired, "as");
	ck_assert(fd_readable());
	ck_assert_int_eq(loop_timeout_ms(&lp), 0);
	ck_assert_int_ge(loop_process(&lp), 1);
	ck_assert_str_eq(fired, "ascs");
	loop_defer_cancel(&lp, &self.d);
	/* Its wake-up is stale now: one pass clears it. */
	ck_assert_int_ge(loop_process(&lp), 0);
	ck_assert(!fd_readable());
	ck_assert_str_eq(fired, "ascs");
}
END_TEST


/* Many at once: a pass runs a bounded number, the rest wait in order and
 * the fd stays readable for them. */
static int counted[200], ncounted;

static struct loop_defer many_d[100];

static void on_many_defer(struct loop_defer *d)
{
	counted[ncounted++] = (int)(d - many_d);
}

START_TEST(deferred_bounded_per_pass)
{
	uint64_t t0;
	int i;

	ncounted = 0;
	for (i = 0; i < 100; i++) {
		many_d[i] = (struct loop_defer){ .fn = on_many_defer };
		loop_defer(&lp, &many_d[i]);
	}
	t0 = loop_now_ns();
	ck_assert_int_ge(loop_process(&lp), 1);
	t0 = loop_now_ns() - t0;
	/* LOOP_DEFER_PER_PASS, or fewer only when the pass spent its budget. */
	ck_assert_msg(ncounted == LOOP_DEFER_PER_PASS ||
		      (ncounted > 0 && ncounted < LOOP_DEFER_PER_PASS && t0 >= LOOP_PASS_BUDGET_NS),
		      "%d deferred items run in a pass of %llu ns", ncounted, (unsigned long long)t0);
	ck_assert(fd_readable());
	ck_assert_int_eq(loop_timeout_ms(&lp), 0);
	for (i = 0; i < 10 && ncounted < 100; i++)
		ck_assert_int_ge(loop_process(&lp), 0);
	ck_assert_int_eq(ncounted, 100);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(counted[i], i);
	ck_assert_int_ge(loop_process(&lp), 0);
	ck_assert(!fd_readable());
}
END_TEST

static struct loop_timer many_t[150];

static void on_many_timer(struct loop_timer *t)
{
	counted[ncounted++] = (int)(t - many_t);
}

START_TEST(timers_bounded_per_pass)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	uint64_t t0;
	int i;

	ncounted = 0;
	for (i = 0; i < 150; i++) {
		many_t[i] = (struct loop_timer){ .fn = on_many_timer };
		loop_timer_start(&lp, &many_t[i], 1);
	}
	p.fd = lp.epfd;
	ck_assert_int_eq(poll(&p, 1, 1000), 1);
	/* The timerfd fires at the first timer's due time; starting the 150
	 * took time too, and a later one is not due yet if the process was
	 * not run for a while in between (CI saw 60 run in a pass of 29 us).
	 * Wait until the last is due, so the pass's bound is what stops it. */
	while (loop_now_ns() < many_t[149].due_ns)
		poll(NULL, 0, 1);
	t0 = loop_now_ns();
	ck_assert_int_ge(loop_process(&lp), 1);
	t0 = loop_now_ns() - t0;
	/* LOOP_TIMERS_PER_PASS, or fewer only when the pass spent its budget. */
	ck_assert_msg(ncounted == LOOP_TIMERS_PER_PASS ||
		      (ncounted > 0 && ncounted < LOOP_TIMERS_PER_PASS && t0 >= LOOP_PASS_BUDGET_NS),
		      "%d timers run in a pass of %llu ns", ncounted, (unsigned long long)t0);
	/* The rest are due: the timerfd fires again at once. */
	ck_assert_int_eq(loop_timeout_ms(&lp), 0);
	ck_assert_int_eq(poll(&p, 1, 1000), 1);
	for (i = 0; i < 10 && ncounted < 150; i++) {
		poll(&p, 1, 100);
		ck_assert_int_ge(loop_process(&lp), 0);
	}
	ck_assert_int_eq(ncounted, 150);
	for (i = 0; i < 150; i++)
		ck_assert_int_eq(counted[i], i);
	ck_assert_int_eq(loop_timeout_ms(&lp), -1);
}
END_TEST

static void on_pipe(struct loop_watch *w)
{
	char c;

	ck_assert_int_eq(read(w->fd, &c, 1), 1);
	note('p');
}

/* A timer due while the process did not run is judged after the fds that
 * became ready meanwhile, whatever order epoll lists them in: a pipe made
 * readable after the timer fell due (epoll lists the timerfd first) still
 * runs first, and loop_events_waiting() saw it waiting. */
START_TEST(timers_after_the_fds_of_the_pass)
{
	struct named_timer a = { .t.fn = on_named, .name = 't' };
	struct loop_watch w = { 0 };
	int fds[2];
	struct pollfd p = { .events = POLLIN };

	ck_assert_int_eq(pipe(fds), 0);
	w.fd = fds[0];
	w.fn = on_pipe;
	ck_assert_int_eq(loop_watch_add(&lp, &w), 0);
	ck_assert_int_eq(loop_events_waiting(&lp), 0);
	loop_timer_start(&lp, &a.t, 1);
	p.fd = lp.epfd;
	ck_assert_int_eq(poll(&p, 1, 1000), 1);	/* the timerfd is ready */
	ck_assert_int_eq(write(fds[1], "x", 1), 1);
	ck_assert_int_eq(loop_events_waiting(&lp), 1);
	ck_assert_int_eq(loop_process(&lp), 2);
	ck_assert_str_eq(fired, "pt");
	ck_assert_int_eq(loop_events_waiting(&lp), 0);
	loop_watch_del(&lp, &w);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loop");
	TCase *tc = tcase_create("loop");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, timers_fire_in_due_order);
	tcase_add_test(tc, stopped_from_another_callback);
	tcase_add_test(tc, restarted_from_its_own_callback);
	tcase_add_test(tc, deferred_once_in_order);
	tcase_add_test(tc, deferred_from_deferred_is_not_lost);
	tcase_add_test(tc, deferred_bounded_per_pass);
	tcase_add_test(tc, timers_bounded_per_pass);
	tcase_add_test(tc, timers_after_the_fds_of_the_pass);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
