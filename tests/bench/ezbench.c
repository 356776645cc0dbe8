/* ezbench.c: easyrdma's side of the benchmark (latency, message rate, bandwidth, connection setup, receive memory), public API only. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ev.h>

#include "easyrdma.h"

/*
 * Protocol: the client's handshake bytes (struct hello) tell the server what
 * the connection is for, so one server command serves every test. The
 * server exits once a connection marked "last" has been accepted and every
 * connection has gone; it never prints figures except for --mem, where the
 * receive memory lives on its side.
 *
 * Every figure is one line starting "ezbench: test=" with key=value fields.
 */

enum test { T_LAT = 1, T_RATE, T_BW, T_CONN, T_MEM };
enum poll_mode { P_EVENT, P_SPIN, P_FD };

/* The server's backlog and its handshake limits, one choice: as many
 * handshakes at once as `--conn N --async` makes (compare's N is 500). */
#define SRV_HANDSHAKES 1024

#define HELLO_MAGIC 0x657a6231u /* "ezb1" */
#define F_LAST 1u	/* the server exits when this connection's session ends */
#define F_SRQ 2u	/* receive from the server's shared pool */
#define F_WRITE 4u	/* bandwidth by RDMA WRITE (the server exports a buffer) */
#define F_READ 8u	/* latency of RDMA READs (the server exports a buffer) */

struct hello {
	uint32_t magic;
	uint32_t test;		/* enum test: lat is echoed, mem reports on 'R' */
	uint32_t flags;
	uint32_t size;		/* message size */
	uint32_t depth;		/* receive depth (server's private pool) */
	uint32_t nconns;	/* connections of this phase (mem: what to expect) */
	uint32_t send_depth;	/* send depth the server uses */
};

struct cfg {
	int server;
	const char *addr;
	const char *port;
	enum test test;
	enum poll_mode poll;
	uint32_t size, iters, warmup, depth, send_depth, nconns, pool_bufs, pool_size;
	int srq, write_op, read_op, async, timeout, size_given;
};

static struct cfg cfg = {
	.addr = "192.0.2.1",
	.port = "18600",
	.poll = P_EVENT,
	.size = 64,
	.iters = 1000,
	.warmup = 50,
	.depth = 64,
	.send_depth = 64,
	.nconns = 100,
	.timeout = 300,
};

static struct ev_loop *loop;
static struct ez_ctx *ctx;
static int done;
static int exit_code;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "ezbench: %s: %s (%s)\n", what, ez_strerror(err), ez_errmsg());
	exit(1);
}

static void finish(int code)
{
	if (code)
		exit_code = code;
	done = 1;
	if (loop)
		ev_break(loop, EVBREAK_ALL);
}

/* fd mode: the application's own loop, here poll() on ez_ctx_fd() with the
 * library's timeout, then ez_ctx_process(). */
static void fd_wait(void)
{
	struct pollfd p = { .fd = ez_ctx_fd(ctx), .events = POLLIN };

	if (poll(&p, 1, ez_ctx_timeout_ms(ctx)) < 0 && errno != EINTR)
		die("poll", -errno);
}

/* Runs the context until finish(): libev blocking in epoll (event),
 * ez_ctx_process() of a busy-poll context in a loop that never sleeps
 * (spin), or the application's own poll() on the context's fd (fd). */
static void run(void)
{
	done = 0;
	if (cfg.poll == P_EVENT) {
		while (!done)
			ev_run(loop, EVRUN_ONCE);
		return;
	}
	while (!done) {
		int n;

		if (cfg.poll == P_FD)
			fd_wait();
		n = ez_ctx_process(ctx);
		if (n < 0)
			die("ez_ctx_process", n);
	}
}

static void ctx_setup(void)
{
	int ret;

	if (cfg.poll == P_EVENT) {
		loop = ev_default_loop(0);
		ret = ez_ctx_new(loop, 0, &ctx);
	} else if (cfg.poll == P_FD) {
		ret = ez_ctx_new(NULL, EZ_CTX_NO_LOOP, &ctx);
	} else {
		/* Busy-poll mode: the CQs are never armed and every
		 * ez_ctx_process() polls them, like ib_send_lat's loop. */
		ret = ez_ctx_new(NULL, EZ_CTX_NO_LOOP | EZ_CTX_BUSY_POLL, &ctx);
	}
	if (ret)
		die("ez_ctx_new", ret);
}

static const char *poll_name(void)
{
	return cfg.poll == P_EVENT ? "event" : cfg.poll == P_FD ? "fd" : "spin";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ */
/* Server                                                              */
/* ------------------------------------------------------------------ */

struct sconn {
	struct hello h;
	struct ez_conn *conn;
	int up;
};

static struct {
	struct ez_listener *lis;
	struct ez_srqpool *pool;	/* shared pool, made on the first F_SRQ request */
	uint32_t pool_size;
	void *wbuf;			/* RDMA WRITE target */
	struct ez_mr *wmr;
	int active;			/* accepted, not yet disconnected */
	int active_by_mode[2];		/* of which: private queues [0], shared pool [1] */
	int accepted, failed;
	int last_seen;
	uint64_t received;
} srv;

static void srv_maybe_exit(void)
{
	if (srv.last_seen && srv.active == 0)
		finish(0);
}

static void srv_report_mem(const struct sconn *s)
{
	struct ez_srqpool_stats st;

	if (s->h.flags & F_SRQ) {
		if (ez_srqpool_stats(srv.pool, &st))
			die("ez_srqpool_stats", -EINVAL);
		printf("ezbench: test=mem side=server mode=pool conns=%d attached=%u bufs=%" PRIu64
		       " buf_size=%u srq_max_wr=%u bytes_registered=%" PRIu64 "\n", srv.active_by_mode[1],
		       st.attached, st.total, srv.pool_size, st.srq_max_wr, st.bytes_registered);
	} else {
		/* A private pool per connection holds recv_depth buffers of
		 * max_msg_size: what ez_accept() was given (the client checks
		 * the credits it was advertised against it). */
		uint64_t per = (uint64_t)s->h.depth * s->h.size;

		printf("ezbench: test=mem side=server mode=per-conn conns=%d failed=%d depth=%u buf_size=%u"
		       " bytes_per_conn=%" PRIu64 " bytes_registered=%" PRIu64 "\n", srv.active_by_mode[0],
		       srv.failed, s->h.depth, s->h.size, per, per * (uint64_t)srv.active_by_mode[0]);
	}
	fflush(stdout);
}

static void srv_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct sconn *s = arg;
	int ret;

	srv.received++;
	if (s->h.test == T_MEM) {
		srv_report_mem(s);
		ez_buf_release(buf);
		ret = ez_send(conn, "r", 1, NULL, NULL);
	} else if (s->h.test == T_LAT) {
		ret = ez_send(conn, ez_buf_data(buf), ez_buf_len(buf), NULL, NULL);
		ez_buf_release(buf);
	} else {
		/* rate and bandwidth: the sender's completions are the figure. */
		ez_buf_release(buf);
		ret = 0;
	}
	if (ret)
		fprintf(stderr, "ezbench: server reply: %s (%s)\n", ez_strerror(ret), ez_errmsg());
}

static void srv_on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct sconn *s = arg;
	struct ez_rkey rk;
	int ret;

	if (status) {
		fprintf(stderr, "ezbench: server: connection failed: %s (%s)\n",
			ez_strerror(status), ez_conn_errmsg(conn));
		return;
	}
	s->up = 1;
	if (s->h.flags & (F_WRITE | F_READ)) {
		ret = ez_conn_export(conn, srv.wmr, 0, s->h.size,
				     s->h.flags & F_READ ? EZ_MR_REMOTE_READ : EZ_MR_REMOTE_WRITE, &rk);
		if (!ret)
			ret = ez_send(conn, &rk, sizeof(rk), NULL, NULL);
		if (ret)
			fprintf(stderr, "ezbench: server: sending the rkey: %s (%s)\n",
				ez_strerror(ret), ez_errmsg());
	}
}

static void srv_on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct sconn *s = arg;

	(void)status;
	ez_conn_close(conn);
	srv.active_by_mode[!!(s->h.flags & F_SRQ)]--;
	free(s);
	srv.active--;
	srv_maybe_exit();
}

/* on_connect(error) after accept: the handle is dead and must be closed. */
static void srv_on_connect_wrap(struct ez_conn *conn, int status, void *arg)
{
	srv_on_connect(conn, status, arg);
	if (status) {
		struct sconn *s = arg;

		ez_conn_close(conn);
		srv.active_by_mode[!!(s->h.flags & F_SRQ)]--;
		free(s);
		srv.active--;
		srv_maybe_exit();
	}
}

static void srv_on_request(struct ez_listener *lis, struct ez_conn_req *req, void *arg)
{
	static const struct ez_conn_cbs cbs = {
		.on_connect = srv_on_connect_wrap,
		.on_recv = srv_on_recv,
		.on_disconnect = srv_on_disconnect,
	};
	struct ez_conn_opts o = { 0 };
	const void *data;
	size_t len;
	struct sconn *s;
	int ret;

	(void)lis;
	(void)arg;
	data = ez_conn_req_data(req, &len);
	s = calloc(1, sizeof(*s));
	if (!s || len < sizeof(s->h)) {
		free(s);
		ez_reject(req, "bad hello", 9);
		return;
	}
	memcpy(&s->h, data, sizeof(s->h));
	if (s->h.magic != HELLO_MAGIC) {
		free(s);
		ez_reject(req, "bad magic", 9);
		return;
	}
	o.max_msg_size = s->h.size < 64 ? 64 : s->h.size;
	o.recv_depth = s->h.depth;
	o.send_depth = s->h.send_depth;
	if (s->h.flags & F_SRQ) {
		if (srv.pool && o.max_msg_size > srv.pool_size) {
			free(s);
			ez_reject(req, "messages larger than the pool's buffers", 39);
			return;
		}
		if (!srv.pool) {
			struct ez_srqpool_opts po = { .buf_size = o.max_msg_size, .nbufs = cfg.pool_bufs };

			ret = ez_srqpool_new(ctx, NULL, &po, &srv.pool);
			if (ret)
				die("ez_srqpool_new", ret);
			srv.pool_size = o.max_msg_size;
		}
		o.srqpool = srv.pool;
		o.max_msg_size = srv.pool_size;
	}
	if ((s->h.flags & (F_WRITE | F_READ)) && !srv.wmr) {
		srv.wbuf = aligned_alloc(4096, (s->h.size + 4095) & ~4095u);
		if (!srv.wbuf)
			die("aligned_alloc", -ENOMEM);
		ret = ez_mr_reg(ctx, NULL, srv.wbuf, s->h.size, EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_READ,
				&srv.wmr);
		if (ret)
			die("ez_mr_reg", ret);
	}
	if (s->h.flags & F_LAST)
		srv.last_seen = 1;
	ret = ez_accept(req, &o, &cbs, s, &s->conn);
	if (ret) {
		srv.failed++;
		fprintf(stderr, "ezbench: server: ez_accept: %s (%s)\n", ez_strerror(ret), ez_errmsg());
		free(s);
		srv_maybe_exit();
		return;
	}
	srv.accepted++;
	srv.active++;
	srv.active_by_mode[!!(s->h.flags & F_SRQ)]++;
}

static int server(void)
{
	int ret;

	ctx_setup();
	/* A server makes its pool before it listens; without --pool-size the
	 * first request makes it, sized by the client's messages. */
	if (cfg.pool_size && cfg.pool_bufs) {
		struct ez_srqpool_opts po = { .buf_size = cfg.pool_size, .nbufs = cfg.pool_bufs };

		ret = ez_srqpool_new(ctx, NULL, &po, &srv.pool);
		if (ret)
			die("ez_srqpool_new", ret);
		srv.pool_size = cfg.pool_size;
	}
	/* A long handshake budget: under callgrind (tests/bench/insn) in the
	 * emulated VM the client's side of the handshake takes seconds. The
	 * handshake limits as large as the backlog: --conn N --async makes
	 * up to N handshakes at once, all from the one client address, which
	 * the defaults (64 per peer, the guard against one peer holding the
	 * listener) refuse beyond 64 (conn_500_async_* of 2026-12-05). */
	ret = ez_listen(ctx, cfg.addr, cfg.port,
			&(struct ez_listen_opts){ .backlog = SRV_HANDSHAKES,
						  .handshake_timeout_ms = 120000,
						  .max_pending = SRV_HANDSHAKES,
						  .max_pending_per_peer = SRV_HANDSHAKES,
						  /* --nconns above the caps' defaults */
						  .max_conns = 65536, .max_conns_per_peer = 65536,
						  .max_ctx_conns = 65536 },
			srv_on_request, NULL, &srv.lis);
	if (ret)
		die("ez_listen", ret);
	printf("ezbench: listening on %s port %u\n", cfg.addr, ez_listener_port(srv.lis));
	fflush(stdout);
	run();
	ez_listener_close(srv.lis);
	if (srv.wmr)
		ez_mr_dereg(srv.wmr);
	free(srv.wbuf);
	if (srv.pool && (ret = ez_srqpool_free(srv.pool)))
		fprintf(stderr, "ezbench: server: ez_srqpool_free: %s\n", ez_strerror(ret));
	if ((ret = ez_ctx_free(ctx)))
		fprintf(stderr, "ezbench: server: ez_ctx_free: %s (%s)\n", ez_strerror(ret), ez_errmsg());
	return exit_code;
}

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

struct cl {
	struct ez_conn *conn;
	double t0;		/* connect issued / op posted */
	double t_conn;		/* time to on_connect */
	int status;
	int up, closed;
	struct ez_rkey rkey;
	int have_rkey;
};

static struct {
	struct cl *c;
	uint32_t n;		/* connections made */
	uint32_t nreported;	/* on_connect seen */
	uint32_t nclosed;
	uint32_t wait_for;	/* finish when nreported reaches this */
	struct ez_srqpool *pool;
	/* data tests */
	double *samples;
	uint32_t sent, got, completed;
	uint32_t phase_end;	/* rate/bw: post up to this many (warm-up, then all) */
	double t_start, t_last;
	uint8_t *msg;
	void *lbuf;
	struct ez_mr *lmr;
	int got_reply;
} cli;

static void cl_on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct cl *c = arg;

	c->t_conn = now_us() - c->t0;
	c->status = status;
	c->up = status == 0;
	if (status)
		fprintf(stderr, "ezbench: connect failed: %s (%s)\n", ez_strerror(status),
			ez_conn_errmsg(conn));
	cli.nreported++;
	if (cli.nreported >= cli.wait_for)
		finish(0);
}

static void cl_on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct cl *c = arg;

	(void)conn;
	(void)status;
	c->up = 0;
}

static void lat_send(struct ez_conn *conn)
{
	int ret;

	memcpy(cli.msg, &cli.sent, sizeof(cli.sent));
	cli.t_last = now_us();
	ret = ez_send(conn, cli.msg, cfg.size, NULL, NULL);
	if (ret)
		die("ez_send", ret);
	cli.sent++;
}

static void lat_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	double t = now_us();
	uint32_t seq;

	(void)arg;
	if (ez_buf_len(buf) != cfg.size) {
		fprintf(stderr, "ezbench: echo of %zu bytes, sent %u\n", ez_buf_len(buf), cfg.size);
		ez_buf_release(buf);
		finish(1);
		return;
	}
	memcpy(&seq, ez_buf_data(buf), sizeof(seq) < cfg.size ? sizeof(seq) : cfg.size);
	if (cfg.size >= sizeof(seq) && seq != cli.got) {
		fprintf(stderr, "ezbench: echo %u arrived, expected %u\n", seq, cli.got);
		ez_buf_release(buf);
		finish(1);
		return;
	}
	ez_buf_release(buf);
	if (cli.got >= cfg.warmup)
		cli.samples[cli.got - cfg.warmup] = (t - cli.t_last) / 2;
	cli.got++;
	if (cli.got == cfg.warmup + cfg.iters)
		finish(0);
	else
		lat_send(conn);
}

static void rate_post(struct ez_conn *conn);
static void read_post(struct ez_conn *conn);

/* --lat --op read: one RDMA READ at a time, the next posted from the
 * completion of the last (like ib_read_lat). */
static void read_on_done(struct ez_conn *conn, int status, void *arg)
{
	double t = now_us();

	(void)arg;
	if (status) {
		fprintf(stderr, "ezbench: read completed with %s\n", ez_strerror(status));
		finish(1);
		return;
	}
	if (cli.got >= cfg.warmup)
		cli.samples[cli.got - cfg.warmup] = t - cli.t_last;
	cli.got++;
	if (cli.got == cfg.warmup + cfg.iters)
		finish(0);
	else
		read_post(conn);
}

static void read_post(struct ez_conn *conn)
{
	int ret;

	cli.t_last = now_us();
	ret = ez_read(conn, cli.lmr, 0, cfg.size, &cli.c[0].rkey, 0, read_on_done, NULL);
	if (ret)
		die("ez_read", ret);
}

static void rate_on_sent(struct ez_conn *conn, int status, void *arg)
{
	(void)arg;
	if (status) {
		fprintf(stderr, "ezbench: send completed with %s\n", ez_strerror(status));
		finish(1);
		return;
	}
	cli.completed++;
	if (cli.completed == cfg.warmup + cfg.iters) {
		cli.t_last = now_us();
		finish(0);
		return;
	}
	/* The warm-up drains completely before the clock starts, so no
	 * operation of it overlaps the measured ones. */
	if (cli.completed == cli.phase_end) {
		cli.phase_end = cfg.warmup + cfg.iters;
		cli.t_start = now_us();
	}
	rate_post(conn);
}

/* Keeps the window full: posts until send_depth ops are outstanding,
 * counted here as ib_send_bw counts its own, so a full window costs no
 * refused call per completion (an -ENOBUFS all the same ends the round). */
static void rate_post(struct ez_conn *conn)
{
	int ret;

	while (cli.sent < cli.phase_end && cli.sent - cli.completed < cfg.send_depth) {
		if (cfg.test == T_BW && cfg.write_op)
			ret = ez_write(conn, cli.lmr, 0, cfg.size, &cli.c[0].rkey, 0, rate_on_sent, NULL);
		else if (cfg.test == T_BW)
			ret = ez_send_mr(conn, cli.lmr, 0, cfg.size, rate_on_sent, NULL);
		else
			ret = ez_send(conn, cli.msg, cfg.size, rate_on_sent, NULL);
		if (ret == -ENOBUFS)
			return;
		if (ret)
			die(cfg.test == T_BW ? "ez_write/ez_send_mr" : "ez_send", ret);
		cli.sent++;
	}
}

static void rkey_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct cl *c = arg;

	(void)conn;
	if (ez_buf_len(buf) == sizeof(c->rkey)) {
		memcpy(&c->rkey, ez_buf_data(buf), sizeof(c->rkey));
		c->have_rkey = 1;
	}
	ez_buf_release(buf);
	finish(0);
}

static void mem_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	(void)conn;
	(void)arg;
	ez_buf_release(buf);
	cli.got_reply = 1;
	finish(0);
}

static struct ez_conn_cbs cl_cbs = {
	.on_connect = cl_on_connect,
	.on_disconnect = cl_on_disconnect,
};

static void connect_one(uint32_t i, uint32_t flags, uint32_t depth, uint32_t send_depth)
{
	struct hello h = {
		.magic = HELLO_MAGIC, .test = cfg.test, .flags = flags, .size = cfg.size, .depth = depth,
		.nconns = cfg.test == T_CONN || cfg.test == T_MEM ? cfg.nconns : 0,
		.send_depth = send_depth,
	};
	struct ez_conn_opts o = {
		.private_data = &h, .private_data_len = sizeof(h),
		.max_msg_size = cfg.size < 64 ? 64 : cfg.size,
		.recv_depth = depth, .send_depth = send_depth,
		.srqpool = cli.pool,
		.connect_timeout_ms = 60000,
	};
	struct cl *c = &cli.c[i];
	int ret;

	if (cli.pool)
		o.max_msg_size = 4096;
	memset(c, 0, sizeof(*c));
	c->t0 = now_us();
	ret = ez_connect(ctx, cfg.addr, cfg.port, &o, &cl_cbs, c, &c->conn);
	if (ret)
		die("ez_connect", ret);
	cli.n++;
}

/* Closes every connection and runs the loop until all are freed. */
static void close_all(void)
{
	uint32_t i;
	double t_end = now_us() + 300e6;

	for (i = 0; i < cli.n; i++) {
		if (cli.c[i].conn)
			ez_conn_close(cli.c[i].conn);
		cli.c[i].conn = NULL;
	}
	/* The handles go once their drain timers have run. */
	for (;;) {
		if (cli.pool && ez_srqpool_free(cli.pool) == 0)
			cli.pool = NULL;
		if (ez_ctx_free(ctx) != -EBUSY)
			break;
		if (now_us() > t_end) {
			fprintf(stderr, "ezbench: connections still open after 300 s: %s\n", ez_errmsg());
			exit(1);
		}
		if (cfg.poll == P_EVENT) {
			ev_run(loop, EVRUN_ONCE);
			continue;
		}
		if (cfg.poll == P_FD)
			fd_wait();
		ez_ctx_process(ctx);
	}
	ctx = NULL;
}

static void one_conn(uint32_t flags, uint32_t depth, uint32_t send_depth)
{
	cli.c = calloc(1, sizeof(*cli.c));
	cli.wait_for = 1;
	connect_one(0, flags, depth, send_depth);
	run();
	if (!cli.c[0].up) {
		fprintf(stderr, "ezbench: could not connect to %s port %s\n", cfg.addr, cfg.port);
		exit(1);
	}
}

/* EZ_BENCH_SAMPLES=FILE: every half round trip, sorted, one per line (the
 * latency CDF of tests/bench/plot.py). */
static void write_samples(const double *s, uint32_t n)
{
	const char *path = getenv("EZ_BENCH_SAMPLES");
	FILE *f;
	uint32_t i;

	if (!path || !*path)
		return;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "ezbench: %s: %s\n", path, strerror(errno));
		return;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%.3f\n", s[i]);
	if (fclose(f))
		fprintf(stderr, "ezbench: %s: %s\n", path, strerror(errno));
}

static void print_lat(void)
{
	uint32_t n = cfg.iters;
	double sum = 0, *s = cli.samples;
	uint32_t i;

	qsort(s, n, sizeof(*s), cmp_double);
	for (i = 0; i < n; i++)
		sum += s[i];
	printf("ezbench: test=lat op=%s poll=%s size=%u iters=%u unit=us typical=%.2f avg=%.2f"
	       " min=%.2f p99=%.2f max=%.2f\n", cfg.read_op ? "read" : "send", poll_name(), cfg.size, n, s[n / 2], sum / n, s[0],
	       s[(size_t)(n * 0.99)], s[n - 1]);
	write_samples(s, n);
}

static int client_data(void)
{
	uint32_t flags = F_LAST;
	struct ez_conn_cbs cbs = cl_cbs;
	double secs;

	cli.msg = calloc(1, cfg.size < 64 ? 64 : cfg.size);
	if (cfg.test == T_LAT) {
		cbs.on_recv = cfg.read_op ? rkey_on_recv : lat_on_recv;
		cli.samples = calloc(cfg.iters, sizeof(double));
		if (cfg.read_op)
			flags |= F_READ;
	} else if (cfg.test == T_BW && cfg.write_op) {
		flags |= F_WRITE;
		cbs.on_recv = rkey_on_recv;
	}
	if (cfg.srq)
		flags |= F_SRQ;
	cl_cbs = cbs;
	if (cfg.test == T_BW || cfg.read_op) {
		cli.lbuf = aligned_alloc(4096, (cfg.size + 4095) & ~4095u);
		if (!cli.lbuf)
			die("aligned_alloc", -ENOMEM);
		memset(cli.lbuf, 0xab, cfg.size);
	}
	one_conn(flags, cfg.depth, cfg.send_depth);
	if (cfg.test == T_BW || cfg.read_op) {
		/* A SEND above the peer's receive buffers goes by rendezvous: an
		 * MR that may be given (read) is offered in place, not copied. */
		int ret = ez_mr_reg(ctx, NULL, cli.lbuf, cfg.size,
				    cfg.test == T_BW && !cfg.write_op ? EZ_MR_REMOTE_READ : 0, &cli.lmr);

		if (ret)
			die("ez_mr_reg", ret);
		if (cfg.write_op || cfg.read_op) {
			while (!cli.c[0].have_rkey)
				run();
		}
	}
	if (cfg.test == T_LAT) {
		if (cfg.read_op)
			read_post(cli.c[0].conn);
		else
			lat_send(cli.c[0].conn);
		run();
		if (!exit_code)
			print_lat();
	} else {
		cli.phase_end = cfg.warmup ? cfg.warmup : cfg.iters;
		cli.t_start = now_us();
		rate_post(cli.c[0].conn);
		run();
		secs = (cli.t_last - cli.t_start) / 1e6;
		if (!exit_code && cfg.test == T_RATE)
			printf("ezbench: test=rate op=send poll=%s srq=%d size=%u iters=%u depth=%u"
			       " unit=Mpps rate=%.4f secs=%.3f\n", poll_name(), cfg.srq, cfg.size,
			       cfg.iters, cfg.send_depth, cfg.iters / secs / 1e6, secs);
		else if (!exit_code)
			printf("ezbench: test=bw op=%s poll=%s size=%u iters=%u depth=%u unit=MiB/s"
			       " bw=%.2f secs=%.3f\n", cfg.write_op ? "write" : "send", poll_name(),
			       cfg.size, cfg.iters, cfg.send_depth,
			       (double)cfg.iters * cfg.size / (1 << 20) / secs, secs);
	}
	if (cli.lmr)
		ez_mr_dereg(cli.lmr);
	cli.lmr = NULL;
	close_all();
	return exit_code;
}

/* The client's own pool: a connection needs at least one receive credit of
 * it, so at least as many buffers as connections (library default 256). */
static uint32_t client_pool_bufs(void)
{
	if (cfg.pool_bufs)
		return cfg.pool_bufs;
	return cfg.nconns * 2 > 256 ? cfg.nconns * 2 : 256;
}

/* N connections one after the other (or all at once with --async); the
 * figures cover ez_connect() to on_connect(0). */
static int client_conn(void)
{
	uint32_t i, ok = 0, n = cfg.nconns;
	double t0, total, sum = 0;
	struct ez_srqpool_opts po = { .nbufs = client_pool_bufs() };
	int ret;

	cli.c = calloc(n, sizeof(*cli.c));
	ret = ez_srqpool_new(ctx, NULL, &po, &cli.pool);
	if (ret)
		die("ez_srqpool_new", ret);
	t0 = now_us();
	if (cfg.async) {
		cli.wait_for = n;
		for (i = 0; i < n; i++)
			connect_one(i, F_LAST | F_SRQ, cfg.depth, cfg.send_depth);
		run();
	} else {
		for (i = 0; i < n; i++) {
			cli.wait_for = i + 1;
			connect_one(i, F_LAST | F_SRQ, cfg.depth, cfg.send_depth);
			run();
			if (cli.c[i].status)
				break;
		}
	}
	total = now_us() - t0;
	for (i = 0; i < cli.n; i++) {
		if (cli.c[i].up) {
			ok++;
			sum += cli.c[i].t_conn;
		}
	}
	printf("ezbench: test=conn mode=%s conns=%u ok=%u unit=ms total=%.2f per_conn=%.3f"
	       " mean_connect=%.3f rate=%.1f\n", cfg.async ? "async" : "serial", n, ok, total / 1e3,
	       total / 1e3 / n, ok ? sum / ok / 1e3 : 0.0, ok * 1e6 / total);
	close_all();
	return ok == n ? 0 : 1;
}

/* Receive memory for N connections: first all on the server's shared pool,
 * then each with its own receive queue of --depth buffers. */
static int client_mem(void)
{
	uint32_t i, ok, n = cfg.nconns, phase;
	struct ez_srqpool_opts po = { .nbufs = client_pool_bufs() };
	struct ez_conn_info info;
	struct ez_conn_cbs cbs = cl_cbs;
	int ret, rc = 0;

	cbs.on_recv = mem_on_recv;
	cl_cbs = cbs;
	for (phase = 0; phase < 2; phase++) {
		uint32_t flags = phase == 0 ? F_SRQ : F_LAST;

		if (!ctx)
			ctx_setup();
		memset(&cli, 0, sizeof(cli));
		cli.c = calloc(n, sizeof(*cli.c));
		ret = ez_srqpool_new(ctx, NULL, &po, &cli.pool);
		if (ret)
			die("ez_srqpool_new", ret);
		cli.wait_for = n;
		for (i = 0; i < n; i++)
			connect_one(i, flags, cfg.depth, cfg.send_depth);
		run();
		for (i = 0, ok = 0; i < n; i++)
			ok += cli.c[i].up;
		for (i = 0; i < n && !cli.c[i].up; i++)
			;
		if (i == n) {
			fprintf(stderr, "ezbench: mem: no connection came up\n");
			return 1;
		}
		/* The server prints its receive memory when asked on one of them. */
		ret = ez_conn_info(cli.c[i].conn, &info);
		if (ret)
			die("ez_conn_info", ret);
		cli.got_reply = 0;
		ret = ez_send(cli.c[i].conn, "R", 1, NULL, NULL);
		if (ret)
			die("ez_send", ret);
		while (!cli.got_reply)
			run();
		printf("ezbench: test=mem side=client mode=%s conns=%u ok=%u peer_credits=%u"
		       " max_msg_size=%u\n", phase == 0 ? "pool" : "per-conn", n, ok,
		       info.peer_credits, info.max_msg_size);
		fflush(stdout);
		if (ok != n)
			rc = 2;
		close_all();
		free(cli.c);
	}
	return rc;
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezbench -s [-a ADDR] [-p PORT] [--poll event|spin|fd] [--pool-bufs N [--pool-size BYTES]]\n"
		"       (--pool-bufs: buffers of the shared pool; client: its own pool for\n"
		"       --conn/--mem, default max(256, 2 N); server: --pool-size makes the\n"
		"       pool, of buffers of that size, before listening, else the first\n"
		"       request makes it)\n"
		"       ezbench -c ADDR [-p PORT] TEST [options]\n"
		"tests: --lat        send ping-pong; prints half the round trip (like ib_send_lat)\n"
		"       --rate       64 B sends, window --send-depth; Mpps at the sender\n"
		"       --bw         --size bytes by RDMA WRITE (--op write) or SEND (--op send); MiB/s\n"
		"       --lat --op read  RDMA READs of --size bytes, one at a time; prints the whole READ\n"
		"       --conn N     N connections one by one (or --async: all at once)\n"
		"       --mem N      receive memory: N connections on one shared pool, then N with\n"
		"                    their own queues of --depth buffers (the server prints the bytes)\n"
		"options: --size B [64] --iters N [1000] --warmup N [50] --depth N [64: receive]\n"
		"         --send-depth N [64] --srq (server receives from a shared pool)\n"
		"         --poll event (libev, completion channel) | spin (EZ_CTX_BUSY_POLL, ez_ctx_process() in a loop)\n"
		"                | fd (EZ_CTX_NO_LOOP: poll() on ez_ctx_fd(), then ez_ctx_process())\n"
		"         --timeout S [300] (exit 1 after S seconds)\n"
		"Each result is one line: 'ezbench: test=... key=value ...'.\n");
}

int main(int argc, char **argv)
{
	enum { O_LAT = 256, O_RATE, O_BW, O_CONN, O_MEM, O_POLL, O_SIZE, O_ITERS, O_WARMUP,
	       O_DEPTH, O_SDEPTH, O_SRQ, O_OP, O_ASYNC, O_TIMEOUT, O_POOLBUFS, O_POOLSIZE };
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 's' },
		{ "client", required_argument, NULL, 'c' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "lat", no_argument, NULL, O_LAT },
		{ "rate", no_argument, NULL, O_RATE },
		{ "bw", no_argument, NULL, O_BW },
		{ "conn", required_argument, NULL, O_CONN },
		{ "mem", required_argument, NULL, O_MEM },
		{ "poll", required_argument, NULL, O_POLL },
		{ "size", required_argument, NULL, O_SIZE },
		{ "iters", required_argument, NULL, O_ITERS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "depth", required_argument, NULL, O_DEPTH },
		{ "send-depth", required_argument, NULL, O_SDEPTH },
		{ "srq", no_argument, NULL, O_SRQ },
		{ "op", required_argument, NULL, O_OP },
		{ "async", no_argument, NULL, O_ASYNC },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "pool-bufs", required_argument, NULL, O_POOLBUFS },
		{ "pool-size", required_argument, NULL, O_POOLSIZE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "sc:a:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 's': cfg.server = 1; break;
		case 'c': cfg.addr = optarg; break;
		case 'a': cfg.addr = optarg; break;
		case 'p': cfg.port = optarg; break;
		case O_LAT: cfg.test = T_LAT; break;
		case O_RATE: cfg.test = T_RATE; break;
		case O_BW: cfg.test = T_BW; break;
		case O_CONN: cfg.test = T_CONN; cfg.nconns = (uint32_t)atoi(optarg); break;
		case O_MEM: cfg.test = T_MEM; cfg.nconns = (uint32_t)atoi(optarg); break;
		case O_POLL:
			if (!strcmp(optarg, "event"))
				cfg.poll = P_EVENT;
			else if (!strcmp(optarg, "spin"))
				cfg.poll = P_SPIN;
			else if (!strcmp(optarg, "fd"))
				cfg.poll = P_FD;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case O_SIZE: cfg.size = (uint32_t)atoi(optarg); cfg.size_given = 1; break;
		case O_ITERS: cfg.iters = (uint32_t)atoi(optarg); break;
		case O_WARMUP: cfg.warmup = (uint32_t)atoi(optarg); break;
		case O_DEPTH: cfg.depth = (uint32_t)atoi(optarg); break;
		case O_SDEPTH: cfg.send_depth = (uint32_t)atoi(optarg); break;
		case O_SRQ: cfg.srq = 1; break;
		case O_OP:
			if (strcmp(optarg, "write") && strcmp(optarg, "send") && strcmp(optarg, "read")) {
				usage(stderr);
				return 2;
			}
			cfg.write_op = !strcmp(optarg, "write");
			cfg.read_op = !strcmp(optarg, "read");
			break;
		case O_ASYNC: cfg.async = 1; break;
		case O_TIMEOUT: cfg.timeout = atoi(optarg); break;
		case O_POOLBUFS: cfg.pool_bufs = (uint32_t)atoi(optarg); break;
		case O_POOLSIZE: cfg.pool_size = (uint32_t)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (!cfg.server && !cfg.test) || !cfg.iters || !cfg.size ||
	    (cfg.test == T_LAT && cfg.size > 65536)) {
		usage(stderr);
		return 2;
	}
	/* A benchmark must never hang a VM run. */
	alarm((unsigned int)cfg.timeout);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cfg.server)
		return server();
	if (cfg.test == T_MEM)
		cfg.poll = P_EVENT;
	if (cfg.test == T_CONN || cfg.test == T_MEM) {
		/* The library's default message size: what a real application gets. */
		if (!cfg.size_given)
			cfg.size = 4096;
	}
	ctx_setup();
	switch (cfg.test) {
	case T_CONN:
		return client_conn();
	case T_MEM:
		return client_mem();
	default:
		return client_data();
	}
}
