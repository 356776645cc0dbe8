/* ezscale.c: the 10,000-connection run's processes (tests/scale/run-10k.sh): a server on one shared pool with default options, clients that connect thousands at once and check one echo each, and a ping-pong that measures the server's CPU per message. */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ev.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#endif

#include "easyrdma.h"
#include "conn/ctx.h"
#include "device/device.h"

#define MSG_LEN 24
/* Private data: the connection's index, and this bit for the ping-pong's. */
#define PING_BIT 0x40000000

static struct ev_loop *loop;
static struct ez_ctx *ctx;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "ezscale: %s: %d %s\n", what, ret, ez_errmsg());
	exit(1);
}

static void fill(uint8_t *p, int idx)
{
	memcpy(p, &idx, sizeof(idx));
	for (int i = 4; i < MSG_LEN; i++)
		p[i] = (uint8_t)(idx * 31 + i);
}

static long status_kb(const char *key)
{
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			kb = atol(line + n + 1);
	fclose(f);
	return kb;
}

/* `rdma res show` of the device: "0: rxe0: pd 3 cq 5 qp 10 cm_id 12 mr 4 ctx 0". */
static void rdma_res(char *out, size_t len)
{
	char line[512], cmd[128];
	const char *dev = getenv("EZ_DEVICE") ? getenv("EZ_DEVICE") : "rxe0";
	FILE *p;

	snprintf(out, len, "?");
	snprintf(cmd, sizeof(cmd), "rdma res show 2>/dev/null | grep ' %s:'", dev);
	p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(line, sizeof(line), p)) {
		char *s = strchr(line, ':');

		s = s ? strchr(s + 1, ':') : NULL;
		snprintf(out, len, "%.200s", s ? s + 2 : line);
		out[strcspn(out, "\n")] = 0;
	}
	pclose(p);
}

/* ---- server ---------------------------------------------------------- */

struct sconn {
	struct ez_conn *conn;
	int ping;
};

static struct {
	struct ez_listener *l;
	struct ez_srqpool *pool;
	int up, down, failed, alive, marks[8], nmarks, next_mark;
	double t_first, cpu0;
	uint64_t ping_msgs, ping_cpu_msgs;
	uint64_t ping_warm, ping_count;	/* the callgrind window, in ping messages */
	uint64_t window_from;		/* the message it opened at; 0: not open yet */
	int ping_conns;			/* the ping connections a window waits for */
	int ping_rounds;
	double ping_cpu0;
	int ping_alive;
	ev_signal sig_usr1, sig_term;
} S;

static void sample(const char *what)
{
	struct device *d = ctx->devices.list;
	struct ez_srqpool_stats ps;
	struct mallinfo2 mi = mallinfo2();
	char res[256];

	ez_srqpool_stats(S.pool, &ps);
	rdma_res(res, sizeof(res));
	printf("sample %s: conns=%d t=%.1f rss_kb=%ld pin_kb=%ld heap_b=%zu reg_b=%llu "
	       "pool_reg_b=%llu slab_reg_b=%llu cqs=%d cq_max=%d cq_taken=%d qps=%u res=[%s]\n",
	       what, S.alive, S.t_first ? now_s() - S.t_first : 0.0, status_kb("VmRSS"),
	       status_kb("VmPin"), mi.uordblks + mi.hblkhd,
	       (unsigned long long)(ps.bytes_registered + (d ? d->slab.bytes_registered : 0)),
	       (unsigned long long)ps.bytes_registered,
	       (unsigned long long)(d ? d->slab.bytes_registered : 0), d ? d->ncq : 0,
	       d ? d->ncq_max : 0, d ? d->cq_reserved : 0, d ? d->nqp : 0, res);
	fflush(stdout);
}

static void s_connect(struct ez_conn *conn, int st, void *arg)
{
	struct sconn *c = arg;

	if (st) {
		if (S.failed++ < 5)
			fprintf(stderr, "server: on_connect %d: %s\n", st, ez_conn_errmsg(conn));
		ez_conn_close(conn);
		free(c);
		return;
	}
	S.alive++;
	if (c->ping) {
		S.ping_alive++;
		return;
	}
	S.up++;
	if (S.next_mark < S.nmarks && S.up == S.marks[S.next_mark]) {
		char w[32];

		snprintf(w, sizeof(w), "%d", S.marks[S.next_mark++]);
		printf("up %d in %.1f s: %.1f connections/s\n", S.up, now_s() - S.t_first,
		       S.up / (now_s() - S.t_first));
		sample(w);
	}
}

/* Under `valgrind --tool=callgrind --instr-atstart=no` (run-10k.sh with
 * EZ_SCALE_CALLGRIND=1) the instructions of this process are counted from
 * ping message ping_warm to ping_warm + ping_count only: everything the loop
 * does per echoed message (libev, the poll pass, verbs, the echo), with
 * whatever number of idle connections is up; one dump per ping-pong round.
 * Outside valgrind these are no-ops. */
static void ping_window(void)
{
	char name[64];

	/* Opened only once every ping connection is up: before, the accepts
	 * of the later ones fell inside the window (their CM work counted as
	 * the messages'). */
	if (!S.window_from && S.ping_msgs >= S.ping_warm && S.ping_alive >= S.ping_conns) {
		S.window_from = S.ping_msgs;
		CALLGRIND_START_INSTRUMENTATION;
		CALLGRIND_ZERO_STATS;
	} else if (S.window_from && S.ping_msgs == S.window_from + S.ping_count) {
		snprintf(name, sizeof(name), "ping%d %llu messages %d up", S.ping_rounds,
			 (unsigned long long)S.ping_count, S.alive);
		CALLGRIND_DUMP_STATS_AT(name);
		CALLGRIND_STOP_INSTRUMENTATION;
		printf("ping window: messages %llu..%llu counted with %d connections up (%d ping)\n",
		       (unsigned long long)S.window_from,
		       (unsigned long long)(S.window_from + S.ping_count), S.alive, S.ping_alive);
		fflush(stdout);
	}
}

static void s_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct sconn *c = arg;
	int ret = ez_send(conn, ez_buf_data(buf), ez_buf_len(buf), NULL, NULL);

	if (ret && S.failed++ < 5)
		fprintf(stderr, "server: echo: %d %s\n", ret, ez_errmsg());
	ez_buf_release(buf);
	if (c->ping) {
		/* The CPU of this thread from the first ping-pong message to the
		 * first ping-pong disconnect: everything the loop did for them. */
		if (!S.ping_msgs++)
			S.ping_cpu0 = cpu_s();
		ping_window();
	}
}

static void s_disconnect(struct ez_conn *conn, int st, void *arg)
{
	struct sconn *c = arg;

	(void)st;
	S.alive--;
	if (c->ping) {
		if (S.ping_msgs) {
			double cpu = cpu_s() - S.ping_cpu0;

			printf("ping: %llu messages echoed with %d connections up: server CPU %.0f ns per message\n",
			       (unsigned long long)S.ping_msgs, S.alive + 1, cpu * 1e9 / (double)S.ping_msgs);
			fflush(stdout);
			if (S.window_from && S.ping_msgs < S.window_from + S.ping_count) {
				CALLGRIND_STOP_INSTRUMENTATION;
				printf("ping window: incomplete, %llu messages of %llu + %llu\n",
				       (unsigned long long)S.ping_msgs,
				       (unsigned long long)S.window_from,
				       (unsigned long long)S.ping_count);
			} else if (!S.window_from) {
				printf("ping window: never opened (%llu messages, %d ping connections up "
				       "of %d)\n", (unsigned long long)S.ping_msgs, S.ping_alive, S.ping_conns);
			}
			S.window_from = 0;
			S.ping_msgs = 0;
			S.ping_rounds++;
		}
		S.ping_alive--;
	} else {
		S.down++;
		if (S.down == S.up && S.alive == S.ping_alive)
			sample("closed");
	}
	ez_conn_close(conn);
	free(c);
}

static const struct ez_conn_cbs s_cbs = { .on_connect = s_connect, .on_recv = s_recv,
					  .on_disconnect = s_disconnect };

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct ez_conn_opts o = { .srqpool = S.pool };	/* the defaults otherwise */
	struct sconn *c = calloc(1, sizeof(*c));
	size_t len;
	const void *data = ez_conn_req_data(req, &len);
	int idx = 0, ret;

	(void)l;
	(void)arg;
	if (!S.t_first)
		S.t_first = now_s();
	if (len == sizeof(idx))
		memcpy(&idx, data, sizeof(idx));
	c->ping = !!(idx & PING_BIT);
	ret = ez_accept(req, &o, &s_cbs, c, &c->conn);
	if (ret) {
		if (S.failed++ < 5)
			fprintf(stderr, "server: ez_accept: %d %s\n", ret, ez_errmsg());
		free(c);
	}
}

static void on_usr1(struct ev_loop *l, ev_signal *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
	sample("now");
}

static void on_term(struct ev_loop *l, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ALL);
}

static int server(const char *addr, const char *port, uint32_t pool_bufs, const char *marks,
		  const char *portfile)
{
	struct ez_listen_opts lo = { .backlog = 4096, .max_pending = 16384,
				     .max_pending_per_peer = 16384, .handshake_timeout_ms = 600000,
				     /* above the connection caps' defaults (4096, 1024 a peer) */
				     .max_conns = 65536, .max_conns_per_peer = 65536,
				     .max_ctx_conns = 65536 };
	struct ez_srqpool_opts po = { .buf_size = 512, .nbufs = pool_bufs };
	int ret;
	FILE *f;

	S.ping_warm = getenv("EZ_SCALE_PING_WARM") ? strtoull(getenv("EZ_SCALE_PING_WARM"), NULL, 0) : 200;
	S.ping_count = getenv("EZ_SCALE_PING_COUNT") ? strtoull(getenv("EZ_SCALE_PING_COUNT"), NULL, 0) : 1000;
	S.ping_conns = getenv("EZ_SCALE_PING_CONNS") ? atoi(getenv("EZ_SCALE_PING_CONNS")) : 10;
	for (const char *m = marks; *m && S.nmarks < 8; m = strchr(m, ',') ? strchr(m, ',') + 1 : "")
		S.marks[S.nmarks++] = atoi(m);
	ret = ez_srqpool_new(ctx, getenv("EZ_DEVICE"), &po, &S.pool);
	if (ret)
		die("ez_srqpool_new", ret);
	ret = ez_listen(ctx, addr, port, &lo, on_request, NULL, &S.l);
	if (ret)
		die("ez_listen", ret);
	sample("0");
	f = fopen(portfile, "w");
	if (!f)
		die("port file", -errno);
	fprintf(f, "%u\n", ez_listener_port(S.l));
	fclose(f);
	ev_signal_init(&S.sig_usr1, on_usr1, SIGUSR1);
	ev_signal_start(loop, &S.sig_usr1);
	ev_signal_init(&S.sig_term, on_term, SIGTERM);
	ev_signal_start(loop, &S.sig_term);
	ev_run(loop, 0);
	sample("end");
	printf("server: %d connections up, %d closed, %d failed; %llu CQs made, %llu freed, %d at most\n",
	       S.up, S.down, S.failed, (unsigned long long)ctx->devices.list->cqs_made,
	       (unsigned long long)ctx->devices.list->cqs_freed, ctx->devices.list->ncq_max);
	ez_listener_close(S.l);
	ret = ez_srqpool_free(S.pool);
	if (ret)
		fprintf(stderr, "server: ez_srqpool_free: %s\n", ez_errmsg());
	return S.failed ? 1 : 0;
}

/* ---- clients --------------------------------------------------------- */

struct cconn {
	struct ez_conn *conn;
	int idx, up, echoed, down, closed;
};

static struct {
	struct cconn *c;
	int n, first, window, started, inflight, up, echoed, down, failed, bad, closing;
	int ping, ping_rounds;
	double t0, t_up, t_echo, until;
	const char *dir, *name;
	struct ez_srqpool *pool;
	ev_timer tick;
} C;

static void c_top_up(void);

static void c_connect(struct ez_conn *conn, int st, void *arg)
{
	struct cconn *c = arg;
	uint8_t m[MSG_LEN];
	int ret;

	C.inflight--;
	if (st) {
		/* A connect that c_close_all() closed ends -ECANCELED: already
		 * closed once, and no failure of its own. */
		if (!c->closed && C.failed++ < 5)
			fprintf(stderr, "client %s: connection %d: on_connect %d: %s\n", C.name, c->idx,
				st, ez_conn_errmsg(conn));
		c->down = 1;
		C.down++;
		if (!c->closed) {
			c->closed = 1;
			ez_conn_close(conn);
		}
		return;
	}
	c->up = 1;
	if (++C.up == C.n)
		C.t_up = now_s() - C.t0;
	fill(m, c->idx);
	ret = ez_send(conn, m, sizeof(m), NULL, NULL);
	if (ret && C.failed++ < 5)
		fprintf(stderr, "client %s: send %d: %d %s\n", C.name, c->idx, ret, ez_errmsg());
}

static void c_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct cconn *c = arg;
	uint8_t want[MSG_LEN];

	fill(want, c->idx);
	if (ez_buf_len(buf) != MSG_LEN || memcmp(ez_buf_data(buf), want, MSG_LEN)) {
		if (C.bad++ < 5)
			fprintf(stderr, "client %s: connection %d: echo differs\n", C.name, c->idx);
	} else if (C.ping) {
		c->echoed++;
		C.echoed++;
		if (now_s() < C.until && ez_send(conn, want, sizeof(want), NULL, NULL) && C.failed++ < 5)
			fprintf(stderr, "client %s: ping send: %s\n", C.name, ez_errmsg());
	} else if (!c->echoed++ && ++C.echoed == C.n) {
		C.t_echo = now_s() - C.t0;
	}
	ez_buf_release(buf);
}

static void c_disconnect(struct ez_conn *conn, int st, void *arg)
{
	struct cconn *c = arg;

	(void)conn;
	if (st && !C.closing && C.failed++ < 5)
		fprintf(stderr, "client %s: connection %d down: %d %s\n", C.name, c->idx, st,
			ez_conn_errmsg(conn));
	c->down = 1;
	C.down++;
	if (!c->closed) {
		c->closed = 1;
		ez_conn_close(conn);
	}
}

static const struct ez_conn_cbs c_cbs = { .on_connect = c_connect, .on_recv = c_recv,
					  .on_disconnect = c_disconnect };

static void c_top_up(void)
{
	while (C.started < C.n && (!C.window || C.inflight < C.window)) {
		struct cconn *c = &C.c[C.started];
		int data = c->idx | (C.ping ? PING_BIT : 0);
		struct ez_conn_opts o = { .send_depth = 2, .max_msg_size = 64, .srqpool = C.pool,
					  .connect_timeout_ms = 600000, .private_data = &data,
					  .private_data_len = sizeof(data) };
		int ret = ez_connect(ctx, getenv("EZ_SCALE_ADDR"), getenv("EZ_SCALE_PORT"), &o,
				     &c_cbs, c, &c->conn);

		if (ret)
			die("ez_connect", ret);
		C.started++;
		C.inflight++;
	}
}

static int file_exists(const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", C.dir, name);
	return access(p, F_OK) == 0;
}

static void write_file(const char *suffix, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s.%s", C.dir, C.name, suffix);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void c_close_all(void)
{
	C.closing = 1;
	for (int i = 0; i < C.started; i++) {
		if (C.c[i].conn && !C.c[i].closed) {
			C.c[i].closed = 1;
			ez_conn_close(C.c[i].conn);
		}
	}
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
	char text[256];

	(void)w;
	(void)revents;
	c_top_up();
	if (C.ping) {
		if (!C.closing && C.up == C.n && now_s() >= C.until + 0.5)
			c_close_all();
	} else if (!C.closing && C.echoed == C.n) {
		static int told;

		if (!told++) {
			snprintf(text, sizeof(text), "up=%d echoed=%d failed=%d t_up=%.1f t_echo=%.1f\n",
				 C.up, C.echoed, C.failed, C.t_up, C.t_echo);
			write_file("up", text);
			printf("client %s: %d up in %.1f s (%.1f/s), all echoed at %.1f s\n", C.name, C.n,
			       C.t_up, C.n / C.t_up, C.t_echo);
			fflush(stdout);
		}
		if (file_exists("close"))
			c_close_all();
	} else if (!C.closing && C.failed) {
		write_file("up", "failed\n");
		c_close_all();
	}
	if (C.closing && C.down == C.started)
		ev_break(l, EVBREAK_ALL);
}

static int client(int first, int n, int window, int ping_s, const char *dir, const char *name)
{
	struct ez_srqpool_opts po = { .buf_size = 64, .nbufs = (uint32_t)(n + n / 4 + 64) };
	int ret;

	C.n = n;
	C.first = first;
	C.window = window;
	C.dir = dir;
	C.name = name;
	C.ping = ping_s > 0;
	C.c = calloc((size_t)n, sizeof(*C.c));
	if (!C.c)
		die("calloc", -ENOMEM);
	for (int i = 0; i < n; i++)
		C.c[i].idx = first + i;
	ret = ez_srqpool_new(ctx, getenv("EZ_DEVICE"), &po, &C.pool);
	if (ret)
		die("ez_srqpool_new", ret);
	C.t0 = now_s();
	C.until = C.t0 + 1e9;
	ev_timer_init(&C.tick, on_tick, 0.05, 0.05);
	ev_timer_start(loop, &C.tick);
	c_top_up();
	if (C.ping) {
		/* All up first, then ping_s seconds of one message in flight
		 * per connection. */
		while (C.up + C.failed < C.n)
			ev_run(loop, EVRUN_ONCE);
		C.until = now_s() + ping_s;
		for (int i = 0; i < n; i++) {
			uint8_t m[MSG_LEN];

			fill(m, C.c[i].idx);
			if (C.c[i].up && ez_send(C.c[i].conn, m, sizeof(m), NULL, NULL))
				die("ping send", -1);
		}
	}
	ev_run(loop, 0);
	if (C.ping)
		printf("ping %s: %d connections, %d round trips in %d s: %.0f/s\n", name, n, C.echoed,
		       ping_s, C.echoed / (double)ping_s);
	write_file("done", C.failed || C.bad ? "failed\n" : "ok\n");
	ret = ez_srqpool_free(C.pool);
	if (ret)
		fprintf(stderr, "client %s: ez_srqpool_free: %s\n", name, ez_errmsg());
	return C.failed || C.bad ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ezscale server ADDR PORT POOL_BUFS MARKS PORTFILE\n"
		"       ezscale client FIRST N WINDOW DIR NAME   (EZ_SCALE_ADDR, EZ_SCALE_PORT)\n"
		"       ezscale ping N SECONDS DIR NAME          (EZ_SCALE_ADDR, EZ_SCALE_PORT)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	loop = ev_default_loop(0);
	ret = ez_ctx_new(loop, 0, &ctx);
	if (ret)
		die("ez_ctx_new", ret);
	if (!strcmp(argv[1], "server") && argc == 7)
		ret = server(argv[2], argv[3], (uint32_t)atoi(argv[4]), argv[5], argv[6]);
	else if (!strcmp(argv[1], "client") && argc == 7)
		ret = client(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), 0, argv[5], argv[6]);
	else if (!strcmp(argv[1], "ping") && argc == 6)
		ret = client(0, atoi(argv[2]), 0, atoi(argv[3]), argv[4], argv[5]);
	else
		usage();
	if (ez_ctx_free(ctx))
		fprintf(stderr, "ezscale: ez_ctx_free: %s\n", ez_errmsg());
	return ret;
}
