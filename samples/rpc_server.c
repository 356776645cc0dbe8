/* rpc_server.c: sample RPC server; all connections receive from one shared SRQ pool. */
/*
 * Usage: rpc_server [-a ADDRESS] [-p PORT] [-d DEVICE] [-b BUFFERS] [-t THREADS] [-w WORK_US] [-c]
 *                   [-H HANDSHAKE_MS] [-Q QP_TIMEOUT]
 *
 * With -t N (--threads N) the connections are spread over N worker threads,
 * each with its own libev loop, context and pool (ez_ctx_take_requests);
 * the main thread only listens and hands each request to the worker with
 * the fewest connections (ez_listen_opts.workers). -w spins that many
 * microseconds per request: the application's work, for benchmarks; with
 * -c (--cpu-work) the spin counts the thread's own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) instead of the wall clock, so that the work
 * advances only while the thread really runs: two workers sharing one CPU
 * then gain nothing, as with real computation.
 *
 * Serves the protocol of rpc_proto.h (ECHO, SUM) to any number of clients.
 * Every connection draws its receive buffers from ONE ez_srqpool, so memory
 * stays flat however many clients connect. SIGINT or SIGTERM closes every
 * connection, waits for them to go down, and prints one summary line.
 *
 * Copy from here: the request callback (accept with the pool), the receive
 * callback (parse, reply, release the buffer), and the shutdown sequence.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <easyrdma.h>

#include "rpc_proto.h"

struct client {			/* one per accepted connection */
	struct ez_conn *conn;
	struct server *srv;
	struct client *prev, *next;
};

struct server {			/* one per serving thread: its loop, context and pool */
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_srqpool *pool;
	struct ez_listener *listener;	/* the listening thread's */
	struct client *clients;	/* live connections */
	int stopping;
	pthread_t thread;	/* a worker's */
	ev_async stop;		/* a worker's: the main thread asks it to stop */
	int ready, failed;	/* a worker's start-up, read by the main thread after the barrier */
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	/* what the summary line reports */
	unsigned long conns, requests, echo, sum, bad, send_errors;
	unsigned long long bytes_in;
};

static unsigned int work_us;	/* -w: spun per request */
/* -H, -Q: the listener's handshake_timeout_ms and each connection's
 * qp_timeout, for slow setups (valgrind, an overloaded emulator). */
static uint32_t handshake_ms;
static uint8_t qp_timeout;
static clockid_t work_clock = CLOCK_MONOTONIC;	/* -c: CLOCK_THREAD_CPUTIME_ID */

/* The application's work per request: a spin, so it costs CPU and not sleep. */
static void do_work(void)
{
	struct timespec t0, t;

	if (!work_us)
		return;
	clock_gettime(work_clock, &t0);
	do
		clock_gettime(work_clock, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < (long)work_us);
}

static void client_forget(struct client *c)
{
	struct server *srv = c->srv;

	if (c->prev)
		c->prev->next = c->next;
	else
		srv->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
	/* The last connection gone during shutdown: leave ev_run(). */
	if (srv->stopping && !srv->clients)
		ev_break(srv->loop, EVBREAK_ALL);
}

/* Builds the reply of one request into out (RPC_MAX_MSG bytes); returns its length. */
static size_t handle(struct server *srv, const struct rpc_hdr *req, const uint8_t *payload,
		     size_t plen, uint8_t *out)
{
	struct rpc_hdr *rep = (struct rpc_hdr *)out;
	uint32_t len = 0;

	rep->id = req->id;			/* still in network order */
	rep->method = req->method;
	rep->status = htons(RPC_EOK);
	switch (ntohs(req->method)) {
	case RPC_ECHO:
		memcpy(out + sizeof(*rep), payload, plen);
		len = plen;
		srv->echo++;
		break;
	case RPC_SUM: {
		uint64_t sum = 0;
		uint32_t v, hi, lo;

		if (plen % 4) {
			rep->status = htons(RPC_EBADLEN);
			break;
		}
		for (size_t i = 0; i < plen; i += 4) {
			memcpy(&v, payload + i, 4);	/* the payload may be unaligned */
			sum += ntohl(v);
		}
		hi = htonl((uint32_t)(sum >> 32));
		lo = htonl((uint32_t)sum);
		memcpy(out + sizeof(*rep), &hi, 4);
		memcpy(out + sizeof(*rep) + 4, &lo, 4);
		len = 8;
		srv->sum++;
		break;
	}
	default:
		rep->status = htons(RPC_EMETHOD);
	}
	if (ntohs(rep->status) != RPC_EOK)
		srv->bad++;
	rep->len = htonl(len);
	return sizeof(*rep) + len;
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct client *c = arg;
	struct server *srv = c->srv;
	const uint8_t *data = ez_buf_data(buf);
	size_t n = ez_buf_len(buf);
	uint8_t reply[RPC_MAX_MSG];
	struct rpc_hdr req;
	size_t rlen;
	int ret;

	srv->requests++;
	srv->bytes_in += n;
	do_work();
	if (n < sizeof(req)) {		/* never trust the peer's bytes */
		srv->bad++;
		ez_buf_release(buf);
		return;
	}
	memcpy(&req, data, sizeof(req));
	if (ntohl(req.len) != n - sizeof(req)) {
		struct rpc_hdr *rep = (struct rpc_hdr *)reply;

		*rep = (struct rpc_hdr){ req.id, req.method, htons(RPC_EBADLEN), 0 };
		srv->bad++;
		rlen = sizeof(*rep);
	} else {
		rlen = handle(srv, &req, data + sizeof(req), n - sizeof(req), reply);
	}
	/* The request is consumed: give its buffer back to the shared pool
	 * before sending, so the SRQ is refilled as early as possible. */
	ez_buf_release(buf);
	/* ez_send() copies the reply, so a stack buffer is fine. The client
	 * keeps at most its window of requests outstanding and our send_depth
	 * is larger, so -ENOBUFS means a client broke the protocol. */
	ret = ez_send(conn, reply, rlen, NULL, NULL);
	if (ret) {
		srv->send_errors++;
		fprintf(stderr, "rpc_server: ez_send: %s\n", ez_errmsg());
	}
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct client *c = arg;

	if (status == 0) {
		c->srv->conns++;
		return;
	}
	/* The handshake failed or we closed first: the handle must still be
	 * closed once (unless we did already), then nothing more runs for it. */
	if (!c->srv->stopping)
		ez_conn_close(conn);
	client_forget(c);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct client *c = arg;

	if (status)
		fprintf(stderr, "rpc_server: connection lost: %s\n", ez_conn_errmsg(conn));
	if (!c->srv->stopping)	/* the peer left: close our handle too */
		ez_conn_close(conn);
	client_forget(c);
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct server *srv = arg;
	struct ez_conn_opts o = {
		.srqpool = srv->pool,		/* receive from the shared pool */
		.max_msg_size = RPC_MAX_MSG,
		.send_depth = 512,		/* >= any client's window, with room */
		.qp_timeout = qp_timeout,	/* 0: the default */
	};
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect };
	struct client *c;

	c = calloc(1, sizeof(*c));
	if (!c) {
		ez_reject(req, "out of memory", 13);
		return;
	}
	c->srv = srv;
	if (ez_accept(req, &o, &cbs, c, &c->conn)) {	/* req is rejected and freed */
		fprintf(stderr, "rpc_server: ez_accept: %s\n", ez_errmsg());
		free(c);
		return;
	}
	c->next = srv->clients;
	if (c->next)
		c->next->prev = c;
	srv->clients = c;
}

/* SIGINT/SIGTERM: stop accepting, close every connection, and let the last
 * on_disconnect() break the loop. ez_conn_close() never blocks. */
static void server_stop(struct server *srv)
{
	struct client *c, *next;

	if (srv->stopping)
		return;
	srv->stopping = 1;
	if (srv->listener)
		ez_listener_close(srv->listener);
	srv->listener = NULL;
	if (!srv->clients) {
		ev_break(srv->loop, EVBREAK_ALL);
		return;
	}
	for (c = srv->clients; c; c = next) {
		next = c->next;
		ez_conn_close(c->conn);
	}
}

static struct server *workers;
static int nworkers;

/* SIGINT/SIGTERM on the main thread: the listener goes first, then each
 * worker is told (ev_async: libev's one thread-safe call) to close its
 * connections; the main loop ends once they have all stopped. */
static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct server *srv = w->data;

	if (!nworkers) {
		server_stop(srv);
		return;
	}
	if (srv->stopping)
		return;
	srv->stopping = 1;
	ez_listener_close(srv->listener);
	srv->listener = NULL;
	for (int i = 0; i < nworkers; i++)
		ev_async_send(workers[i].loop, &workers[i].stop);
	ev_break(loop, EVBREAK_ALL);
}

static void on_stop(struct ev_loop *loop, ev_async *w, int revents)
{
	server_stop(w->data);
}

/* A worker: its own loop, context and pool; requests come from the
 * listener's thread (ez_ctx_take_requests), and everything of its
 * connections runs here. */
static void *worker_main(void *arg)
{
	struct server *srv = arg;
	struct ez_srqpool_opts po = { .buf_size = RPC_MAX_MSG, .nbufs = 256 };
	int ret;

	srv->loop = ev_loop_new(EVFLAG_AUTO);
	ret = srv->loop ? ez_ctx_new(srv->loop, 0, &srv->ctx) : -ENOMEM;
	if (!ret)
		ret = ez_srqpool_new(srv->ctx, NULL, &po, &srv->pool);
	if (!ret)
		ret = ez_ctx_take_requests(srv->ctx, on_request, srv);
	if (ret)
		fprintf(stderr, "rpc_server: worker: %s\n", ez_errmsg());
	ev_async_init(&srv->stop, on_stop);
	srv->stop.data = srv;
	if (!ret)
		ev_async_start(srv->loop, &srv->stop);
	pthread_mutex_lock(srv->mu);
	srv->ready = 1;
	srv->failed = !!ret;
	pthread_cond_broadcast(srv->cv);
	pthread_mutex_unlock(srv->mu);
	if (!ret)
		ev_run(srv->loop, 0);
	if (srv->pool && ez_srqpool_free(srv->pool))
		fprintf(stderr, "rpc_server: worker teardown: %s\n", ez_errmsg());
	if (srv->ctx && ez_ctx_free(srv->ctx))
		fprintf(stderr, "rpc_server: worker teardown: %s\n", ez_errmsg());
	if (srv->loop)
		ev_loop_destroy(srv->loop);
	return NULL;
}

static int workers_start(int n, pthread_mutex_t *mu, pthread_cond_t *cv, struct ez_ctx **ctxs)
{
	int failed = 0;

	workers = calloc((size_t)n, sizeof(*workers));
	if (!workers)
		return -1;
	for (int i = 0; i < n; i++) {
		workers[i].mu = mu;
		workers[i].cv = cv;
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]))
			return -1;
		nworkers = i + 1;
	}
	pthread_mutex_lock(mu);
	for (int i = 0; i < n; i++) {
		while (!workers[i].ready)
			pthread_cond_wait(cv, mu);
		failed |= workers[i].failed;
		ctxs[i] = workers[i].ctx;
	}
	pthread_mutex_unlock(mu);
	return failed ? -1 : 0;
}

/* Joined, and their counts added to the main server's summary. */
static void workers_join(struct server *sum, struct ez_srqpool_stats *ps)
{
	for (int i = 0; i < nworkers; i++) {
		struct server *w = &workers[i];

		/* After a signal, on_signal told them already (a worker that
		 * has stopped may have destroyed its loop). */
		if (!w->failed && !sum->stopping)
			ev_async_send(w->loop, &w->stop);
		pthread_join(w->thread, NULL);
		sum->conns += w->conns;
		sum->requests += w->requests;
		sum->echo += w->echo;
		sum->sum += w->sum;
		sum->bad += w->bad;
		sum->send_errors += w->send_errors;
		sum->bytes_in += w->bytes_in;
		printf("rpc_server: worker %d: %lu connections, %lu requests\n", i, w->conns,
		       w->requests);
	}
	(void)ps;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7471", *device = NULL;
	struct ez_srqpool_opts po = { .buf_size = RPC_MAX_MSG, .nbufs = 256 };
	struct ez_srqpool_stats ps = { 0 };
	struct server srv = { 0 };
	ev_signal sigint, sigterm;
	int opt, ret;

	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "work-us", required_argument, NULL, 'w' },
		{ "cpu-work", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	struct ez_ctx **wctx = NULL;
	struct ez_listen_opts lo = { 0 };
	int threads = 0;

	while ((opt = getopt_long(argc, argv, "a:p:d:b:t:w:cH:Q:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'd': device = optarg; break;
		case 'b': po.nbufs = (uint32_t)atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'w': work_us = (unsigned int)atoi(optarg); break;
		case 'c': work_clock = CLOCK_THREAD_CPUTIME_ID; break;
		case 'H': handshake_ms = (uint32_t)atoi(optarg); break;
		case 'Q': qp_timeout = (uint8_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a ADDRESS] [-p PORT (0: any)] [-d DEVICE] [-b BUFFERS] "
				"[-t|--threads N] [-w|--work-us US] [-c|--cpu-work] [-H HANDSHAKE_MS] "
				"[-Q QP_TIMEOUT]\n", argv[0]);
			return 2;
		}
	}
	if (threads < 0 || threads > 64) {
		fprintf(stderr, "rpc_server: --threads %d: 0..64\n", threads);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);	/* a test reads our lines through a pipe */
	srv.loop = EV_DEFAULT;

	/* The library's watchers go on OUR loop: one ev_run() drives both. */
	lo.handshake_timeout_ms = handshake_ms;	/* 0: the default */
	ret = ez_ctx_new(srv.loop, 0, &srv.ctx);
	if (!ret && !threads) {
		ret = ez_srqpool_new(srv.ctx, device, &po, &srv.pool);
		if (!ret)
			ret = ez_listen(srv.ctx, addr, port, handshake_ms ? &lo : NULL, on_request,
					&srv, &srv.listener);
	} else if (!ret) {
		/* Workers first: a listener names contexts that take requests. */
		lo.placement = EZ_PLACE_LEAST_CONNS;

		wctx = calloc((size_t)threads, sizeof(*wctx));
		ret = wctx && !workers_start(threads, &mu, &cv, wctx) ? 0 : -1;
		lo.nworkers = (uint32_t)threads;
		lo.workers = wctx;
		if (!ret)
			ret = ez_listen(srv.ctx, addr, port, &lo, NULL, NULL, &srv.listener);
	}
	if (ret) {
		fprintf(stderr, "rpc_server: %s\n", ez_errmsg());
		if (srv.listener)
			ez_listener_close(srv.listener);
		workers_join(&srv, &ps);
		if (srv.pool)
			ez_srqpool_free(srv.pool);
		if (srv.ctx)
			ez_ctx_free(srv.ctx);
		return 1;
	}
	/* Signal watchers first: a signal must never find the default action. */
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_init(&sigterm, on_signal, SIGTERM);
	sigint.data = sigterm.data = &srv;
	ev_signal_start(srv.loop, &sigint);
	ev_signal_start(srv.loop, &sigterm);
	printf("rpc_server: listening on %s port %u%s\n", addr ? addr : "*",
	       ez_listener_port(srv.listener), threads ? " (worker threads)" : "");

	ev_run(srv.loop, 0);

	/* Every connection is closed and detached: the pool can go. */
	ret = 0;
	if (srv.pool) {
		ez_srqpool_stats(srv.pool, &ps);
		ret = ez_srqpool_free(srv.pool);
	}
	workers_join(&srv, &ps);
	free(workers);
	free(wctx);
	if (!ret)
		ret = ez_ctx_free(srv.ctx);
	if (ret)
		fprintf(stderr, "rpc_server: teardown: %s\n", ez_errmsg());
	printf("rpc_server: %lu connections, %lu requests (echo %lu, sum %lu, bad %lu), "
	       "%llu bytes in, %lu send errors; pool: %llu buffers, lowest posted %llu, "
	       "%llu limit events, %llu refills\n",
	       srv.conns, srv.requests, srv.echo, srv.sum, srv.bad, srv.bytes_in,
	       srv.send_errors, (unsigned long long)ps.total,
	       (unsigned long long)ps.lowest_posted, (unsigned long long)ps.limit_events,
	       (unsigned long long)ps.refills);
	return ret || srv.send_errors ? 1 : 0;
}
