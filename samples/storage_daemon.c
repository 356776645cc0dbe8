/* storage_daemon.c: sample block store embedding easyrdma in the daemon's own libev loop. */
/*
 * Usage: storage_daemon [-a ADDRESS] [-p PORT] [-d DEVICE] [-S STORE_MiB] [-i STATS_SECONDS]
 *                       [-t|--threads N]
 *
 * The daemon already has an event loop with its own timers and signal
 * watchers; easyrdma joins it (ez_ctx_new(loop, ...)) instead of bringing one,
 * and one ev_run() drives both. Clients send small control messages (SEND);
 * the block data moves by RDMA: for a client's write the daemon READs the
 * block from the client's registered buffer into the store, for a read it
 * WRITEs the block from the store into the client's buffer, then answers
 * with ST_DONE. Blocks are 4 KiB to 1 MiB.
 *
 * Signals: SIGINT/SIGTERM shut down cleanly with a summary; SIGUSR1 prints
 * the stats line now. The stats line also comes every STATS_SECONDS.
 *
 * With -t N (--threads N) the daemon's main thread only listens: each
 * connection is handed to one of N worker threads (ez_listen_opts.workers,
 * the one with the fewest connections), each with its own libev loop,
 * context and registration of the one store, and everything of that
 * connection (its requests, RDMA ops, replies, its end) runs on that
 * worker. Each worker keeps its own counters; a callback that ran on any
 * other thread would be counted ("off-thread", always 0) and the summary
 * line adds the workers' counts after they have been joined.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <easyrdma.h>

#include "storage_proto.h"

struct session {		/* one client connection, owned by one shard's thread */
	struct daemon *d;
	struct ez_conn *conn;
	struct ez_rkey client_buf;	/* from ST_HELLO */
	int have_buf;
	struct session *next, **pprev;
};

struct op {			/* one block transfer in flight */
	struct session *s;
	struct st_msg req;
};

/* One per serving thread (a "shard"): the main thread's, or a worker's. The
 * store's memory is shared; its registration (an MR belongs to a context)
 * and everything else are the shard's own, touched by its thread only. */
struct daemon {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *listener;	/* the main shard's */
	struct ez_mr *store_mr;	/* the store, registered once per shard at start */
	uint8_t *store;
	size_t store_len;
	struct session *sessions;
	int stopping;
	unsigned long conns, writes, reads, errors;
	unsigned long long wbytes, rbytes;
	unsigned long callbacks, offthread;	/* callbacks run; of them, on another thread */
	ev_timer stats;
	ev_signal sigint, sigterm, sigusr1;
	/* a worker's */
	int index;
	pthread_t thread, tid;		/* the thread every callback must run on */
	ev_async stop, usr1;	/* the main thread asks: close everything; print stats */
	const char *device;
	double interval;
	int ready, failed;	/* start-up, read by the main thread under mu */
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
};

static struct daemon *workers;
static int nworkers;

/* Every callback of a session: on its shard's thread, or counted. */
static void on_thread(struct daemon *d)
{
	d->callbacks++;
	if (!pthread_equal(pthread_self(), d->tid))
		d->offthread++;
}

static void print_stats(struct daemon *d, const char *tag)
{
	int live = 0;

	for (struct session *s = d->sessions; s; s = s->next)
		live++;
	printf("storage_daemon: %s: %d sessions (%lu total), %lu writes (%llu bytes), "
	       "%lu reads (%llu bytes), %lu errors, %lu callbacks (%lu off-thread)\n", tag, live,
	       d->conns, d->writes, d->wbytes, d->reads, d->rbytes, d->errors, d->callbacks,
	       d->offthread);
}

static void reply(struct session *s, const struct st_msg *req, int status, uint64_t csum)
{
	struct st_msg m = { .type = ST_DONE, .id = req->id, .status = status, .csum = csum };

	if (status)
		s->d->errors++;
	if (ez_send(s->conn, &m, sizeof(m), NULL, NULL))
		fprintf(stderr, "storage_daemon: reply: %s\n", ez_errmsg());
}

/* The RDMA READ or WRITE of a request finished. */
static void on_rdma_done(struct ez_conn *conn, int status, void *arg)
{
	struct op *op = arg;
	struct daemon *d = op->s->d;
	uint64_t csum = 0;

	on_thread(d);
	if (status == -ECANCELED) {	/* the connection is closing: no reply */
		free(op);
		return;
	}
	if (!status && op->req.type == ST_WRITE) {
		/* The block is in the store now; the checksum lets the client
		 * verify what landed, not what it meant to send. */
		csum = st_csum(d->store + op->req.store_off, op->req.len);
		d->writes++;
		d->wbytes += op->req.len;
	} else if (!status) {
		d->reads++;
		d->rbytes += op->req.len;
	}
	reply(op->s, &op->req, status, csum);
	free(op);
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct session *s = arg;
	struct daemon *d = s->d;
	struct st_msg req = { 0 };
	struct op *op;
	int ret;

	on_thread(d);
	if (ez_buf_len(buf) == sizeof(req))
		memcpy(&req, ez_buf_data(buf), sizeof(req));
	ez_buf_release(buf);		/* copied out: the buffer can go back at once */

	if (req.type == ST_HELLO) {
		s->client_buf = req.rkey;
		s->have_buf = 1;
		return;
	}
	if (req.type != ST_WRITE && req.type != ST_READ) {
		d->errors++;
		return;
	}
	/* Check every field before touching memory: the peer is untrusted. */
	if (!s->have_buf || req.len < ST_MIN_BLOCK || req.len > ST_MAX_BLOCK ||
	    req.store_off > d->store_len || req.len > d->store_len - req.store_off) {
		reply(s, &req, -EINVAL, 0);
		return;
	}
	op = malloc(sizeof(*op));
	if (!op) {
		reply(s, &req, -ENOMEM, 0);
		return;
	}
	op->s = s;
	op->req = req;
	/* ez_read/ez_write check the remote range against the exported rkey. */
	if (req.type == ST_WRITE)
		ret = ez_read(conn, d->store_mr, req.store_off, req.len, &s->client_buf,
			      req.buf_off, on_rdma_done, op);
	else
		ret = ez_write(conn, d->store_mr, req.store_off, req.len, &s->client_buf,
			       req.buf_off, on_rdma_done, op);
	if (ret) {
		fprintf(stderr, "storage_daemon: %s\n", ez_errmsg());
		reply(s, &req, ret, 0);
		free(op);
	}
}

static void session_end(struct ez_conn *conn, int status, void *arg)
{
	struct session *s = arg;
	struct daemon *d = s->d;

	on_thread(d);
	if (!d->stopping)
		ez_conn_close(conn);	/* once per handle; we did it already when stopping */
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	free(s);
	if (d->stopping && !d->sessions)
		ev_break(d->loop, EVBREAK_ALL);
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct session *s = arg;

	if (status) {
		session_end(conn, status, arg);
		return;
	}
	on_thread(s->d);
	s->d->conns++;
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct daemon *d = arg;
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = session_end };
	/* Every request can have an RDMA op and a reply in flight. */
	struct ez_conn_opts o = { .max_msg_size = sizeof(struct st_msg), .send_depth = 128 };
	struct session *s = calloc(1, sizeof(*s));

	on_thread(d);
	if (!s) {
		ez_reject(req, "out of memory", 13);
		return;
	}
	if (ez_accept(req, &o, &cbs, s, &s->conn)) {
		fprintf(stderr, "storage_daemon: accept: %s\n", s ? ez_errmsg() : "no memory");
		free(s);
		return;
	}
	s->d = d;
	s->next = d->sessions;
	if (s->next)
		s->next->pprev = &s->next;
	s->pprev = &d->sessions;
	d->sessions = s;
}

/* The daemon's own watchers, beside the library's on the same loop. */
static void on_stats(struct ev_loop *loop, ev_timer *w, int revents)
{
	print_stats(w->data, "stats");
}

/* A shard stops: its sessions close, the last one's end breaks its loop. */
static void shard_stop(struct daemon *d)
{
	if (d->stopping++)
		return;
	ev_timer_stop(d->loop, &d->stats);
	if (d->listener)
		ez_listener_close(d->listener);
	d->listener = NULL;
	if (!d->sessions)
		ev_break(d->loop, EVBREAK_ALL);
	for (struct session *s = d->sessions; s; s = s->next)
		ez_conn_close(s->conn);	/* in-flight ops end with -ECANCELED */
}

/* On the main thread. With workers, SIGUSR1 and the stop are passed on to
 * each (ev_async: libev's one thread-safe call); the main loop ends at once,
 * as it has no sessions, and main() joins the workers. */
static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct daemon *d = w->data;

	if (w->signum == SIGUSR1) {
		if (!nworkers)
			print_stats(d, "stats");
		for (int i = 0; i < nworkers; i++)
			ev_async_send(workers[i].loop, &workers[i].usr1);
		return;
	}
	if (d->stopping)
		return;
	shard_stop(d);
	for (int i = 0; i < nworkers; i++)
		ev_async_send(workers[i].loop, &workers[i].stop);
	if (nworkers)
		ev_break(loop, EVBREAK_ALL);
}

static void on_async(struct ev_loop *loop, ev_async *w, int revents)
{
	struct daemon *d = w->data;
	char tag[48];

	if (w == &d->stop) {
		shard_stop(d);
		return;
	}
	snprintf(tag, sizeof(tag), "stats (worker %d)", d->index);
	print_stats(d, tag);
}

static void on_worker_stats(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct daemon *d = w->data;
	char tag[48];

	snprintf(tag, sizeof(tag), "stats (worker %d)", d->index);
	print_stats(d, tag);
}

/* A worker: its own loop, context and registration of the store; requests
 * come from the listener's thread (ez_ctx_take_requests()). */
static void *worker_main(void *arg)
{
	struct daemon *d = arg;
	int ret;

	d->tid = pthread_self();
	d->loop = ev_loop_new(EVFLAG_AUTO);
	ret = d->loop ? ez_ctx_new(d->loop, 0, &d->ctx) : -ENOMEM;
	if (!ret)
		ret = ez_mr_reg(d->ctx, d->device, d->store, d->store_len, 0, &d->store_mr);
	if (!ret)
		ret = ez_ctx_take_requests(d->ctx, on_request, d);
	if (ret)
		fprintf(stderr, "storage_daemon: worker %d: %s\n", d->index, ez_errmsg());
	if (!ret) {
		ev_async_init(&d->stop, on_async);
		ev_async_init(&d->usr1, on_async);
		d->stop.data = d->usr1.data = d;
		ev_async_start(d->loop, &d->stop);
		ev_async_start(d->loop, &d->usr1);
		ev_timer_init(&d->stats, on_worker_stats, d->interval, d->interval);
		d->stats.data = d;
		ev_timer_start(d->loop, &d->stats);
	}
	pthread_mutex_lock(d->mu);
	d->ready = 1;
	d->failed = !!ret;
	pthread_cond_broadcast(d->cv);
	pthread_mutex_unlock(d->mu);
	if (!ret)
		ev_run(d->loop, 0);
	if (d->store_mr && ez_mr_dereg(d->store_mr))
		fprintf(stderr, "storage_daemon: worker %d teardown: %s\n", d->index, ez_errmsg());
	if (d->ctx && ez_ctx_free(d->ctx))
		fprintf(stderr, "storage_daemon: worker %d teardown: %s\n", d->index, ez_errmsg());
	if (d->loop)
		ev_loop_destroy(d->loop);
	return NULL;
}

/* Starts n workers sharing main's store; fills ctxs once all are ready. */
static int workers_start(struct daemon *main_d, int n, const char *device, struct ez_ctx **ctxs)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	int failed = 0;

	workers = calloc((size_t)n, sizeof(*workers));
	if (!workers)
		return -1;
	for (int i = 0; i < n; i++) {
		struct daemon *w = &workers[i];

		w->index = i;
		w->store = main_d->store;
		w->store_len = main_d->store_len;
		w->device = device;
		w->interval = main_d->stats.repeat;
		w->mu = &mu;
		w->cv = &cv;
		if (pthread_create(&w->thread, NULL, worker_main, w))
			return -1;
		nworkers = i + 1;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < n; i++) {
		while (!workers[i].ready)
			pthread_cond_wait(&cv, &mu);
		failed |= workers[i].failed;
		ctxs[i] = workers[i].ctx;
	}
	pthread_mutex_unlock(&mu);
	return failed ? -1 : 0;
}

/* After the main loop: each worker stopped (told by on_signal, or now if
 * start-up failed), joined, and its counts added to the summary. */
static void workers_join(struct daemon *sum)
{
	for (int i = 0; i < nworkers; i++) {
		struct daemon *w = &workers[i];
		char tag[32];

		if (!sum->stopping && !w->failed && w->loop)
			ev_async_send(w->loop, &w->stop);
		pthread_join(w->thread, NULL);
		snprintf(tag, sizeof(tag), "worker %d", i);
		print_stats(w, tag);
		sum->conns += w->conns;
		sum->writes += w->writes;
		sum->reads += w->reads;
		sum->errors += w->errors;
		sum->wbytes += w->wbytes;
		sum->rbytes += w->rbytes;
		sum->callbacks += w->callbacks;
		sum->offthread += w->offthread;
	}
	free(workers);
	workers = NULL;
	nworkers = 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7473", *device = NULL;
	double interval = 10;
	struct daemon d = { .store_len = 64u << 20 };
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct ez_ctx **wctx = NULL;
	int opt, ret, threads = 0;

	while ((opt = getopt_long(argc, argv, "a:p:d:S:i:t:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'd': device = optarg; break;
		case 'p': port = optarg; break;
		case 'S': d.store_len = (size_t)atoi(optarg) << 20; break;
		case 'i': interval = atof(optarg); break;
		case 't': threads = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a ADDRESS] [-p PORT] [-d DEVICE] [-S STORE_MiB] "
				"[-i STATS_SECONDS] [-t|--threads N]\n", argv[0]);
			return 2;
		}
	}
	if (threads < 0 || threads > 64) {
		fprintf(stderr, "storage_daemon: --threads %d: 0..64\n", threads);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	d.tid = pthread_self();

	/* The daemon's loop and its own watchers exist before easyrdma. */
	d.loop = EV_DEFAULT;
	ev_timer_init(&d.stats, on_stats, interval, interval);
	ev_signal_init(&d.sigint, on_signal, SIGINT);
	ev_signal_init(&d.sigterm, on_signal, SIGTERM);
	ev_signal_init(&d.sigusr1, on_signal, SIGUSR1);
	d.stats.data = d.sigint.data = d.sigterm.data = d.sigusr1.data = &d;
	if (!threads)	/* with workers, each prints its own stats line */
		ev_timer_start(d.loop, &d.stats);
	ev_signal_start(d.loop, &d.sigint);
	ev_signal_start(d.loop, &d.sigterm);
	ev_signal_start(d.loop, &d.sigusr1);	/* before anyone can learn our port */

	/* Then the library joins that loop, and the store is registered once:
	 * local access is enough, as the daemon itself issues the RDMA ops. An
	 * MR serves one device: the one clients reach ADDRESS through (-d). */
	d.store = calloc(1, d.store_len);
	if (!d.store || !d.store_len)
		return 1;
	ret = ez_ctx_new(d.loop, 0, &d.ctx);
	if (!ret && !threads) {
		ret = ez_mr_reg(d.ctx, device, d.store, d.store_len, 0, &d.store_mr);
		if (!ret)
			ret = ez_listen(d.ctx, addr, port, NULL, on_request, &d, &d.listener);
	} else if (!ret) {
		/* Workers first: the listener names the contexts it hands to. */
		struct ez_listen_opts lo = { .placement = EZ_PLACE_LEAST_CONNS,
					     .nworkers = (uint32_t)threads };

		wctx = calloc((size_t)threads, sizeof(*wctx));
		ret = wctx && !workers_start(&d, threads, device, wctx) ? 0 : -1;
		lo.workers = wctx;
		if (!ret)
			ret = ez_listen(d.ctx, addr, port, &lo, NULL, NULL, &d.listener);
	}
	if (ret) {
		fprintf(stderr, "storage_daemon: %s\n", ret == -1 ? "worker start-up failed" :
			ez_errmsg());
		if (d.listener)
			ez_listener_close(d.listener);
		workers_join(&d);
		if (d.store_mr)
			ez_mr_dereg(d.store_mr);
		if (d.ctx)
			ez_ctx_free(d.ctx);
		free(wctx);
		free(d.store);
		return 1;
	}
	printf("storage_daemon: %zu MiB store, listening on %s port %u%s\n", d.store_len >> 20,
	       addr ? addr : "*", ez_listener_port(d.listener),
	       threads ? " (worker threads)" : "");

	ev_run(d.loop, 0);

	workers_join(&d);	/* their sessions are closed and their contexts freed */
	free(wctx);
	ret = d.store_mr ? ez_mr_dereg(d.store_mr) : 0;
	if (!ret)
		ret = ez_ctx_free(d.ctx);
	if (ret)
		fprintf(stderr, "storage_daemon: teardown: %s\n", ez_errmsg());
	print_stats(&d, "summary");
	free(d.store);
	return ret || d.offthread ? 1 : 0;
}
