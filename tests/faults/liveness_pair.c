/* liveness_pair.c: two-VM liveness (run by liveness-pair.sh under `testbed pair`): a connect storm from the other host while an established connection echoes, then ez_conn_close() of a connection whose peer host vanished; the server's loop's longest gap measured by a 10 ms timer throughout. */
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

/*
 * VM a: the server (echoes everything). VM b: the client, which
 *  1. opens E (ping-pong: each echo sends the next) and V (idle);
 *  2. runs a storm: STORM_PROCS processes each opening STORM_TOTAL
 *     connections 8 at a time and closing each once up; E's echo gap is
 *     measured on b, a's loop gap on a, both under STORM_GAP_MAX_S (a
 *     second storm when the first was over it);
 *  3. closes E, takes its eth0 down (the host vanishes for a), and a calls
 *     ez_conn_close(V): a's loop must not stall (rdma_destroy_id() of V's id
 *     waits for the DREP of its DREQ, which nobody sends: ~50 s on rxe,
 *     now on the context's reaper thread) and on_disconnect must come
 *     within CLOSE_MAX_S;
 *  4. brings eth0 up again (state restored).
 * Rendezvous through files in $EZ_PAIR_DIR.
 */
/* The loop's longest gap: during the close of a vanished peer's connection
 * the loop's own work in it (its thread's CPU time) stays under 100 ms and
 * the gap under 1 s (the guest's vCPU is not always run: 268-529 ms gaps
 * with 0.2 ms of work were seen on a loaded host); before, the loop stood
 * 50 s in rdma_destroy_id().
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
#define CLOSE_GAP_MAX_S 1.0
/* The storm's loop gap on a and echo gap on b, wall clock, and the loop
 * thread's most CPU in one iteration: the gaps hold the time the host did
 * not run a guest's vCPU (two TCG guests on two host cores beside the
 * host's own work: a 301 ms gap with 0.3 ms of the loop's CPU in it was
 * seen), and the CPU the guest's own stalls (one QP step of 443 ms CPU
 * once, in a storm whose other 199 took at most 14 ms). So a storm over a
 * bound is run again, up to STORM_ROUNDS in all, and the last must hold
 * them; every round is printed. A library that stalls fails every round. */
#define STORM_GAP_MAX_S 0.100
#define STORM_ROUNDS 3
#define STORM_PASS_MAX_S 0.250
#define CLOSE_MAX_S 0.5	/* documented: about 200 ms (ez_conn_close(3)) */
#define STORM_PROCS 2
#define STORM_TOTAL 100

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

static void on_gap(struct ev_loop *l, ev_timer *w, int revents)
{
	double n = pair_now(), c = thread_cpu_s();

	(void)l;
	(void)w;
	(void)revents;
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

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

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

/* ---- a: the server ----------------------------------------------------- */

static struct side acc[STORM_ROUNDS * STORM_PROCS * STORM_TOTAL + 16];
static int naccepted;
static struct side *vconn;

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	size_t len;
	const char *d = ez_conn_req_data(req, &len);
	struct side *s = &acc[naccepted];
	struct ez_conn_opts o = { .connect_timeout_ms = 30000 };

	(void)l;
	(void)arg;
	if (naccepted == (int)(sizeof(acc) / sizeof(acc[0]))) {
		ez_reject(req, "full", 4);
		return;
	}
	s->name = len && d[0] == 'V' ? "a/V" : len && d[0] == 'E' ? "a/E" : "a/storm";
	if (timed_accept(req, &o, &cbs, s, &s->conn)) {
		pair_say("ez_accept: %s", ez_errmsg());
		pair_failures++;
		return;
	}
	if (len && d[0] == 'V')
		vconn = s;
	naccepted++;
}

/* One storm of b's (round: its number): the loop's gap measured, then b
 * says whether another follows (1), or not (0); -1 when b did not. */
static int server_storm(int round)
{
	char name[32], buf[64];
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
		PAIR_CHECK(storm_gap < STORM_GAP_MAX_S, "loop gap %.1f ms during the storm (round %d)",
			   storm_gap * 1e3, round);
	}
	snprintf(buf, sizeof(buf), "%.1f %.1f", storm_gap * 1e3, gm.cpu_max * 1e3);
	snprintf(name, sizeof(name), "storm-gap-%d", round);
	pair_put(name, buf);
	snprintf(name, sizeof(name), "storm-again-%d", round);
	if (!pair_wait(name, 60) || !pair_get(name, buf, sizeof(buf))) {
		pair_say("no %s from b", name);
		return -1;
	}
	return !last && buf[0] == '1';
}

static int server(void)
{
	struct ez_listener *l;
	char port[16];
	double t_close, t, close_gap;
	int i, round;

	if (ez_listen(ctx, getenv("EZ_TEST_ADDR"), "0", NULL, on_request, NULL, &l)) {
		pair_say("ez_listen: %s", ez_errmsg());
		return 1;
	}
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	pair_put("port", port);
	for (round = 0;; round++) {
		int again = server_storm(round);

		if (again < 0)
			return 1;
		if (!again)
			break;
	}

	/* The peer host vanishes; V is idle, so nothing has told us. */
	if (!pair_wait("down", 60) || !vconn) {
		pair_say("no link-down from b (V %p)", (void *)vconn);
		return 1;
	}
	pair_spin(0.3);
	PAIR_CHECK(vconn->connected && !vconn->ended, "a/V ended before the close: %d %s",
	      vconn->end_status, vconn->msg);
	gap_reset();
	t_close = pair_now();
	ez_conn_close(vconn->conn);
	t = pair_now() - t_close;
	while (!vconn->ended && pair_now() - t_close < 60)
		pair_spin(0.01);
	pair_spin(2.0);
	close_gap = gm.max;
	pair_say("vanished peer: ez_conn_close() returned in %.2f ms, on_disconnect(%d, \"%s\") %.1f ms after it; "
	    "longest loop gap %.1f ms (the loop thread ran %.1f ms of it) over the next %.1f s",
	    t * 1e3, vconn->end_status, vconn->msg, (vconn->t_end - t_close) * 1e3, close_gap * 1e3,
	    gm.max_cpu * 1e3, pair_now() - t_close);
	gap_report("vanished peer");
	PAIR_CHECK(t < 0.01, "ez_conn_close took %.1f ms", t * 1e3);
	PAIR_CHECK(vconn->ended && vconn->t_end - t_close < CLOSE_MAX_S,
	      "on_disconnect %.1f ms after the close", (vconn->t_end - t_close) * 1e3);
	PAIR_CHECK(close_gap < CLOSE_GAP_MAX_S && gm.max_cpu < GAP_MAX_S,
	      "loop gap %.1f ms after the close (its thread ran %.1f ms of it)", close_gap * 1e3,
	      gm.max_cpu * 1e3);
	vconn = NULL;	/* freed by its final callback */
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

/* One storm (round: its number) while E echoes: 1 when its gaps (E's echo
 * gap here, a's loop gap there) were over STORM_GAP_MAX_S and another
 * round follows, 0 when not (checked in the last round), -1 when a did
 * not answer. */
static int client_storm(struct side *E, const char *port, int round, pid_t *pids)
{
	char name[32], buf[64];
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
	snprintf(name, sizeof(name), "storm-gap-%d", round);
	if (!pair_wait(name, 30) || !pair_get(name, buf, sizeof(buf))) {
		pair_say("no %s from a", name);
		return -1;
	}
	if (sscanf(buf, "%lf %lf", &a_gap, &a_cpu) != 2) {
		pair_say("%s: \"%s\"", name, buf);
		return -1;
	}
	a_gap /= 1e3;
	a_cpu /= 1e3;
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
		PAIR_CHECK(E->max_gap < STORM_GAP_MAX_S, "echo gap %.1f ms during the storm (round %d)",
			   E->max_gap * 1e3, round);
	snprintf(name, sizeof(name), "storm-again-%d", round);
	pair_put(name, again ? "1" : "0");
	return again;
}

static int client(void)
{
	struct side E = { .name = "b/E", .ping = 1 }, V = { .name = "b/V" };
	struct ez_conn_opts eo = { .connect_timeout_ms = 30000 }, vo = eo;
	char port[16];
	pid_t pids[STORM_ROUNDS * STORM_PROCS] = { 0 };
	double t, quiet_gap;
	uint64_t e0;
	int i, round, status;

	if (!pair_wait("port", 60) || !pair_get("port", port, sizeof(port)))
		return 1;
	eo.private_data = "E";
	eo.private_data_len = 1;
	vo.private_data = "V";
	vo.private_data_len = 1;
	if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &eo, &cbs, &E, &E.conn) ||
	    ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &vo, &cbs, &V, &V.conn)) {
		pair_say("ez_connect: %s", ez_errmsg());
		return 1;
	}
	t = pair_now();
	while ((!E.connected || !V.connected) && pair_now() - t < 30)
		pair_spin(0.02);
	PAIR_CHECK(!E.connect_status && !V.connect_status && E.connected && V.connected,
	      "connects: E %d, V %d", E.connect_status, V.connect_status);
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
	ez_conn_close(E.conn);
	pair_spin(0.5);

	pair_say("ip link set eth0 down (the host vanishes for a)");
	if (system("ip link set eth0 down"))
		pair_failures++;
	pair_put("down", "1");
	PAIR_CHECK(pair_wait("closed", 90), "a did not report its close");
	if (system("ip link set eth0 up"))
		pair_failures++;
	pair_say("ip link set eth0 up; V: ended %d (%d, %s)", V.ended, V.end_status, V.msg);
	pair_put("up", "1");
	/* b's V ended with the port; its parked CM id goes once the port is up. */
	pair_spin(3.0);
	ez_conn_close(V.conn);
	pair_spin(0.5);
	/* The storm processes reported; their exit is noted, not judged. */
	for (i = 0; i < STORM_ROUNDS * STORM_PROCS; i++) {
		if (pids[i] <= 0)
			continue;
		if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
			pair_say("storm process %d exited (status 0x%x)", i, status);
			continue;
		}
		pair_say("NOTE: storm process %d reported but has not exited %.0f s after the storm began: killed", i,
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
	const char *storm = getenv("EZ_LIVENESS_STORM");
	const char *host = getenv("EZ_HOST");
	double t;
	int ret;

	if (pair_init() && !storm) {
		fprintf(stderr, "liveness_pair: run me under `testbed pair` (see liveness-pair.sh)\n");
		return 2;
	}
	if (storm)
		return storm_main(storm);
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
