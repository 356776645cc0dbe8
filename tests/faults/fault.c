/* fault.c: the fault suite's bench: loop, echo server, counting endpoints, resource counters. */
#include "config.h"

#include "../checkmain.h"	/* check.h, passing assertions silent */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../waits.h"
#include "conn/conn_handle.h"
#include "fault.h"

const char *test_addr(void)
{
	const char *a = getenv("EZ_TEST_ADDR");

	return a && *a ? a : "192.0.2.1";
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

unsigned int fb_ctx_flags;

void fb_init(struct fb *b)
{
	memset(b, 0, sizeof(*b));
	b->loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(b->loop);
	ck_assert_msg(ez_ctx_new(b->loop, fb_ctx_flags, &b->ctx) == 0, "ez_ctx_new: %s", ez_errmsg());
	/* EVRUN_ONCE must come back now and then to look at the deadline. */
	ev_timer_init(&b->tick, on_tick, 0.02, 0.02);
	ev_timer_start(b->loop, &b->tick);
}

static int fb_run_for(struct fb *b, const volatile int *flag, int want, double secs)
{
	double end = now_s() + secs;

	while (*flag < want && now_s() < end)
		ev_run(b->loop, EVRUN_ONCE);
	return *flag >= want;
}

/* A ceiling of 5 s or more catches a hang only (tests/waits.h). */
int fb_run(struct fb *b, const volatile int *flag, int want, double secs)
{
	return fb_run_for(b, flag, want, hang_ceiling(secs));
}

void fb_spin(struct fb *b, double secs)
{
	static const int never = 0;

	fb_run_for(b, &never, 1, secs);
}

void fb_fini(struct fb *b)
{
	ck_assert_msg(ctx_free_when_idle(b->loop, b->ctx, CTX_FREE_CEILING_S) == 0, "ez_ctx_free: %s",
		      ez_errmsg());
	ev_timer_stop(b->loop, &b->tick);
	ev_loop_destroy(b->loop);
}

/* ---- the loop's longest gap --------------------------------------------- */

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void loop_gap_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct loop_gap *g = (struct loop_gap *)w;
	double t = now_s(), c = thread_cpu_s();

	(void)loop;
	(void)revents;
	if (t - g->last > g->max_s) {
		g->max_s = t - g->last;
		g->max_cpu_s = c - g->last_cpu;
	}
	g->last = t;
	g->last_cpu = c;
}

void loop_gap_reset(struct loop_gap *g)
{
	g->max_s = g->max_cpu_s = 0;
	g->last = now_s();
	g->last_cpu = thread_cpu_s();
}

void loop_gap_start(struct fb *b, struct loop_gap *g)
{
	memset(g, 0, sizeof(*g));
	loop_gap_reset(g);
	ev_timer_init(&g->t, loop_gap_tick, 0.01, 0.01);
	ev_timer_start(b->loop, &g->t);
}

void loop_gap_stop(struct fb *b, struct loop_gap *g)
{
	loop_gap_tick(b->loop, &g->t, 0);
	ev_timer_stop(b->loop, &g->t);
}

/* ---- endpoints -------------------------------------------------------- */

static void ep_on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;

	e->connected++;
	e->connect_status = status;
	snprintf(e->connect_msg, sizeof(e->connect_msg), "%s", ez_conn_errmsg(conn));
}

static void ep_drop_held(struct ep *e)
{
	while (e->nheld)
		ez_buf_release(e->held[--e->nheld]);
	free(e->held);
	e->held = NULL;
	e->held_cap = 0;
}

static void ep_hold(struct ep *e, struct ez_buf *buf)
{
	if (e->nheld == e->held_cap) {
		e->held_cap = e->held_cap ? 2 * e->held_cap : 64;
		e->held = realloc(e->held, (size_t)e->held_cap * sizeof(e->held[0]));
		ck_assert_ptr_nonnull(e->held);
	}
	e->held[e->nheld++] = buf;
	if (e->nheld > e->held_max)
		e->held_max = e->nheld;
}

static void ep_on_echo_sent(struct ez_conn *conn, int status, void *arg);

/* 0 sent, -ENOBUFS the send window is full (try again later), else fail. */
static int ep_echo(struct ez_conn *conn, struct ep *e, struct ez_buf *buf)
{
	int ret = ez_send(conn, ez_buf_data(buf), ez_buf_len(buf), ep_on_echo_sent, e);

	ck_assert_msg(ret == 0 || ret == -ENOBUFS, "echo: %d %s", ret, ez_errmsg());
	return ret;
}

/* A slot of the send window is free again: the held echoes go first. */
static void ep_on_echo_sent(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;
	int sent = 0;

	if (status || e->closed) {
		ep_drop_held(e);
		return;
	}
	while (sent < e->nheld && ep_echo(conn, e, e->held[sent]) == 0)
		ez_buf_release(e->held[sent++]);
	e->nheld -= sent;
	if (!e->nheld)
		ep_drop_held(e);
	else
		memmove(e->held, e->held + sent, (size_t)e->nheld * sizeof(e->held[0]));
}

static void ep_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct ep *e = arg;
	uint64_t seq = UINT64_MAX;

	if (e->closed)
		e->recv_after_close++;
	if (ez_buf_len(buf) >= sizeof(seq))
		memcpy(&seq, ez_buf_data(buf), sizeof(seq));
	if (seq != e->next_seq)
		e->bad_seq++;
	e->next_seq = seq + 1;
	e->received++;
	if (e->keep_buf) {
		if (e->kept)
			ez_buf_release(e->kept);
		e->kept = buf;
		return;
	}
	if (e->echo && !e->closed && (e->nheld || ep_echo(conn, e, buf) == -ENOBUFS)) {
		ep_hold(e, buf);
		return;
	}
	ez_buf_release(buf);
}

static void ep_on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;

	e->disconnected++;
	e->disconnect_status = status;
	ep_drop_held(e);
	snprintf(e->disconnect_msg, sizeof(e->disconnect_msg), "%s", ez_conn_errmsg(conn));
	if (e->close_on_disconnect && !e->closed) {
		e->closed = 1;
		ez_conn_close(conn);
	}
}

const struct ez_conn_cbs ep_cbs = { .on_connect = ep_on_connect, .on_recv = ep_on_recv, .on_disconnect = ep_on_disconnect };

/* A connect whose options leave connect_timeout_ms at its default (5 s)
 * gets the hang ceiling instead: these tests want the connection, and the
 * default is a deadline for a quiet network, not for a loaded TCG host under
 * ASan, where one took more than 5 s (test_exhaust, in a loaded README run:
 * "connection not established after 5020 ms: waiting for the peer's CM
 * reply"). A test about the deadline sets its own. */
int ep_connect(struct fb *b, struct ep *e, const char *port, const struct ez_conn_opts *o)
{
	struct ez_conn_opts wait_long = { 0 };

	if (o)
		wait_long = *o;
	if (!wait_long.connect_timeout_ms)
		wait_long.connect_timeout_ms = (uint32_t)(HANG_CEILING_S * 1000);
	return ez_connect(b->ctx, test_addr(), port, &wait_long, &ep_cbs, e, &e->conn);
}

int ep_send_seq(struct ep *e, uint64_t seq)
{
	return ez_send(e->conn, &seq, sizeof(seq), NULL, NULL);
}

void ep_close(struct ep *e)
{
	if (!e->closed && e->conn) {
		e->closed = 1;
		ep_drop_held(e);
		ez_conn_close(e->conn);
	}
}

/* ---- the server ------------------------------------------------------- */

static void srv_ep_connect(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;
	struct srv *s = e->user;

	ep_on_connect(conn, status, arg);
	if (!status) {
		s->connected++;
	} else {
		s->connect_failed++;
		e->closed = 1;
		ez_conn_close(conn);
	}
}

static void srv_ep_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;
	struct srv *s = e->user;

	s->disconnected++;
	ep_on_disconnect(conn, status, arg);
}

static const struct ez_conn_cbs srv_cbs = { .on_connect = srv_ep_connect, .on_recv = ep_on_recv, .on_disconnect = srv_ep_disconnect };

static void srv_on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct srv *s = arg;

	(void)l;
	s->requests++;
	if (s->hold && s->nheld < (int)(sizeof(s->held) / sizeof(s->held[0]))) {
		s->held[s->nheld++] = req;
		return;
	}
	if (s->reject_all) {
		ck_assert_int_eq(ez_reject(req, "no", 2), 0);
		return;
	}
	if (s->neps == s->cap) {
		ck_assert_int_eq(ez_reject(req, "full", 4), 0);
		return;
	}
	srv_accept(s, req);
}

int srv_accept(struct srv *s, struct ez_conn_req *req)
{
	struct ep *e;
	int ret;

	ck_assert_int_lt(s->neps, s->cap);
	e = &s->eps[s->neps];
	memset(e, 0, sizeof(*e));
	e->user = s;
	e->echo = !s->no_echo;
	e->close_on_disconnect = !s->keep_ended;
	e->keep_buf = s->keep_bufs;
	ret = ez_accept(req, &s->opts, &srv_cbs, e, &e->conn);
	if (ret) {
		s->accept_errors++;
		s->accept_status = ret;
		snprintf(s->accept_msg, sizeof(s->accept_msg), "%s", ez_errmsg());
		return ret;
	}
	s->neps++;
	return 0;
}

void srv_start(struct fb *b, struct srv *s, int cap)
{
	struct ez_listen_opts lo = s->lopts;

	if (!lo.backlog)
		lo.backlog = 1024;
	lo.auth_key = s->auth_key;
	lo.auth_key_len = s->auth_key_len;
	lo.access_fail_limit = s->access_fail_limit;
	lo.access_ban_ms = s->access_ban_ms;

	s->b = b;
	s->cap = cap;
	s->eps = calloc((size_t)cap, sizeof(*s->eps));
	ck_assert_ptr_nonnull(s->eps);
	ck_assert_msg(ez_listen(b->ctx, s->any_addr ? NULL : test_addr(), "0", &lo, srv_on_request, s,
			       &s->l) == 0,
		      "ez_listen: %s", ez_errmsg());
	snprintf(s->port, sizeof(s->port), "%u", ez_listener_port(s->l));
}

/* Has this accepted connection had its final callback? */
static int ep_ended(const struct ep *e)
{
	return e->connected && (e->connect_status != 0 || e->disconnected);
}

static int srv_wait_ended(struct srv *s, double ceiling_s)
{
	double end = now_s() + ceiling_s;
	int i;

	for (;;) {
		for (i = 0; i < s->neps && ep_ended(&s->eps[i]); i++)
			;
		if (i == s->neps)
			return 1;
		if (now_s() > end)
			return 0;
		fb_spin(s->b, 0.02);
	}
}

/* Closes what is still open and waits until every handle is gone. */
void srv_stop(struct srv *s)
{
	int i;

	if (s->l)
		ez_listener_close(s->l);
	s->l = NULL;
	/* ep_close() also gives back the echoes still held for the window. */
	for (i = 0; i < s->neps; i++)
		ep_close(&s->eps[i]);
	/* The eps are the connections' callback arguments: they may be freed only
	 * after each connection's final callback (on_connect < 0, or
	 * on_disconnect), which on a loaded host comes seconds after the close. */
	ck_assert_msg(srv_wait_ended(s, CTX_FREE_CEILING_S),
		      "server connections not ended %.0f s after their close", CTX_FREE_CEILING_S);
	free(s->eps);
	s->eps = NULL;
}

/* ---- resource counters ------------------------------------------------ */

int count_fds(void)
{
	char path[64];
	int n = 0, fd;

	/* Probing keeps the count free of the fd a directory listing would add. */
	for (fd = 0; fd < 65536; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (access(path, F_OK) == 0)
			n++;
		else if (fd > 4096)
			break;
	}
	return n;
}

long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

size_t kept_void_bytes(void)
{
	return conn_quarantine_bytes();
}

int rdma_res_count(const char *what)
{
	char cmd[160];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "rdma res show %s 2>/dev/null | grep -c 'pid %d '", what,
		 (int)getpid());
	f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}
