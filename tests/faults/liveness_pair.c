/* liveness_pair.c: two-VM liveness (run by liveness-pair.sh under `testbed pair`): a connect storm from the other host while an established connection echoes, then ez_conn_close() of a connection whose peer host vanished; the server's loop's longest gap measured by a 10 ms timer throughout. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ev.h>

#include "easyrdma.h"

/*
 * VM a: the server (echoes everything). VM b: the client, which
 *  1. opens E (ping-pong: each echo sends the next) and V (idle);
 *  2. runs a storm: STORM_PROCS processes each opening STORM_TOTAL
 *     connections 8 at a time and closing each once up; E's echo gap is
 *     measured on b, a's loop gap on a;
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
 * the gap under 1 s (the guest's vCPU is not always run: 268 ms gaps with
 * 0.2 ms of work were seen on a loaded host); before, the loop stood 50 s
 * in rdma_destroy_id(). During the storm, one accept costs up to ~0.2 s of
 * CPU in a TCG guest (rxe's QP, SRQ and MR creation), so the bound is the
 * issue's stall (passes of 3-4.5 s) not coming back. */
#define GAP_MAX_S 0.100
#define CLOSE_GAP_MAX_S 1.0
#define STORM_GAP_MAX_S 2.0
#define CLOSE_MAX_S 0.5	/* documented: about 200 ms (ez_conn_close(3)) */
#define STORM_PROCS 2
#define STORM_TOTAL 100

static struct ev_loop *loop;
static struct ez_ctx *ctx;
static const char *dir;
static int failures;
static double t0;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(const char *fmt, ...)
{
	va_list ap;

	printf("%7.3f %s: ", now_s() - t0, getenv("EZ_HOST"));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			say("FAIL %s:%d: %s", __FILE__, __LINE__, #cond); \
			say(__VA_ARGS__);                                 \
			failures++;                                       \
		}                                                         \
	} while (0)

static void put_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int get_file(const char *name, char *buf, size_t len)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n > 0;
}

static int has_file(const char *name)
{
	char buf[64];

	return get_file(name, buf, sizeof(buf));
}

static void spin(double secs)
{
	double end = now_s() + secs;

	while (now_s() < end)
		ev_run(loop, EVRUN_ONCE);
}

/* Spins until the file exists or secs pass; whether it does. */
static int wait_file(const char *name, double secs)
{
	double end = now_s() + secs;

	while (!has_file(name) && now_s() < end)
		spin(0.02);
	return has_file(name);
}

/* The loop's longest gap: a 10 ms timer. */
static ev_timer gap_timer;
static double gap_last, gap_max, cpu_last, gap_cpu;

/* The loop thread's CPU time in the longest gap: whether the loop was busy
 * (the library's work) or not running (the guest's vCPU, other processes). */
static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_gap(struct ev_loop *l, ev_timer *w, int revents)
{
	double n = now_s(), c = thread_cpu_s();

	(void)l;
	(void)w;
	(void)revents;
	if (gap_last && n - gap_last > gap_max) {
		gap_max = n - gap_last;
		gap_cpu = c - cpu_last;
	}
	gap_last = n;
	cpu_last = c;
}

static void gap_reset(void)
{
	gap_last = 0;
	gap_max = 0;
	gap_cpu = 0;
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
		say("%s: on_connect(%d) %s", s->name, status, ez_conn_errmsg(conn));
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
	double n = now_s();

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
	s->t_end = now_s();
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
	double end = now_s() + 200;

	loop = ev_default_loop(0);
	if (ez_ctx_new(loop, 0, &ctx))
		return 2;
	while (ended < total && now_s() < end) {
		while (started < total && started - ended < burst) {
			if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &o, &st_cbs, &c[started],
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
	end = now_s() + 2;
	while (now_s() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	say("storm process %d: %d connects, %d up", (int)getpid(), ended, ok);
	end = now_s();
	if (ez_ctx_free(ctx))
		say("storm: ez_ctx_free: %s", ez_errmsg());
	say("storm process %d: ez_ctx_free took %.2f s", (int)getpid(), now_s() - end);
	/* Done: said in a file, as the process's exit has been seen to take
	 * minutes in the guest after this point (rxe's teardown of the
	 * process's verbs objects; see the report of issue 20). */
	{
		char name[64];

		snprintf(name, sizeof(name), "storm-%s-%s", getenv("EZ_STORM_INDEX"),
			 ended == total && ok == total ? "ok" : "failed");
		put_file(name, "1");
	}
	return ended == total && ok == total ? 0 : 1;
}

/* ---- a: the server ----------------------------------------------------- */

static struct side acc[STORM_PROCS * STORM_TOTAL + 16];
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
	if (ez_accept(req, &o, &cbs, s, &s->conn)) {
		say("ez_accept: %s", ez_errmsg());
		failures++;
		return;
	}
	if (len && d[0] == 'V')
		vconn = s;
	naccepted++;
}

static int server(void)
{
	struct ez_listener *l;
	char port[16], buf[64];
	double t_close, t, storm_gap, close_gap;
	int i, up = 0;

	if (ez_listen(ctx, getenv("EZ_TEST_ADDR"), "0", NULL, on_request, NULL, &l)) {
		say("ez_listen: %s", ez_errmsg());
		return 1;
	}
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	put_file("port", port);
	if (!wait_file("storm-start", 120)) {
		say("no storm-start from b");
		return 1;
	}
	gap_reset();
	wait_file("storm-end", 240);
	storm_gap = gap_max;
	for (i = 0; i < naccepted; i++)
		up += acc[i].connected && !acc[i].connect_status;
	say("storm: %d connections accepted, %d up; longest loop gap %.1f ms (the loop thread ran %.1f ms of it)",
	    naccepted, up, storm_gap * 1e3, gap_cpu * 1e3);
	CHECK(storm_gap < STORM_GAP_MAX_S, "loop gap %.1f ms during the storm", storm_gap * 1e3);
	snprintf(buf, sizeof(buf), "%.1f", storm_gap * 1e3);
	put_file("storm-gap", buf);

	/* The peer host vanishes; V is idle, so nothing has told us. */
	if (!wait_file("down", 60) || !vconn) {
		say("no link-down from b (V %p)", (void *)vconn);
		return 1;
	}
	spin(0.3);
	CHECK(vconn->connected && !vconn->ended, "a/V ended before the close: %d %s",
	      vconn->end_status, vconn->msg);
	gap_reset();
	t_close = now_s();
	ez_conn_close(vconn->conn);
	t = now_s() - t_close;
	while (!vconn->ended && now_s() - t_close < 60)
		spin(0.01);
	spin(2.0);
	close_gap = gap_max;
	say("vanished peer: ez_conn_close() returned in %.2f ms, on_disconnect(%d, \"%s\") %.1f ms after it; "
	    "longest loop gap %.1f ms (the loop thread ran %.1f ms of it) over the next %.1f s",
	    t * 1e3, vconn->end_status, vconn->msg, (vconn->t_end - t_close) * 1e3, close_gap * 1e3,
	    gap_cpu * 1e3, now_s() - t_close);
	CHECK(t < 0.01, "ez_conn_close took %.1f ms", t * 1e3);
	CHECK(vconn->ended && vconn->t_end - t_close < CLOSE_MAX_S,
	      "on_disconnect %.1f ms after the close", (vconn->t_end - t_close) * 1e3);
	CHECK(close_gap < CLOSE_GAP_MAX_S && gap_cpu < GAP_MAX_S,
	      "loop gap %.1f ms after the close (its thread ran %.1f ms of it)", close_gap * 1e3,
	      gap_cpu * 1e3);
	vconn = NULL;	/* freed by its final callback */
	put_file("closed", "1");
	wait_file("done", 60);
	ez_listener_close(l);
	for (i = 0; i < naccepted; i++)
		if (acc[i].conn && strcmp(acc[i].name, "a/V"))
			ez_conn_close(acc[i].conn);
	spin(0.5);
	put_file("server-done", "1");
	return failures != 0;
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

static int client(void)
{
	struct side E = { .name = "b/E", .ping = 1 }, V = { .name = "b/V" };
	struct ez_conn_opts eo = { .connect_timeout_ms = 30000 }, vo = eo;
	char port[16], buf[64];
	pid_t pids[STORM_PROCS];
	double t, quiet_gap, storm_rate;
	uint64_t e0;
	int i, running, status;

	if (!wait_file("port", 60) || !get_file("port", port, sizeof(port)))
		return 1;
	eo.private_data = "E";
	eo.private_data_len = 1;
	vo.private_data = "V";
	vo.private_data_len = 1;
	if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &eo, &cbs, &E, &E.conn) ||
	    ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &vo, &cbs, &V, &V.conn)) {
		say("ez_connect: %s", ez_errmsg());
		return 1;
	}
	t = now_s();
	while ((!E.connected || !V.connected) && now_s() - t < 30)
		spin(0.02);
	CHECK(!E.connect_status && !V.connect_status && E.connected && V.connected,
	      "connects: E %d, V %d", E.connect_status, V.connect_status);
	spin(0.5);
	E.measuring = 1;
	e0 = E.echoes;
	t = now_s();
	spin(1.0);
	quiet_gap = E.max_gap;
	say("quiet: %.0f round trips/s, longest echo gap %.1f ms", (E.echoes - e0) / (now_s() - t),
	    quiet_gap * 1e3);
	E.max_gap = 0;
	E.last = 0;

	put_file("storm-start", "1");
	for (i = 0; i < STORM_PROCS; i++)
		pids[i] = storm_start(port, i);
	e0 = E.echoes;
	t = now_s();
	running = STORM_PROCS;
	while (running && now_s() - t < 120) {
		spin(0.02);
		running = 0;
		for (i = 0; i < STORM_PROCS; i++) {
			char name[32];

			snprintf(name, sizeof(name), "storm-%d-ok", i);
			if (has_file(name))
				continue;
			snprintf(name, sizeof(name), "storm-%d-failed", i);
			CHECK(!has_file(name), "storm process %d: not every connect came up", i);
			if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				CHECK(0, "storm process %d ended (status 0x%x) before its report", i,
				      status);
				pids[i] = 0;
				continue;
			}
			running += !has_file(name);
		}
	}
	storm_rate = (E.echoes - e0) / (now_s() - t);
	put_file("storm-end", "1");
	wait_file("storm-gap", 30);
	get_file("storm-gap", buf, sizeof(buf));
	say("storm: %d processes x %d connects (8 at a time) in %.1f s; meanwhile E: %.0f round trips/s, "
	    "longest echo gap %.1f ms; a's longest loop gap %s ms",
	    STORM_PROCS, STORM_TOTAL, now_s() - t, storm_rate, E.max_gap * 1e3, buf);
	CHECK(!running, "%d storm processes did not report", running);
	CHECK(E.max_gap < STORM_GAP_MAX_S, "echo gap %.1f ms during the storm", E.max_gap * 1e3);
	CHECK(E.connected && !E.ended, "E ended during the storm: %d %s", E.end_status, E.msg);
	ez_conn_close(E.conn);
	spin(0.5);

	say("ip link set eth0 down (the host vanishes for a)");
	if (system("ip link set eth0 down"))
		failures++;
	put_file("down", "1");
	CHECK(wait_file("closed", 90), "a did not report its close");
	if (system("ip link set eth0 up"))
		failures++;
	say("ip link set eth0 up; V: ended %d (%d, %s)", V.ended, V.end_status, V.msg);
	put_file("up", "1");
	/* b's V ended with the port; its parked CM id goes once the port is up. */
	spin(3.0);
	ez_conn_close(V.conn);
	spin(0.5);
	/* The storm processes reported; their exit is noted, not judged. */
	for (i = 0; i < STORM_PROCS; i++) {
		if (pids[i] <= 0)
			continue;
		if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
			say("storm process %d exited (status 0x%x)", i, status);
			continue;
		}
		say("NOTE: storm process %d reported but has not exited %.0f s after the storm began: killed", i,
		    now_s() - t);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
	put_file("done", "1");
	wait_file("server-done", 30);
	return failures != 0;
}

int main(void)
{
	const char *storm = getenv("EZ_LIVENESS_STORM");
	const char *host = getenv("EZ_HOST");
	double t;
	int ret;

	t0 = now_s();
	dir = getenv("EZ_PAIR_DIR");
	if (storm)
		return storm_main(storm);
	if (!dir || !host || !getenv("EZ_TEST_ADDR") || !getenv("EZ_PEER_ADDR")) {
		fprintf(stderr, "liveness_pair: run me under `testbed pair` (see liveness-pair.sh)\n");
		return 2;
	}
	loop = ev_default_loop(0);
	if (ez_ctx_new(loop, 0, &ctx)) {
		say("ez_ctx_new: %s", ez_errmsg());
		return 1;
	}
	ev_timer_init(&gap_timer, on_gap, 0.01, 0.01);
	ev_timer_start(loop, &gap_timer);
	ret = strcmp(host, "a") == 0 ? server() : client();
	ev_timer_stop(loop, &gap_timer);
	t = now_s();
	if (ez_ctx_free(ctx)) {
		say("ez_ctx_free: %s", ez_errmsg());
		ret = 1;
	}
	say("ez_ctx_free took %.2f s (the reaper's CM ids); %s (%d failed checks)", now_s() - t,
	    ret ? "FAILED" : "passed", failures);
	return ret;
}
