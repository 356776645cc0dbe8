/* ezrdma.c: the easyrdma command-line tool: devices, ping, perf and stat (check: check.c). */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <infiniband/verbs.h>
#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif
#include <pthread.h>

#include <easyrdma.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* Wire format between the client modes and the server (-l)            */
/* ------------------------------------------------------------------ */

enum { M_PING = 1, M_STREAM, M_DONE, M_WANT_MR, M_RKEY };

struct msg {
	uint32_t type, seq;
	uint64_t val;		/* PING: send time; DONE reply: messages counted; WANT_MR: bytes */
	struct ez_rkey rkey;	/* RKEY only */
};

/* The client's connect data: the largest message it will send. The server
 * sizes the connection's buffers from it (clamped: it is untrusted input). */
struct hello {
	uint32_t magic, max_msg;
};
#define HELLO_MAGIC 0x657a7270u /* "ezrp" */
#define MAX_MSG_CAP (1u << 20)

/* A connection's max_msg_size for messages of size bytes: above 64 KiB
 * a power of two (ez_conn_opts(3)), the next one up. */
static uint32_t msg_limit(uint32_t size)
{
	uint32_t v = 64u << 10;

	if (size <= v)
		return size;
	while (v < size)
		v <<= 1;
	return v;
}
#define MAX_MR_CAP (64u << 20)

/* Per thread: `perf -T N` runs N clients, each a thread with its own loop,
 * context and connection (one context per thread, easyrdma(7)). */
static __thread struct ev_loop *loop;
static int json, quiet;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "ezrdma: %s: %s\n", what, ez_errmsg());
	exit(1);
}

/* ------------------------------------------------------------------ */
/* ezrdma devices                                                      */
/* ------------------------------------------------------------------ */

static const char *gid_type_str(uint32_t t)
{
	return t == IBV_GID_TYPE_ROCE_V2 ? "RoCEv2" : t == IBV_GID_TYPE_ROCE_V1 ? "RoCEv1" : "IB";
}

static const char *link_str(uint8_t l)
{
	return l == IBV_LINK_LAYER_ETHERNET ? "Ethernet" :
	       l == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "unspecified";
}

static int cmd_devices(void)
{
	int n, i;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (!list) {
		perror("ezrdma: ibv_get_device_list");
		return 1;
	}
	if (!n)
		printf("no RDMA devices (ibv_get_device_list() found none)\n");
	for (i = 0; i < n; i++) {
		struct ibv_context *c = ibv_open_device(list[i]);
		struct ibv_device_attr da;
		int mlx5 = 0;

#ifdef HAVE_MLX5DV
		mlx5 = mlx5dv_is_supported(list[i]);
#endif
		if (!c || ibv_query_device(c, &da)) {
			printf("%s: cannot open or query: %s\n", ibv_get_device_name(list[i]),
			       strerror(errno));
			if (c)
				ibv_close_device(c);
			continue;
		}
		printf("%s: node guid %016llx, fw %s, %u port(s), max_qp %d, max_srq %d, mlx5 sport control: %s\n",
		       ibv_get_device_name(list[i]), (unsigned long long)be64toh(da.node_guid),
		       da.fw_ver, da.phys_port_cnt, da.max_qp, da.max_srq,
#ifdef HAVE_MLX5DV
		       mlx5 ? "yes (mlx5dv)" : "no (not an mlx5 device)"
#else
		       "no (built without mlx5dv)"
#endif
		       );
		(void)mlx5;
		for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;

			if (ibv_query_port(c, p, &pa)) {
				printf("  port %u: ibv_query_port: %s\n", p, strerror(errno));
				continue;
			}
			printf("  port %u: %s, link layer %s, active MTU %d, max MTU %d, %d GID(s)\n", p,
			       ibv_port_state_str(pa.state), link_str(pa.link_layer),
			       128 << pa.active_mtu, 128 << pa.max_mtu, pa.gid_tbl_len);
			for (int g = 0; g < pa.gid_tbl_len; g++) {
				struct ibv_gid_entry e;
				char s[INET6_ADDRSTRLEN];

				if (ibv_query_gid_ex(c, p, (uint32_t)g, &e, 0))
					continue;	/* an empty slot */
				inet_ntop(AF_INET6, e.gid.raw, s, sizeof(s));
				printf("    gid %d: %s %s\n", g, s, gid_type_str(e.gid_type));
			}
		}
		ibv_close_device(c);
	}
	ibv_free_device_list(list);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Server (ping -l, perf -l): echoes PINGs, counts STREAMs, lends MRs    */
/* ------------------------------------------------------------------ */

struct sconn {
	struct ez_conn *conn;
	struct ez_mr *mr;	/* a client's RDMA WRITE target */
	void *mem;
	uint64_t streamed;
	int closed;
	struct sconn *next, **pprev;
};

/* Per serving thread: the main one, or with `perf -l -T N` each of N
 * workers, each with its own loop, context and connections (the listener's
 * thread hands each request to one of them, ez_listen(3) "Workers"). */
static __thread struct sconn *sconns;
static __thread struct ez_ctx *ctx;
static struct ez_listener *listener;
static __thread int stopping;
/* What a thread served: its connections, messages received, and the
 * callbacks that ran on another thread than the connection's (always 0). */
static __thread unsigned long s_conns, s_msgs, s_offthread;
static __thread pthread_t s_tid;

static void s_on_thread(void)
{
	if (!pthread_equal(pthread_self(), s_tid))
		s_offthread++;
}

static void sconn_drop(struct sconn *s)
{
	if (s->mr)
		ez_mr_dereg(s->mr);
	free(s->mem);
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	free(s);
	if (stopping && !sconns)
		ev_break(loop, EVBREAK_ALL);
}

static void s_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct sconn *s = arg;
	struct msg m = { 0 };
	size_t len = ez_buf_len(buf);

	s_on_thread();
	s_msgs++;
	memcpy(&m, ez_buf_data(buf), len < sizeof(m) ? len : sizeof(m));
	if (m.type == M_PING) {		/* the whole message goes back */
		if (ez_send(conn, ez_buf_data(buf), len, NULL, NULL))
			fprintf(stderr, "ezrdma: echo: %s\n", ez_errmsg());
	} else if (m.type == M_STREAM) {
		s->streamed++;
	} else if (m.type == M_DONE) {
		m.val = s->streamed;
		s->streamed = 0;
		ez_send(conn, &m, sizeof(m), NULL, NULL);
	} else if (m.type == M_WANT_MR && !s->mr && m.val && m.val <= MAX_MR_CAP) {
		struct ez_conn_info in;

		s->mem = calloc(1, m.val);
		if (!s->mem || ez_conn_info(conn, &in) || ez_mr_reg(ctx, in.device, s->mem, m.val, EZ_MR_REMOTE_WRITE |
					 EZ_MR_REMOTE_READ, &s->mr))
			fprintf(stderr, "ezrdma: ez_mr_reg(%llu bytes): %s\n",
				(unsigned long long)m.val, ez_errmsg());
		m.type = M_RKEY;
		/* Reachable through this connection alone (ez_conn_export(3)). */
		if (s->mr && ez_conn_export(conn, s->mr, 0, m.val, EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_READ,
					    &m.rkey))
			fprintf(stderr, "ezrdma: ez_conn_export: %s\n", ez_errmsg());
		ez_send(conn, &m, sizeof(m), NULL, NULL);
	}
	ez_buf_release(buf);
}

static void s_end(struct ez_conn *conn, int status, void *arg)
{
	struct sconn *s = arg;

	s_on_thread();
	if (!s->closed)
		ez_conn_close(conn);
	sconn_drop(s);
}

static void s_connect(struct ez_conn *conn, int status, void *arg)
{
	if (status) {
		s_end(conn, status, arg);
		return;
	}
	s_on_thread();
	s_conns++;
}

static void s_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct ez_conn_cbs cbs = { .on_connect = s_connect, .on_recv = s_recv, .on_disconnect = s_end };
	struct ez_conn_opts o = { .max_msg_size = sizeof(struct msg), .recv_depth = 64,
				  .send_depth = 256 };
	struct hello h = { 0 };
	size_t len;
	const void *d = ez_conn_req_data(req, &len);
	struct sconn *s = calloc(1, sizeof(*s));

	s_on_thread();
	if (d && len == sizeof(h))
		memcpy(&h, d, sizeof(h));
	if (h.magic == HELLO_MAGIC && h.max_msg > o.max_msg_size)
		o.max_msg_size = msg_limit(h.max_msg < MAX_MSG_CAP ? h.max_msg : MAX_MSG_CAP);
	if (!s || ez_accept(req, &o, &cbs, s, &s->conn)) {
		fprintf(stderr, "ezrdma: accept: %s\n", ez_errmsg());
		free(s);
		return;
	}
	s->next = sconns;
	if (sconns)
		sconns->pprev = &s->next;
	s->pprev = &sconns;
	sconns = s;
}

/* SIGUSR1 (`ezrdma stat PID`): one line of ez_conn_stats() per connection,
 * printed by the thread the connections belong to. */
static void s_print_stats(void)
{
	for (struct sconn *s = sconns; s; s = s->next) {
		struct ez_conn_stats st;
		struct ez_conn_info in;

		if (ez_conn_stats(s->conn, &st) || ez_conn_info(s->conn, &in))
			continue;
		printf("stat: qp %u sport %u: sent %llu msgs %llu B, recv %llu msgs %llu B, "
		       "credit msgs %llu/%llu, credit waits %llu, op errors %llu\n",
		       in.qp_num, in.udp_sport, (unsigned long long)st.msgs_sent,
		       (unsigned long long)st.bytes_sent, (unsigned long long)st.msgs_recv,
		       (unsigned long long)st.bytes_recv, (unsigned long long)st.credit_msgs_sent,
		       (unsigned long long)st.credit_msgs_recv,
		       (unsigned long long)st.waits_for_credits, (unsigned long long)st.op_errors);
	}
	if (!sconns)
		printf("stat: no connections\n");
}

/* This thread's connections close; the last one's end breaks its loop. */
static void s_close_all(void)
{
	if (stopping++)
		return;
	if (!sconns)
		ev_break(loop, EVBREAK_ALL);
	for (struct sconn *s = sconns; s; s = s->next) {
		s->closed = 1;
		ez_conn_close(s->conn);
	}
}

struct sworker {		/* perf -l -T N: one serving thread */
	pthread_t th;
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	ev_async stop, usr1;	/* from the main thread's signal watchers */
	int ready, failed;
	unsigned long conns, msgs, offthread;	/* read after the join */
};
static struct sworker *sworkers;
static int nsworkers;
static pthread_mutex_t sw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sw_cv = PTHREAD_COND_INITIALIZER;

/* SIGINT/SIGTERM: the listener goes, then every serving thread closes its
 * connections (the workers told by ev_async, libev's thread-safe call). */
static void s_stop(struct ev_loop *l, ev_signal *w, int revents)
{
	if (stopping)
		return;
	ez_listener_close(listener);
	s_close_all();
	for (int i = 0; i < nsworkers; i++)
		ev_async_send(sworkers[i].loop, &sworkers[i].stop);
}


static void sw_async(struct ev_loop *l, ev_async *w, int revents)
{
	struct sworker *sw = w->data;

	if (w == &sw->stop)
		s_close_all();
	else
		s_print_stats();
}

static void s_usr1(struct ev_loop *l, ev_signal *w, int revents)
{
	if (!nsworkers)
		s_print_stats();
	for (int i = 0; i < nsworkers; i++)
		ev_async_send(sworkers[i].loop, &sworkers[i].usr1);
}

static void *sw_main(void *arg)
{
	struct sworker *sw = arg;
	int ret;

	s_tid = pthread_self();
	loop = sw->loop = ev_loop_new(EVFLAG_AUTO);
	ret = loop ? ez_ctx_new(loop, 0, &ctx) : -ENOMEM;
	if (!ret)
		ret = ez_ctx_take_requests(ctx, s_request, NULL);
	if (ret)
		fprintf(stderr, "ezrdma: worker: %s\n", ez_errmsg());
	if (!ret) {
		ev_async_init(&sw->stop, sw_async);
		ev_async_init(&sw->usr1, sw_async);
		sw->stop.data = sw->usr1.data = sw;
		ev_async_start(loop, &sw->stop);
		ev_async_start(loop, &sw->usr1);
	}
	pthread_mutex_lock(&sw_mu);
	sw->ctx = ctx;
	sw->failed = !!ret;
	sw->ready = 1;
	pthread_cond_broadcast(&sw_cv);
	pthread_mutex_unlock(&sw_mu);
	if (!ret)
		ev_run(loop, 0);
	if (ctx && ez_ctx_free(ctx))
		fprintf(stderr, "ezrdma: worker: ez_ctx_free: %s\n", ez_errmsg());
	if (loop)
		ev_loop_destroy(loop);
	sw->conns = s_conns, sw->msgs = s_msgs, sw->offthread = s_offthread;
	return NULL;
}

/* Starts n serving threads; their contexts go in ctxs. */
static int sw_start(int n, struct ez_ctx **ctxs)
{
	int failed = 0;

	sworkers = calloc((size_t)n, sizeof(*sworkers));
	if (!sworkers)
		return -1;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&sworkers[i].th, NULL, sw_main, &sworkers[i]))
			return -1;
		nsworkers = i + 1;
	}
	pthread_mutex_lock(&sw_mu);
	for (int i = 0; i < nsworkers; i++) {
		while (!sworkers[i].ready)
			pthread_cond_wait(&sw_cv, &sw_mu);
		failed |= sworkers[i].failed;
		ctxs[i] = sworkers[i].ctx;
	}
	pthread_mutex_unlock(&sw_mu);
	return failed ? -1 : 0;
}

/* After the main loop (or a failed start): each worker stopped, joined, and
 * its line printed. Returns the callbacks that ran off their thread. */
static unsigned long sw_join(void)
{
	unsigned long off = 0;

	for (int i = 0; i < nsworkers; i++) {
		struct sworker *sw = &sworkers[i];

		if (!stopping && !sw->failed)
			ev_async_send(sw->loop, &sw->stop);
		pthread_join(sw->th, NULL);
		printf("ezrdma: worker %d: %lu connections, %lu messages, %lu callbacks off-thread\n",
		       i, sw->conns, sw->msgs, sw->offthread);
		off += sw->offthread;
	}
	free(sworkers);
	return off;
}

static int serve(const char *addr, const char *port, int threads)
{
	ev_signal si, st, su;
	struct ez_listen_opts lo = { .placement = EZ_PLACE_ROUND_ROBIN };
	struct ez_ctx **wctx = NULL;
	unsigned long off;

	s_tid = pthread_self();
	if (ez_ctx_new(loop, 0, &ctx))
		die("ez_ctx_new");
	if (threads) {	/* the workers first: the listener names their contexts */
		wctx = calloc((size_t)threads, sizeof(*wctx));
		if (!wctx || sw_start(threads, wctx)) {
			fprintf(stderr, "ezrdma: %d serving threads: start-up failed\n", threads);
			stopping = 1;
			sw_join();
			exit(1);
		}
		lo.nworkers = (uint32_t)threads;
		lo.workers = wctx;
	}
	if (ez_listen(ctx, addr, port, &lo, threads ? NULL : s_request, NULL, &listener))
		die("listen");
	ev_signal_init(&si, s_stop, SIGINT);
	ev_signal_init(&st, s_stop, SIGTERM);
	ev_signal_init(&su, s_usr1, SIGUSR1);
	ev_signal_start(loop, &si);
	ev_signal_start(loop, &st);
	ev_signal_start(loop, &su);
	printf("ezrdma: listening on %s port %u (pid %d)", addr ? addr : "*",
	       ez_listener_port(listener), (int)getpid());
	if (threads)
		printf(", %d serving threads", threads);
	printf("\n");
	ev_run(loop, 0);
	off = sw_join();
	free(wctx);
	if (ez_ctx_free(ctx))
		die("ez_ctx_free");
	printf("ezrdma: server stopped\n");
	return off ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Client side shared by ping and perf                                 */
/* ------------------------------------------------------------------ */

struct cli {
	const char *host, *port;
	struct ez_conn *conn;
	uint32_t size;		/* message bytes */
	uint8_t *buf;		/* staging for sends */
	int failed, closing;
	void (*on_up)(void);	/* the connection is established */
	void (*on_msg)(const struct msg *m, size_t len);
	void (*on_down)(void);	/* the connection is gone (handle freed after) */
};
static __thread struct cli C;

static void c_close(int failed)
{
	C.failed |= failed;
	if (!C.closing) {
		C.closing = 1;
		ez_conn_close(C.conn);
	}
}

static void c_connect(struct ez_conn *conn, int status, void *arg)
{
	if (status) {
		fprintf(stderr, "ezrdma: connect %s port %s: %s\n", C.host, C.port,
			ez_conn_errmsg(conn));
		c_close(1);
		C.on_down();
		return;
	}
	C.on_up();
}

static void c_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct msg m = { 0 };
	size_t len = ez_buf_len(buf);

	memcpy(&m, ez_buf_data(buf), len < sizeof(m) ? len : sizeof(m));
	ez_buf_release(buf);
	if (!C.closing)
		C.on_msg(&m, len);
}

static void c_disconnect(struct ez_conn *conn, int status, void *arg)
{
	if (!C.closing) {
		fprintf(stderr, "ezrdma: connection lost: %s\n",
			status ? ez_conn_errmsg(conn) : "closed by the peer");
		c_close(1);
	}
	C.on_down();
}

static void c_start(uint32_t max_msg)
{
	struct hello h = { HELLO_MAGIC, max_msg };
	struct ez_conn_opts o = { .max_msg_size = msg_limit(max_msg), .send_depth = 256,
				  .private_data = &h, .private_data_len = sizeof(h) };
	struct ez_conn_cbs cbs = { .on_connect = c_connect, .on_recv = c_recv, .on_disconnect = c_disconnect };

	C.closing = 0;
	C.buf = calloc(1, max_msg);
	if (!C.buf)
		exit(1);
	if (!ctx && ez_ctx_new(loop, 0, &ctx))
		die("ez_ctx_new");
	if (ez_connect(ctx, C.host, C.port, &o, &cbs, NULL, &C.conn))
		die("ez_connect");
}

/* ------------------------------------------------------------------ */
/* ezrdma ping                                                         */
/* ------------------------------------------------------------------ */

static __thread struct {
	uint32_t count, sent, recvd;
	int lingering;
	double interval, min, max, sum, sum2;
	uint64_t start;
	ev_timer timer;
	ev_signal sigint;
} P;

static void ping_finish(void)
{
	double avg = P.recvd ? P.sum / P.recvd : 0;
	double mdev = P.recvd ? sqrt(P.sum2 / P.recvd - avg * avg) : 0;

	ev_timer_stop(loop, &P.timer);
	ev_signal_stop(loop, &P.sigint);
	printf("\n--- %s ezrdma ping statistics ---\n", C.host);
	printf("%u messages sent, %u received, %.0f%% loss, time %.0fms\n", P.sent, P.recvd,
	       P.sent ? 100.0 * (P.sent - P.recvd) / P.sent : 0.0, (now_ns() - P.start) / 1e6);
	if (P.recvd)
		printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", P.min, avg, P.max, mdev);
	c_close(P.recvd != P.sent || !P.recvd);
}

static void ping_tick(struct ev_loop *l, ev_timer *w, int revents)
{
	struct msg *m = (struct msg *)C.buf;

	if (P.count && P.sent >= P.count) {
		/* All sent: like ping(8), wait a while for the last replies. */
		if (!P.lingering++) {
			ev_timer_stop(loop, &P.timer);
			ev_timer_set(&P.timer, P.interval > 2. ? P.interval : 2., 0.);
			ev_timer_start(loop, &P.timer);
		} else {
			ping_finish();
		}
		return;
	}
	*m = (struct msg){ .type = M_PING, .seq = ++P.sent, .val = now_ns() };
	if (ez_send(C.conn, C.buf, C.size, NULL, NULL)) {
		fprintf(stderr, "ezrdma: ez_send: %s\n", ez_errmsg());
		ping_finish();
	}
}

static void ping_up(void)
{
	struct ez_conn_info in;

	ez_conn_info(C.conn, &in);
	printf("EZRDMA PING %s port %s: %u data bytes (%s, qp %u -> %u, udp sport %u)\n", C.host,
	       C.port, C.size, in.device, in.qp_num, in.remote_qp_num, in.udp_sport);
	P.start = now_ns();
	ev_timer_init(&P.timer, ping_tick, 0., P.interval);
	ev_timer_start(loop, &P.timer);
}

static void ping_msg(const struct msg *m, size_t len)
{
	double ms = (now_ns() - m->val) / 1e6;

	if (m->type != M_PING)
		return;
	P.recvd++;
	P.sum += ms;
	P.sum2 += ms * ms;
	P.min = P.recvd == 1 || ms < P.min ? ms : P.min;
	P.max = ms > P.max ? ms : P.max;
	printf("%zu bytes from %s: seq=%u time=%.3f ms\n", len, C.host, m->seq, ms);
	if (P.count && P.recvd == P.count)
		ping_finish();
}

static void ping_down(void)
{
	ev_timer_stop(loop, &P.timer);
	ev_break(loop, EVBREAK_ALL);
}

static void ping_sigint(struct ev_loop *l, ev_signal *w, int revents)
{
	ping_finish();
}

/* ------------------------------------------------------------------ */
/* ezrdma perf: latency, message rate, RDMA WRITE bandwidth, connections */
/* ------------------------------------------------------------------ */

enum { T_LAT = 1, T_RATE = 2, T_BW = 4, T_CONN = 8 };
static const char *const tname[] = { "lat", "rate", "bw", "conn" };

static __thread struct {
	unsigned tests, phase;	/* enabled tests; the one running */
	uint32_t n, window, bsize, sent, done;
	uint64_t t0, t1;
	double *lat;
	struct ez_mr *mr;
	void *mem;
	struct ez_rkey rkey;
	uint32_t user_n;	/* -n, or 0: each test's default */
	ev_timer progress;
	/* results */
	double lat_avg, lat_med, lat_p99, rate, mbps, conn_rate, conn_ms;
	uint64_t cr_t, cr_connect_ns;	/* connection test: start of this connect, sum */
} X;

static uint32_t iters(unsigned t, uint32_t n)
{
	if (n)
		return n;
	return t == T_LAT ? 2000 : t == T_RATE ? 20000 : t == T_BW ? 2000 : 50;
}

static void perf_next(void);

/* Progress of a run longer than a second, on a terminal only: one line on
 * stderr rewritten in place (a pipe or a file gets the results alone, and
 * --json output stays one object). */
static __thread int progress_shown;

static void progress_clear(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = 0;
}

static void perf_progress(struct ev_loop *l, ev_timer *w, int revents)
{
	double s = (now_ns() - X.t0) / 1e9;

	progress_clear();
	progress_shown = 1;
	if (!X.phase) {		/* still connecting */
		fprintf(stderr, "perf: connecting to %s port %s", C.host, C.port);
		return;
	}
	fprintf(stderr, "perf: %s %u/%u done, %.1f s", tname[__builtin_ctz(X.phase)], X.done,
		X.n, s);
	if (X.phase == T_BW)
		fprintf(stderr, ", %.1f MB/s", X.done * (double)X.bsize / s / 1e6);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void lat_send(void)
{
	struct msg *m = (struct msg *)C.buf;

	*m = (struct msg){ .type = M_PING, .seq = X.sent++, .val = now_ns() };
	if (ez_send(C.conn, C.buf, C.size, NULL, NULL))
		die("ez_send");
}

static void rate_sent(struct ez_conn *conn, int status, void *arg);

static void rate_send(void)
{
	struct msg *m = (struct msg *)C.buf;

	while (X.sent < X.n) {
		*m = (struct msg){ .type = M_STREAM, .seq = X.sent };
		int ret = ez_send(C.conn, C.buf, C.size, rate_sent, NULL);

		if (ret == -ENOBUFS)
			return;		/* the next send completion brings us back */
		if (ret)
			die("ez_send");
		X.sent++;
	}
}

static void rate_sent(struct ez_conn *conn, int status, void *arg)
{
	struct msg m = { .type = M_DONE };

	if (status) {
		if (!C.closing)
			fprintf(stderr, "ezrdma: send: %s\n", ez_strerror(status));
		c_close(1);
		return;
	}
	if (++X.done == X.n && ez_send(C.conn, &m, sizeof(m), NULL, NULL))
		die("ez_send");
	rate_send();
}

static void bw_done(struct ez_conn *conn, int status, void *arg);

static void bw_post(void)
{
	while (X.sent < X.n && X.sent - X.done < X.window) {
		if (ez_write(C.conn, X.mr, 0, X.bsize, &X.rkey, 0, bw_done, NULL))
			die("ez_write");
		X.sent++;
	}
}

static void bw_done(struct ez_conn *conn, int status, void *arg)
{
	if (status) {
		if (!C.closing)
			fprintf(stderr, "ezrdma: RDMA WRITE: %s\n", ez_strerror(status));
		c_close(1);
		return;
	}
	if (++X.done < X.n) {
		bw_post();
		return;
	}
	X.t1 = now_ns();
	X.mbps = (double)X.n * X.bsize / ((X.t1 - X.t0) / 1e9) / 1e6;
	progress_clear();
	if (!json)
		printf("bw:   %u RDMA WRITEs of %u B, window %u: %.1f MB/s\n", X.n, X.bsize,
		       X.window, X.mbps);
	perf_next();
}

static void perf_msg(const struct msg *m, size_t len)
{
	if (X.phase == T_LAT && m->type == M_PING) {
		X.lat[X.done++] = (now_ns() - m->val) / 1e3;
		if (X.done < X.n) {
			lat_send();
			return;
		}
		qsort(X.lat, X.n, sizeof(double), cmp_d);
		X.lat_avg = 0;
		for (uint32_t i = 0; i < X.n; i++)
			X.lat_avg += X.lat[i] / X.n;
		X.lat_med = X.lat[X.n / 2];
		X.lat_p99 = X.lat[(size_t)((X.n - 1) * 0.99)];
		progress_clear();
		if (!json)
			printf("lat:  %u ping-pongs of %u B: avg %.1f us, median %.1f us, p99 %.1f us\n",
			       X.n, C.size, X.lat_avg, X.lat_med, X.lat_p99);
		perf_next();
	} else if (X.phase == T_RATE && m->type == M_DONE) {
		if (m->val != X.n) {
			fprintf(stderr, "ezrdma: server counted %llu messages of %u\n",
				(unsigned long long)m->val, X.n);
			c_close(1);
			return;
		}
		X.rate = X.n / ((now_ns() - X.t0) / 1e9);
		progress_clear();
		if (!json)
			printf("rate: %u messages of %u B: %.0f msgs/s\n", X.n, C.size, X.rate);
		perf_next();
	} else if (X.phase == T_BW && m->type == M_RKEY) {
		struct ez_conn_info in;

		X.mem = calloc(1, X.bsize);
		if (!m->rkey.rkey || !X.mem || ez_conn_info(C.conn, &in)) {
			fprintf(stderr, "ezrdma: the server lent no memory for RDMA WRITE\n");
			c_close(1);
			return;
		}
		X.rkey = m->rkey;
		/* On the connection's device: an MR serves connections of one device. */
		if (ez_mr_reg(ctx, in.device, X.mem, X.bsize, 0, &X.mr))
			die("ez_mr_reg");
		X.t0 = now_ns();
		bw_post();
	}
}

/* Connection rate: connect, wait for on_connect, close, again. */
static void cr_next(void);
static __thread struct ez_conn *cr_conn;

static void cr_connect(struct ez_conn *conn, int status, void *arg)
{
	if (status) {
		fprintf(stderr, "ezrdma: connect: %s\n", ez_conn_errmsg(conn));
		C.failed = 1;
		ez_conn_close(conn);
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	X.done++;
	X.cr_connect_ns += now_ns() - X.cr_t;
	ez_conn_close(conn);	/* on_disconnect starts the next one */
}

static void cr_disconnect(struct ez_conn *conn, int status, void *arg)
{
	cr_next();
}

static void cr_next(void)
{
	struct ez_conn_cbs cbs = { .on_connect = cr_connect, .on_recv = NULL, .on_disconnect = cr_disconnect };

	if (X.done == X.n) {
		double s = (now_ns() - X.t0) / 1e9;

		X.conn_rate = X.n / s;
		X.conn_ms = s * 1e3 / X.n;
		progress_clear();
		if (!json)
			printf("conn: %u connections: %.1f conn/s, %.2f ms each "
			       "(connect %.2f ms + close)\n", X.n, X.conn_rate, X.conn_ms,
			       X.cr_connect_ns / 1e6 / X.n);
		ev_timer_stop(loop, &X.progress);
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	X.cr_t = now_ns();
	if (ez_connect(ctx, C.host, C.port, NULL, &cbs, NULL, &cr_conn))
		die("ez_connect");
}

/* Starts the next enabled test; the connection test runs last, after the
 * main connection is closed. */
static void perf_next(void)
{
	unsigned t = X.phase ? X.phase << 1 : T_LAT;

	while (t < T_CONN && !(X.tests & t))
		t <<= 1;
	X.phase = t;
	X.n = iters(t, X.user_n);
	X.sent = X.done = 0;
	X.t0 = now_ns();
	if (t == T_CONN) {
		c_close(0);	/* perf_down() goes on with the connection test */
	} else if (t == T_LAT) {
		X.lat = calloc(X.n, sizeof(double));
		if (!X.lat)
			exit(1);
		lat_send();
	} else if (t == T_RATE) {
		rate_send();
	} else {
		struct msg m = { .type = M_WANT_MR, .val = X.bsize };

		if (ez_send(C.conn, &m, sizeof(m), NULL, NULL))
			die("ez_send");
	}
}

static void perf_down(void)
{
	if (X.mr)
		ez_mr_dereg(X.mr);
	X.mr = NULL;
	free(X.mem);
	X.mem = NULL;
	if (C.failed || X.phase != T_CONN || !(X.tests & T_CONN)) {
		ev_timer_stop(loop, &X.progress);
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	cr_next();
}

/* ------------------------------------------------------------------ */
/* perf -T N: N client threads at once                                 */
/* ------------------------------------------------------------------ */

struct perf_thread {
	pthread_t th;
	struct cli c;		/* the main thread's options */
	unsigned tests;
	uint32_t window, bsize, user_n;
	/* results */
	int failed;
	double rate, mbps, lat_med, conn_rate;
};

static void *perf_thread_main(void *arg)
{
	struct perf_thread *t = arg;

	C = t->c;
	X.tests = t->tests, X.window = t->window, X.bsize = t->bsize, X.user_n = t->user_n;
	C.on_up = perf_next, C.on_msg = perf_msg, C.on_down = perf_down;
	loop = ev_loop_new(EVFLAG_AUTO);
	if (!loop) {
		t->failed = 1;
		return NULL;
	}
	c_start(C.size);
	ev_run(loop, 0);
	if (ez_ctx_free(ctx))
		fprintf(stderr, "ezrdma: ez_ctx_free: %s\n", ez_errmsg());
	ev_loop_destroy(loop);
	free(C.buf);
	free(X.lat);
	t->failed = C.failed;
	t->rate = X.rate, t->mbps = X.mbps, t->lat_med = X.lat_med, t->conn_rate = X.conn_rate;
	return NULL;
}

/* Each thread prints its own lines; then the sums (the rates add up: the
 * threads ran at once). */
static int perf_threads(int n)
{
	struct perf_thread *t = calloc((size_t)n, sizeof(*t));
	double rate = 0, mbps = 0, conn = 0, lat = 0;
	int failed = 0, i;

	if (!t)
		return 1;
	for (i = 0; i < n; i++) {
		t[i].c = C;
		t[i].tests = X.tests, t[i].window = X.window, t[i].bsize = X.bsize;
		t[i].user_n = X.user_n;
		if (pthread_create(&t[i].th, NULL, perf_thread_main, &t[i])) {
			fprintf(stderr, "ezrdma: pthread_create failed\n");
			n = i;
			failed = 1;
			break;
		}
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i].th, NULL);
		failed |= t[i].failed;
		rate += t[i].rate, mbps += t[i].mbps, conn += t[i].conn_rate;
		if (t[i].lat_med > lat)
			lat = t[i].lat_med;
	}
	if (json && !failed)
		printf("{\"host\": \"%s\", \"threads\": %d, \"size\": %u, \"window\": %u, "
		       "\"lat_us_median_max\": %.2f, \"msg_rate\": %.0f, \"write_MBps\": %.2f, "
		       "\"conn_per_s\": %.2f}\n", C.host, n, C.size, X.window, lat, rate, mbps, conn);
	else if (!failed)
		printf("perf: %d client threads: rate %.0f msg/s, bw %.2f MB/s, conn %.1f conn/s "
		       "(sums); latency median %.2f us (the slowest thread's)\n", n, rate, mbps, conn,
		       lat);
	free(t);
	return failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr,
		"usage: ezrdma devices\n"
		"       ezrdma ping -l [-a ADDRESS] [-p PORT] [-T THREADS]  (server for ping and perf)\n"
		"       ezrdma ping HOST [-p PORT] [-c COUNT] [-i SECONDS] [-s SIZE]\n"
		"       ezrdma perf -l [-a ADDRESS] [-p PORT] [-T THREADS]\n"
		"       ezrdma perf HOST [-p PORT] [-t lat,rate,bw,conn] [-n N] [-s SIZE]\n"
		"                   [-b BLOCK] [-w WINDOW] [-T THREADS] [--json]\n"
		"       ezrdma stat PID                                (a server prints its counters)\n"
		"       ezrdma check [-d DEVICE] [-a ADDRESS]          (this machine's devices, checked)\n"
		"       ezrdma --version\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "", *addr = NULL;
	int listen = 0, opt, ping = !strcmp(cmd, "ping");
	uint32_t n = 0;
	int threads = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "--version")) {
		printf("ezrdma (easyrdma) %s\n", ez_version());
		return 0;
	}
	if (!strcmp(cmd, "devices"))
		return cmd_devices();
	if (!strcmp(cmd, "check"))
		return ezrdma_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "stat")) {
		if (argc != 3)
			return usage();
		if (kill(atoi(argv[2]), SIGUSR1)) {
			perror("ezrdma: stat");
			return 1;
		}
		printf("ezrdma: asked pid %s for its counters: they appear on its output\n", argv[2]);
		return 0;
	}
	if (!ping && strcmp(cmd, "perf"))
		return usage();

	C.port = "7472";
	C.size = 64;
	P.count = 0, P.interval = 1.0;
	X.window = 32, X.bsize = 65536, X.tests = T_LAT | T_RATE | T_BW | T_CONN;
	argv++, argc--;
	optind = 1;
	for (;;) {
		if (optind < argc && argv[optind][0] != '-') {	/* HOST anywhere */
			C.host = argv[optind++];
			continue;
		}
		if (optind < argc && !strcmp(argv[optind], "--json")) {
			json = 1, optind++;
			continue;
		}
		if ((opt = getopt(argc, argv, "la:p:c:i:s:t:n:b:w:qT:")) == -1)
			break;
		switch (opt) {
		case 'l': listen = 1; break;
		case 'a': addr = optarg; break;
		case 'p': C.port = optarg; break;
		case 'c': P.count = (uint32_t)atoi(optarg); break;
		case 'i': P.interval = atof(optarg); break;
		case 's': C.size = (uint32_t)atoi(optarg); break;
		case 'n': n = (uint32_t)atoi(optarg); break;
		case 'b': X.bsize = (uint32_t)atoi(optarg); break;
		case 'w': X.window = (uint32_t)atoi(optarg); break;
		case 'q': quiet = 1; break;
		case 'T': threads = atoi(optarg); break;
		case 't':
			X.tests = 0;
			for (unsigned i = 0; i < 4; i++)
				if (strstr(optarg, tname[i]))
					X.tests |= 1u << i;
			break;
		default: return usage();
		}
	}
	loop = EV_DEFAULT;
	signal(SIGPIPE, SIG_IGN);
	if (listen)
		return threads < 0 || threads > 64 ? usage() : serve(addr, C.port, threads);
	if (!C.host || C.size < sizeof(struct msg) || C.size > MAX_MSG_CAP || !X.tests ||
	    !X.window || !X.bsize || X.bsize > MAX_MR_CAP || P.interval <= 0)
		return usage();

	if (threads < 0 || threads > 256 || (threads && ping))
		return usage();
	if (threads) {
		X.user_n = n;
		return perf_threads(threads);
	}
	if (ping) {
		C.on_up = ping_up, C.on_msg = ping_msg, C.on_down = ping_down;
		ev_signal_init(&P.sigint, ping_sigint, SIGINT);
		ev_signal_start(loop, &P.sigint);
	} else {
		X.user_n = n;
		C.on_up = perf_next, C.on_msg = perf_msg, C.on_down = perf_down;
		ev_timer_init(&X.progress, perf_progress, 1., 1.);
		if (!quiet && isatty(STDERR_FILENO))
			ev_timer_start(loop, &X.progress);
	}
	c_start(C.size);
	ev_run(loop, 0);
	progress_clear();
	if (ez_ctx_free(ctx))
		fprintf(stderr, "ezrdma: ez_ctx_free: %s\n", ez_errmsg());
	if (!ping && json && !C.failed)
		printf("{\"host\": \"%s\", \"size\": %u, \"block\": %u, \"window\": %u, "
		       "\"lat_us\": {\"avg\": %.2f, \"median\": %.2f, \"p99\": %.2f}, "
		       "\"msg_rate\": %.0f, \"write_MBps\": %.2f, \"conn_per_s\": %.2f, "
		       "\"conn_ms\": %.3f, \"connect_ms\": %.3f}\n", C.host, C.size, X.bsize, X.window,
		       X.lat_avg, X.lat_med, X.lat_p99, X.rate, X.mbps, X.conn_rate, X.conn_ms,
		       X.cr_connect_ns / 1e6 / (X.n ? X.n : 1));
	return C.failed ? 1 : 0;
}
