/* linkdown.c: two-VM link-down fault (run by linkdown.sh under `testbed pair`): what each side's connections do, and the listener afterwards. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ev.h>

#include "easyrdma.h"
#include "pair.h"

/*
 * VM a: the server. Listens and streams on its own to every connection (so
 * its transport notices the loss). VM b: the client. Opens a connection with
 * short transport timeouts (S: 4.096 us * 2^15 = 134 ms, 3 retries: gives up
 * after ~0.5 s of silence; shorter ones fail spuriously between two TCG
 * guests) and one with long ones (L: 2^19 -> 2.1 s, 7 retries: ~17 s),
 * streams on both, takes its eth0 down for OUTAGE_S seconds, brings it up,
 * then connects again (N), which must work at the first attempt. A third
 * connection (R: S's timeouts, two paths, session resume for 30 s) must
 * outlive the outage: its session resumes once b's port is back, every
 * message b sent on it arrives once (a counts them by number), no op
 * fails.
 * Rendezvous through files in $EZ_PAIR_DIR.
 */
#define OUTAGE_S 3.0
/* The loop's longest gap while the link is down, measured by the 10 ms
 * pacing timer, and the loop thread's CPU time in it, printed and held to
 * issue 20's 100 ms. Measured (quiet host, 2026-12-02): 26-47 ms, 7-40 ms
 * of CPU, over 3 runs. This program's own looks at its rendezvous files
 * on 9p (up to 0.2 s each in a loaded TCG guest) are taken out of the
 * interval they fall in (timed_get()): they are the test's stall, not the
 * library's. */
#define GAP_CPU_MAX_S 0.100
/* The wall-clock gap is no measure of the library on a TCG guest: a vCPU the
 * host does not run shows as a gap (301 ms with 0.3 ms of the loop's CPU,
 * seen beside other VMs; CI once failed this test on such a gap). What the
 * design promises, a loop never blocked, is the CPU bound above plus no
 * wait on the network: such a wait lasts the transport's retries or a
 * DREP's timeout (0.5 s to 50 s here), which this wall bound still catches
 * while a descheduled vCPU (at most ~0.3 s measured, x6 margin) passes. */
#define GAP_MAX_S 2.0

static struct ez_ctx *ctx;
static const char *host;


struct side {
	const char *name;
	struct ez_conn *conn;
	int connected, connect_status;
	int ended, end_status;
	char msg[256];
	double t_end;
	uint64_t sent, recv, errs;
	int outstanding;
	/* R, the resumed session: each sequence number seen (its messages
	 * carry their number), the distinct ones and those seen twice; its
	 * stream stops when quiet is set. */
	uint8_t *seen;
	uint64_t distinct, dups, recv_before_up;
	int quiet;
};

/* Messages R may send in the test (8 a pacing tick at most, 100 ticks a
 * second, ~30 s): its receiver's map of sequence numbers. */
#define R_SEQ_MAX (1u << 16)

static void on_op(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

	(void)conn;
	s->outstanding--;
	if (status && s->errs < 4)
		pair_say("%s: op error %d (%s)", s->name, status, ez_conn_errmsg(conn));
	if (status)
		s->errs++;
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

	s->connected = 1;
	s->connect_status = status;
	snprintf(s->msg, sizeof(s->msg), "%s", ez_conn_errmsg(conn));
	pair_say("%s: on_connect(%d) %s", s->name, status, s->msg);
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct side *s = arg;

	(void)conn;
	s->recv++;
	if (s->seen && ez_buf_len(buf) == sizeof(uint64_t)) {
		uint64_t seq;

		memcpy(&seq, ez_buf_data(buf), sizeof(seq));
		if (seq >= R_SEQ_MAX || s->seen[seq]++)
			s->dups++;
		else
			s->distinct++;
	}
	ez_buf_release(buf);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct side *s = arg;

	s->ended = 1;
	s->end_status = status;
	s->t_end = pair_now();
	snprintf(s->msg, sizeof(s->msg), "%s", ez_conn_errmsg(conn));
	pair_say("%s: on_disconnect(%d, \"%s\") after %llu sent, %llu received, %llu op errors",
	    s->name, status, s->msg, (unsigned long long)s->sent, (unsigned long long)s->recv,
	    (unsigned long long)s->errs);
}

static const struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect };

/* One message now and then on every live connection. */
static struct side *streams[40];
static int nstreams;

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double gap_last, gap_cpu_last, gap_max, gap_max_cpu;
static double own_9p_s, own_9p_max_s;	/* this program's looks at its 9p files */
static int gap_on;

static void gap_start(void)
{
	gap_last = gap_max = gap_max_cpu = 0;
	own_9p_s = own_9p_max_s = 0;
	gap_on = 1;
}

/* pair_get() with its own time taken out of the gap being measured. */

static int timed_get(const char *name, char *buf, size_t len)
{
	double t = pair_now(), c = thread_cpu_s();
	int r = pair_get(name, buf, len);

	t = pair_now() - t;
	c = thread_cpu_s() - c;
	if (gap_on) {
		own_9p_s += t;
		if (t > own_9p_max_s)
			own_9p_max_s = t;
		if (gap_last) {
			gap_last += t;
			gap_cpu_last += c;
		}
	}
	return r;
}

/* The longest gap so far, printed and checked. */
static void gap_check(const char *what)
{
	gap_on = 0;
	pair_say("%s: longest loop gap %.1f ms while the link was down (the loop thread ran %.1f ms of it); "
		 "this program's own looks at its 9p files took %.1f ms (the longest %.1f ms), left out",
		 what, gap_max * 1e3, gap_max_cpu * 1e3, own_9p_s * 1e3, own_9p_max_s * 1e3);
	PAIR_CHECK(gap_max < GAP_MAX_S && gap_max_cpu < GAP_CPU_MAX_S,
		   "%s: loop gap %.1f ms (its thread ran %.1f ms of it)", what, gap_max * 1e3,
		   gap_max_cpu * 1e3);
}

static void on_pace(struct ev_loop *l, ev_timer *w, int revents)
{
	int i;

	(void)l;
	(void)w;
	(void)revents;
	if (gap_on) {
		double n = pair_now(), c = thread_cpu_s();

		if (gap_last && n - gap_last > gap_max) {
			gap_max = n - gap_last;
			gap_max_cpu = c - gap_cpu_last;
		}
		gap_last = n;
		gap_cpu_last = c;
	}
	for (i = 0; i < nstreams; i++) {
		struct side *s = streams[i];

		if (s->connected && !s->connect_status && !s->ended && s->outstanding < 8 && !s->quiet &&
		    s->sent < R_SEQ_MAX &&
		    ez_send(s->conn, &s->sent, sizeof(s->sent), on_op, s) == 0) {
			s->sent++;
			s->outstanding++;
		}
	}
}

/* ---- a: the server ----------------------------------------------------- */

static struct side acc[32];
static int naccepted;
/* Generous connect timeouts: two TCG guests on a loaded host take seconds.
 * The server's S also has op_timeout_ms: when b's link goes down just after
 * a has used up its credits, a's sends wait in the library for credits
 * that never come, nothing is on the wire, and the transport has nothing
 * to time out (1 run in 3 here: "SEND of 8 bytes waiting for the peer's
 * credits not complete within op_timeout_ms"). op_timeout_ms is what
 * covers that, so the test accepts either cause, -ETIMEDOUT both. */
static const struct ez_conn_opts s_opts = { .qp_timeout = 15, .retry_count = 3,
					    .connect_timeout_ms = 20000 };
static const struct ez_conn_opts s_server_opts = { .qp_timeout = 15, .retry_count = 3,
						   .connect_timeout_ms = 20000, .op_timeout_ms = 1200 };
static const struct ez_conn_opts l_opts = { .qp_timeout = 19, .retry_count = 7,
					    .connect_timeout_ms = 20000 };
/* R: S's short transport timeouts (its paths fail during the outage on
 * both sides), two paths and session resume for 30 s: it must outlive the
 * outage with nothing lost or delivered twice. */
static const struct ez_conn_opts r_opts = { .qp_timeout = 15, .retry_count = 3, .paths = 2,
					    .resume_ms = 30000, .connect_timeout_ms = 20000 };

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	size_t len;
	const char *d = ez_conn_req_data(req, &len);
	struct side *s = &acc[naccepted];
	char which = len ? d[0] : '?';

	(void)l;
	(void)arg;
	if (naccepted == 32) {
		ez_reject(req, "full", 4);
		return;
	}
	/* The client says which timeouts this connection has; the server's
	 * direction uses the same. */
	s->name = which == 'S' ? "a/S" : which == 'L' ? "a/L" : which == 'R' ? "a/R" : "a/N";
	if (which == 'R') {
		s->seen = calloc(R_SEQ_MAX, 1);
		if (!s->seen) {
			pair_say("a/R: out of memory");
			pair_failures++;
			return;
		}
	}
	if (ez_accept(req, which == 'L' ? &l_opts : which == 'S' ? &s_server_opts :
		      which == 'R' ? &r_opts : &s_opts, &cbs, s, &s->conn)) {
		pair_say("ez_accept: %s", ez_errmsg());
		pair_failures++;
		return;
	}
	naccepted++;
	streams[nstreams++] = s;
}

/* The last connection of that name (N: the one that worked, if any). */
static struct side *find(const char *name)
{
	struct side *f = NULL;
	int i;

	for (i = 0; i < naccepted; i++)
		if (!strcmp(acc[i].name, name) && (!f || !acc[i].connect_status))
			f = &acc[i];
	return f;
}

static int server(void)
{
	struct ez_listener *l;
	char port[16], buf[64];
	double t_down = 0, t_up = 0, end;
	struct side *S, *L, *N, *R;
	int i;

	if (ez_listen(ctx, getenv("EZ_TEST_ADDR"), "0", NULL, on_request, NULL, &l)) {
		pair_say("ez_listen: %s", ez_errmsg());
		return 1;
	}
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	pair_put("port", port);
	pair_say("listening on %s:%s", getenv("EZ_TEST_ADDR"), port);
	end = pair_now() + 150;
	while (!timed_get("done", buf, sizeof(buf)) && pair_now() < end) {
		pair_spin(0.02);
		if (!t_down && timed_get("down", buf, sizeof(buf))) {
			t_down = pair_now();
			gap_start();
			pair_say("peer's link is down");
		}
		if (!t_up && timed_get("up", buf, sizeof(buf))) {
			t_up = pair_now();
			for (i = 0; i < naccepted; i++)
				acc[i].recv_before_up = acc[i].recv;
			/* Before system(), which holds the loop itself. */
			gap_check("a");
			pair_say("peer's link is up again; neighbours:");
			fflush(stdout);
			if (system("ip neigh show dev eth0"))
				pair_say("ip neigh failed");
		}
	}
	pair_spin(0.5);
	S = find("a/S");
	L = find("a/L");
	N = find("a/N");
	R = find("a/R");
	PAIR_CHECK(R != NULL, "a/R not accepted");
	if (R) {
		/* Every message b's R sent arrived once: b says how many. */
		struct ez_conn_stats rs;
		uint64_t want = 0;

		end = pair_now() + 60;
		while (!timed_get("r_sent", buf, sizeof(buf)) && pair_now() < end)
			pair_spin(0.05);
		want = strtoull(buf, NULL, 10);
		while (R->distinct < want && !R->ended && pair_now() < end)
			pair_spin(0.05);
		memset(&rs, 0, sizeof(rs));
		if (R->conn)
			ez_conn_stats(R->conn, &rs);
		pair_say("a/R: %llu of %llu messages arrived, %llu twice, %llu before the link came back; %llu op errors; session lost %llu, resumed %llu",
			 (unsigned long long)R->distinct, (unsigned long long)want,
			 (unsigned long long)R->dups, (unsigned long long)R->recv_before_up,
			 (unsigned long long)R->errs, (unsigned long long)rs.sessions_lost,
			 (unsigned long long)rs.resumes);
		PAIR_CHECK(!R->ended, "a/R ended: %s", R->msg);
		PAIR_CHECK(want > 0 && R->distinct == want && R->dups == 0,
			   "a/R: %llu of %llu arrived, %llu twice", (unsigned long long)R->distinct,
			   (unsigned long long)want, (unsigned long long)R->dups);
		PAIR_CHECK(R->recv > R->recv_before_up, "a/R: nothing after the link came back");
		PAIR_CHECK(R->errs == 0, "a/R: %llu op errors", (unsigned long long)R->errs);
		PAIR_CHECK(rs.sessions_lost == 1 && rs.resumes == 1, "a/R: session lost %llu, resumed %llu",
			   (unsigned long long)rs.sessions_lost, (unsigned long long)rs.resumes);
	}
	PAIR_CHECK(S && L && N, "accepted %d connections", naccepted);
	if (S && L && N) {
		/* S gives up within its timeout x retries (plus pacing and a slow
		 * guest) once the peer went silent: by the transport's retry
		 * counter or, where rxe missed it, by op_timeout_ms. */
		PAIR_CHECK(S->ended && S->end_status == -ETIMEDOUT &&
			      (strstr(S->msg, "retry") || strstr(S->msg, "not complete within op_timeout_ms")),
		      "a/S: ended %d, status %d, %s", S->ended, S->end_status, S->msg);
		/* Its cause is checked above; the time only tells "by the transport
		 * or op_timeout_ms (1.2 s)" from "never" and from L's way (after
		 * the link is back): OUTAGE_S + 7 s on a loaded host's guest,
		 * whose timers fire late (CI once saw it over the 3.0 s this was). */
		PAIR_CHECK(S->ended && S->t_end > t_down - 0.5 && S->t_end - t_down < OUTAGE_S + 7.0,
		      "a/S ended %.3f s after the link went down", S->t_end - t_down);
		/* L outlives the outage on its own transport, and ends once the
		 * link is back by b's DREQ: b's library kept that CM id while its
		 * port was down (a DREQ sent then breaks rxe's QP1 for good, see
		 * linkdown-rping.sh) and destroyed it on IBV_EVENT_PORT_ACTIVE. */
		PAIR_CHECK(L->ended && L->t_end - t_down > OUTAGE_S - 1.0 && L->t_end - t_up < 30.0,
		      "a/L: ended %d, %.3f s after the link went down, %.3f s after it came up",
		      L->ended, L->t_end - t_down, L->t_end - t_up);
		PAIR_CHECK(L->ended && L->end_status == -ECONNRESET && strstr(L->msg, "without closing"),
		      "a/L: status %d, %s", L->end_status, L->msg);
		/* The listener took a new connection afterwards, which worked. */
		PAIR_CHECK(N->connected && !N->connect_status && N->recv > 0,
		      "a/N: connected %d status %d, %llu received", N->connected, N->connect_status,
		      (unsigned long long)N->recv);
		pair_say("server: S %s after %.3f s (%s); L %s%s; N: %llu received",
		    S->ended ? "ended" : "alive", S->t_end - t_down, S->msg,
		    L->ended ? "ended: " : "alive", L->ended ? L->msg : "",
		    (unsigned long long)N->recv);
	}
	for (i = 0; i < naccepted; i++) {
		ez_conn_close(acc[i].conn);
		free(acc[i].seen);
	}
	ez_listener_close(l);
	pair_spin(0.5);
	pair_put("server-done", "1");
	return pair_failures != 0;
}

/* ---- b: the client ----------------------------------------------------- */

static int client(void)
{
	struct side S = { .name = "b/S" }, L = { .name = "b/L" }, N = { .name = "b/N" },
		    R = { .name = "b/R" };
	struct ez_conn_opts ro = r_opts;
	struct ez_conn_stats rs;
	struct ez_conn_opts so = s_opts, lo = l_opts, no = { 0 };
	char port[16], buf[32];
	double end = pair_now() + 30, t_down, t_up;
	char first_msg[256] = "";
	int i, first_status = 0;

	while (!pair_get("port", port, sizeof(port)) && pair_now() < end)
		usleep(20000);
	ro.private_data = "R";
	ro.private_data_len = 1;
	so.private_data = "S";
	so.private_data_len = 1;
	lo.private_data = "L";
	lo.private_data_len = 1;
	no.private_data = "N";
	no.private_data_len = 1;
	if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &so, &cbs, &S, &S.conn) ||
	    ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &lo, &cbs, &L, &L.conn)) {
		pair_say("ez_connect: %s", ez_errmsg());
		return 1;
	}
	streams[nstreams++] = &S;
	streams[nstreams++] = &L;
	if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &ro, &cbs, &R, &R.conn)) {
		pair_say("ez_connect (R): %s", ez_errmsg());
		return 1;
	}
	streams[nstreams++] = &R;
	end = pair_now() + 30;
	while ((!S.connected || !L.connected) && pair_now() < end)
		pair_spin(0.02);
	while (!R.connected && pair_now() < end)
		pair_spin(0.02);
	PAIR_CHECK(R.connected && !R.connect_status, "connect R: %d %s", R.connect_status, R.msg);
	PAIR_CHECK(S.connected && !S.connect_status && L.connected && !L.connect_status,
	      "connects: S %d, L %d", S.connect_status, L.connect_status);
	pair_spin(1.5);
	PAIR_CHECK(S.recv > 0 && L.recv > 0, "no traffic before the outage");

	pair_say("ip link set eth0 down (for %.0f s)", OUTAGE_S);
	t_down = pair_now();
	if (system("ip link set eth0 down"))
		pair_failures++;
	/* After system(), which holds the loop itself, and after the 9p
	 * write. */
	pair_put("down", "1");
	gap_start();
	pair_spin(OUTAGE_S);
	gap_check("b");
	if (system("ip link set eth0 up"))
		pair_failures++;
	t_up = pair_now();
	pair_put("up", "1");
	pair_say("ip link set eth0 up");
	pair_spin(1.0);

	/* What the link-down side saw: the port event (-ENETDOWN) or the first
	 * send that rxe could not transmit (-EIO, local QP operation error)
	 * ends every connection at once, whatever its timeouts. */
	PAIR_CHECK(S.ended && L.ended, "b: S ended %d, L ended %d", S.ended, L.ended);
	PAIR_CHECK((S.end_status == -ENETDOWN && strstr(S.msg, "port 1 went down")) ||
	      (S.end_status == -EIO && strstr(S.msg, "local QP operation error")), "b/S: %d %s",
	      S.end_status, S.msg);
	PAIR_CHECK((L.end_status == -ENETDOWN && strstr(L.msg, "port 1 went down")) ||
	      (L.end_status == -EIO && strstr(L.msg, "local QP operation error")), "b/L: %d %s",
	      L.end_status, L.msg);
	/* The cause is checked above; the time tells "while the link was down"
	 * from "never": 2.85 s was measured with the host at load 15 (a README
	 * run beside two more VMs; 2.5 s was the bound then), so the bound is
	 * the outage plus a loaded guest's timer lateness. */
	PAIR_CHECK(S.ended && S.t_end > t_down && S.t_end - t_down < OUTAGE_S + 1.0 && L.ended &&
	      L.t_end > t_down && L.t_end - t_down < OUTAGE_S + 1.0,
	      "b: ended %.3f / %.3f s after the link went down", S.t_end - t_down, L.t_end - t_down);

	pair_say("neighbours after the outage:");
	fflush(stdout);
	if (system("ip neigh show dev eth0; ip link show eth0 | head -1; rdma link show"))
		pair_say("ip/rdma failed");
	/* The listener on a keeps accepting: connect again until it answers. */
	end = pair_now() + 60;
	for (i = 0; i < 12 && pair_now() < end; i++) {
		memset(&N, 0, sizeof(N));
		N.name = "b/N";
		no.connect_timeout_ms = 10000;
		if (ez_connect(ctx, getenv("EZ_PEER_ADDR"), port, &no, &cbs, &N, &N.conn))
			break;
		streams[3] = &N;
		nstreams = 4;
		while (!N.connected && pair_now() < end)
			pair_spin(0.02);
		if (!N.connect_status)
			break;
		if (!i) {
			first_status = N.connect_status;
			snprintf(first_msg, sizeof(first_msg), "%s", N.msg);
		}
		ez_conn_close(N.conn);
		pair_spin(0.3);
	}
	while (N.connected && !N.connect_status && N.recv < 3 && pair_now() < end)
		pair_spin(0.02);
	pair_say("b/N: %s %.1f s after the link came up, %d attempts",
	    N.connected && !N.connect_status ? "connected" : "gave up", pair_now() - t_up, i + 1);
	/* b's rdma_cm works at once: no CM message left while the port was down. */
	PAIR_CHECK(i == 0, "b/N: %d attempts (the first failed: %d %s)", i + 1, first_status, first_msg);
	PAIR_CHECK(N.connected && !N.connect_status && N.recv >= 3, "b/N: connected %d status %d (%s), %llu received",
	      N.connected, N.connect_status, N.msg, (unsigned long long)N.recv);
	/* R outlived the outage: its session resumed (b dials once its port
	 * is back), every send it took completed without error, and a counts
	 * that every one of them arrived once. */
	end = pair_now() + 60;
	memset(&rs, 0, sizeof(rs));
	while (!R.ended && pair_now() < end && (ez_conn_stats(R.conn, &rs) || !rs.resumes))
		pair_spin(0.05);
	R.quiet = 1;
	while (!R.ended && R.outstanding && pair_now() < end)
		pair_spin(0.05);
	pair_say("b/R: session lost %llu, resumed %llu after %llu dial(s); %llu sent, %llu op errors, %d outstanding",
		 (unsigned long long)rs.sessions_lost, (unsigned long long)rs.resumes,
		 (unsigned long long)rs.resume_dials, (unsigned long long)R.sent,
		 (unsigned long long)R.errs, R.outstanding);
	PAIR_CHECK(!R.ended, "b/R ended: %s", R.msg);
	PAIR_CHECK(rs.sessions_lost == 1 && rs.resumes == 1, "b/R: session lost %llu, resumed %llu",
		   (unsigned long long)rs.sessions_lost, (unsigned long long)rs.resumes);
	PAIR_CHECK(R.errs == 0 && R.outstanding == 0, "b/R: %llu op errors, %d outstanding",
		   (unsigned long long)R.errs, R.outstanding);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)R.sent);
	pair_put("r_sent", buf);
	pair_put("done", "1");
	end = pair_now() + 15;
	while (!pair_get("server-done", buf, sizeof(buf)) && pair_now() < end)
		pair_spin(0.05);
	ez_conn_close(S.conn);
	ez_conn_close(L.conn);
	ez_conn_close(N.conn);
	ez_conn_close(R.conn);
	pair_spin(0.5);
	return pair_failures != 0;
}

int main(void)
{
	ev_timer pace;
	int ret;

	host = getenv("EZ_HOST");
	if (pair_init() || !host || !getenv("EZ_TEST_ADDR") || !getenv("EZ_PEER_ADDR")) {
		fprintf(stderr, "linkdown: run me under `testbed pair` (see linkdown.sh)\n");
		return 2;
	}
	pair_loop = ev_default_loop(0);
	if (ez_ctx_new(pair_loop, 0, &ctx)) {
		pair_say("ez_ctx_new: %s", ez_errmsg());
		return 1;
	}
	ev_timer_init(&pace, on_pace, 0.01, 0.01);
	ev_timer_start(pair_loop, &pace);
	ret = strcmp(host, "a") == 0 ? server() : client();
	ev_timer_stop(pair_loop, &pace);
	if (ez_ctx_free(ctx))
		pair_say("ez_ctx_free: %s", ez_errmsg());
	pair_say("%s: %s (%d failed checks)", host, ret ? "FAILED" : "passed", pair_failures);
	return ret;
}
