/* test_liveness.c: the loop never stalls: 16 lanes of connect/echo/close (no refusal, the server's connections and CQ room follow the live count) and a connect storm from other processes while an established connection echoes, each with the loop's longest gap measured by a 10 ms timer. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "easyrdma.h"
#include "fault.h"
#include "conn/ctx.h"
#include "device/device.h"
#include "../checkmain.h"
#include "../waits.h"

/* The loop's longest gap, asserted. Issue 20's target is 100 ms; in a
 * TCG guest one connection setup step alone costs up to ~0.3 s of CPU
 * (an accept: QP, SRQ and MR creation in rxe; measured per CM event), and
 * the guest's one vCPU is shared with the lanes and the storm's processes
 * here, so a gap spans at least one such step. The passes are bounded
 * (lib/loop/loop.h, ctx.c): what is asserted here is the stall the issue
 * saw (passes of 3-4.5 s, one of 52 s) never comes back. The 100 ms bound
 * is held where the server has its host to itself: the same churn and a
 * storm from another VM, tests/faults/liveness_pair.c. The figures are
 * printed. */
#ifdef __SANITIZE_ADDRESS__
#define GAP_MAX_S 4.0
#else
#define GAP_MAX_S 2.0
#endif

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

/* Connections of the context that are not freed yet, and the CQ room they
 * hold on its (first) device. */
static int alive(struct ez_ctx *ctx)
{
	return ctx->nconns;
}

static int cq_reserved(struct ez_ctx *ctx)
{
	return ctx->devices.list ? ctx->devices.list->cq_reserved : 0;
}

static const struct ez_conn_opts opts = { .send_depth = 8, .recv_depth = 8, .max_msg_size = 512 };

/* ---- churn ------------------------------------------------------------- */

enum phase { IDLE, CONNECTING, XFER, CLOSING };

struct lane {
	struct ep e;
	enum phase ph;
	double t;
};

/* EZ_CHURN_LANES lanes (16) of connect, 3 echoes, close, for
 * EZ_CHURN_SECONDS (10; the soak of tests/faults/README.md runs 60). The
 * server is a context of its own on the same loop, so its count of
 * connections is its own. */
START_TEST(churn_lanes)
{
	int lanes = env_int("EZ_CHURN_LANES", 16), secs = env_int("EZ_CHURN_SECONDS", 10);
	struct lane *ln = calloc((size_t)lanes, sizeof(*ln));
	struct fb b, cb;
	struct srv s = { .opts = opts };
	struct loop_gap g;
	int i, cycles = 0, attempts = 0, refused = 0, busy = 1;
	int max_alive = 0, max_excess = 0, max_live = 0, max_cq = 0;
	char refusal[256] = "";
	double t0, end, t_last;

	ck_assert_ptr_nonnull(ln);
	fb_init(&b);
	/* A lane the client saw connected was ended by the listener's default
	 * 2 s handshake deadline (its ESTABLISHED not read in time) in an ASan
	 * guest on a host at load 15: the deadline only catches a hang here. */
	s.lopts.handshake_timeout_ms = 60000;
	srv_start(&b, &s, 40000);
	cb = b;
	ck_assert_msg(ez_ctx_new(b.loop, 0, &cb.ctx) == 0, "ez_ctx_new: %s", ez_errmsg());
	loop_gap_start(&b, &g);
	t0 = now_s();
	end = t0 + secs;
	while (busy) {
		double t;

		ev_run(b.loop, EVRUN_ONCE);
		t = now_s();
		busy = 0;
		for (i = 0; i < lanes; i++) {
			struct lane *l = &ln[i];

			switch (l->ph) {
			case IDLE:
				if (t > end)
					break;
				memset(&l->e, 0, sizeof(l->e));
				ck_assert_msg(ep_connect(&cb, &l->e, s.port, &opts) == 0, "%s",
					      ez_errmsg());
				attempts++;
				l->ph = CONNECTING;
				l->t = t;
				break;
			case CONNECTING:
				if (!l->e.connected)
					break;
				if (l->e.connect_status) {
					if (!refused++)
						snprintf(refusal, sizeof(refusal), "%d %s",
							 l->e.connect_status, l->e.connect_msg);
					ep_close(&l->e);
					l->ph = IDLE;
					break;
				}
				for (int m = 0; m < 3; m++)
					ck_assert_int_eq(ep_send_seq(&l->e, (uint64_t)m), 0);
				l->ph = XFER;
				l->t = t;
				break;
			case XFER:
				/* The server ending the connection (its deadline,
				 * its resources) is a failure with its cause. */
				ck_assert_msg(!l->e.disconnected, "lane %d: disconnected before its 3 echoes "
					      "(%d received): %d %s", i, l->e.received,
					      l->e.disconnect_status, l->e.disconnect_msg);
				if (l->e.received < 3)
					break;
				ep_close(&l->e);
				l->ph = CLOSING;
				l->t = t;
				break;
			case CLOSING:
				if (!l->e.disconnected)
					break;
				ck_assert_int_eq(l->e.disconnect_status, 0);
				ck_assert_int_eq(l->e.bad_seq, 0);
				cycles++;
				l->ph = IDLE;
				break;
			}
			if (l->ph != IDLE) {
				busy = 1;
				ck_assert_msg(t - l->t < 20, "lane %d stuck in phase %d for 20 s", i,
					      l->ph);
			}
		}
		if (alive(b.ctx) > max_alive)
			max_alive = alive(b.ctx);
		if (s.connected - s.disconnected > max_live)
			max_live = s.connected - s.disconnected;
		if (alive(b.ctx) - (s.connected - s.disconnected) > max_excess)
			max_excess = alive(b.ctx) - (s.connected - s.disconnected);
		if (cq_reserved(b.ctx) > max_cq)
			max_cq = cq_reserved(b.ctx);
	}
	t_last = now_s();
	/* Every client closed and saw on_disconnect: the server's last ones
	 * finish their teardown (a goodbye, the 100 ms drain) and go. */
	while (alive(b.ctx) && now_s() - t_last < 3)
		ev_run(b.loop, EVRUN_ONCE);
	printf("churn: %d lanes for %d s: %d cycles (%.0f/s), %d connects, %d refused%s%s; "
	       "server: alive at most %d (live at most %d, alive beyond live at most %d), "
	       "CQ room at most %d; %d alive and CQ room %d %.0f ms after the last close; "
	       "longest loop gap %.1f ms (the loop's thread ran %.1f ms of it)\n",
	       lanes, secs, cycles, cycles / (t_last - t0), attempts, refused, refused ? ": " : "",
	       refusal, max_alive, max_live, max_excess, max_cq, alive(b.ctx), cq_reserved(b.ctx),
	       (now_s() - t_last) * 1e3, g.max_s * 1e3, g.max_cpu_s * 1e3);
	/* The library's own: each context's longest pass and its longest
	 * costly steps (ctx.h's ctx_pass_stats), against the gap above, which
	 * also holds the other context's pass, this loop's lanes and the
	 * guest kernel's rxe work charged to the thread. */
	printf("churn: the server's longest pass %.1f ms (accept pool %.1f, QP %.1f, reply %.1f, "
	       "finish %.1f, CM event %.1f ms at most), the clients' %.1f ms (finish %.1f, CM event "
	       "%.1f ms at most)\n",
	       b.ctx->stats.max_pass_ns / 1e6, b.ctx->stats.max_ns[CTX_STEP_POOL] / 1e6,
	       b.ctx->stats.max_ns[CTX_STEP_QP] / 1e6, b.ctx->stats.max_ns[CTX_STEP_REPLY] / 1e6,
	       b.ctx->stats.max_ns[CTX_STEP_FINISH] / 1e6, b.ctx->stats.max_ns[CTX_STEP_EVENT] / 1e6,
	       cb.ctx->stats.max_pass_ns / 1e6, cb.ctx->stats.max_ns[CTX_STEP_FINISH] / 1e6,
	       cb.ctx->stats.max_ns[CTX_STEP_EVENT] / 1e6);
	fflush(stdout);
	ck_assert_msg(refused == 0, "%d of %d connects refused, the first: %s", refused, attempts,
		      refusal);
	ck_assert_msg(s.accept_errors == 0 && s.connect_failed == 0,
		      "server: %d accept errors (%s), %d failed", s.accept_errors, s.accept_msg,
		      s.connect_failed);
	ck_assert_int_gt(cycles, lanes);
	ck_assert_int_eq(s.connected, cycles);
	ck_assert_int_eq(s.disconnected, cycles);
	/* What the issue saw: 252 alive with at most 16 live. Teardowns take
	 * ~200 ms each, so a few per lane may overlap; far fewer than that. */
	ck_assert_msg(max_alive <= 4 * lanes, "server: %d connections alive with %d lanes",
		      max_alive, lanes);
	ck_assert_int_eq(alive(b.ctx), 0);
	ck_assert_int_eq(cq_reserved(b.ctx), 0);
	ck_assert_msg(g.max_s < GAP_MAX_S, "longest loop gap %.1f ms", g.max_s * 1e3);
	loop_gap_stop(&b, &g);
	ck_assert_msg(ctx_free_when_idle(b.loop, cb.ctx, CTX_FREE_CEILING_S) == 0, "ez_ctx_free: %s",
		      ez_errmsg());
	srv_stop(&s);
	fb_fini(&b);
	free(ln);
}
END_TEST

/* ---- connect storm ------------------------------------------------------- */

/* The established connection: every echo sends the next message. */
struct pinger {
	struct ez_conn *conn;
	int connected, status;
	uint64_t seq, echoes;
	double last, max_gap;
	int measuring;
};

static void ping(struct pinger *p)
{
	ck_assert_int_eq(ez_send(p->conn, &p->seq, sizeof(p->seq), NULL, NULL), 0);
	p->seq++;
}

static void pg_connect(struct ez_conn *conn, int status, void *arg)
{
	struct pinger *p = arg;

	(void)conn;
	p->connected = 1;
	p->status = status;
	if (!status)
		ping(p);
}

static void pg_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct pinger *p = arg;
	double n = now_s();

	(void)conn;
	ez_buf_release(buf);
	if (p->measuring && p->last && n - p->last > p->max_gap)
		p->max_gap = n - p->last;
	p->last = n;
	p->echoes++;
	ping(p);
}

static void pg_disconnect(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)arg;
	(void)status;
}

static const struct ez_conn_cbs pg_cbs = { .on_connect = pg_connect, .on_recv = pg_recv,
					   .on_disconnect = pg_disconnect };

/* The storm process (a fresh image: librdmacm state does not survive a
 * fork): opens BURST connections at a time to the port, closes each once
 * it is up (or refused), TOTAL in all. Exits 0 when every one got its
 * on_connect. */
struct st_conn {
	struct ez_conn *conn;
	int done, status;
};

/* The first failed connect's cause, printed by the storm process. */
static char st_first_failure[300];

static void st_connect(struct ez_conn *conn, int status, void *arg)
{
	struct st_conn *c = arg;

	c->done = 1;
	c->status = status;
	if (status && !st_first_failure[0])
		snprintf(st_first_failure, sizeof(st_first_failure), "; the first failure: %d %s",
			 status, ez_conn_errmsg(conn));
}

static void st_disconnect(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)status;
	(void)arg;
}

static const struct ez_conn_cbs st_cbs = { .on_connect = st_connect, .on_disconnect = st_disconnect };

static int storm_main(const char *spec)
{
	char port[16];
	int total, burst, started = 0, ended = 0, ok = 0, i;
	struct ev_loop *loop = ev_default_loop(0);
	struct ez_ctx *ctx;
	struct st_conn *c;
	struct ez_conn_opts o = { .send_depth = 2, .recv_depth = 2, .max_msg_size = 64,
				  .connect_timeout_ms = 30000 };
	double end;

	if (sscanf(spec, "%15s %d %d", port, &total, &burst) != 3 || ez_ctx_new(loop, 0, &ctx))
		return 2;
	c = calloc((size_t)total, sizeof(*c));
	if (!c)
		return 2;
	end = now_s() + 120;
	while (ended < total && now_s() < end) {
		while (started < total && started - ended < burst) {
			if (ez_connect(ctx, test_addr(), port, &o, &st_cbs, &c[started],
				       &c[started].conn)) {
				fprintf(stderr, "storm: ez_connect: %s\n", ez_errmsg());
				return 3;
			}
			started++;
		}
		ev_run(loop, EVRUN_ONCE);
		for (i = 0; i < started; i++) {
			if (c[i].done == 1) {
				c[i].done = 2;
				ok += !c[i].status;
				ended++;
				ez_conn_close(c[i].conn);
			}
		}
	}
	end = now_s() + 3;
	while (now_s() < end)
		ev_run(loop, EVRUN_NOWAIT), usleep(1000);
	end = now_s();
	if (ez_ctx_free(ctx))
		fprintf(stderr, "storm: ez_ctx_free: %s\n", ez_errmsg());
	printf("storm process %d: %d connects, %d up%s; ez_ctx_free took %.2f s\n", (int)getpid(),
	       ended, ok, st_first_failure, now_s() - end);
	fflush(stdout);
	free(c);
	return ended == total ? 0 : 1;
}

static pid_t storm_start(const char *port, int total, int burst)
{
	char spec[64];
	pid_t pid;

	snprintf(spec, sizeof(spec), "%s %d %d", port, total, burst);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("EZ_LIVENESS_STORM", spec, 1);
		unsetenv("CK_RUN_CASE");
		unsetenv("CK_RUN_SUITE");
		execl("/proc/self/exe", "test_liveness", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* EZ_STORM_PROCS processes (2) each opening EZ_STORM_TOTAL connections (150)
 * BURST at a time, against a listener whose context also serves an
 * established connection that ping-pongs: its echo gap and the loop's
 * longest gap stay short. */
START_TEST(connect_storm)
{
	int procs = env_int("EZ_STORM_PROCS", 2), total = env_int("EZ_STORM_TOTAL", 150);
	struct fb b, cb;
	struct srv s = { .opts = opts };
	struct pinger p = { 0 };
	struct loop_gap g;
	pid_t pids[8];
	int i, running, status;
	uint64_t e0;
	double t0, quiet_gap, quiet_rate;

	fb_init(&b);
	srv_start(&b, &s, procs * total + 16);
	cb = b;
	ck_assert_msg(ez_ctx_new(b.loop, 0, &cb.ctx) == 0, "ez_ctx_new: %s", ez_errmsg());
	ck_assert_msg(ez_connect(cb.ctx, test_addr(), s.port, &opts, &pg_cbs, &p, &p.conn) == 0,
		      "%s", ez_errmsg());
	ck_assert(fb_run(&b, &p.connected, 1, 20));
	ck_assert_int_eq(p.status, 0);
	loop_gap_start(&b, &g);
	/* Quiet first: the figures to compare with. */
	fb_spin(&b, 0.5);
	p.measuring = 1;
	loop_gap_reset(&g);
	e0 = p.echoes;
	t0 = now_s();
	fb_spin(&b, 1.0);
	quiet_gap = p.max_gap;
	quiet_rate = (double)(p.echoes - e0) / (now_s() - t0);
	printf("storm: quiet: %.0f round trips/s, longest echo gap %.1f ms, loop gap %.1f ms\n",
	       quiet_rate, quiet_gap * 1e3, g.max_s * 1e3);
	fflush(stdout);
	p.max_gap = 0;
	p.last = 0;
	loop_gap_reset(&g);
	for (i = 0; i < procs && i < 8; i++)
		pids[i] = storm_start(s.port, total, 8);
	e0 = p.echoes;
	t0 = now_s();
	running = procs;
	while (running && now_s() - t0 < 150) {
		ev_run(b.loop, EVRUN_ONCE);
		for (i = 0; i < procs; i++) {
			if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
					      "storm process %d: status 0x%x", i, status);
				pids[i] = 0;
				running--;
			}
		}
	}
	printf("storm: %d processes x %d connects (8 at a time) in %.1f s: server requests %d, "
	       "up %d, refused %d; meanwhile %.0f round trips/s, longest echo gap %.1f ms, "
	       "longest loop gap %.1f ms (the loop's thread ran %.1f ms of it)\n",
	       procs, total, now_s() - t0, s.requests, s.connected, s.connect_failed,
	       (double)(p.echoes - e0) / (now_s() - t0), p.max_gap * 1e3, g.max_s * 1e3,
	       g.max_cpu_s * 1e3);
	fflush(stdout);
	for (i = 0; i < procs; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &status, 0);
		}
	ck_assert_msg(!running, "%d storm processes still running after 150 s", running);
	ck_assert_int_ge(s.requests, procs * total);
	ck_assert_msg(p.max_gap < GAP_MAX_S, "echo gap %.1f ms during the storm", p.max_gap * 1e3);
	ck_assert_msg(g.max_s < GAP_MAX_S, "loop gap %.1f ms during the storm", g.max_s * 1e3);
	loop_gap_stop(&b, &g);
	ez_conn_close(p.conn);
	fb_spin(&b, 0.5);
	ck_assert_msg(ctx_free_when_idle(b.loop, cb.ctx, CTX_FREE_CEILING_S) == 0, "ez_ctx_free: %s",
		      ez_errmsg());
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *su;
	TCase *tc;
	const char *storm = getenv("EZ_LIVENESS_STORM");

	if (storm)
		return storm_main(storm);
	su = suite_create("liveness");
	tc = tcase_create("liveness");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, churn_lanes);
	tcase_add_test(tc, connect_storm);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
