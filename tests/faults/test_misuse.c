/* test_misuse.c: misuse the API cannot leave silent: calls from a thread that does not own the context, two threads in ez_ctx_process, a nested ez_ctx_process, stale buffer handles, ez_ctx_free while buffers are held, a connection closed after its final callback, buffers released after their pool's free. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "easyrdma.h"
#include "fault.h"
#include "../checkmain.h"

#define MSG_MAX 512

/* ---- log capture (the hook runs on whichever thread logs) -------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_errors;
static char log_last[512];

static void on_log(enum ez_log_level level, const char *msg, void *arg)
{
	(void)arg;
	if (level != EZ_LOG_ERR)
		return;
	pthread_mutex_lock(&log_lock);
	log_errors++;
	snprintf(log_last, sizeof(log_last), "%s", msg);
	pthread_mutex_unlock(&log_lock);
}

static int log_count(void)
{
	int n;

	pthread_mutex_lock(&log_lock);
	n = log_errors;
	pthread_mutex_unlock(&log_lock);
	return n;
}

static void log_start(void)
{
	pthread_mutex_lock(&log_lock);
	log_errors = 0;
	log_last[0] = '\0';
	pthread_mutex_unlock(&log_lock);
	ez_set_log(on_log, NULL, EZ_LOG_WARN);
}

/* The refusal a call from thread `caller` gets for an object of `owner`. */
static void perm_msg(char *buf, size_t len, const char *fn, pthread_t caller, pthread_t owner)
{
	snprintf(buf, len, "%s: called from thread %#lx; the context belongs to thread %#lx "
		 "(an easyrdma context and its objects are used from one thread)", fn,
		 (unsigned long)caller, (unsigned long)owner);
}

static void no_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	(void)l;
	(void)req;
	(void)arg;
}

/* ---- one connected pair ------------------------------------------------ */

static void pair_up(struct fb *b, struct srv *s, struct ep *c, const struct ez_conn_opts *o)
{
	srv_start(b, s, 4);
	ck_assert_int_eq(ep_connect(b, c, s->port, o), 0);
	ck_assert_msg(fb_run(b, &c->connected, 1, 10), "no on_connect");
	ck_assert_msg(c->connect_status == 0, "connect: %d %s", c->connect_status, c->connect_msg);
	ck_assert(fb_run(b, &s->connected, 1, 5));
}

static void pair_down(struct fb *b, struct srv *s, struct ep *c)
{
	ep_close(c);
	ck_assert(fb_run(b, &c->disconnected, 1, 5));
	srv_stop(s);
}

/* ---- calls from a second thread --------------------------------------- */

#define NCALLS 40

struct call {
	const char *fn;
	long ret;
	char msg[MSG_MAX];
};

struct intruder {
	struct fb *b;
	struct ep *c;
	struct srv *s;
	struct ez_mr *mr;
	struct ez_srqpool *pool;
	struct ez_buf *held;	/* a buffer the owner holds */
	pthread_t self;
	struct call calls[NCALLS];
	int n;
	int sends_refused;	/* of the burst of ez_send() */
	int burst;
	/* What the void / pointer calls gave back. */
	const char *conn_errmsg, *pool_errmsg;
	void *conn_arg, *mr_addr, *buf_data;
	const void *req_data;
	size_t mr_len, buf_len;
	uint16_t port;
};

static void note(struct intruder *t, const char *fn, long ret)
{
	struct call *c = &t->calls[t->n++];

	ck_assert_int_le(t->n, NCALLS);
	c->fn = fn;
	c->ret = ret;
	snprintf(c->msg, sizeof(c->msg), "%s", ez_errmsg());
}

static void *intrude(void *arg)
{
	struct intruder *t = arg;
	struct ez_conn *conn = t->c->conn, *nc = NULL;
	struct ez_rkey key = { .addr = 4096, .len = 64, .rkey = 1 };
	struct ez_conn_info info;
	struct ez_conn_stats st;
	struct ez_srqpool_stats pst;
	struct ez_srqpool *np = NULL;
	struct ez_listener *nl = NULL;
	struct ez_mr *nm = NULL;
	struct iovec iov = { .iov_base = "x", .iov_len = 1 };
	char mem[64];
	uint64_t seq = 1000;

	t->self = pthread_self();
	note(t, "ez_send", ez_send(conn, &seq, sizeof(seq), NULL, NULL));
	note(t, "ez_send", ez_sendv(conn, &iov, 1, NULL, NULL));
	note(t, "ez_send_mr", ez_send_mr(conn, t->mr, 0, 8, NULL, NULL));
	note(t, "ez_write", ez_write(conn, t->mr, 0, 8, &key, 0, NULL, NULL));
	note(t, "ez_read", ez_read(conn, t->mr, 0, 8, &key, 0, NULL, NULL));
	note(t, "ez_write_imm", ez_write_imm(conn, t->mr, 0, 8, &key, 0, 7, NULL, NULL));
	note(t, "ez_conn_info", ez_conn_info(conn, &info));
	note(t, "ez_conn_stats", ez_conn_stats(conn, &st));
	note(t, "ez_ctx_process", ez_ctx_process(t->b->ctx));
	note(t, "ez_ctx_fd", ez_ctx_fd(t->b->ctx));
	note(t, "ez_ctx_timeout_ms", ez_ctx_timeout_ms(t->b->ctx));
	note(t, "ez_ctx_free", ez_ctx_free(t->b->ctx));
	note(t, "ez_connect", ez_connect(t->b->ctx, test_addr(), t->s->port, NULL, &ep_cbs, NULL, &nc));
	note(t, "ez_listen", ez_listen(t->b->ctx, test_addr(), "0", NULL, no_request, NULL,
				       &nl));
	note(t, "ez_mr_reg", ez_mr_reg(t->b->ctx, NULL, mem, sizeof(mem), 0, &nm));
	note(t, "ez_mr_export", ez_mr_export(t->mr, &key));
	note(t, "ez_mr_dereg", ez_mr_dereg(t->mr));
	note(t, "ez_srqpool_new", ez_srqpool_new(t->b->ctx, NULL, NULL, &np));
	note(t, "ez_srqpool_stats", ez_srqpool_stats(t->pool, &pst));
	note(t, "ez_srqpool_free", ez_srqpool_free(t->pool));
	/* The calls that cannot return an error: they do nothing and log. */
	ez_conn_close(conn);
	note(t, "ez_conn_close", 0);
	ez_listener_close(t->s->l);
	note(t, "ez_listener_close", 0);
	t->port = ez_listener_port(t->s->l);
	note(t, "ez_listener_port", 0);
	t->conn_errmsg = ez_conn_errmsg(conn);
	note(t, "ez_conn_errmsg", 0);
	t->conn_arg = ez_conn_arg(conn);
	note(t, "ez_conn_arg", 0);
	t->mr_addr = ez_mr_addr(t->mr);
	note(t, "ez_mr_addr", 0);
	t->mr_len = ez_mr_len(t->mr);
	note(t, "ez_mr_len", 0);
	t->pool_errmsg = ez_srqpool_errmsg(t->pool);
	note(t, "ez_srqpool_errmsg", 0);
	t->buf_data = ez_buf_data(t->held);
	note(t, "ez_buf_data", 0);
	t->buf_len = ez_buf_len(t->held);
	note(t, "ez_buf_len", 0);
	ez_buf_release(t->held);
	note(t, "ez_buf_release", 0);
	ck_assert_ptr_null(nc);
	ck_assert_ptr_null(nl);
	ck_assert_ptr_null(nm);
	ck_assert_ptr_null(np);
	/* The burst of the issue: sends that "returned 0 and vanished". */
	for (int i = 0; i < t->burst; i++)
		t->sends_refused += ez_send(conn, &seq, sizeof(seq), NULL, NULL) == -EPERM;
	return NULL;
}

/* Held by the test's receiving connection (a shared pool's buffers). */
struct holder {
	struct ez_conn *conn;
	int connected, connect_status, disconnected;
	int received;
	struct ez_buf *bufs[64];
	int nbufs;
	int release_now;	/* give every buffer back at once */
	int nested_ret, free_ret, nested_calls;
	char nested_msg[MSG_MAX], free_msg[MSG_MAX];
	struct ez_ctx *ctx;	/* set: the callback calls ez_ctx_process() / ez_ctx_free() */
};

static void h_connect(struct ez_conn *conn, int status, void *arg)
{
	struct holder *h = arg;

	(void)conn;
	h->connected++;
	h->connect_status = status;
}

static void h_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct holder *h = arg;

	(void)conn;
	h->received++;
	if (h->ctx) {
		h->nested_calls++;
		h->nested_ret = ez_ctx_process(h->ctx);
		snprintf(h->nested_msg, sizeof(h->nested_msg), "%s", ez_errmsg());
		h->free_ret = ez_ctx_free(h->ctx);
		snprintf(h->free_msg, sizeof(h->free_msg), "%s", ez_errmsg());
	}
	if (h->release_now || h->nbufs == 64) {
		ez_buf_release(buf);
		return;
	}
	h->bufs[h->nbufs++] = buf;
}

static void h_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct holder *h = arg;

	(void)conn;
	(void)status;
	h->disconnected++;
}

static const struct ez_conn_cbs holder_cbs = { .on_connect = h_connect, .on_recv = h_recv,
					       .on_disconnect = h_disconnect };

static void holder_connect(struct fb *b, struct srv *s, struct holder *h,
			   const struct ez_conn_opts *o)
{
	ck_assert_int_eq(ez_connect(b->ctx, test_addr(), s->port, o, &holder_cbs, h, &h->conn), 0);
	ck_assert_msg(fb_run(b, &h->connected, 1, 10), "no on_connect");
	ck_assert_int_eq(h->connect_status, 0);
}

/* A message of 64 bytes that says which it is. */
static void pattern(uint8_t *p, int i)
{
	for (int k = 0; k < 64; k++)
		p[k] = (uint8_t)(i * 7 + k);
}

static int is_pattern(const void *data, size_t len, int i)
{
	uint8_t want[64];

	pattern(want, i);
	return len == 64 && memcmp(data, want, 64) == 0;
}

static void send_pattern(struct ez_conn *conn, int i)
{
	uint8_t p[64];

	pattern(p, i);
	ck_assert_msg(ez_send(conn, p, sizeof(p), NULL, NULL) == 0, "send %d: %s", i, ez_errmsg());
}

/* Every entry point from a second thread: -EPERM with the exact message (or,
 * for the calls that return nothing or a pointer, nothing done and an error
 * logged); nothing posted: the peer receives nothing more; the owner goes on. */
START_TEST(calls_from_another_thread)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct holder h = { 0 };
	struct intruder t = { 0 };
	struct ez_srqpool_opts po = { .nbufs = 32 };
	struct ez_conn_opts o = { 0 };
	struct ez_conn_stats before, after;
	struct ez_srqpool_stats pst;
	static char mem[4096];
	pthread_t th;
	char want[MSG_MAX];
	int logged;

	fb_init(&b);
	log_start();
	s.no_echo = 1;
	pair_up(&b, &s, &c, NULL);
	/* A buffer the owner holds: a second connection, on a shared pool,
	 * whose server side echoes (the first one's only counts). */
	ck_assert_int_eq(ez_srqpool_new(b.ctx, NULL, &po, &t.pool), 0);
	ck_assert_int_eq(ez_mr_reg(b.ctx, NULL, mem, sizeof(mem), 0, &t.mr), 0);
	s.no_echo = 0;	/* the next accepted connection echoes */
	o.srqpool = t.pool;
	holder_connect(&b, &s, &h, &o);
	send_pattern(h.conn, 5);
	ck_assert(fb_run(&b, &h.received, 1, 5));
	ck_assert_int_eq(h.nbufs, 1);
	t.held = h.bufs[0];

	ck_assert_int_eq(ep_send_seq(&c, 0), 0);
	ck_assert(fb_run(&b, &s.eps[0].received, 1, 5));
	ck_assert_int_eq(ez_conn_stats(c.conn, &before), 0);
	logged = log_count();

	t.b = &b;
	t.c = &c;
	t.s = &s;
	t.burst = 5000;
	ck_assert_int_eq(pthread_create(&th, NULL, intrude, &t), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);

	for (int i = 0; i < t.n; i++) {
		int is_void = t.calls[i].ret == 0;

		perm_msg(want, sizeof(want), t.calls[i].fn, t.self, pthread_self());
		if (!is_void)
			ck_assert_msg(t.calls[i].ret == -EPERM, "%s from another thread: %ld (%s)",
				      t.calls[i].fn, t.calls[i].ret, t.calls[i].msg);
		ck_assert_msg(!strcmp(t.calls[i].msg, want), "%s: message\n  \"%s\"\nwant\n  \"%s\"",
			      t.calls[i].fn, t.calls[i].msg, want);
	}
	ck_assert_int_eq(t.n, 31);
	ck_assert_int_eq(t.sends_refused, t.burst);
	/* The void and pointer calls: one error line each (11), nothing returned. */
	ck_assert_int_eq(log_count() - logged, 11);
	ck_assert_str_eq(t.conn_errmsg, "");
	ck_assert_str_eq(t.pool_errmsg, "");
	ck_assert_ptr_null(t.conn_arg);
	ck_assert_ptr_null(t.mr_addr);
	ck_assert_ptr_null(t.buf_data);
	ck_assert_uint_eq(t.mr_len, 0);
	ck_assert_uint_eq(t.buf_len, 0);
	ck_assert_uint_eq(t.port, 0);

	/* Nothing was posted: the peer got nothing more; nothing changed. */
	fb_spin(&b, 0.3);
	ck_assert_int_eq(s.eps[0].received, 1);
	ck_assert_int_eq(ez_conn_stats(c.conn, &after), 0);
	ck_assert_uint_eq(after.msgs_sent, before.msgs_sent);
	ck_assert_uint_eq(after.writes + after.reads, before.writes + before.reads);
	ck_assert_int_eq(c.disconnected, 0);
	ck_assert_int_eq(ez_srqpool_stats(t.pool, &pst), 0);
	ck_assert_uint_eq(pst.in_use, 1);
	ck_assert_msg(is_pattern(ez_buf_data(t.held), ez_buf_len(t.held), 5), "held bytes changed");
	ck_assert_ptr_eq(ez_mr_addr(t.mr), mem);
	ck_assert_uint_ne(ez_listener_port(s.l), 0);

	/* The owner's calls work on. */
	for (int i = 1; i <= 10; i++)
		ck_assert_int_eq(ep_send_seq(&c, (uint64_t)i), 0);
	ck_assert_msg(fb_run(&b, &s.eps[0].received, 11, 5), "received %d", s.eps[0].received);
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	ez_buf_release(t.held);
	ck_assert_int_eq(ez_srqpool_stats(t.pool, &pst), 0);
	ck_assert_uint_eq(pst.in_use, 0);
	ez_conn_close(h.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, 5));
	pair_down(&b, &s, &c);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(ez_srqpool_free(t.pool), 0);
	ck_assert_int_eq(ez_mr_dereg(t.mr), 0);
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
	fb_fini(&b);
}
END_TEST

/* ---- two threads in ez_ctx_process ------------------------------------ */

struct poller {
	struct ez_ctx *ctx;
	volatile int stop;
	long refused, other;
	char msg[MSG_MAX];
};

static void *poll_too(void *arg)
{
	struct poller *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		int r = ez_ctx_process(p->ctx);

		if (r == -EPERM)
			p->refused++;
		else
			p->other++;
		snprintf(p->msg, sizeof(p->msg), "%s", ez_errmsg());
		usleep(50);
	}
	return NULL;
}

/* The owner runs the loop while a second thread calls ez_ctx_process() on
 * the same context all along: the second is refused every time, and every
 * callback runs once: each message is echoed once, in order. */
START_TEST(two_threads_process)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct poller p = { 0 };
	pthread_t th;
	char want[MSG_MAX];
	int sent = 0, rounds = 20, per = 25;

	fb_init(&b);
	pair_up(&b, &s, &c, NULL);
	p.ctx = b.ctx;
	ck_assert_int_eq(pthread_create(&th, NULL, poll_too, &p), 0);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < per; i++, sent++)
			ck_assert_msg(ep_send_seq(&c, (uint64_t)sent) == 0, "send %d: %s", sent,
				      ez_errmsg());
		ck_assert_msg(fb_run(&b, &c.received, sent, 10), "echoes %d/%d", c.received, sent);
	}
	fb_spin(&b, 0.2);
	__atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(c.received, sent);
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(s.eps[0].received, sent);
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	ck_assert_int_gt(p.refused, 0);
	ck_assert_int_eq(p.other, 0);
	perm_msg(want, sizeof(want), "ez_ctx_process", th, pthread_self());
	ck_assert_str_eq(p.msg, want);
	pair_down(&b, &s, &c);
	fb_fini(&b);
}
END_TEST

/* ---- the context's libev loop run by another thread --------------------- */

struct loop_runner {
	struct ev_loop *loop;
	double secs;
	int runs;
};

static void *run_loop_there(void *arg)
{
	struct loop_runner *r = arg;
	double end = now_s() + r->secs;

	while (now_s() < end) {
		ev_run(r->loop, EVRUN_NOWAIT);
		r->runs++;
		usleep(1000);
	}
	return NULL;
}

/* In event mode a completion channel sits on the application's libev loop
 * itself (not behind the context's fd): a thread that runs that loop
 * without owning the context still gets nothing done. A message sent while
 * only that thread runs the loop is not delivered there (no callback runs on
 * it; each wake-up logs the refusal with both threads), and is delivered,
 * echoed and not lost once the owner runs the loop again. */
START_TEST(loop_run_by_another_thread)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct loop_runner r = { 0 };
	pthread_t th;
	char want[MSG_MAX], got[MSG_MAX];
	int errors;

	fb_init(&b);
	pair_up(&b, &s, &c, NULL);
	log_start();
	ck_assert_msg(ep_send_seq(&c, 0) == 0, "send: %s", ez_errmsg());
	r.loop = b.loop;
	r.secs = 0.5;
	ck_assert_int_eq(pthread_create(&th, NULL, run_loop_there, &r), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	pthread_mutex_lock(&log_lock);
	errors = log_errors;
	snprintf(got, sizeof(got), "%s", log_last);
	pthread_mutex_unlock(&log_lock);
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
	ck_assert_int_gt(r.runs, 10);
	ck_assert_int_eq(s.eps[0].received, 0);
	ck_assert_int_eq(c.received, 0);
	ck_assert_int_gt(errors, 0);
	perm_msg(want, sizeof(want), "ez_ctx_process", th, pthread_self());
	ck_assert_str_eq(got, want);
	ck_assert_msg(fb_run(&b, &c.received, 1, 5), "no echo once the owner ran the loop");
	ck_assert_int_eq(s.eps[0].received, 1);
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	ck_assert_int_eq(c.bad_seq, 0);
	pair_down(&b, &s, &c);
	fb_fini(&b);
}
END_TEST

/* ez_ctx_process() (and ez_ctx_free()) from a callback of the same context,
 * on the right thread: -EBUSY, and the outer pass goes on. */
START_TEST(nested_process)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct holder h = { 0 };

	fb_init(&b);
	pair_up(&b, &s, &c, NULL);
	h.release_now = 1;
	holder_connect(&b, &s, &h, NULL);
	h.ctx = b.ctx;
	send_pattern(h.conn, 1);
	send_pattern(h.conn, 2);
	ck_assert(fb_run(&b, &h.received, 2, 5));
	ck_assert_int_eq(h.nested_calls, 2);
	ck_assert_int_eq(h.nested_ret, -EBUSY);
	ck_assert_str_eq(h.nested_msg, "ez_ctx_process: called from a callback of the same context "
			 "(already processing); return from the callback instead");
	ck_assert_int_eq(h.free_ret, -EBUSY);
	/* In on_recv the application holds the buffer at hand: that is what
	 * it is told first (connections are alive too). */
	ck_assert_str_eq(h.free_msg, "ez_ctx_free: 1 received buffer is still held: "
			 "ez_buf_release() them first; nothing freed");
	h.ctx = NULL;
	/* Outside callbacks ez_ctx_process() runs. */
	ck_assert_int_ge(ez_ctx_process(b.ctx), 0);
	send_pattern(h.conn, 3);
	ck_assert(fb_run(&b, &h.received, 3, 5));
	ez_conn_close(h.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, 5));
	pair_down(&b, &s, &c);
	fb_fini(&b);
}
END_TEST

/* ---- stale buffer handles ---------------------------------------------- */

/* A handle released, its buffer reused for a message the application holds:
 * releasing (or reading) the old handle is refused, the held message keeps
 * its bytes, the pool's counters are right. */
START_TEST(stale_handle)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct holder h = { 0 };
	struct ez_srqpool *pool;
	struct ez_srqpool_opts po = { .nbufs = 16, .refill_batch = 4 };
	struct ez_conn_opts o = { 0 };
	struct ez_srqpool_stats st, st2;
	struct ez_buf *old, *cur = NULL;
	void *old_data;
	char want[MSG_MAX];
	int i, hit = -1, logged;

	fb_init(&b);
	log_start();
	pair_up(&b, &s, &c, NULL);
	ck_assert_int_eq(ez_srqpool_new(b.ctx, NULL, &po, &pool), 0);
	o.srqpool = pool;
	holder_connect(&b, &s, &h, &o);
	send_pattern(h.conn, 0);
	ck_assert(fb_run(&b, &h.received, 1, 5));
	old = h.bufs[0];
	old_data = ez_buf_data(old);
	ck_assert(is_pattern(old_data, ez_buf_len(old), 0));
	h.nbufs = 0;
	ez_buf_release(old);
	/* Echo until a message lands in the same buffer; the others go back. */
	for (i = 1; i < 400 && hit < 0; i++) {
		send_pattern(h.conn, i);
		ck_assert(fb_run(&b, &h.received, i + 1, 5));
		ck_assert_int_eq(h.nbufs, 1);
		if (ez_buf_data(h.bufs[0]) == old_data) {
			hit = i;
			cur = h.bufs[0];
		} else {
			ez_buf_release(h.bufs[0]);
		}
		h.nbufs = 0;
	}
	ck_assert_msg(hit > 0, "the buffer was never reused in 400 messages");
	ck_assert(is_pattern(ez_buf_data(cur), ez_buf_len(cur), hit));
	ck_assert_int_eq(ez_srqpool_stats(pool, &st), 0);
	ck_assert_uint_eq(st.in_use, 1);
	ck_assert_uint_eq(st.posted + st.free + st.in_use, st.total);

	logged = log_count();
	ez_buf_release(old);
	snprintf(want, sizeof(want), "ez_buf_release: stale handle %p: its buffer was released "
		 "and now holds another message (generation %u, the handle's %u); refused, "
		 "nothing changed", (void *)old, (unsigned)((uintptr_t)cur >> 48),
		 (unsigned)((uintptr_t)old >> 48));
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_str_eq(ez_srqpool_errmsg(pool), want);
	ck_assert_int_eq(log_count(), logged + 1);
	ck_assert_ptr_null(ez_buf_data(old));
	ck_assert_uint_eq(ez_buf_len(old), 0);
	ck_assert_int_eq(log_count(), logged + 3);
	/* The held message is whole and still held. */
	ck_assert_msg(is_pattern(ez_buf_data(cur), ez_buf_len(cur), hit), "held bytes changed");
	ck_assert_int_eq(ez_srqpool_stats(pool, &st2), 0);
	ck_assert_uint_eq(st2.in_use, 1);
	ck_assert_uint_eq(st2.free, st.free);
	ck_assert_uint_eq(st2.posted, st.posted);

	/* Released, then released again: refused, nothing counted twice. */
	ez_buf_release(cur);
	ck_assert_int_eq(ez_srqpool_stats(pool, &st), 0);
	ck_assert_uint_eq(st.in_use, 0);
	ez_buf_release(cur);
	snprintf(want, sizeof(want), "ez_buf_release: buffer %p is not held by the application "
		 "(released twice?)", (void *)cur);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(ez_srqpool_stats(pool, &st2), 0);
	ck_assert_uint_eq(st2.in_use, 0);
	ck_assert_uint_eq(st2.free + st2.posted, st.free + st.posted);
	ck_assert_uint_eq(st2.posted + st2.free + st2.in_use, st2.total);

	/* The pool works on. */
	h.release_now = 1;
	send_pattern(h.conn, 999);
	ck_assert(fb_run(&b, &h.received, hit + 2, 5));
	ez_conn_close(h.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, 5));
	pair_down(&b, &s, &c);
	ck_assert_int_eq(ez_srqpool_free(pool), 0);
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
	fb_fini(&b);
}
END_TEST

/* ---- ez_ctx_free while buffers are held --------------------------------- */

/* A closed connection's private pool whose buffers the application still
 * holds, and a shared pool's held buffer: ez_ctx_free() and ez_srqpool_free()
 * refuse, naming them; nothing is freed (the held bytes stay, the context
 * connects again); once released, both succeed and the PD is gone. */
START_TEST(ctx_free_with_held_buffers)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct holder h = { 0 }, h2 = { 0 };
	struct ez_srqpool *pool;
	struct ez_srqpool_opts po = { .nbufs = 32 };
	struct ez_conn_opts o = { 0 };
	int i, pds;

	fb_init(&b);
	srv_start(&b, &s, 8);
	holder_connect(&b, &s, &h, NULL);	/* a private pool */
	for (i = 0; i < 3; i++)
		send_pattern(h.conn, i);
	ck_assert(fb_run(&b, &h.received, 3, 5));
	ck_assert_int_eq(h.nbufs, 3);
	ez_conn_close(h.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, 5));
	srv_stop(&s);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(ez_ctx_free(b.ctx), -EBUSY);
	ck_assert_str_eq(ez_errmsg(), "ez_ctx_free: 3 received buffers are still held: "
			 "ez_buf_release() them first; nothing freed");
	for (i = 0; i < 3; i++)
		ck_assert_msg(is_pattern(ez_buf_data(h.bufs[i]), ez_buf_len(h.bufs[i]), i),
			      "held buffer %d changed after its connection closed", i);

	/* Nothing was freed: the context connects and echoes. */
	memset(&s, 0, sizeof(s));
	pair_up(&b, &s, &c, NULL);
	ck_assert_int_eq(ep_send_seq(&c, 0), 0);
	ck_assert(fb_run(&b, &c.received, 1, 5));

	/* A shared pool's buffer held too. */
	ck_assert_int_eq(ez_srqpool_new(b.ctx, NULL, &po, &pool), 0);
	o.srqpool = pool;
	holder_connect(&b, &s, &h2, &o);
	send_pattern(h2.conn, 7);
	ck_assert(fb_run(&b, &h2.received, 1, 5));
	ez_conn_close(h2.conn);
	ck_assert(fb_run(&b, &h2.disconnected, 1, 5));
	pair_down(&b, &s, &c);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(ez_srqpool_free(pool), -EBUSY);
	ck_assert_str_eq(ez_errmsg(), "ez_srqpool_free: the application still holds 1 buffer(s) "
			 "(ez_buf_release them first); nothing freed");
	ez_buf_release(h.bufs[0]);
	ck_assert_int_eq(ez_ctx_free(b.ctx), -EBUSY);
	ck_assert_str_eq(ez_errmsg(), "ez_ctx_free: 3 received buffers are still held: "
			 "ez_buf_release() them first; nothing freed");
	ez_buf_release(h.bufs[1]);
	ez_buf_release(h.bufs[2]);
	ck_assert_int_eq(ez_ctx_free(b.ctx), -EBUSY);
	ck_assert_str_eq(ez_errmsg(), "ez_ctx_free: 1 received buffer is still held: "
			 "ez_buf_release() them first; nothing freed");
	ck_assert(is_pattern(ez_buf_data(h2.bufs[0]), ez_buf_len(h2.bufs[0]), 7));
	ez_buf_release(h2.bufs[0]);
	ck_assert_int_eq(ez_ctx_free(b.ctx), -EBUSY);	/* the pool itself is alive */
	ck_assert_int_eq(ez_srqpool_free(pool), 0);
	fb_fini(&b);
	pds = rdma_res_count("pd");
	ck_assert_msg(pds <= 0, "%d protection domains left after ez_ctx_free", pds);
}
END_TEST

/* ---- handles used after their object is gone ----------------------------- */

/* The message every call with a freed connection's handle gets. */
static void void_conn_msg(char *buf, size_t len, const char *fn, const struct ez_conn *conn)
{
	snprintf(buf, len, "%s: connection %p already ended and reported (its final callback "
		 "ran); the handle is void", fn, (const void *)conn);
}

static void assert_last_log(const char *want)
{
	char last[sizeof(log_last)];

	pthread_mutex_lock(&log_lock);
	snprintf(last, sizeof(last), "%s", log_last);
	pthread_mutex_unlock(&log_lock);
	ck_assert_str_eq(last, want);
}

/* A connection is freed once it is closed and its final callback has run.
 * Closing it again after that (in either order: closed first, or closed
 * inside on_disconnect), or any call with it, is refused by name: the
 * library reads its void mark (lib/conn/conn_handle.h), not freed memory
 * (this runs under ASan in the ASan tier: a report fails it). */
START_TEST(close_after_final_callback)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct holder h = { 0 };
	struct ez_conn_info info;
	char want[MSG_MAX];
	int logged;

	fb_init(&b);
	log_start();
	srv_start(&b, &s, 4);
	/* Closed first, then its on_disconnect: freed after that returns. */
	holder_connect(&b, &s, &h, NULL);
	ez_conn_close(h.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, 5));
	fb_spin(&b, 0.1);
	logged = log_count();
	ez_conn_close(h.conn);
	void_conn_msg(want, sizeof(want), "ez_conn_close", h.conn);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(log_count(), logged + 1);
	assert_last_log(want);
	ck_assert_int_eq(ez_send(h.conn, "x", 1, NULL, NULL), -EBADF);
	void_conn_msg(want, sizeof(want), "ez_send", h.conn);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(ez_conn_info(h.conn, &info), -EBADF);
	ck_assert_str_eq(ez_conn_errmsg(h.conn), "");
	ck_assert_ptr_null(ez_conn_arg(h.conn));
	ck_assert_int_eq(log_count(), logged + 5);

	/* Ended by the peer, closed inside its on_disconnect, closed again. */
	c.close_on_disconnect = 1;
	ck_assert_int_eq(ep_connect(&b, &c, s.port, NULL), 0);
	ck_assert_msg(fb_run(&b, &c.connected, 1, 10), "no on_connect");
	ck_assert_int_eq(c.connect_status, 0);
	srv_stop(&s);	/* closes the server's side */
	ck_assert(fb_run(&b, &c.disconnected, 1, 10));
	ck_assert_int_eq(c.closed, 1);
	fb_spin(&b, 0.1);
	logged = log_count();
	ez_conn_close(c.conn);
	void_conn_msg(want, sizeof(want), "ez_conn_close", c.conn);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(log_count(), logged + 1);
	assert_last_log(want);
	/* Nothing of the context depends on the void handles: it frees. */
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
	fb_fini(&b);
}
END_TEST

/* Buffers released, the pool freed, then a release again (twice): refused,
 * named, no memory of the pool read (its descriptors are type-stable,
 * lib/srqpool/desc.c). A large message's buffer released twice: the same
 * refusal as a receive buffer's. */
START_TEST(release_after_pool_free)
{
	struct fb b;
	struct srv s = { 0 };
	struct holder h = { 0 }, hl = { 0 };
	struct ez_srqpool *pool;
	struct ez_srqpool_opts po = { .nbufs = 16 };
	struct ez_conn_opts o = { 0 };
	struct ez_buf *old, *big;
	static uint8_t large[96 * 1024];
	char want[MSG_MAX];
	int logged;

	fb_init(&b);
	log_start();
	s.opts.max_msg_size = 128 * 1024;	/* rendezvous goes to a power of two */
	srv_start(&b, &s, 4);
	ck_assert_int_eq(ez_srqpool_new(b.ctx, NULL, &po, &pool), 0);
	o.srqpool = pool;
	holder_connect(&b, &s, &h, &o);
	send_pattern(h.conn, 1);
	ck_assert(fb_run(&b, &h.received, 1, 5));
	old = h.bufs[0];
	ck_assert(is_pattern(ez_buf_data(old), ez_buf_len(old), 1));
	ez_buf_release(old);
	ez_conn_close(h.conn);
	ck_assert(fb_run(&b, &h.disconnected, 1, 5));
	fb_spin(&b, 0.2);
	ck_assert_int_eq(ez_srqpool_free(pool), 0);

	logged = log_count();
	snprintf(want, sizeof(want), "ez_buf_release: buffer %p was released and its pool freed "
		 "(ez_srqpool_free); the handle is void", (void *)old);
	ez_buf_release(old);
	ck_assert_str_eq(ez_errmsg(), want);
	assert_last_log(want);
	ez_buf_release(old);	/* a double release after the free */
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(log_count(), logged + 2);
	ck_assert_ptr_null(ez_buf_data(old));
	ck_assert_uint_eq(ez_buf_len(old), 0);
	ck_assert_int_eq(log_count(), logged + 4);

	/* A large message: by rendezvous, as it is above the largest receive
	 * buffer a private pool has (64 KiB, CONN_EAGER_MAX). */
	memset(&o, 0, sizeof(o));
	o.max_msg_size = 128 * 1024;
	memset(large, 0x3c, sizeof(large));
	holder_connect(&b, &s, &hl, &o);
	ck_assert_int_eq(ez_send(hl.conn, large, sizeof(large), NULL, NULL), 0);
	ck_assert(fb_run(&b, &hl.received, 1, 10));
	big = hl.bufs[0];
	ck_assert_uint_eq(ez_buf_len(big), sizeof(large));
	ck_assert(memcmp(ez_buf_data(big), large, sizeof(large)) == 0);
	ez_buf_release(big);
	logged = log_count();
	ez_buf_release(big);
	snprintf(want, sizeof(want), "ez_buf_release: buffer %p is not held by the application "
		 "(released twice?)", (void *)big);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(log_count(), logged + 1);
	ez_conn_close(hl.conn);
	ck_assert(fb_run(&b, &hl.disconnected, 1, 5));
	srv_stop(&s);
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
	fb_fini(&b);
	/* The context (and the device's large buffers) gone: still refused. */
	ez_buf_release(big);
	ck_assert_str_eq(ez_errmsg(), want);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_misuse");
	TCase *tc = tcase_create("misuse");
	TCase *vd = tcase_create("void");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, calls_from_another_thread);
	tcase_add_test(tc, two_threads_process);
	tcase_add_test(tc, loop_run_by_another_thread);
	tcase_add_test(tc, nested_process);
	tcase_add_test(tc, stale_handle);
	tcase_add_test(tc, ctx_free_with_held_buffers);
	suite_add_tcase(su, tc);
	/* Handles whose object is gone (CK_RUN_CASE=void). */
	tcase_set_timeout(vd, 60);
	tcase_add_test(vd, close_after_final_callback);
	tcase_add_test(vd, release_after_pool_free);
	suite_add_tcase(su, vd);
	return check_run_suite(su, CK_NORMAL);
}
