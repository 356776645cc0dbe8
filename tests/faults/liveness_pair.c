/* liveness_pair.c: two-VM liveness (run by liveness-pair.sh under `testbed pair`): a connect storm and 16 lanes of connect/echo/close churn from the other host while an established connection echoes, then ez_conn_close() of connections whose peer host vanished; the server's loop's longest gap measured by a 10 ms timer throughout. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ev.h>

#include "easyrdma.h"
#include "pair.h"
#include "conn/ctx.h"
#include "device/device.h"

/*
 * VM a: the server (echoes everything). VM b: the client, which
 *  1. opens E (ping-pong: each echo sends the next) and V (idle);
 *  2. runs a storm: STORM_PROCS processes each opening STORM_TOTAL
 *     connections 8 at a time and closing each once up; E's echo gap is
 *     measured on b, a's loop gap on a, printed; a second storm when one
 *     was over STORM_GAP_MAX_S, the last held to WALL_GAP_FAIL_S and the
 *     loop thread's CPU bounds;
 *  3. runs a churn: a process of CHURN_LANES lanes, each connecting,
 *     exchanging 3 echoes and closing, again and again for
 *     EZ_CHURN_SECONDS (8; the soak runs 60), while E echoes: no connect
 *     refused, a's connections alive follow the live ones, a's loop gap
 *     and E's echo gap printed (a round again when over CHURN_GAP_MAX_S,
 *     the last held to WALL_GAP_FAIL_S);
 *  4. closes E, takes its eth0 down (the host vanishes for a), and a calls
 *     ez_conn_close() on the idle V connections one at a time: a's loop
 *     must not stall (rdma_destroy_id() of V's id waits for the DREP of its
 *     DREQ, which nobody sends: ~50 s on rxe, now on the context's reaper
 *     thread) and on_disconnect must come within CLOSE_MAX_S;
 *  5. brings eth0 up again (state restored).
 * Rendezvous through files in $EZ_PAIR_DIR.
 */
/* The loop's longest gap: during the close of a vanished peer's connection
 * the gap stays under 100 ms, and the loop's own work in it (its thread's
 * CPU time) too; before, the loop stood 50 s in rdma_destroy_id(). The
 * guest's vCPU is not always run (268-529 ms gaps with 0.2 ms of work
 * were seen on a loaded host), so b leaves CLOSE_ROUNDS idle connections
 * behind and a closes them one at a time while a close's gap is over the
 * bound: the last must hold it, and a library that stalls fails each.
 * During the storm the figures are printed: the longest gap and what the
 * loop did in it, the longest iteration, the most CPU one spent outside
 * ez_accept(), the longest accept, and the library's own count of its
 * costly steps by kind with the longest of each (ctx->stats: an accept's
 * pool, QP and reply steps, finishes, CM events, requests) and its longest
 * pass. One ez_accept() was 7-190 ms in a loaded TCG guest when it made
 * the pool, the QP and the reply in one call; the library now makes them
 * a loop pass each (conn.c's on_accept_step), so a pass holds at most one
 * such step once 10 ms of its kind are spent. The kernel's rxe and rdma_cm
 * work for the storm runs on the same vCPU and is charged to the loop
 * thread when it interrupts it (no IRQ_TIME_ACCOUNTING in the guest
 * kernel): the CPU figures are an upper bound. */
#define GAP_MAX_S 0.100
#define LIB_PASS_MAX_S 2.0
#define CLOSE_GAP_MAX_S 0.100
#define CLOSE_ROUNDS 3
/* The storm's loop gap on a and echo gap on b, wall clock, and the loop
 * thread's most CPU in one iteration: the gaps hold the time the host did
 * not run a guest's vCPU (two TCG guests on two host cores beside the
 * host's own work: a 301 ms gap with 0.3 ms of the loop's CPU in it was
 * seen), and the CPU the guest's own stalls (one QP step of 443 ms CPU
 * once, in a storm whose other 199 took at most 14 ms). So a storm over a
 * bound is run again, up to STORM_ROUNDS in all, and the last must hold
 * them; every round is printed. A library that stalls fails every round. */
#define STORM_GAP_MAX_S 0.100
/* What the last round must hold of a wall-clock gap (loop or echo): the
 * rounds above take the 100 ms as the figure to reach, run again while
 * over it and print each; the verdict holds only what the design promises:
 * the loop thread's CPU (the bounds above and below) and no wait on the
 * network, which lasts the transport's retries or a DREP's timeout (0.5 s
 * to 50 s) and is still caught here, while a guest the loaded host did
 * not run (0.3 s seen beside other VMs; a CI host 15 times slower than a
 * quiet one) is not the library's. */
#define WALL_GAP_FAIL_S 2.0
#define STORM_ROUNDS 3
#define STORM_PASS_MAX_S 0.250
#define CLOSE_MAX_S 0.5	/* documented: about 200 ms (ez_conn_close(3)) */
#define STORM_PROCS 2
#define STORM_TOTAL 100
/* The churn: the same bounds and rounds as the storm's. */
#define CHURN_GAP_MAX_S 0.100
#define CHURN_ROUNDS 5
#define CHURN_LANES 16

static struct ez_ctx *ctx;

/* The loop's longest gap: a 10 ms timer. What the loop did in it is
 * measured per loop iteration (from libev's check watcher, after the wait,
 * to its prepare watcher, before the next): the time and the loop thread's
 * CPU time spent in the callbacks (the context's pass and this program's
 * callbacks), and the part of it inside ez_accept() (on_request). The
 * library's own work in a pass is the iteration's CPU time less its
 * accepts': CM events, teardowns, completions, timers. CPU time is the
 * thread's as the guest kernel counts it, softirqs that interrupted it
 * included (the guest kernel has no IRQ_TIME_ACCOUNTING): rxe's packet
 * work for the storm lands there too, so it is an upper bound. */
static ev_timer gap_timer;
static ev_check it_check;
static ev_prepare it_prepare;

struct window {
	double t, cpu;			/* in the callbacks */
	double acc_t, acc_cpu;		/* in ez_accept() */
	int iterations, accepts;
};

static struct {
	double last, cpu_last;		/* the gap timer's last run */
	double max, max_cpu;		/* the longest gap and the thread's CPU time in it */
	struct window cur, in_max;	/* since the last run; in the longest gap */
	/* per iteration */
	double it_t0, it_cpu0, it_acc_cpu;
	int it_on, it_accepts;
	double it_max, it_max_cpu;	/* the longest iteration */
	double cpu_max;			/* the most CPU one iteration took */
	double lib_max_cpu;		/* the most CPU an iteration spent outside ez_accept() */
	int lib_max_accepts;		/* the accepts of that iteration */
	double acc_max, acc_max_cpu;	/* the longest ez_accept() */
	int it_max_accepts;		/* most accepts in one iteration */
} gm;

/* The loop thread's CPU time: whether the loop was busy (the library's
 * work) or not running (the guest's vCPU, other processes). */
static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* a's side of a churn round: its churn connections (private data "C"),
 * counted by their callbacks, and what the context holds, sampled at every
 * run of the gap timer: the connections not freed yet (ctx->nconns, less
 * the others it held when the round began) against the live ones, and the
 * CQ room held. */
static struct {
	int measuring, base;
	int accepted, connected, failed, disconnected, bad_ends;
	int max_alive, max_live, max_excess, max_cq;
	char first_bad[256];
} ch;

static int churn_alive(void)
{
	return ctx->nconns - ch.base;
}

static int cq_reserved(void)
{
	return ctx->devices.list ? ctx->devices.list->cq_reserved : 0;
}

static void churn_sample(void)
{
	int alive = churn_alive(), live = ch.connected - ch.disconnected;

	if (alive > ch.max_alive)
		ch.max_alive = alive;
	if (live > ch.max_live)
		ch.max_live = live;
	if (alive - live > ch.max_excess)
		ch.max_excess = alive - live;
	if (cq_reserved() > ch.max_cq)
		ch.max_cq = cq_reserved();
}

static void on_gap(struct ev_loop *l, ev_timer *w, int revents)
{
	double n = pair_now(), c = thread_cpu_s();

	(void)l;
	(void)w;
	(void)revents;
	if (ch.measuring)
		churn_sample();
	if (gm.last && n - gm.last > gm.max) {
		gm.max = n - gm.last;
		gm.max_cpu = c - gm.cpu_last;
		gm.in_max = gm.cur;
	}
	memset(&gm.cur, 0, sizeof(gm.cur));
	gm.last = n;
	gm.cpu_last = c;
}

static void on_it_check(struct ev_loop *l, ev_check *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
	gm.it_t0 = pair_now();
	gm.it_cpu0 = thread_cpu_s();
	gm.it_acc_cpu = 0;
	gm.it_accepts = 0;
	gm.it_on = 1;
}

static void on_it_prepare(struct ev_loop *l, ev_prepare *w, int revents)
{
	double t, cpu;

	(void)l;
	(void)w;
	(void)revents;
	if (!gm.it_on)
		return;
	gm.it_on = 0;
	t = pair_now() - gm.it_t0;
	cpu = thread_cpu_s() - gm.it_cpu0;
	gm.cur.t += t;
	gm.cur.cpu += cpu;
	gm.cur.iterations++;
	if (cpu > gm.cpu_max)
		gm.cpu_max = cpu;
	if (t > gm.it_max) {
		gm.it_max = t;
		gm.it_max_cpu = cpu;
	}
	if (cpu - gm.it_acc_cpu > gm.lib_max_cpu) {
		gm.lib_max_cpu = cpu - gm.it_acc_cpu;
		gm.lib_max_accepts = gm.it_accepts;
	}
	if (gm.it_accepts > gm.it_max_accepts)
		gm.it_max_accepts = gm.it_accepts;
}

/* ez_accept() measured (on_request). */
static int timed_accept(struct ez_conn_req *req, const struct ez_conn_opts *o,
			const struct ez_conn_cbs *c, void *arg, struct ez_conn **out)
{
	double t = pair_now(), cpu = thread_cpu_s();
	int ret = ez_accept(req, o, c, arg, out);

	t = pair_now() - t;
	cpu = thread_cpu_s() - cpu;
	gm.cur.acc_t += t;
	gm.cur.acc_cpu += cpu;
	gm.cur.accepts++;
	gm.it_acc_cpu += cpu;
	gm.it_accepts++;
	if (t > gm.acc_max) {
		gm.acc_max = t;
		gm.acc_max_cpu = cpu;
	}
	return ret;
}

static void gap_reset(void)
{
	memset(&gm, 0, sizeof(gm));
	memset(&ctx->stats, 0, sizeof(ctx->stats));
}

/* What the loop did in the longest gap and per pass, printed: the
 * library's own count of its costly steps by kind (ctx.h's ctx_pass_stats)
 * says which one a long pass held. */
static void gap_report(const char *what)
{
	static const char *const kinds[CTX_STEP_COUNT] = {
		[CTX_STEP_POOL] = "accept pool", [CTX_STEP_QP] = "accept QP",
		[CTX_STEP_REPLY] = "accept reply", [CTX_STEP_FINISH] = "finish",
		[CTX_STEP_EVENT] = "CM event", [CTX_STEP_REQUEST] = "request",
	};
	const struct ctx_pass_stats *st = &ctx->stats;
	char steps[512];
	size_t off = 0;

	for (int k = 0; k < CTX_STEP_COUNT; k++)
		off += (size_t)snprintf(steps + off, sizeof(steps) - off, "%s%s %llu (longest %.1f ms)",
					k ? ", " : "", kinds[k], (unsigned long long)st->n[k],
					st->max_ns[k] / 1e6);
	pair_say("%s: longest loop gap %.1f ms, the loop thread ran %.1f ms of it: %d iterations took "
		 "%.1f ms (%.1f ms CPU), %d ez_accept() %.1f ms (%.1f ms CPU) of them",
		 what, gm.max * 1e3, gm.max_cpu * 1e3, gm.in_max.iterations, gm.in_max.t * 1e3,
		 gm.in_max.cpu * 1e3, gm.in_max.accepts, gm.in_max.acc_t * 1e3,
		 gm.in_max.acc_cpu * 1e3);
	pair_say("%s: per iteration: longest %.1f ms (%.1f ms CPU); the most CPU in one %.1f ms; "
		 "the most CPU outside ez_accept() %.1f ms (in one with %d accepts); at most %d accepts in one; longest ez_accept() %.1f ms "
		 "(%.1f ms CPU); the library: %llu passes, longest %.1f ms; steps: %s",
		 what, gm.it_max * 1e3, gm.it_max_cpu * 1e3, gm.cpu_max * 1e3, gm.lib_max_cpu * 1e3,
		 gm.lib_max_accepts,
		 gm.it_max_accepts, gm.acc_max * 1e3, gm.acc_max_cpu * 1e3,
		 (unsigned long long)st->passes, st->max_pass_ns / 1e6, steps);
}

/* The rendezvous files are on 9p, which in a loaded TCG guest takes up to
 * a second a look (charged to the thread): that is this program's own
 * stall, not the library's, so a look during the storm is left out of the
 * gaps measured (the interval it falls in is not counted; its time is
 * printed). */
static double *echo_side;	/* E's last echo, on b */
static double own_9p_s, own_9p_max_s;

static int has_unmeasured(const char *name)
{
	double t = pair_now(), cpu = thread_cpu_s();
	int r = pair_has(name);

	t = pair_now() - t;
	cpu = thread_cpu_s() - cpu;
	own_9p_s += t;
	if (t > own_9p_max_s)
		own_9p_max_s = t;
	/* The look's own time is taken out of the interval it falls in, and
	 * only that: the interval before it still counts (zeroing the gap's
	 * start instead lost every stall that ended just before a look, as
	 * pair_spin() returns after the iteration that stalled). The
	 * iteration under way (its callbacks ran) keeps its own time. */
	if (gm.last) {
		gm.last += t;
		gm.cpu_last += cpu;
	}
	gm.it_t0 += t;
	gm.it_cpu0 += cpu;
	if (echo_side && *echo_side)
		*echo_side += t;
	return r;
}

struct side {
	const char *name;
	struct ez_conn *conn;
	int connected, connect_status;
	int ended, end_status;
	double t_end;
	int ping;		/* each echo sends the next message */
	int measuring;
	uint64_t seq, echoes;
	double last, max_gap;
	char msg[256];
};

static int is_churn(const struct side *s)
{
	return s->name && !strcmp(s->name, "a/churn");
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

	if (is_churn(s)) {
		/* A churn connection that failed on a is a failure of the round,
		 * with its cause; its handle is closed and its side freed. */
		if (status) {
			if (!ch.failed++)
				snprintf(ch.first_bad, sizeof(ch.first_bad), "on_connect(%d) %s", status,
					 ez_conn_errmsg(conn));
			ez_conn_close(conn);
			free(s);
			return;
		}
		ch.connected++;
		return;
	}
	s->connected = 1;
	s->connect_status = status;
	if (status)
		pair_say("%s: on_connect(%d) %s", s->name, status, ez_conn_errmsg(conn));
	if (status && !strcmp(s->name, "a/storm")) {
		ez_conn_close(conn);
		s->conn = NULL;
		return;
	}
	if (!status && s->ping && ez_send(conn, &s->seq, sizeof(s->seq), NULL, NULL) == 0)
		s->seq++;
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct side *s = arg;
	double n = pair_now();

	if (s->ping) {
		if (s->measuring && s->last && n - s->last > s->max_gap)
			s->max_gap = n - s->last;
		s->last = n;
		s->echoes++;
		ez_buf_release(buf);
		if (ez_send(conn, &s->seq, sizeof(s->seq), NULL, NULL) == 0)
			s->seq++;
		return;
	}
	/* The server echoes (a dropped echo is the window being full). */
	if (ez_send(conn, ez_buf_data(buf), ez_buf_len(buf), NULL, NULL))
		(void)0;
	ez_buf_release(buf);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

	if (is_churn(s)) {
		/* b closes each churn connection after its echoes: a sees the
		 * peer's clean close, status 0; anything else is kept. */
		ch.disconnected++;
		if (status && !ch.bad_ends++)
			snprintf(ch.first_bad, sizeof(ch.first_bad), "on_disconnect(%d) %s", status,
				 ez_conn_errmsg(conn));
		ez_conn_close(conn);
		free(s);
		return;
	}
	s->ended = 1;
	s->end_status = status;
	s->t_end = pair_now();
	snprintf(s->msg, sizeof(s->msg), "%s", ez_conn_errmsg(conn));
	/* The server lets the storm's connections go at once. */
	if (s->name && !strcmp(s->name, "a/storm")) {
		ez_conn_close(conn);
		s->conn = NULL;
	}
}

static const struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv,
					.on_disconnect = on_disconnect };

/* ---- the storm (a process of its own, a fresh image) ------------------- */

struct st_conn {
	struct ez_conn *conn;
	int done, status;
};

static void st_connect(struct ez_conn *conn, int status, void *arg)
{
	struct st_conn *c = arg;

	(void)conn;
	c->done = 1;
	c->status = status;
}

static void st_disconnect(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)status;
	(void)arg;
}

static const struct ez_conn_cbs st_cbs = { .on_connect = st_connect, .on_disconnect = st_disconnect };

static int storm_main(const char *port)
{
	int started = 0, ended = 0, ok = 0, i, total = STORM_TOTAL, burst = 8;
	struct st_conn c[STORM_TOTAL] = { { 0 } };
	struct ez_conn_opts o = { .send_depth = 2, .recv_depth = 2, .max_msg_size = 64,
				  .connect_timeout_ms = 30000 };
	double end = pair_now() + 200;

	pair_loop = ev_default_loop(0);
	if (ez_ctx_new(pair_loop, 0, &ctx))
		return 2;
	while (ended < total && pair_now() < end) {
		while (started < total && started - ended < burst) {
			if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &o, &st_cbs, &c[started],
				       &c[started].conn)) {
				fprintf(stderr, "storm: ez_connect: %s\n", ez_errmsg());
				return 3;
			}
			started++;
		}
		ev_run(pair_loop, EVRUN_ONCE);
		for (i = 0; i < started; i++) {
			if (c[i].done == 1) {
				c[i].done = 2;
				ok += !c[i].status;
				ended++;
				ez_conn_close(c[i].conn);
			}
		}
	}
	end = pair_now() + 2;
	while (pair_now() < end) {
		ev_run(pair_loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	pair_say("storm process %d: %d connects, %d up", (int)getpid(), ended, ok);
	end = pair_now();
	if (ez_ctx_free(ctx))
		pair_say("storm: ez_ctx_free: %s", ez_errmsg());
	pair_say("storm process %d: ez_ctx_free took %.2f s", (int)getpid(), pair_now() - end);
	/* Done: said in a file, as the process's exit has been seen to take
	 * minutes in the guest after this point (rxe's teardown of the
	 * process's verbs objects; see the report of issue 20). */
	{
		char name[64];

		snprintf(name, sizeof(name), "storm-%s-%s", getenv("EZ_STORM_INDEX"),
			 ended == total && ok == total ? "ok" : "failed");
		pair_put(name, "1");
	}
	return ended == total && ok == total ? 0 : 1;
}

/* ---- the churn (a process of its own, a fresh image) ------------------- */

enum ch_phase { CH_IDLE, CH_CONNECTING, CH_XFER, CH_CLOSING };

struct ch_lane {
	struct ez_conn *conn;
	enum ch_phase ph;
	double t;
	int connected, status, received, bad_seq, ended, end_status;
	char msg[200];
};

static void ch_connect(struct ez_conn *conn, int status, void *arg)
{
	struct ch_lane *l = arg;

	l->connected = 1;
	l->status = status;
	if (status)
		snprintf(l->msg, sizeof(l->msg), "%s", ez_conn_errmsg(conn));
}

/* The echoes come back in order: 0, 1, 2. */
static void ch_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct ch_lane *l = arg;
	uint64_t v;

	(void)conn;
	if (ez_buf_len(buf) != sizeof(v))
		l->bad_seq++;
	else {
		memcpy(&v, ez_buf_data(buf), sizeof(v));
		l->bad_seq += v != (uint64_t)l->received;
	}
	l->received++;
	ez_buf_release(buf);
}

static void ch_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct ch_lane *l = arg;

	l->ended = 1;
	l->end_status = status;
	snprintf(l->msg, sizeof(l->msg), "%s", ez_conn_errmsg(conn));
}

static const struct ez_conn_cbs ch_cbs = { .on_connect = ch_connect, .on_recv = ch_recv,
					   .on_disconnect = ch_disconnect };

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
}

/* EZ_CHURN_LANES lanes (16) of connect, 3 echoes, close, for
 * EZ_CHURN_SECONDS (10), as test_liveness's churn does in one VM; here
 * the server is on the other host, so its loop gap is its own. The report
 * file "churn-N-ok" holds "cycles attempts"; "churn-N-failed" the first
 * failure. */
static int churn_main(const char *port)
{
	int lanes = env_int("EZ_CHURN_LANES", CHURN_LANES), secs = env_int("EZ_CHURN_SECONDS", 8);
	struct ch_lane *ln = calloc((size_t)lanes, sizeof(*ln));
	struct ez_conn_opts o = { .send_depth = 8, .recv_depth = 8, .max_msg_size = 512,
				  .connect_timeout_ms = 30000, .private_data = "C",
				  .private_data_len = 1 };
	int i, cycles = 0, attempts = 0, busy = 1;
	char fail[320] = "", name[64], text[64];
	ev_timer tick;
	double end;

	pair_loop = ev_default_loop(0);
	if (!ln || ez_ctx_new(pair_loop, 0, &ctx))
		return 2;
	/* The lanes are stepped after every loop iteration; the tick makes
	 * one at least every 10 ms (a lane waits on nothing of its own). */
	ev_timer_init(&tick, on_tick, 0.01, 0.01);
	ev_timer_start(pair_loop, &tick);
	end = pair_now() + secs;
	for (; busy && !fail[0]; ev_run(pair_loop, EVRUN_ONCE)) {
		double t;

		t = pair_now();
		busy = 0;
		for (i = 0; i < lanes && !fail[0]; i++) {
			struct ch_lane *l = &ln[i];

			switch (l->ph) {
			case CH_IDLE:
				if (t > end)
					break;
				memset(l, 0, sizeof(*l));
				if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &o, &ch_cbs, l, &l->conn)) {
					snprintf(fail, sizeof(fail), "ez_connect: %s", ez_errmsg());
					break;
				}
				attempts++;
				l->ph = CH_CONNECTING;
				l->t = t;
				break;
			case CH_CONNECTING:
				if (!l->connected)
					break;
				if (l->status) {
					snprintf(fail, sizeof(fail), "lane %d: connect refused: %d %s", i,
						 l->status, l->msg);
					ez_conn_close(l->conn);
					break;
				}
				for (uint64_t m = 0; m < 3; m++)
					if (ez_send(l->conn, &m, sizeof(m), NULL, NULL))
						snprintf(fail, sizeof(fail), "lane %d: ez_send: %s", i,
							 ez_conn_errmsg(l->conn));
				l->ph = CH_XFER;
				l->t = t;
				break;
			case CH_XFER:
				if (l->ended) {
					snprintf(fail, sizeof(fail), "lane %d: disconnected after %d of 3 echoes: "
						 "%d %s", i, l->received, l->end_status, l->msg);
					break;
				}
				if (l->received < 3)
					break;
				ez_conn_close(l->conn);
				l->ph = CH_CLOSING;
				l->t = t;
				break;
			case CH_CLOSING:
				if (!l->ended)
					break;
				if (l->end_status || l->bad_seq)
					snprintf(fail, sizeof(fail), "lane %d: on_disconnect(%d) %s, %d echoes "
						 "out of order", i, l->end_status, l->msg, l->bad_seq);
				cycles++;
				l->ph = CH_IDLE;
				break;
			}
			if (l->ph != CH_IDLE) {
				busy = 1;
				/* Longer than connect_timeout_ms (30 s), so that a
				 * connect that times out says so itself. */
				if (t - l->t > 45)
					snprintf(fail, sizeof(fail), "lane %d stuck in phase %d for 45 s", i,
						 l->ph);
			}
		}
	}
	pair_say("churn process %d: %d lanes for %d s: %d cycles, %d connects%s%s", (int)getpid(), lanes,
		 secs, cycles, attempts, fail[0] ? "; FAILED: " : "", fail);
	snprintf(name, sizeof(name), "churn-%s-%s", getenv("EZ_CHURN_INDEX"), fail[0] ? "failed" : "ok");
	snprintf(text, sizeof(text), "%d %d", cycles, attempts);
	pair_put(name, fail[0] ? fail : text);
	ev_timer_stop(pair_loop, &tick);
	/* On a failure some lanes are still open: the process just ends. */
	if (!fail[0] && ez_ctx_free(ctx))
		pair_say("churn: ez_ctx_free: %s", ez_errmsg());
	return fail[0] ? 1 : 0;
}

/* ---- a: the server ----------------------------------------------------- */

static struct side acc[STORM_ROUNDS * STORM_PROCS * STORM_TOTAL + 16];
static int naccepted;
static struct side *vconn[CLOSE_ROUNDS];
static int nv;

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	size_t len;
	const char *d = ez_conn_req_data(req, &len);
	struct side *s;
	struct ez_conn_opts o = { .connect_timeout_ms = 30000 };

	(void)l;
	(void)arg;
	if (len && d[0] == 'C') {
		/* A churn connection: a side of its own, freed by its final
		 * callback (churn connections come by the thousand in a soak). */
		s = calloc(1, sizeof(*s));
		if (!s) {
			ez_reject(req, "memory", 6);
			return;
		}
		s->name = "a/churn";
		ch.accepted++;
		if (timed_accept(req, &o, &cbs, s, &s->conn)) {
			if (!ch.failed++)
				snprintf(ch.first_bad, sizeof(ch.first_bad), "ez_accept: %s", ez_errmsg());
			free(s);
		}
		return;
	}
	if (naccepted == (int)(sizeof(acc) / sizeof(acc[0])) || (len && d[0] == 'V' && nv == CLOSE_ROUNDS)) {
		ez_reject(req, "full", 4);
		return;
	}
	s = &acc[naccepted];
	s->name = len && d[0] == 'V' ? "a/V" : len && d[0] == 'E' ? "a/E" : "a/storm";
	if (timed_accept(req, &o, &cbs, s, &s->conn)) {
		pair_say("ez_accept: %s", ez_errmsg());
		pair_failures++;
		return;
	}
	if (len && d[0] == 'V')
		vconn[nv++] = s;
	naccepted++;
}

/* The end of a round of b's storm or churn (phase) on a: a's loop gap and
 * its loop thread's most CPU in an iteration go to b, which says whether
 * another round follows: 1, or 0 (always 0 after the last); -1 when b did
 * not. */
static int server_round_end(const char *phase, int round, double gap, int last)
{
	char name[32], buf[64];

	snprintf(buf, sizeof(buf), "%.1f %.1f", gap * 1e3, gm.cpu_max * 1e3);
	snprintf(name, sizeof(name), "%s-gap-%d", phase, round);
	pair_put(name, buf);
	snprintf(name, sizeof(name), "%s-again-%d", phase, round);
	if (!pair_wait(name, 60) || !pair_get(name, buf, sizeof(buf))) {
		pair_say("no %s from b", name);
		return -1;
	}
	return !last && buf[0] == '1';
}

/* One storm of b's (round: its number): the loop's gap measured, then b
 * says whether another follows (1), or not (0); -1 when b did not. */
static int server_storm(int round)
{
	char name[32];
	double storm_gap;
	int i, up = 0, first = naccepted, last = round == STORM_ROUNDS - 1;

	snprintf(name, sizeof(name), "storm-start-%d", round);
	if (!pair_wait(name, 120)) {
		pair_say("no %s from b", name);
		return -1;
	}
	gap_reset();
	own_9p_s = own_9p_max_s = 0;
	snprintf(name, sizeof(name), "storm-end-%d", round);
	{
		double end = pair_now() + 240;

		while (!has_unmeasured(name) && pair_now() < end)
			pair_spin(0.1);
	}
	storm_gap = gm.max;
	for (i = first; i < naccepted; i++)
		up += acc[i].connected && !acc[i].connect_status;
	pair_say("storm %d: %d connections accepted, %d up; this program's own looks at its 9p files "
		 "took %.1f ms (the longest %.1f ms), left out of the gaps", round, naccepted - first, up,
		 own_9p_s * 1e3, own_9p_max_s * 1e3);
	gap_report("storm");
	/* The library's own work: a pass holds one costly step. Judged on
	 * the loop thread's CPU in its longest iteration (an upper bound: the
	 * guest charges rxe's softirqs to it) and on the wall-clock gap, in
	 * the last round (b asks for another while one is over its bound). */
	PAIR_CHECK(gm.lib_max_cpu < LIB_PASS_MAX_S,
		   "a pass's CPU time outside ez_accept() %.1f ms during the storm", gm.lib_max_cpu * 1e3);
	if (last) {
		PAIR_CHECK(gm.cpu_max < STORM_PASS_MAX_S,
			   "the loop thread's most CPU in one iteration %.1f ms during the storm (round %d)",
			   gm.cpu_max * 1e3, round);
		PAIR_CHECK(storm_gap < WALL_GAP_FAIL_S, "loop gap %.1f ms during the storm (round %d)",
			   storm_gap * 1e3, round);
	}
	return server_round_end("storm", round, storm_gap, last);
}

/* One churn round of b's (round: its number): a's loop gap and what its
 * context holds measured while b's lanes connect, echo and close; b's
 * report checked against a's counts; then b says whether another round
 * follows (1), or not (0); -1 when b did not. */
static int server_churn(int round)
{
	char name[32], buf[320];
	double t, churn_gap;
	int cycles = -1, attempts = -1, last = round == CHURN_ROUNDS - 1;
	int lanes = env_int("EZ_CHURN_LANES", CHURN_LANES);

	snprintf(name, sizeof(name), "churn-start-%d", round);
	if (!pair_wait(name, 120)) {
		pair_say("no %s from b", name);
		return -1;
	}
	/* The storm's connections are gone (b closed each once up): what is
	 * left is E and the V connections. */
	t = pair_now();
	while (ctx->nconns > 1 + nv && pair_now() - t < 10)
		pair_spin(0.05);
	memset(&ch, 0, sizeof(ch));
	ch.base = ctx->nconns;
	gap_reset();
	own_9p_s = own_9p_max_s = 0;
	ch.measuring = 1;
	snprintf(name, sizeof(name), "churn-end-%d", round);
	{
		double end = pair_now() + 400;

		while (!has_unmeasured(name) && pair_now() < end)
			pair_spin(0.1);
	}
	churn_gap = gm.max;
	ch.measuring = 0;
	/* b's lanes saw every on_disconnect: a's last connections finish their
	 * teardown and go. */
	t = pair_now();
	while ((churn_alive() > 0 || ch.disconnected < ch.connected) && pair_now() - t < 3)
		pair_spin(0.01);
	snprintf(name, sizeof(name), "churn-%d-ok", round);
	if (pair_get(name, buf, sizeof(buf)) && sscanf(buf, "%d %d", &cycles, &attempts) != 2)
		cycles = -1;
	pair_say("churn %d: b's lanes made %d cycles of %d connects; a: %d accepted, %d up, %d failed, "
		 "%d disconnected (%d not clean%s%s); alive at most %d (live at most %d, alive beyond "
		 "live at most %d), CQ room at most %d; %d alive and CQ room %d %.0f ms after the last "
		 "close; this program's own looks at its 9p files took %.1f ms (the longest %.1f ms), "
		 "left out of the gaps", round, cycles, attempts, ch.accepted, ch.connected, ch.failed,
		 ch.disconnected, ch.bad_ends, ch.first_bad[0] ? ": the first " : "", ch.first_bad,
		 ch.max_alive, ch.max_live, ch.max_excess, ch.max_cq, churn_alive(),
		 cq_reserved(), (pair_now() - t) * 1e3, own_9p_s * 1e3, own_9p_max_s * 1e3);
	gap_report("churn");
	PAIR_CHECK(cycles > lanes, "churn %d: b reported %d cycles (%s)", round, cycles,
		   pair_get(name, buf, sizeof(buf)) ? buf : "no report");
	PAIR_CHECK(ch.failed == 0 && ch.bad_ends == 0, "churn %d: %d failed, %d ended unclean: %s",
		   round, ch.failed, ch.bad_ends, ch.first_bad);
	PAIR_CHECK(ch.accepted == cycles && ch.connected == cycles && ch.disconnected == cycles,
		   "churn %d: a accepted %d, connected %d, disconnected %d for b's %d cycles", round,
		   ch.accepted, ch.connected, ch.disconnected, cycles);
	/* What the issue saw: 252 alive with at most 16 live (teardown timers
	 * starved). A teardown holds a connection ~100-200 ms after its
	 * close, so a few may overlap per lane: far fewer than that. */
	PAIR_CHECK(ch.max_alive <= 4 * lanes, "churn %d: %d connections alive with %d lanes",
		   round, ch.max_alive, lanes);
	PAIR_CHECK(churn_alive() == 0, "churn %d: %d connections alive after the last close", round,
		   churn_alive());
	PAIR_CHECK(gm.lib_max_cpu < LIB_PASS_MAX_S,
		   "a pass's CPU time outside ez_accept() %.1f ms during the churn", gm.lib_max_cpu * 1e3);
	if (last)
		PAIR_CHECK(churn_gap < WALL_GAP_FAIL_S, "loop gap %.1f ms during the churn (round %d)",
			   churn_gap * 1e3, round);
	return server_round_end("churn", round, churn_gap, last);
}

/* One close of a vanished peer's idle connection (round: which V): 1 when
 * its gap was over CLOSE_GAP_MAX_S and another V is left to try, else 0. */
static int server_close_vanished(int round)
{
	struct side *v = vconn[round];
	double t_close, t, close_gap;
	int last = round == nv - 1;

	PAIR_CHECK(v->connected && !v->ended, "a/V%d ended before the close: %d %s", round,
		   v->end_status, v->msg);
	gap_reset();
	t_close = pair_now();
	ez_conn_close(v->conn);
	t = pair_now() - t_close;
	while (!v->ended && pair_now() - t_close < 60)
		pair_spin(0.01);
	pair_spin(2.0);
	close_gap = gm.max;
	pair_say("vanished peer %d: ez_conn_close() returned in %.2f ms, on_disconnect(%d, \"%s\") %.1f ms "
		 "after it; longest loop gap %.1f ms (the loop thread ran %.1f ms of it) over the next %.1f s",
		 round, t * 1e3, v->end_status, v->msg, (v->t_end - t_close) * 1e3, close_gap * 1e3,
		 gm.max_cpu * 1e3, pair_now() - t_close);
	gap_report("vanished peer");
	PAIR_CHECK(t < 0.01, "ez_conn_close took %.1f ms", t * 1e3);
	PAIR_CHECK(v->ended && v->t_end - t_close < CLOSE_MAX_S, "on_disconnect %.1f ms after the close",
		   (v->t_end - t_close) * 1e3);
	/* The loop's own work in the gap is judged at every close; the gap
	 * itself at the last one tried. */
	PAIR_CHECK(gm.max_cpu < GAP_MAX_S, "the loop thread ran %.1f ms in its longest gap after close %d",
		   gm.max_cpu * 1e3, round);
	vconn[round] = NULL;	/* freed by its final callback */
	if (close_gap >= CLOSE_GAP_MAX_S && !last) {
		pair_say("vanished peer %d: loop gap over %.0f ms: the next V once more", round,
			 CLOSE_GAP_MAX_S * 1e3);
		return 1;
	}
	PAIR_CHECK(close_gap < WALL_GAP_FAIL_S, "loop gap %.1f ms after close %d (its thread ran %.1f ms "
		   "of it)", close_gap * 1e3, round, gm.max_cpu * 1e3);
	return 0;
}

/* A's rounds of one phase, while b asks for another; -1 when b did not
 * answer. */
static int server_rounds(int (*one)(int round))
{
	int round, again;

	for (round = 0; (again = one(round)) > 0; round++)
		;
	return again < 0 ? -1 : 0;
}

static int server(void)
{
	struct ez_listener *l;
	char port[16];
	int i, round;

	if (ez_listen(ctx, getenv("EZ_TEST_ADDR"), "0", NULL, on_request, NULL, &l)) {
		pair_say("ez_listen: %s", ez_errmsg());
		return 1;
	}
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	pair_put("port", port);
	if (server_rounds(server_storm) || server_rounds(server_churn))
		return 1;

	/* The peer host vanishes; the V connections are idle, so nothing has
	 * told us. They are closed one at a time while a close's gap is over
	 * its bound; the rest are closed afterwards. */
	if (!pair_wait("down", 60) || nv != CLOSE_ROUNDS) {
		pair_say("no link-down from b (%d V connections)", nv);
		return 1;
	}
	pair_spin(0.3);
	for (round = 0; round < nv && server_close_vanished(round); round++)
		;
	for (i = 0; i < nv; i++)
		if (vconn[i]) {
			ez_conn_close(vconn[i]->conn);
			vconn[i] = NULL;
		}
	pair_put("closed", "1");
	pair_wait("done", 60);
	ez_listener_close(l);
	for (i = 0; i < naccepted; i++)
		if (acc[i].conn && strcmp(acc[i].name, "a/V"))
			ez_conn_close(acc[i].conn);
	pair_spin(0.5);
	pair_put("server-done", "1");
	return pair_failures != 0;
}

/* ---- b: the client ----------------------------------------------------- */

static pid_t storm_start(const char *port, int index)
{
	char ix[16];
	pid_t pid;

	snprintf(ix, sizeof(ix), "%d", index);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* The storm shares b's one vCPU with E's client: at a lower
		 * priority, so that E's echo gap measures the server under the
		 * storm, not b's scheduler between E and the storm (115 ms
		 * echo gaps at the same priority, with a's loop gap 60 ms). */
		if (setpriority(PRIO_PROCESS, 0, 10))
			perror("setpriority");
		setenv("EZ_STORM_INDEX", ix, 1);
		setenv("EZ_LIVENESS_STORM", port, 1);
		execl("/proc/self/exe", "liveness_pair", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* a's loop gap and its loop thread's most CPU in an iteration in round
 * round of phase (storm, churn), in seconds; 0, or -1 when a did not say. */
static int client_read_gap(const char *phase, int round, double *gap, double *cpu)
{
	char name[32], buf[64];

	snprintf(name, sizeof(name), "%s-gap-%d", phase, round);
	if (!pair_wait(name, 30) || !pair_get(name, buf, sizeof(buf))) {
		pair_say("no %s from a", name);
		return -1;
	}
	if (sscanf(buf, "%lf %lf", gap, cpu) != 2) {
		pair_say("%s: \"%s\"", name, buf);
		return -1;
	}
	*gap /= 1e3;
	*cpu /= 1e3;
	return 0;
}

/* One storm (round: its number) while E echoes: 1 when its gaps (E's echo
 * gap here, a's loop gap there) were over STORM_GAP_MAX_S and another
 * round follows, 0 when not (checked in the last round), -1 when a did
 * not answer. */
static int client_storm(struct side *E, const char *port, int round, pid_t *pids)
{
	char name[32];
	double t, storm_rate, a_gap, a_cpu;
	uint64_t e0;
	int i, running, status, last = round == STORM_ROUNDS - 1, again;

	E->max_gap = 0;
	E->last = 0;
	own_9p_s = own_9p_max_s = 0;
	snprintf(name, sizeof(name), "storm-start-%d", round);
	pair_put(name, "1");
	for (i = 0; i < STORM_PROCS; i++)
		pids[i] = storm_start(port, round * STORM_PROCS + i);
	e0 = E->echoes;
	t = pair_now();
	running = STORM_PROCS;
	echo_side = &E->last;
	while (running && pair_now() - t < 120) {
		pair_spin(0.1);
		running = 0;
		for (i = 0; i < STORM_PROCS; i++) {
			int ix = round * STORM_PROCS + i;

			snprintf(name, sizeof(name), "storm-%d-ok", ix);
			if (has_unmeasured(name))
				continue;
			snprintf(name, sizeof(name), "storm-%d-failed", ix);
			PAIR_CHECK(!has_unmeasured(name), "storm process %d: not every connect came up", ix);
			if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				PAIR_CHECK(0, "storm process %d ended (status 0x%x) before its report", ix,
				      status);
				pids[i] = 0;
				continue;
			}
			running += !has_unmeasured(name);
		}
	}
	echo_side = NULL;
	storm_rate = (E->echoes - e0) / (pair_now() - t);
	snprintf(name, sizeof(name), "storm-end-%d", round);
	pair_put(name, "1");
	if (client_read_gap("storm", round, &a_gap, &a_cpu))
		return -1;
	pair_say("storm %d: %d processes x %d connects (8 at a time) in %.1f s; meanwhile E: %.0f round trips/s, "
	    "longest echo gap %.1f ms; a's longest loop gap %.1f ms, its loop thread's most CPU in an iteration %.1f ms",
	    round, STORM_PROCS, STORM_TOTAL, pair_now() - t, storm_rate, E->max_gap * 1e3, a_gap * 1e3,
	    a_cpu * 1e3);
	pair_say("storm %d: b's own looks at its 9p files took %.1f ms (the longest %.1f ms), left out "
		 "of the echo gap", round, own_9p_s * 1e3, own_9p_max_s * 1e3);
	PAIR_CHECK(!running, "%d storm processes did not report", running);
	again = !last && (E->max_gap >= STORM_GAP_MAX_S || a_gap >= STORM_GAP_MAX_S ||
			  a_cpu >= STORM_PASS_MAX_S);
	if (again)
		pair_say("storm %d: over a bound (gaps %.0f ms, a's CPU in an iteration %.0f ms): once more",
			 round, STORM_GAP_MAX_S * 1e3, STORM_PASS_MAX_S * 1e3);
	if (last)
		PAIR_CHECK(E->max_gap < WALL_GAP_FAIL_S, "echo gap %.1f ms during the storm (round %d)",
			   E->max_gap * 1e3, round);
	snprintf(name, sizeof(name), "storm-again-%d", round);
	pair_put(name, again ? "1" : "0");
	return again;
}

/* One churn round (round: its number) while E echoes: a process of
 * EZ_CHURN_LANES lanes connecting, echoing 3 and closing for
 * EZ_CHURN_SECONDS; 1 when its gaps (E's echo gap here, a's loop gap
 * there) were over CHURN_GAP_MAX_S and another round follows, 0 when not
 * (checked in the last round), -1 when a did not answer. */
static int client_churn(struct side *E, const char *port, int round, pid_t *pid)
{
	char name[32], buf[320], ix[16];
	double t, churn_rate, a_gap, a_cpu;
	uint64_t e0;
	int status, last = round == CHURN_ROUNDS - 1, again, reported = 0;

	E->max_gap = 0;
	E->last = 0;
	own_9p_s = own_9p_max_s = 0;
	snprintf(name, sizeof(name), "churn-start-%d", round);
	pair_put(name, "1");
	snprintf(ix, sizeof(ix), "%d", round);
	fflush(NULL);
	*pid = fork();
	if (*pid == 0) {
		/* At a lower priority than E's client, as the storm (b's
		 * scheduler between E and the lanes is not what E measures). */
		if (setpriority(PRIO_PROCESS, 0, 10))
			perror("setpriority");
		setenv("EZ_CHURN_INDEX", ix, 1);
		setenv("EZ_LIVENESS_CHURN", port, 1);
		execl("/proc/self/exe", "liveness_pair", (char *)NULL);
		_exit(127);
	}
	e0 = E->echoes;
	t = pair_now();
	echo_side = &E->last;
	snprintf(name, sizeof(name), "churn-%d-ok", round);
	while (pair_now() - t < 400) {
		pair_spin(0.1);
		snprintf(name, sizeof(name), "churn-%d-ok", round);
		if (has_unmeasured(name)) {
			reported = 1;
			break;
		}
		snprintf(name, sizeof(name), "churn-%d-failed", round);
		if (has_unmeasured(name))
			break;
		if (*pid > 0 && waitpid(*pid, &status, WNOHANG) == *pid) {
			PAIR_CHECK(0, "churn process %d ended (status 0x%x) before its report", round, status);
			*pid = 0;
			break;
		}
	}
	echo_side = NULL;
	churn_rate = (E->echoes - e0) / (pair_now() - t);
	if (!reported && pair_get(name, buf, sizeof(buf)))
		PAIR_CHECK(0, "churn %d failed: %s", round, buf);
	PAIR_CHECK(reported, "churn %d: no report from the churn process", round);
	snprintf(name, sizeof(name), "churn-end-%d", round);
	pair_put(name, "1");
	if (client_read_gap("churn", round, &a_gap, &a_cpu))
		return -1;
	pair_say("churn %d: %.1f s; meanwhile E: %.0f round trips/s, longest echo gap %.1f ms; a's longest "
		 "loop gap %.1f ms, its loop thread's most CPU in an iteration %.1f ms; b's own looks at its "
		 "9p files took %.1f ms (the longest %.1f ms), left out of the echo gap", round,
		 pair_now() - t, churn_rate, E->max_gap * 1e3, a_gap * 1e3, a_cpu * 1e3, own_9p_s * 1e3,
		 own_9p_max_s * 1e3);
	again = reported && !last && (E->max_gap >= CHURN_GAP_MAX_S || a_gap >= CHURN_GAP_MAX_S);
	if (again)
		pair_say("churn %d: a gap over %.0f ms: once more", round, CHURN_GAP_MAX_S * 1e3);
	if (last)
		PAIR_CHECK(E->max_gap < WALL_GAP_FAIL_S, "echo gap %.1f ms during the churn (round %d)",
			   E->max_gap * 1e3, round);
	snprintf(name, sizeof(name), "churn-again-%d", round);
	pair_put(name, again ? "1" : "0");
	return again;
}

static int client(void)
{
	struct side E = { .name = "b/E", .ping = 1 }, V[CLOSE_ROUNDS];
	struct ez_conn_opts eo = { .connect_timeout_ms = 30000 }, vo = eo;
	char port[16];
	pid_t pids[STORM_ROUNDS * STORM_PROCS + CHURN_ROUNDS] = { 0 };
	double t, quiet_gap;
	uint64_t e0;
	int i, round, status, vup;

	if (!pair_wait("port", 60) || !pair_get("port", port, sizeof(port)))
		return 1;
	eo.private_data = "E";
	eo.private_data_len = 1;
	vo.private_data = "V";
	vo.private_data_len = 1;
	memset(V, 0, sizeof(V));
	if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &eo, &cbs, &E, &E.conn)) {
		pair_say("ez_connect: %s", ez_errmsg());
		return 1;
	}
	for (i = 0; i < CLOSE_ROUNDS; i++) {
		V[i].name = "b/V";
		if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &vo, &cbs, &V[i], &V[i].conn)) {
			pair_say("ez_connect: %s", ez_errmsg());
			return 1;
		}
	}
	t = pair_now();
	for (vup = 0; pair_now() - t < 30; pair_spin(0.02)) {
		for (i = 0, vup = 0; i < CLOSE_ROUNDS; i++)
			vup += V[i].connected;
		if (E.connected && vup == CLOSE_ROUNDS)
			break;
	}
	for (i = 0; i < CLOSE_ROUNDS; i++)
		PAIR_CHECK(V[i].connected && !V[i].connect_status, "connect V%d: %d", i,
			   V[i].connect_status);
	PAIR_CHECK(!E.connect_status && E.connected, "connect E: %d", E.connect_status);
	pair_spin(0.5);
	E.measuring = 1;
	e0 = E.echoes;
	t = pair_now();
	pair_spin(1.0);
	quiet_gap = E.max_gap;
	pair_say("quiet: %.0f round trips/s, longest echo gap %.1f ms", (E.echoes - e0) / (pair_now() - t),
	    quiet_gap * 1e3);
	t = pair_now();

	for (round = 0;; round++) {
		int again = client_storm(&E, port, round, pids + round * STORM_PROCS);

		if (again < 0)
			return 1;
		if (!again)
			break;
	}
	PAIR_CHECK(E.connected && !E.ended, "E ended during the storm: %d %s", E.end_status, E.msg);
	for (round = 0;; round++) {
		int again = client_churn(&E, port, round, pids + STORM_ROUNDS * STORM_PROCS + round);

		if (again < 0)
			return 1;
		if (!again)
			break;
	}
	PAIR_CHECK(E.connected && !E.ended, "E ended during the churn: %d %s", E.end_status, E.msg);
	ez_conn_close(E.conn);
	pair_spin(0.5);

	pair_say("ip link set eth0 down (the host vanishes for a)");
	if (system("ip link set eth0 down"))
		pair_failures++;
	pair_put("down", "1");
	PAIR_CHECK(pair_wait("closed", 90), "a did not report its close");
	if (system("ip link set eth0 up"))
		pair_failures++;
	for (i = 0; i < CLOSE_ROUNDS; i++)
		pair_say("ip link set eth0 up; V%d: ended %d (%d, %s)", i, V[i].ended, V[i].end_status,
			 V[i].msg);
	pair_put("up", "1");
	/* b's V ended with the port; its parked CM id goes once the port is up. */
	pair_spin(3.0);
	for (i = 0; i < CLOSE_ROUNDS; i++)
		ez_conn_close(V[i].conn);
	pair_spin(0.5);
	/* The storm and churn processes reported; their exit is noted, not
	 * judged. */
	for (i = 0; i < STORM_ROUNDS * STORM_PROCS + CHURN_ROUNDS; i++) {
		if (pids[i] <= 0)
			continue;
		if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
			pair_say("storm/churn process %d exited (status 0x%x)", i, status);
			continue;
		}
		pair_say("NOTE: storm/churn process %d reported but has not exited %.0f s after the storm began: killed", i,
		    pair_now() - t);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
	pair_put("done", "1");
	pair_wait("server-done", 30);
	return pair_failures != 0;
}

int main(void)
{
	const char *storm = getenv("EZ_LIVENESS_STORM"), *churn = getenv("EZ_LIVENESS_CHURN");
	const char *host = getenv("EZ_HOST");
	double t;
	int ret;

	if (pair_init() && !storm && !churn) {
		fprintf(stderr, "liveness_pair: run me under `testbed pair` (see liveness-pair.sh)\n");
		return 2;
	}
	if (storm)
		return storm_main(storm);
	if (churn)
		return churn_main(churn);
	if (!host || !getenv("EZ_TEST_ADDR") || !getenv("EZ_PEER_ADDR")) {
		fprintf(stderr, "liveness_pair: run me under `testbed pair` (see liveness-pair.sh)\n");
		return 2;
	}
	pair_loop = ev_default_loop(0);
	if (ez_ctx_new(pair_loop, 0, &ctx)) {
		pair_say("ez_ctx_new: %s", ez_errmsg());
		return 1;
	}
	ev_timer_init(&gap_timer, on_gap, 0.01, 0.01);
	ev_timer_start(pair_loop, &gap_timer);
	ev_check_init(&it_check, on_it_check);
	ev_check_start(pair_loop, &it_check);
	ev_prepare_init(&it_prepare, on_it_prepare);
	ev_prepare_start(pair_loop, &it_prepare);
	ret = strcmp(host, "a") == 0 ? server() : client();
	ev_timer_stop(pair_loop, &gap_timer);
	ev_check_stop(pair_loop, &it_check);
	ev_prepare_stop(pair_loop, &it_prepare);
	t = pair_now();
	if (ez_ctx_free(ctx)) {
		pair_say("ez_ctx_free: %s", ez_errmsg());
		ret = 1;
	}
	pair_say("ez_ctx_free took %.2f s (the reaper's CM ids); %s (%d failed checks)", pair_now() - t,
	    ret ? "FAILED" : "passed", pair_failures);
	return ret;
}
