/* test_workers.c: one listener, its connections spread over worker threads (ez_listen_opts.workers, ez_handoff): every callback on its worker's thread, echoes checked byte for byte, workers freed during handoffs, a connect storm, the listener closed with handoffs pending, a session accepted on a worker resumed through the listener (forged tokens refused there; a stopped worker's sessions refused with the reason). */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "testenv.h"
#include "conn/listener.h"
#include "conn/path.h"
#include "conn/session_route.h"
#include "wire/resume.h"
#include "../checkmain.h"

#define MAXW 4
#define MAXC 64		/* connections per client thread */
#define MAXT 4		/* client threads */
#define MSG_MAX 2048
/* The handshake deadline of the tests' listeners: a storm of connects in a
 * one-vCPU TCG guest under ASan (workers, clients and listener on one CPU)
 * takes seconds; the default 2 s refused some there. */
#define HS_MS 20000

/* Polls ctx once for up to ms (each thread runs its own context this way). */
static void pump(struct ez_ctx *ctx, int ms)
{
	struct pollfd p = { .fd = ez_ctx_fd(ctx), .events = POLLIN };
	int t = ez_ctx_timeout_ms(ctx);

	if (t < 0 || t > ms)
		t = ms;
	poll(&p, 1, t);
	ez_ctx_process(ctx);
}

/* ---- workers: each a thread with its own context ------------------------ */

struct worker {
	pthread_t th;
	pthread_t self;		/* set by the thread itself */
	struct ez_ctx *ctx;
	int idx;
	int ready;		/* atomic: taking requests */
	int stop;		/* atomic: close everything and free */
	int stall;		/* atomic: do not run the loop while set */
	int stalled;		/* atomic: the worker saw stall set */
	int stop_taking;	/* atomic: stop taking requests (even stalled) */
	int took_stop;		/* atomic: it did */
	int free_now;		/* atomic: free the context at once (queued requests rejected) */
	int freed;		/* atomic */
	/* The worker's own (read after the join). */
	int requests, accepted, connected, disconnected, live, msgs;
	int wrong_thread;	/* callbacks that ran on another thread */
	int free_ret;
	/* session_resumes_on_its_worker: sequence-numbered messages, each
	 * checked byte for byte and counted once (got: atomic, the others the
	 * worker's); the session's stats at its end. */
	int got, bad, dups;
	unsigned char seen[1024];
	struct ez_conn_stats end_stats;
	int end_status;
};

static int ld(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void w_check(struct worker *w)
{
	if (!pthread_equal(pthread_self(), w->self))
		w->wrong_thread++;
}

static void w_on_connect(struct ez_conn *c, int status, void *arg)
{
	struct worker *w = arg;

	w_check(w);
	if (status == 0) {
		w->connected++;
	} else {
		fprintf(stderr, "worker %d: on_connect %d: %s\n", w->idx, status, ez_conn_errmsg(c));
		w->live--;
		ez_conn_close(c);
	}
}

/* Echo: the bytes go back as they came. */
static void w_on_recv(struct ez_conn *c, struct ez_buf *b, void *arg)
{
	struct worker *w = arg;

	w_check(w);
	w->msgs++;
	if (ez_send(c, ez_buf_data(b), ez_buf_len(b), NULL, NULL))
		fprintf(stderr, "worker %d: echo: %s\n", w->idx, ez_errmsg());
	ez_buf_release(b);
}

static void w_on_disconnect(struct ez_conn *c, int status, void *arg)
{
	struct worker *w = arg;

	w_check(w);
	if (status)
		fprintf(stderr, "worker %d: on_disconnect %d: %s\n", w->idx, status, ez_conn_errmsg(c));
	w->disconnected++;
	w->live--;
	ez_conn_close(c);
}

static const struct ez_conn_cbs w_cbs = {
	.on_connect = w_on_connect, .on_recv = w_on_recv, .on_disconnect = w_on_disconnect,
};

/* ---- session_resumes_on_its_worker: the workers' side ------------------- */

#define RN 400		/* messages of the resumed session */
#define RSZ 1024	/* each */
#define RESUME_MS 20000

/* Set before the workers start: they accept resumable two-path sessions
 * and check what arrives instead of echoing it (an echo refused while
 * the session resumes would be lost to the test, not to the library). */
static int w_resume;

/* Message seq of the resumed session: its number, then bytes only it has. */
static void r_fill(unsigned char *m, int seq)
{
	memcpy(m, &seq, sizeof(seq));
	memset(m + sizeof(seq), (seq * 29 + 7) & 0xff, RSZ - sizeof(seq));
}

static void r_on_recv(struct ez_conn *c, struct ez_buf *b, void *arg)
{
	struct worker *w = arg;
	unsigned char want[RSZ];
	int seq = -1;

	(void)c;
	w_check(w);
	if (ez_buf_len(b) == RSZ)
		memcpy(&seq, ez_buf_data(b), sizeof(seq));
	if (seq < 0 || seq >= RN) {
		w->bad++;
	} else {
		r_fill(want, seq);
		if (memcmp(want, ez_buf_data(b), RSZ))
			w->bad++;
		else if (w->seen[seq]++)
			w->dups++;
		else
			st(&w->got, ld(&w->got) + 1);
	}
	ez_buf_release(b);
}

static void r_on_disconnect(struct ez_conn *c, int status, void *arg)
{
	struct worker *w = arg;

	w_check(w);
	if (ez_conn_stats(c, &w->end_stats))
		fprintf(stderr, "worker %d: ez_conn_stats: %s\n", w->idx, ez_errmsg());
	w->end_status = status;
	w_on_disconnect(c, status, arg);
}

static const struct ez_conn_cbs r_cbs = {
	.on_connect = w_on_connect, .on_recv = r_on_recv, .on_disconnect = r_on_disconnect,
};

static void w_on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct worker *w = arg;
	struct ez_conn *c;
	struct ez_conn_opts o = { .max_msg_size = MSG_MAX, .recv_depth = 32, .send_depth = 32 };

	(void)l;
	w_check(w);
	w->requests++;
	if (w_resume) {
		o = (struct ez_conn_opts){ .paths = 2, .resume_ms = RESUME_MS, .max_msg_size = RSZ,
					   .connect_timeout_ms = 20000 };
		if (ez_accept(req, &o, &r_cbs, w, &c) == 0) {
			w->accepted++;
			w->live++;
		} else {
			fprintf(stderr, "worker %d: ez_accept: %s\n", w->idx, ez_errmsg());
		}
		return;
	}
	if (ez_accept(req, &o, &w_cbs, w, &c) == 0) {
		w->accepted++;
		w->live++;
	} else {
		fprintf(stderr, "worker %d: ez_accept: %s\n", w->idx, ez_errmsg());
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	double t0;

	w->self = pthread_self();
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &w->ctx), 0);
	ck_assert_int_eq(ez_ctx_take_requests(w->ctx, w_on_request, w), 0);
	st(&w->ready, 1);
	while (!ld(&w->stop) && !ld(&w->free_now)) {
		if (ld(&w->stop_taking) && !ld(&w->took_stop)) {
			ck_assert_int_eq(ez_ctx_take_requests(w->ctx, NULL, NULL), 0);
			st(&w->took_stop, 1);
		}
		if (ld(&w->stall)) {
			st(&w->stalled, 1);
			usleep(2000);
			continue;
		}
		pump(w->ctx, 10);
	}
	/* Whatever the test wanted: connections go, then the context. */
	t0 = now_s();
	do {
		w->free_ret = ez_ctx_free(w->ctx);
		if (w->free_ret == -EBUSY)
			pump(w->ctx, 10);
	} while (w->free_ret == -EBUSY && now_s() - t0 < 20);
	if (w->free_ret)
		fprintf(stderr, "worker %d: ez_ctx_free: %s\n", w->idx, ez_errmsg());
	st(&w->freed, 1);
	return NULL;
}

static void workers_start(struct worker *ws, int n)
{
	for (int i = 0; i < n; i++) {
		memset(&ws[i], 0, sizeof(ws[i]));
		ws[i].idx = i;
		ck_assert_int_eq(pthread_create(&ws[i].th, NULL, worker_main, &ws[i]), 0);
	}
	for (int i = 0; i < n; i++)
		while (!ld(&ws[i].ready))
			usleep(1000);
}

static void workers_join(struct worker *ws, int n)
{
	for (int i = 0; i < n; i++) {
		st(&ws[i].stop, 1);
		pthread_join(ws[i].th, NULL);
		ck_assert_msg(ws[i].wrong_thread == 0, "worker %d: %d callbacks on another thread", i,
			      ws[i].wrong_thread);
		ck_assert_msg(ws[i].free_ret == 0, "worker %d: ez_ctx_free %d", i, ws[i].free_ret);
	}
}

/* ---- clients: threads, each with its own context (a multi-threaded client) */

struct client;

struct cconn {
	struct client *cl;
	int idx;
	struct ez_conn *conn;
	int status, done, sent, echoed, bad, closed;
	char msg[512];
};

struct client {
	pthread_t th;
	int idx, nconns, nmsgs;
	uint16_t port;
	struct ez_ctx *ctx;
	struct cconn c[MAXC];
	int finished;		/* atomic */
	int ok, refused, failed, bad;
	double deadline_s;
};

/* Message seq of connection (client, conn): a length and bytes that only it has. */
static size_t msg_fill(const struct cconn *cc, int seq, unsigned char *buf)
{
	size_t len = 1 + ((size_t)(cc->cl->idx * 131 + cc->idx * 17 + seq * 257) % (MSG_MAX - 1));

	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(cc->cl->idx * 7 + cc->idx * 3 + seq + i * 13);
	return len;
}

static void c_send_next(struct cconn *cc)
{
	unsigned char buf[MSG_MAX];
	size_t len = msg_fill(cc, cc->sent, buf);

	if (ez_send(cc->conn, buf, len, NULL, NULL) == 0)
		cc->sent++;
	else
		fprintf(stderr, "client send: %s\n", ez_errmsg());
}

static void c_on_connect(struct ez_conn *c, int status, void *arg)
{
	struct cconn *cc = arg;

	cc->status = status;
	if (status) {
		snprintf(cc->msg, sizeof(cc->msg), "%s", ez_conn_errmsg(c));
		cc->done = 1;
		ez_conn_close(c);
		cc->closed = 1;
		return;
	}
	/* Two in flight: echoes come back in order on one path. */
	c_send_next(cc);
	if (cc->cl->nmsgs > 1)
		c_send_next(cc);
}

static void c_on_recv(struct ez_conn *c, struct ez_buf *b, void *arg)
{
	struct cconn *cc = arg;
	unsigned char want[MSG_MAX];
	size_t len = msg_fill(cc, cc->echoed, want);

	if (ez_buf_len(b) != len || memcmp(ez_buf_data(b), want, len))
		cc->bad++;
	ez_buf_release(b);
	cc->echoed++;
	if (cc->sent < cc->cl->nmsgs)
		c_send_next(cc);
	if (cc->echoed == cc->cl->nmsgs && !cc->closed) {
		cc->done = 1;
		cc->closed = 1;
		ez_conn_close(c);
	}
}

static void c_on_disconnect(struct ez_conn *c, int status, void *arg)
{
	struct cconn *cc = arg;

	(void)status;
	if (!cc->closed) {
		cc->closed = 1;
		cc->done = 1;
		ez_conn_close(c);
	}
}

static const struct ez_conn_cbs c_cbs = {
	.on_connect = c_on_connect, .on_recv = c_on_recv, .on_disconnect = c_on_disconnect,
};

static int all_done(struct client *cl)
{
	for (int i = 0; i < cl->nconns; i++)
		if (!cl->c[i].done)
			return 0;
	return 1;
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	char port[8];
	struct ez_conn_opts o = { .max_msg_size = MSG_MAX, .recv_depth = 8, .send_depth = 8,
				  .connect_timeout_ms = 20000 };
	double t0;

	snprintf(port, sizeof(port), "%u", cl->port);
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &cl->ctx), 0);
	/* All at once: a storm when there are many. */
	for (int i = 0; i < cl->nconns; i++) {
		cl->c[i].cl = cl;
		cl->c[i].idx = i;
		ck_assert_int_eq(ez_connect(cl->ctx, test_addr(), port, &o, &c_cbs, &cl->c[i],
					    &cl->c[i].conn), 0);
	}
	t0 = now_s();
	while (!all_done(cl) && now_s() - t0 < cl->deadline_s)
		pump(cl->ctx, 10);
	for (int i = 0; i < cl->nconns; i++) {
		struct cconn *cc = &cl->c[i];

		if (!cc->done) {
			cl->failed++;
			fprintf(stderr, "client %d conn %d: not done (status %d, %d/%d echoed)\n",
				cl->idx, i, cc->status, cc->echoed, cl->nmsgs);
			if (!cc->closed)
				ez_conn_close(cc->conn);
		} else if (cc->status == 0 && cc->echoed == cl->nmsgs) {
			cl->ok++;
		} else if (cc->status == -ECONNREFUSED) {
			cl->refused++;
		} else {
			cl->failed++;
			fprintf(stderr, "client %d conn %d: status %d (%s), %d/%d echoed\n", cl->idx,
				i, cc->status, cc->msg, cc->echoed, cl->nmsgs);
		}
		cl->bad += cc->bad;
	}
	t0 = now_s();
	while (ez_ctx_free(cl->ctx) == -EBUSY && now_s() - t0 < 10)
		pump(cl->ctx, 10);
	st(&cl->finished, 1);
	return NULL;
}

static void clients_start(struct client *cls, int n, int nconns, int nmsgs, uint16_t port)
{
	for (int i = 0; i < n; i++) {
		memset(&cls[i], 0, sizeof(cls[i]));
		cls[i].idx = i;
		cls[i].nconns = nconns;
		cls[i].nmsgs = nmsgs;
		cls[i].port = port;
		cls[i].deadline_s = 60;
		ck_assert_int_eq(pthread_create(&cls[i].th, NULL, client_main, &cls[i]), 0);
	}
}

static int clients_finished(struct client *cls, int n)
{
	for (int i = 0; i < n; i++)
		if (!ld(&cls[i].finished))
			return 0;
	return 1;
}

/* The listener's thread runs its context until the clients are through. */
static void serve_until_clients(struct ez_ctx *ctx, struct client *cls, int n)
{
	double t0 = now_s();

	while (!clients_finished(cls, n) && now_s() - t0 < 90)
		pump(ctx, 10);
	for (int i = 0; i < n; i++)
		pthread_join(cls[i].th, NULL);
}

static void no_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	(void)l;
	(void)arg;
	ez_reject(req, "unexpected", 10);
}

/* ---- the tests ----------------------------------------------------------- */

/* N workers x M client threads, round-robin: each worker gets its share,
 * every callback on its own thread, every echo byte for byte. */
START_TEST(workers_round_robin)
{
	enum { NW = 3, NT = 2, NC = 6, NM = 8 };
	struct worker ws[NW];
	struct client cls[NT];
	struct ez_ctx *ctx, *wctx[NW];
	struct ez_listener *l;
	double t0 = now_s();
	int total = 0;

	workers_start(ws, NW);
	for (int i = 0; i < NW; i++)
		wctx[i] = ws[i].ctx;
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	{
		struct ez_listen_opts lo = { .handshake_timeout_ms = HS_MS, .nworkers = NW, .workers = wctx };

		ck_assert_msg(ez_listen(ctx, test_addr(), "0", &lo, NULL, NULL, &l) == 0, "%s",
			      ez_errmsg());
	}
	clients_start(cls, NT, NC, NM, ez_listener_port(l));
	serve_until_clients(ctx, cls, NT);
	for (int i = 0; i < NT; i++) {
		ck_assert_msg(cls[i].ok == NC, "client %d: %d of %d connections echoed (%d refused, %d failed)",
			      i, cls[i].ok, NC, cls[i].refused, cls[i].failed);
		ck_assert_int_eq(cls[i].bad, 0);
	}
	ez_listener_close(l);
	workers_join(ws, NW);
	for (int i = 0; i < NW; i++) {
		printf("worker %d: %d requests, %d connected, %d messages echoed\n", i,
		       ws[i].requests, ws[i].connected, ws[i].msgs);
		ck_assert_int_eq(ws[i].requests, NT * NC / NW);
		ck_assert_int_eq(ws[i].connected, NT * NC / NW);
		ck_assert_int_eq(ws[i].msgs, NT * NC / NW * NM);
		ck_assert_int_eq(ws[i].disconnected, ws[i].connected);
		total += ws[i].connected;
	}
	ck_assert_int_eq(total, NT * NC);
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
	printf("workers_round_robin: %d workers x %d client threads x %d connections: %.2f s\n",
	       NW, NT, NC, now_s() - t0);
}
END_TEST

/* The application's choice; a worker freed while requests queue for it:
 * those are rejected with the reason, the listener then skips it. */
static int placed;

static int place_alternate(struct ez_listener *l, const struct ez_conn_req *req,
			   unsigned int n, void *arg)
{
	(void)l;
	(void)req;
	(void)arg;
	return (int)(placed++ % n);
}

START_TEST(worker_freed_during_handoff)
{
	enum { NW = 2, NC = 6, NM = 2 };
	struct worker ws[NW];
	struct client cls[1];
	struct ez_ctx *ctx, *wctx[NW];
	struct ez_listener *l;
	double t0;
	int refused_ok = 0;

	workers_start(ws, NW);
	for (int i = 0; i < NW; i++)
		wctx[i] = ws[i].ctx;
	st(&ws[1].stall, 1);	/* its requests wait in its inbox */
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	{
		struct ez_listen_opts lo = { .handshake_timeout_ms = HS_MS, .nworkers = NW, .workers = wctx,
					     .placement = EZ_PLACE_CALLBACK, .place = place_alternate };

		ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", &lo, NULL, NULL, &l), 0);
	}
	placed = 0;
	clients_start(cls, 1, NC, NM, ez_listener_port(l));
	t0 = now_s();
	while (placed < NC && now_s() - t0 < 30)
		pump(ctx, 10);
	ck_assert_int_eq(placed, NC);
	/* Three requests sit in worker 1's inbox: it is freed now. */
	st(&ws[1].free_now, 1);
	while (!ld(&ws[1].freed))
		pump(ctx, 10);
	serve_until_clients(ctx, cls, 1);
	ck_assert_msg(cls[0].ok == NC / 2 && cls[0].refused == NC / 2,
		      "%d echoed, %d refused, %d failed", cls[0].ok, cls[0].refused, cls[0].failed);
	for (int i = 0; i < NC; i++)
		if (cls[0].c[i].status == -ECONNREFUSED) {
			ck_assert_msg(strstr(cls[0].c[i].msg, "worker context freed"), "%s",
				      cls[0].c[i].msg);
			refused_ok++;
		}
	ck_assert_int_eq(refused_ok, NC / 2);
	printf("refused: %s\n", cls[0].c[1].msg);
	/* Later requests placed on worker 1 go to worker 0. */
	clients_start(cls, 1, 4, NM, ez_listener_port(l));
	serve_until_clients(ctx, cls, 1);
	ck_assert_msg(cls[0].ok == 4, "%d echoed after the free, %d refused, %d failed", cls[0].ok,
		      cls[0].refused, cls[0].failed);
	ez_listener_close(l);
	workers_join(ws, NW);
	ck_assert_int_eq(ws[1].requests, 0);
	ck_assert_int_eq(ws[0].connected, NC / 2 + 4);
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
}
END_TEST

/* ez_handoff() from the application's on_request; to a context that takes
 * no requests (never asked, then freed): -ESHUTDOWN, the peer reads why. */
static struct ez_ctx *raw_target;
static int raw_ret[16], raw_n;

static void raw_on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	(void)l;
	(void)arg;
	raw_ret[raw_n++ % 16] = ez_handoff(req, raw_target);
}

START_TEST(handoff_raw)
{
	struct worker ws[1];
	struct client cls[1];
	struct ez_ctx *ctx, *plain;
	struct ez_listener *l;

	workers_start(ws, 1);
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &plain), 0);
	{
		struct ez_listen_opts lo = { .handshake_timeout_ms = HS_MS };

		ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", &lo, raw_on_request, NULL, &l), 0);
	}
	raw_target = ws[0].ctx;
	raw_n = 0;
	clients_start(cls, 1, 3, 4, ez_listener_port(l));
	serve_until_clients(ctx, cls, 1);
	ck_assert_int_eq(cls[0].ok, 3);
	ck_assert_int_eq(raw_n, 3);
	ck_assert_int_eq(raw_ret[0], 0);
	/* A context that never called ez_ctx_take_requests(). */
	raw_target = plain;
	raw_n = 0;
	clients_start(cls, 1, 1, 1, ez_listener_port(l));
	serve_until_clients(ctx, cls, 1);
	ck_assert_int_eq(raw_ret[0], -ESHUTDOWN);
	ck_assert_int_eq(cls[0].refused, 1);
	ck_assert_msg(strstr(cls[0].c[0].msg, "takes no requests"), "%s", cls[0].c[0].msg);
	printf("refused: %s\n", cls[0].c[0].msg);
	/* The worker freed: its address is only compared, never read. */
	workers_join(ws, 1);
	raw_target = ws[0].ctx;
	raw_n = 0;
	clients_start(cls, 1, 1, 1, ez_listener_port(l));
	serve_until_clients(ctx, cls, 1);
	ck_assert_int_eq(raw_ret[0], -ESHUTDOWN);
	ck_assert_int_eq(cls[0].refused, 1);
	/* A bad call leaves nothing behind. */
	ck_assert_int_eq(ez_handoff(NULL, plain), -EINVAL);
	ez_listener_close(l);
	ck_assert_int_eq(ez_ctx_free(plain), 0);
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
}
END_TEST

/* Every client thread connects all at once (a storm), placed by least
 * connections over three workers. */
START_TEST(handoff_storm)
{
	enum { NW = 3, NT = 3, NC = 16, NM = 2 };
	struct worker ws[NW];
	struct client cls[NT];
	struct ez_ctx *ctx, *wctx[NW];
	struct ez_listener *l;
	double t0 = now_s();
	int total = 0;

	workers_start(ws, NW);
	for (int i = 0; i < NW; i++)
		wctx[i] = ws[i].ctx;
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	{
		struct ez_listen_opts lo = { .handshake_timeout_ms = HS_MS, .nworkers = NW, .workers = wctx,
					     .placement = EZ_PLACE_LEAST_CONNS };

		ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", &lo, no_request, NULL, &l), 0);
	}
	clients_start(cls, NT, NC, NM, ez_listener_port(l));
	serve_until_clients(ctx, cls, NT);
	for (int i = 0; i < NT; i++) {
		ck_assert_msg(cls[i].ok == NC, "client %d: %d of %d echoed (%d refused, %d failed)", i,
			      cls[i].ok, NC, cls[i].refused, cls[i].failed);
		ck_assert_int_eq(cls[i].bad, 0);
	}
	ez_listener_close(l);
	workers_join(ws, NW);
	for (int i = 0; i < NW; i++) {
		printf("storm: worker %d connected %d\n", i, ws[i].connected);
		ck_assert_msg(ws[i].connected > 0, "worker %d got none", i);
		total += ws[i].connected;
	}
	ck_assert_int_eq(total, NT * NC);
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
	printf("handoff_storm: %d connections over %d workers: %.2f s\n", NT * NC, NW,
	       now_s() - t0);
}
END_TEST

/* The listener closes while its requests wait in stalled workers' inboxes:
 * they are the workers' now, and are answered when the workers run. */
START_TEST(listener_close_with_handoffs_pending)
{
	enum { NW = 2, NC = 6, NM = 2 };
	struct worker ws[NW];
	struct client cls[1];
	struct ez_ctx *ctx, *wctx[NW];
	struct ez_listener *l;
	double t0;

	workers_start(ws, NW);
	for (int i = 0; i < NW; i++) {
		wctx[i] = ws[i].ctx;
		st(&ws[i].stall, 1);
	}
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	{
		struct ez_listen_opts lo = { .handshake_timeout_ms = HS_MS, .nworkers = NW, .workers = wctx,
					     .placement = EZ_PLACE_CALLBACK, .place = place_alternate };

		ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", &lo, NULL, NULL, &l), 0);
	}
	placed = 0;
	clients_start(cls, 1, NC, NM, ez_listener_port(l));
	t0 = now_s();
	while (placed < NC && now_s() - t0 < 30)
		pump(ctx, 10);
	ck_assert_int_eq(placed, NC);
	ez_listener_close(l);
	for (int i = 0; i < NW; i++)
		st(&ws[i].stall, 0);
	serve_until_clients(ctx, cls, 1);
	ck_assert_msg(cls[0].ok == NC, "%d of %d echoed (%d refused, %d failed)", cls[0].ok, NC,
		      cls[0].refused, cls[0].failed);
	workers_join(ws, NW);
	ck_assert_int_eq(ws[0].connected + ws[1].connected, NC);
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
}
END_TEST

/* ---- session_resumes_on_its_worker: the client's side (the main thread) -- */

struct rcli {
	struct ez_conn *conn;
	int up, failed, down, down_status;
	int next, posted, completed, errors, resuming, send_ready, broke;
	int refused_ended;	/* ez_send's -ENOTCONN: the session ended */
	uint32_t held_at_break;
	int done[RN];		/* on_sent calls per message */
	char why[256];
};

static struct rcli *rc_cur;

/* Runs the listener's context and the client's, each its own, on this
 * thread, until one has something or ms pass. */
static void pump2(struct ez_ctx *a, struct ez_ctx *b, int ms)
{
	struct pollfd p[2] = { { .fd = ez_ctx_fd(a), .events = POLLIN },
			       { .fd = ez_ctx_fd(b), .events = POLLIN } };
	int ta = ez_ctx_timeout_ms(a), tb = ez_ctx_timeout_ms(b), t = ms;

	if (ta >= 0 && ta < t)
		t = ta;
	if (tb >= 0 && tb < t)
		t = tb;
	poll(p, 2, t);
	ez_ctx_process(a);
	ez_ctx_process(b);
}

/* Every path of the client at once, with the send window full: each holds
 * work when it breaks. */
static void r_break_all(struct rcli *rc)
{
	struct ez_conn_info ci;
	struct ez_path_info pi;

	ck_assert_int_eq(ez_conn_info(rc->conn, &ci), 0);
	ck_assert_uint_eq(ci.paths, 2);
	for (uint32_t i = 0; i < ci.paths; i++) {
		ck_assert_int_eq(ez_conn_path_info(rc->conn, i, &pi), 0);
		rc->held_at_break += pi.posted;
		ck_assert_int_eq(path_test_break(rc->conn, i), 0);
	}
	rc->broke = 1;
}

static void r_on_sent(struct ez_conn *c, int status, void *arg);

static void r_send_more(struct rcli *rc)
{
	unsigned char m[RSZ];

	while (rc->next < RN) {
		int ret;

		r_fill(m, rc->next);
		ret = ez_send(rc->conn, m, RSZ, r_on_sent, (void *)(intptr_t)rc->next);
		if (ret == -ENOBUFS) {
			if (!rc->broke && rc->completed >= RN / 4)
				r_break_all(rc);
			return;
		}
		/* The session resumes: on_send_ready says when to go on. */
		if (ret == -EAGAIN && strstr(ez_errmsg(), "resuming")) {
			rc->resuming++;
			return;
		}
		/* The session ended (its ops end first, then on_disconnect,
		 * whose reason the test reports). */
		if (ret == -ENOTCONN) {
			rc->refused_ended++;
			return;
		}
		ck_assert_msg(ret == 0, "ez_send: %s", ez_errmsg());
		rc->posted++;
		rc->next++;
	}
}

static void r_on_sent(struct ez_conn *c, int status, void *arg)
{
	int seq = (int)(intptr_t)arg;

	(void)c;
	ck_assert(seq >= 0 && seq < RN);
	rc_cur->done[seq]++;
	rc_cur->completed++;
	if (status) {
		fprintf(stderr, "send %d: %s\n", seq, ez_strerror(status));
		rc_cur->errors++;
	}
	r_send_more(rc_cur);
}

static void rc_on_connect(struct ez_conn *c, int status, void *arg)
{
	struct rcli *rc = arg;

	if (status) {
		snprintf(rc->why, sizeof(rc->why), "%s", ez_conn_errmsg(c));
		rc->failed = 1;
		return;
	}
	rc->up = 1;
}

static void rc_on_disconnect(struct ez_conn *c, int status, void *arg)
{
	struct rcli *rc = arg;

	snprintf(rc->why, sizeof(rc->why), "%s", ez_conn_errmsg(c));
	rc->down = 1;
	rc->down_status = status;
}

static void r_on_send_ready(struct ez_conn *c, void *arg)
{
	struct rcli *rc = arg;

	(void)c;
	rc->send_ready++;
	r_send_more(rc);
}

static void rc_on_recv(struct ez_conn *c, struct ez_buf *b, void *arg)
{
	(void)c;
	(void)arg;
	ez_buf_release(b);
}

static const struct ez_conn_cbs r_client_cbs = {
	.on_connect = rc_on_connect, .on_recv = rc_on_recv, .on_disconnect = rc_on_disconnect,
	.on_send_ready = r_on_send_ready,
};

static int place_second(struct ez_listener *l, const struct ez_conn_req *req, unsigned int n,
			void *arg)
{
	(void)l;
	(void)req;
	(void)arg;
	return (int)n - 1;
}

/* A raw rdma_cm peer's resume request with token to the listener at port:
 * the refusal's reason, its text in text. The contexts turn meanwhile. */
static uint8_t forged_resume(struct ez_ctx *a, struct ez_ctx *b, uint16_t port,
			     const uint8_t *token, char *text, size_t len)
{
	struct resume_msg m = { .kind = RESUME_REQUEST, .psn = 1 }, rej;
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7, .qp_num = 0xabcde };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint8_t req[HS_REQ_MAX];
	char sport[8], why[160];
	int n, status = -1, done = 0;
	double end = now_s() + 30;

	ck_assert_ptr_nonnull(ch);
	memcpy(m.token, token, HS_TOKEN_LEN);
	n = resume_encode(&m, req, sizeof(req));
	ck_assert_int_gt(n, 0);
	snprintf(sport, sizeof(sport), "%u", port);
	ck_assert_int_eq(rdma_getaddrinfo(test_addr(), sport, &hints, &ai), 0);
	ck_assert_int_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_resolve_addr(id, NULL, ai->ai_dst_addr, 2000), 0);
	rdma_freeaddrinfo(ai);
	ck_assert_int_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	memset(&rej, 0, sizeof(rej));
	while (!done && now_s() < end) {
		if (rdma_get_cm_event(ch, &ev)) {
			pump2(a, b, 5);
			continue;
		}
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			ck_assert_int_eq(rdma_resolve_route(id, 2000), 0);
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			p.private_data = req;
			p.private_data_len = (uint8_t)n;
			ck_assert_int_eq(rdma_connect(id, &p), 0);
			break;
		case RDMA_CM_EVENT_REJECTED:
			status = ev->status;
			ck_assert_msg(resume_decode(ev->param.conn.private_data,
						    ev->param.conn.private_data_len, RESUME_REJECT, &rej,
						    why, sizeof(why)) == 0,
				      "the refusal is no resume reject: %s", why);
			done = 1;
			break;
		default:
			ck_abort_msg("forged resume: %s", rdma_event_str(ev->event));
		}
		rdma_ack_cm_event(ev);
	}
	ck_assert_msg(done, "forged resume: no answer within 30 s");
	ck_assert_int_eq(status, 28);	/* the IB CM's "consumer defined" */
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	snprintf(text, len, "%s", rej.text);
	printf("forged resume refused: %s (%s)\n", resume_reason_str(rej.reason), rej.text);
	return rej.reason;
}

/* The resume tests' bench: two workers taking resumable sessions, the
 * listener's context and the client's, both run by this thread. */
#define RNW 2

struct rbench {
	struct worker ws[RNW];
	struct ez_ctx *ctx, *cctx;
	struct ez_listener *l;
	char port[8];
	const char *key;	/* a shared secret on both sides (NULL: none) */
};

static const char RKEY[] = "easyrdma test key: 32 bytes long";

/* place NULL: no workers; the application's on_request hands each request
 * to the last worker with ez_handoff(). */
static struct ez_ctx *rb_target;

static void rb_hand(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	(void)l;
	(void)arg;
	ck_assert_msg(ez_handoff(req, rb_target) == 0, "ez_handoff: %s", ez_errmsg());
}

static void rb_start(struct rbench *t, ez_place_cb place)
{
	struct ez_ctx *wctx[RNW];

	w_resume = 1;
	workers_start(t->ws, RNW);
	for (int i = 0; i < RNW; i++)
		wctx[i] = t->ws[i].ctx;
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &t->ctx), 0);
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &t->cctx), 0);
	{
		struct ez_listen_opts lo = { .handshake_timeout_ms = HS_MS, .nworkers = RNW,
					     .workers = wctx, .placement = EZ_PLACE_CALLBACK,
					     .place = place };

		if (t->key) {
			lo.auth_key = t->key;
			lo.auth_key_len = (uint32_t)strlen(t->key);
		}
		if (!place) {
			lo.nworkers = 0;
			lo.workers = NULL;
			lo.placement = 0;
			lo.place = NULL;
			rb_target = wctx[RNW - 1];
		}
		ck_assert_int_eq(ez_listen(t->ctx, test_addr(), "0", &lo, place ? NULL : rb_hand, NULL,
					   &t->l), 0);
	}
	snprintf(t->port, sizeof(t->port), "%u", ez_listener_port(t->l));
}

/* A resumable two-path session of the client, up. */
static void rb_connect(struct rbench *t, struct rcli *rc)
{
	struct ez_conn_opts co = { .paths = 2, .resume_ms = RESUME_MS, .max_msg_size = RSZ,
				   .connect_timeout_ms = 20000 };
	double end = now_s() + 30;

	if (t->key) {
		co.auth_key = t->key;
		co.auth_key_len = (uint32_t)strlen(t->key);
	}
	memset(rc, 0, sizeof(*rc));
	ck_assert_int_eq(ez_connect(t->cctx, test_addr(), t->port, &co, &r_client_cbs, rc,
				    &rc->conn), 0);
	while (!rc->up && !rc->failed && now_s() < end)
		pump2(t->ctx, t->cctx, 10);
	ck_assert_msg(rc->up, "client not up: %s", rc->failed ? rc->why : "(timed out)");
}

/* The client's context freed (its sessions closed first), the listener
 * closed, the workers joined (their sessions ended by the peer's close). */
static void rb_stop(struct rbench *t)
{
	double end = now_s() + 20;

	while (ez_ctx_free(t->cctx) == -EBUSY && now_s() < end)
		pump2(t->ctx, t->cctx, 10);
	ez_listener_close(t->l);
	workers_join(t->ws, RNW);
	w_resume = 0;
	ck_assert_int_eq(ez_ctx_free(t->ctx), 0);
}

/* Decoy sessions in the listener's routes beside the honest one, so that
 * a lookup that walked them would read every one for each forged token. */
#define DECOYS 2000
#define FORGED 16

/* A listener with two worker contexts hands a resumable two-path session
 * to worker 1. Every path of the client breaks with its window full; its
 * dial reaches the listener's context, which has no such session: the
 * listener's routes hand the request to worker 1, which answers it. The
 * session resumes once on each side, every message arrives once and
 * intact on the worker, every send ends exactly once without error, and
 * neither side sees a disconnect until the close. Forged tokens at that
 * listener are refused RESUME_R_UNKNOWN reading one chain of the routes
 * each, though 2,000 decoys are in them. */
static void resume_on_worker(const char *key, ez_place_cb place)
{
	static struct session_route decoy[DECOYS];
	static uint8_t decoy_token[DECOYS][HS_TOKEN_LEN];
	static struct rcli rc;
	static struct rbench t;
	struct worker *ws = t.ws;
	struct ez_listener *l;
	struct ez_ctx *ctx, *cctx;
	struct ez_conn_stats cs;
	uint8_t token[HS_TOKEN_LEN];
	uint64_t compares0, read, seed = 7;
	char text[128];
	double end;

	memset(&t, 0, sizeof(t));
	t.key = key;
	rb_start(&t, place);
	l = t.l;
	ctx = t.ctx;
	cctx = t.cctx;
	rc_cur = &rc;
	rb_connect(&t, &rc);

	r_send_more(&rc);
	end = now_s() + 90;
	while ((ld(&ws[1].got) < RN || rc.completed < rc.posted) && !rc.down && now_s() < end)
		pump2(ctx, cctx, 10);
	ck_assert_int_eq(ez_conn_stats(rc.conn, &cs), 0);
	printf("worker session: every path broken holding %u sends; ez_send refused %d times while it "
	       "resumed; on_send_ready %d; client lost %llu, resumed %llu, dials %llu; "
	       "listener handed %llu resume request(s)\n",
	       rc.held_at_break, rc.resuming, rc.send_ready, (unsigned long long)cs.sessions_lost,
	       (unsigned long long)cs.resumes, (unsigned long long)cs.resume_dials,
	       (unsigned long long)l->resumes_handed);
	ck_assert_msg(!rc.down, "the client's session ended: %s", rc.why);
	ck_assert_int_eq(rc.refused_ended, 0);
	ck_assert_int_eq(rc.broke, 1);
	ck_assert_msg(ld(&ws[1].got) == RN, "%d of %d messages arrived", ld(&ws[1].got), RN);
	ck_assert_int_eq(ld(&ws[0].got), 0);
	ck_assert_int_eq(rc.posted, RN);
	ck_assert_int_eq(rc.completed, RN);
	for (int i = 0; i < RN; i++)
		ck_assert_msg(rc.done[i] == 1, "send %d ended %d times", i, rc.done[i]);
	ck_assert_int_eq(rc.errors, 0);
	ck_assert_uint_eq(cs.sessions_lost, 1);
	ck_assert_uint_eq(cs.resumes, 1);
	ck_assert_uint_ge(cs.resume_dials, 1);
	ck_assert_uint_ge(l->resumes_handed, 1);

	/* Forged tokens at the same listener, 2,000 decoys routed beside the
	 * session (to worker 0's inbox: never reached, as none matches). */
	for (int i = 0; i < DECOYS; i++) {
		for (int k = 0; k < HS_TOKEN_LEN; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			decoy_token[i][k] = (uint8_t)(seed >> 56);
		}
		ck_assert_int_eq(session_route_add(l->routes, &decoy[i], decoy_token[i], ws[0].ctx), 0);
	}
	compares0 = session_routes_compares(l->routes);
	for (int i = 0; i < FORGED; i++) {
		for (int k = 0; k < HS_TOKEN_LEN; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			token[k] = (uint8_t)(seed >> 56);
		}
		ck_assert_uint_eq(forged_resume(ctx, cctx, ez_listener_port(l), token, text,
						sizeof(text)), RESUME_R_UNKNOWN);
		ck_assert_msg(strstr(text, "no session with this token here"), "%s", text);
	}
	read = session_routes_compares(l->routes) - compares0;
	printf("%d forged tokens refused among %d routes; the routes read %llu entries for them (a walk: %llu)\n",
	       FORGED, DECOYS + 1, (unsigned long long)read, (unsigned long long)FORGED * (DECOYS + 1));
	ck_assert_uint_le(read, 8 * FORGED);
	for (int i = 0; i < DECOYS; i++)
		session_route_del(&decoy[i]);

	/* The session goes on after the forgeries: one more round trip of
	 * the counts (nothing resumed twice). */
	ck_assert_int_eq(ez_conn_stats(rc.conn, &cs), 0);
	ck_assert_uint_eq(cs.resumes, 1);
	ez_conn_close(rc.conn);
	rb_stop(&t);
	printf("worker 1: %d requests, %d connected; its session: lost %llu, resumed %llu, ended %d\n",
	       ws[1].requests, ws[1].connected, (unsigned long long)ws[1].end_stats.sessions_lost,
	       (unsigned long long)ws[1].end_stats.resumes, ws[1].end_status);
	ck_assert_int_eq(ws[0].requests, 0);
	ck_assert_int_eq(ws[1].requests, 1);
	ck_assert_int_eq(ws[1].connected, 1);
	ck_assert_int_eq(ws[1].disconnected, 1);
	ck_assert_int_eq(ws[1].bad, 0);
	ck_assert_int_eq(ws[1].dups, 0);
	ck_assert_uint_eq(ws[1].end_stats.sessions_lost, 1);
	ck_assert_uint_eq(ws[1].end_stats.resumes, 1);
	ck_assert_uint_eq(ws[1].end_stats.resume_dials, 0);
}

START_TEST(session_resumes_on_its_worker)
{
	resume_on_worker(NULL, place_second);
}
END_TEST

/* The same with a shared secret: the request's MAC is checked on the
 * worker, with the session's key (the listener's, copied when the
 * request was handed). */
START_TEST(keyed_session_resumes_on_its_worker)
{
	resume_on_worker(RKEY, place_second);
}
END_TEST

/* The same, the request handed by the application's on_request with
 * ez_handoff() instead of a listener's workers: the request carries the
 * listener's routes the same way. */
START_TEST(session_resumes_after_ez_handoff)
{
	resume_on_worker(NULL, NULL);
}
END_TEST

/* The client's session ends; its reason. */
static void r_wait_down(struct ez_ctx *ctx, struct ez_ctx *cctx, struct rcli *rc)
{
	double end = now_s() + 30;

	while (!rc->down && now_s() < end)
		pump2(ctx, cctx, 10);
	ck_assert_msg(rc->down, "the session did not end within 30 s");
	printf("refused: %s\n", rc->why);
}

/* A session whose worker stopped taking requests cannot be handed its
 * resume: refused as unknown, naming why, the client's session ended
 * with ECONNRESET, nothing crashed. Worker 0 stops before its session's
 * paths break (the listener's hand is refused); worker 1 is stalled with
 * the request in its inbox and stops then (the letter is disposed of). */
START_TEST(resume_to_a_stopped_worker_refused)
{
	static struct rcli ra, rb;
	static struct rbench t;
	struct worker *ws = t.ws;
	struct ez_listener *l;
	struct ez_ctx *ctx, *cctx;
	double end;

	memset(&t, 0, sizeof(t));
	placed = 0;
	rb_start(&t, place_alternate);
	l = t.l;
	ctx = t.ctx;
	cctx = t.cctx;
	/* One at a time: the first to worker 0, the second to worker 1. */
	rb_connect(&t, &ra);
	rb_connect(&t, &rb);

	/* Worker 0 takes no more requests; then session a's paths break. */
	st(&ws[0].stop_taking, 1);
	while (!ld(&ws[0].took_stop))
		pump2(ctx, cctx, 10);
	r_break_all(&ra);
	r_wait_down(ctx, cctx, &ra);
	ck_assert_int_eq(ra.down_status, -ECONNRESET);
	ck_assert_msg(strstr(ra.why, "no such session") &&
		      strstr(ra.why, "the session's context takes no more requests"), "%s", ra.why);
	ck_assert_uint_eq(l->resumes_handed, 0);

	/* Worker 1 stalls; session b's request waits in its inbox; then it
	 * stops taking requests, which disposes of the letter. */
	st(&ws[1].stall, 1);
	while (!ld(&ws[1].stalled))
		pump2(ctx, cctx, 10);
	r_break_all(&rb);
	end = now_s() + 30;
	while (l->resumes_handed < 1 && !rb.down && now_s() < end)
		pump2(ctx, cctx, 10);
	ck_assert_msg(l->resumes_handed == 1, "the listener handed %llu resume requests (session b: %s)",
		      (unsigned long long)l->resumes_handed, rb.down ? rb.why : "resuming");
	st(&ws[1].stop_taking, 1);
	while (!ld(&ws[1].took_stop))
		pump2(ctx, cctx, 10);
	st(&ws[1].stall, 0);
	r_wait_down(ctx, cctx, &rb);
	ck_assert_int_eq(rb.down_status, -ECONNRESET);
	ck_assert_msg(strstr(rb.why, "no such session") &&
		      strstr(rb.why, "the session's context: worker stopped taking requests"), "%s",
		      rb.why);

	ez_conn_close(ra.conn);
	ez_conn_close(rb.conn);
	rb_stop(&t);
	ck_assert_int_eq(ws[0].connected, 1);
	ck_assert_int_eq(ws[1].connected, 1);
	ck_assert_int_eq(ws[0].disconnected, 1);
	ck_assert_int_eq(ws[1].disconnected, 1);
}
END_TEST

/* Argument checks need no peer. */
START_TEST(workers_bad_options)
{
	struct ez_ctx *ctx, *other;
	struct ez_listener *l;
	struct ez_ctx *w[1];

	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx), 0);
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &other), 0);
	w[0] = other;
	{
		struct ez_listen_opts lo = { .nworkers = 1, .workers = w };

		ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", &lo, NULL, NULL, &l), -EINVAL);
		ck_assert_msg(strstr(ez_errmsg(), "takes no requests"), "%s", ez_errmsg());
	}
	ck_assert_int_eq(ez_ctx_take_requests(other, no_request, NULL), 0);
	{
		struct ez_listen_opts lo = { .nworkers = 1, .workers = w,
					     .placement = EZ_PLACE_CALLBACK };

		ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", &lo, NULL, NULL, &l), -EINVAL);
		ck_assert_msg(strstr(ez_errmsg(), "place is NULL"), "%s", ez_errmsg());
	}
	ck_assert_int_eq(ez_listen(ctx, test_addr(), "0", NULL, NULL, NULL, &l), -EINVAL);
	/* Stopping twice, and freeing a worker that never got a request. */
	ck_assert_int_eq(ez_ctx_take_requests(other, NULL, NULL), 0);
	ck_assert_int_eq(ez_ctx_take_requests(other, NULL, NULL), 0);
	ck_assert_int_eq(ez_ctx_take_requests(other, no_request, NULL), 0);
	ck_assert_int_eq(ez_ctx_free(other), 0);
	ck_assert_int_eq(ez_ctx_free(ctx), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("workers");
	TCase *tc = tcase_create("workers");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, workers_bad_options);
	tcase_add_test(tc, workers_round_robin);
	tcase_add_test(tc, worker_freed_during_handoff);
	tcase_add_test(tc, handoff_raw);
	tcase_add_test(tc, handoff_storm);
	tcase_add_test(tc, listener_close_with_handoffs_pending);
	tcase_add_test(tc, session_resumes_on_its_worker);
	tcase_add_test(tc, keyed_session_resumes_on_its_worker);
	tcase_add_test(tc, session_resumes_after_ez_handoff);
	tcase_add_test(tc, resume_to_a_stopped_worker_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run_suite(suite(), CK_NORMAL);
}
