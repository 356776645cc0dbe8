/* test_keepalive.c: dead-peer detection in one VM: a peer process that hangs (SIGSTOP) is found by keepalive probes, a send stuck behind a hung peer's credits by op_timeout_ms; keepalive agreed in the handshake, off on one side, and never sent to an older peer; forged keepalive messages refused. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "easyrdma.h"
#include "fault.h"
#include "../waits.h"
#include "rawcm.h"
#include "wire/handshake.h"
#include "wire/imm.h"
#include "../checkmain.h"

/* ---- a peer process that can be stopped -------------------------------- */

static void peer_main(int wfd, const struct ez_conn_opts *o)
{
	struct fb b;
	struct srv s = { 0 };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	fb_init(&b);
	s.opts = *o;
	s.no_echo = 1;
	srv_start(&b, &s, 8);
	if (write(wfd, s.port, sizeof(s.port)) != sizeof(s.port))
		_exit(4);
	close(wfd);
	for (;;)
		ev_run(b.loop, EVRUN_ONCE);
}

/* Forks the peer (before this process opens any device) and returns its pid. */
static pid_t peer_start(const struct ez_conn_opts *o, char port[8])
{
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		peer_main(fds[1], o);
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], port, 8), 8);
	close(fds[0]);
	return pid;
}

static void peer_kill(struct fb *b, pid_t pid)
{
	double end = now_s() + 10;
	int status;

	kill(pid, SIGKILL);
	while (waitpid(pid, &status, WNOHANG) == 0 && now_s() < end)
		fb_spin(b, 0.01);
}

static struct ez_conn_stats stats_of(struct ez_conn *c)
{
	struct ez_conn_stats st;

	ck_assert_int_eq(ez_conn_stats(c, &st), 0);
	return st;
}

/* A peer whose process is stopped: its HCA still ACKs every probe, only
 * its library's answer is missing. The connection ends with -ETIMEDOUT
 * after keepalive_probes intervals of probing, not before, and says so. */
START_TEST(hung_peer_found_by_probes)
{
	struct ez_conn_opts po = { 0 };
	struct ez_conn_opts o = { .keepalive_interval_ms = 200, .keepalive_probes = 3,
				  .connect_timeout_ms = 10000 };
	struct ez_conn_stats st;
	struct fb b;
	struct ep e = { 0 };
	char port[8], want[256];
	double t_stop, dt;
	pid_t pid = peer_start(&po, port);

	fb_init(&b);
	ck_assert_int_eq(ep_connect(&b, &e, port, &o), 0);
	ck_assert(fb_run(&b, &e.connected, 1, 10));
	ck_assert_int_eq(e.connect_status, 0);
	/* Idle and alive: probed and answered, nothing ends. */
	fb_spin(&b, 1.2);
	st = stats_of(e.conn);
	/* An answered probe makes the next interval busy: about one probe
	 * per two intervals (2 to 3 in a loaded guest). */
	ck_assert_msg(st.keepalives_sent >= 2, "%llu probes in 1.2 s of idleness",
		      (unsigned long long)st.keepalives_sent);
	ck_assert_int_eq(e.disconnected, 0);
	printf("alive peer: %llu probes answered in 1.2 s idle\n",
	       (unsigned long long)st.keepalives_sent);

	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	t_stop = now_s();
	ck_assert(fb_run(&b, &e.disconnected, 1, 10));
	dt = now_s() - t_stop;
	snprintf(want, sizeof(want),
		 "peer %s:%s: nothing received in 800 ms (3 keepalive probes sent, none answered; keepalive_interval_ms 200, keepalive_probes 3)",
		 test_addr(), port);
	ck_assert_int_eq(e.disconnect_status, -ETIMEDOUT);
	ck_assert_str_eq(e.disconnect_msg, want);
	printf("hung peer (SIGSTOP): on_disconnect(%d, \"%s\") %.3f s after the stop (bound: 200 ms x (3 + 2) = 1.0 s)\n",
	       e.disconnect_status, e.disconnect_msg, dt);
	/* Three intervals of probing after the last answer, at most two more
	 * for the tick's phase; the margin is the loaded machine's. */
	ck_assert_msg(dt >= 0.4 && dt < 1.0 + TIMER_LATE_S, "detected after %.3f s", dt);
	ep_close(&e);
	peer_kill(&b, pid);
	fb_spin(&b, 0.2);
	fb_fini(&b);
}
END_TEST

/* Two contexts on two loops of this thread: one runs while the other is
 * stalled, as a peer whose loop hangs. */
static int run_both(struct fb *a, struct fb *b, const volatile int *flag, int want, double secs)
{
	double end = now_s() + hang_ceiling(secs);

	while (*flag < want && now_s() < end) {
		ev_run(a->loop, EVRUN_NOWAIT);
		ev_run(b->loop, EVRUN_NOWAIT);
	}
	return *flag >= want;
}

/* A peer that is alive but whose loop stalled is ended by the other side's
 * keepalive, and told so in the goodbye: it reports -ETIMEDOUT naming the
 * peer's keepalive, not "disconnected without closing (process ended or
 * reset)", which is what a crashed peer looks like. */
START_TEST(stalled_peer_told_why)
{
	struct ez_conn_opts o = { .keepalive_interval_ms = 200, .keepalive_probes = 3 };
	struct fb bs, bc;
	struct srv s = { 0 };
	struct ep e = { 0 };
	char want[256];
	const char *got;

	fb_init(&bs);
	fb_init(&bc);
	s.no_echo = 1;
	srv_start(&bs, &s, 1);
	ck_assert_int_eq(ep_connect(&bc, &e, s.port, &o), 0);
	ck_assert(run_both(&bs, &bc, &e.connected, 1, 20));
	ck_assert_msg(e.connect_status == 0, "%s", e.connect_msg);
	ck_assert(run_both(&bs, &bc, &s.connected, 1, 20));
	/* The server's loop stalls: its HCA acknowledges the probes, its
	 * library answers none. */
	ck_assert(fb_run(&bc, &e.disconnected, 1, 20));
	ck_assert_int_eq(e.disconnect_status, -ETIMEDOUT);
	ck_assert_msg(strstr(e.disconnect_msg, ": nothing received in 800 ms (3 keepalive probes sent, none answered"),
		      "%s", e.disconnect_msg);
	/* It comes back: the goodbye says why it was cut off. */
	ck_assert(fb_run(&bs, &s.disconnected, 1, 20));
	ck_assert_int_eq(s.eps[0].disconnect_status, -ETIMEDOUT);
	got = s.eps[0].disconnect_msg;
	snprintf(want, sizeof(want),
		 " ended the connection: its keepalive heard nothing from this side in 800 ms (this side's loop or the link stalled; the peer is alive)");
	ck_assert_msg(strncmp(got, "peer ", 5) == 0 && strstr(got, want) &&
		      strlen(strstr(got, want)) == strlen(want), "%s", got);
	printf("stalled peer, on its return: on_disconnect(%d, \"%s\")\n",
	       s.eps[0].disconnect_status, got);
	ep_close(&e);
	srv_stop(&s);
	fb_spin(&bc, 0.2);
	fb_fini(&bc);
	fb_fini(&bs);
}
END_TEST

/* A send the hung peer's credits hold back ends the connection after
 * op_timeout_ms; its callback says -ETIMEDOUT, the others' -ECANCELED. */
static int cb_ok, cb_timedout, cb_canceled, cb_other;

static void count_cb(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)arg;
	if (!status)
		cb_ok++;
	else if (status == -ETIMEDOUT)
		cb_timedout++;
	else if (status == -ECANCELED)
		cb_canceled++;
	else
		cb_other++;
}

START_TEST(stuck_send_ends_at_op_timeout)
{
	struct ez_conn_opts po = { .recv_depth = 4 };	/* 3 credits for us */
	struct ez_conn_opts o = { .op_timeout_ms = 400, .connect_timeout_ms = 10000 };
	struct fb b;
	struct ep e = { 0 };
	char port[8], want[256];
	uint64_t v = 7;
	double t0, dt;
	int i;
	pid_t pid = peer_start(&po, port);

	fb_init(&b);
	ck_assert_int_eq(ep_connect(&b, &e, port, &o), 0);
	ck_assert(fb_run(&b, &e.connected, 1, 10));
	ck_assert_int_eq(e.connect_status, 0);
	/* Traffic that completes does not trip the deadline. */
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(ez_send(e.conn, &v, sizeof(v), count_cb, NULL), 0);
		fb_spin(&b, 0.3);
	}
	ck_assert_int_eq(cb_ok, 3);
	ck_assert_int_eq(e.disconnected, 0);

	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	fb_spin(&b, 0.1);
	t0 = now_s();
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(ez_send(e.conn, &v, sizeof(v), count_cb, NULL), 0);
	ck_assert(fb_run(&b, &e.disconnected, 1, 10));
	dt = now_s() - t0;
	snprintf(want, sizeof(want),
		 "peer %s:%s: SEND of 8 bytes waiting for the peer's credits not complete within op_timeout_ms 400",
		 test_addr(), port);
	ck_assert_int_eq(e.disconnect_status, -ETIMEDOUT);
	ck_assert_str_eq(e.disconnect_msg, want);
	fb_spin(&b, 0.3);
	printf("stuck send: on_disconnect(%d, \"%s\") %.3f s after the sends (bound 1.5 x 400 ms); callbacks: %d ok, %d -ETIMEDOUT, %d -ECANCELED\n",
	       e.disconnect_status, e.disconnect_msg, dt, cb_ok, cb_timedout, cb_canceled);
	ck_assert_msg(dt >= 0.4 && dt < 0.6 + TIMER_LATE_S, "ended after %.3f s", dt);
	/* The peer's receive window: 3 credits, the first of which the
	 * earlier sends may have had back. */
	ck_assert_int_eq(cb_timedout, 1);
	ck_assert_int_eq(cb_other, 0);
	ck_assert_int_eq(cb_ok + cb_timedout + cb_canceled, 9);
	ep_close(&e);
	peer_kill(&b, pid);
	fb_spin(&b, 0.2);
	fb_fini(&b);
}
END_TEST

/* ---- negotiation, in one process ---------------------------------------- */

/* Keepalive on at one side only: that side probes, the other answers and
 * sends none; and with it on at both, an idle pair stays up. */
static void one_sided(int client_on, int server_on)
{
	struct fb b;
	struct srv s = { 0 };
	struct ez_conn_opts o = { .keepalive_interval_ms = client_on ? 150 : 0,
				  .op_timeout_ms = 300 };
	struct ez_conn_stats cs, ss;
	struct ep e = { 0 };

	fb_init(&b);
	s.opts.keepalive_interval_ms = server_on ? 150 : 0;
	srv_start(&b, &s, 4);
	ck_assert_int_eq(ep_connect(&b, &e, s.port, &o), 0);
	ck_assert(fb_run(&b, &e.connected, 1, 10));
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	fb_spin(&b, 1.2);
	cs = stats_of(e.conn);
	ss = stats_of(s.eps[0].conn);
	printf("keepalive client %s, server %s: probes client->server %llu (received %llu), server->client %llu (received %llu)\n",
	       client_on ? "on" : "off", server_on ? "on" : "off",
	       (unsigned long long)cs.keepalives_sent, (unsigned long long)ss.keepalives_recv,
	       (unsigned long long)ss.keepalives_sent, (unsigned long long)cs.keepalives_recv);
	ck_assert_int_eq(e.disconnected, 0);
	ck_assert_int_eq(s.eps[0].disconnected, 0);
	if (client_on)
		ck_assert_uint_ge(cs.keepalives_sent, 2);
	else
		ck_assert_uint_eq(cs.keepalives_sent, 0);
	if (server_on)
		ck_assert_uint_ge(ss.keepalives_sent, 2);
	else
		ck_assert_uint_eq(ss.keepalives_sent, 0);
	/* What one side sent, the other received (give or take one in flight). */
	ck_assert_uint_le(cs.keepalives_sent - ss.keepalives_recv, 1);
	ck_assert_uint_le(ss.keepalives_sent - cs.keepalives_recv, 1);
	/* Nothing reached the application. */
	ck_assert_int_eq(e.received, 0);
	ck_assert_int_eq(s.eps[0].received, 0);
	/* Data flows as before, op_timeout_ms 300 never trips. */
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(ep_send_seq(&e, (uint64_t)i), 0);
		fb_spin(&b, 0.02);
	}
	ck_assert(fb_run(&b, &e.received, 20, 5));
	ck_assert_int_eq(e.bad_seq, 0);
	ep_close(&e);
	ck_assert(fb_run(&b, &e.disconnected, 1, 5));
	ck_assert_int_eq(e.disconnect_status, 0);
	srv_stop(&s);
	fb_fini(&b);
}

START_TEST(keepalive_on_client_only)
{
	one_sided(1, 0);
}
END_TEST

START_TEST(keepalive_on_server_only)
{
	one_sided(0, 1);
}
END_TEST

START_TEST(keepalive_on_both)
{
	one_sided(1, 1);
}
END_TEST

/* A client reading its peer's memory all along, nothing else. */
struct reader {
	struct ez_conn *conn;
	struct ez_mr *mr;
	struct ez_rkey key;
	int loop, reads, errors;
};

static void on_read(struct ez_conn *conn, int status, void *arg)
{
	struct reader *r = arg;

	(void)conn;
	if (status) {
		r->errors++;
		return;
	}
	r->reads++;
	if (r->loop)
		ck_assert_int_eq(ez_read(r->conn, r->mr, 0, 64, &r->key, 0, on_read, r), 0);
}

/* One-sided traffic is life (issue 42 item 3): a client whose only traffic
 * is RDMA READs from a server whose loop does not run (it answers no
 * probe, as a peer busy with bulk of its own answers late) stays up
 * through 12 keepalive intervals (200 ms, 3 probes): its reads came back.
 * It was ended at the first window ("nothing received in 800 ms"). Once
 * the reads stop, the silence is found as before, with the same words. */
START_TEST(one_sided_traffic_is_life)
{
	struct fb sb, cb;
	struct srv s = { 0 };
	struct ez_conn_opts o = { .keepalive_interval_ms = 200, .keepalive_probes = 3 };
	struct ez_mr *smr;
	struct ez_conn_stats st;
	struct reader r = { 0 };
	struct ep e = { 0 };
	static char sbuf[4096], cbuf[4096];
	char want[256];
	double t0;

	fb_init(&sb);
	fb_init(&cb);
	srv_start(&sb, &s, 2);
	ck_assert_int_eq(ez_connect(cb.ctx, test_addr(), s.port, &o, &ep_cbs, &e, &e.conn), 0);
	t0 = now_s();
	while ((!e.connected || !s.connected) && now_s() < t0 + 30) {
		fb_spin(&sb, 0.002);
		fb_spin(&cb, 0.002);
	}
	ck_assert_int_eq(e.connect_status, 0);
	ck_assert_int_eq(s.connected, 1);
	ck_assert_int_eq(ez_mr_reg(sb.ctx, NULL, sbuf, sizeof(sbuf), EZ_MR_REMOTE_READ, &smr), 0);
	ck_assert_int_eq(ez_conn_export(s.eps[0].conn, smr, 0, sizeof(sbuf), EZ_MR_REMOTE_READ, &r.key), 0);
	ck_assert_int_eq(ez_mr_reg(cb.ctx, NULL, cbuf, sizeof(cbuf), 0, &r.mr), 0);
	r.conn = e.conn;
	r.loop = 1;
	ck_assert_int_eq(ez_read(r.conn, r.mr, 0, 64, &r.key, 0, on_read, &r), 0);
	/* The server's loop does not run from here on. */
	fb_spin(&cb, 2.4);
	st = stats_of(e.conn);
	printf("one-sided only: %d reads in 2.4 s (12 keepalive intervals of 200 ms), %llu probes sent, none answered: %s\n",
	       r.reads, (unsigned long long)st.keepalives_sent,
	       e.disconnected ? e.disconnect_msg : "still connected");
	ck_assert_msg(!e.disconnected, "ended: on_disconnect(%d) \"%s\"", e.disconnect_status,
		      e.disconnect_msg);
	ck_assert_int_eq(r.errors, 0);
	ck_assert_int_gt(r.reads, 0);
	/* The reads stop: the server, still not run, answers nothing. */
	r.loop = 0;
	ck_assert(fb_run(&cb, &r.reads, r.reads + 1, 10));	/* the one outstanding */
	ck_assert(fb_run(&cb, &e.disconnected, 1, 10));
	snprintf(want, sizeof(want),
		 "peer %s:%s: nothing received in 800 ms (3 keepalive probes sent, none answered; keepalive_interval_ms 200, keepalive_probes 3)",
		 test_addr(), s.port);
	ck_assert_int_eq(e.disconnect_status, -ETIMEDOUT);
	ck_assert_str_eq(e.disconnect_msg, want);
	ep_close(&e);
	ck_assert_int_eq(ez_mr_dereg(r.mr), 0);
	fb_spin(&sb, 0.5);
	srv_stop(&s);
	ck_assert_int_eq(ez_mr_dereg(smr), 0);
	fb_fini(&cb);
	fb_fini(&sb);
}
END_TEST

/* An older peer (a handshake without HS_CAP_KEEPALIVE) is never probed:
 * its library would refuse the immediate bits. The reply tells a raw peer
 * that announced nothing that this side answers probes. */
START_TEST(older_peer_not_probed)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	struct ez_conn_stats st;

	fb_init(&b);
	s.opts.keepalive_interval_ms = 100;
	s.no_echo = 1;
	srv_start(&b, &s, 4);
	raw_ez_caps = HS_CAP_CREDITS;
	raw_ez_connect(&b, &r, s.port, 8, 4096, 16, 256);
	ck_assert_uint_eq(r.rep_caps & HS_CAP_KEEPALIVE, HS_CAP_KEEPALIVE);
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	for (double end = now_s() + 0.8; now_s() < end;) {
		raw_ez_poll(&r);
		fb_spin(&b, 0.01);
	}
	st = stats_of(s.eps[0].conn);
	ck_assert_uint_eq(st.keepalives_sent, 0);
	ck_assert_uint_eq(r.recvs, 0);
	ck_assert_int_eq(s.eps[0].disconnected, 0);
	printf("older peer: 0 probes in 0.8 s at keepalive_interval_ms 100, connection up\n");
	raw_free(&r);
	ck_assert(fb_run(&b, &s.eps[0].disconnected, 1, 5));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* A raw peer forges keepalive messages: the server ends that connection
 * with -EPROTO and the rule broken. */
static void forged(uint16_t caps, uint32_t imm, uint32_t len, const char *want)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	struct ep *e;

	fb_init(&b);
	s.no_echo = 1;
	srv_start(&b, &s, 4);
	raw_ez_caps = caps;
	raw_ez_connect(&b, &r, s.port, 8, 4096, 16, 256);
	raw_ez_caps = HS_CAP_CREDITS;
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	e = &s.eps[0];
	ck_assert_int_eq(raw_ez_send(&r, imm, len), 0);
	ck_assert(fb_run(&b, &e->disconnected, 1, 10));
	ck_assert_int_eq(e->disconnect_status, -EPROTO);
	ck_assert_str_eq(e->disconnect_msg, want);
	printf("forged imm 0x%08x: server on_disconnect(%d) \"%s\"\n", imm, e->disconnect_status,
	       e->disconnect_msg);
	raw_free(&r);
	srv_stop(&s);
	fb_fini(&b);
}

START_TEST(forged_keepalive_refused)
{
	forged(HS_CAP_CREDITS, IMM_KA_PROBE, 0,
	       "peer sent a keepalive message (immediate 0x88000000) but did not announce keepalive in its handshake");
	forged(HS_CAP_CREDITS | HS_CAP_KEEPALIVE, IMM_KA_ANSWER, 0,
	       "peer answered a keepalive probe this side did not send (0 sent, 0 answered)");
	forged(HS_CAP_CREDITS | HS_CAP_KEEPALIVE, IMM_KA_PROBE | 4, 0,
	       "peer's control message (immediate 0x88000004) carries 4 credits");
	forged(HS_CAP_CREDITS | HS_CAP_KEEPALIVE, IMM_KA_PROBE, 16,
	       "peer sent 16 bytes on a credit-only message (immediate 0x88000000)");
}
END_TEST

/* A raw peer that announced keepalive and probes: answered, 0 bytes, no
 * credits, and the connection stays. */
START_TEST(raw_probe_answered)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	uint32_t imm;

	fb_init(&b);
	s.no_echo = 1;
	srv_start(&b, &s, 4);
	raw_ez_caps = HS_CAP_CREDITS | HS_CAP_KEEPALIVE;
	raw_ez_connect(&b, &r, s.port, 8, 4096, 16, 256);
	raw_ez_caps = HS_CAP_CREDITS;
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	ck_assert_int_eq(raw_ez_send(&r, IMM_KA_PROBE, 0), 0);
	imm = raw_recv_imm(&b, &r, 5);
	ck_assert_uint_eq(imm, IMM_KA_ANSWER);
	ck_assert_uint_eq(r.recv_len, 0);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(s.eps[0].disconnected, 0);
	ck_assert_uint_eq(stats_of(s.eps[0].conn).keepalives_recv, 1);
	raw_free(&r);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* A raw peer probes in batches of 100, waiting for one answer per batch
 * (so never 255 probes behind an answer: RX_F_KA_FLOOD's rule): at one
 * batch per round trip it passes 20 probes a second on any host that makes
 * a round trip in under 5 s. The server answers the first 256 (the burst)
 * and one per 50 ms after, then cuts the peer with the rate in its
 * message; the address is refused from then (access_fail_limit 1). */
START_TEST(probe_flood_cut)
{
	struct fb b;
	struct srv s = { 0 };
	struct raw r;
	struct ep *e;
	struct ibv_wc wc[16];
	int sent = 0, done = 0, answers = 0, i, n;
	double t0, took;
	char why[200];

	fb_init(&b);
	s.no_echo = 1;
	s.access_fail_limit = 1;
	srv_start(&b, &s, 4);
	raw_ez_caps = HS_CAP_CREDITS | HS_CAP_KEEPALIVE;
	raw_ez_connect(&b, &r, s.port, 8, 4096, 128, 256);
	raw_ez_caps = HS_CAP_CREDITS;
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	e = &s.eps[0];
	t0 = now_s();
	while (!e->disconnected && now_s() - t0 < hang_ceiling(60)) {
		int batch_answers = answers;

		for (i = 0; i < 100; i++, sent++)
			ck_assert_int_eq(raw_ez_send(&r, IMM_KA_PROBE, 0), 0);
		/* Every send completed (the CQ holds 264) and an answer came,
		 * or the server cut the peer. */
		while (!e->disconnected && (done < sent || answers == batch_answers) &&
		       now_s() - t0 < hang_ceiling(60)) {
			n = ibv_poll_cq(r.cq, 16, wc);
			ck_assert_int_ge(n, 0);
			for (i = 0; i < n; i++) {
				if (wc[i].opcode & IBV_WC_RECV) {
					answers++;
					ck_assert_int_eq(raw_repost_recv(&r), 0);
				} else {
					done++;
				}
			}
			if (!n)
				fb_spin(&b, 0.001);
		}
	}
	took = now_s() - t0;
	ck_assert_msg(e->disconnected, "not cut after %d probes in %.1f s", sent, took);
	ck_assert_int_eq(e->disconnect_status, -EPROTO);
	ck_assert_str_eq(e->disconnect_msg, "peer sent keepalive probes faster than 20 a second (256 at once, then one per 50 ms; an easyrdma peer probes at most once per keepalive_interval_ms, >= 100 ms)");
	/* The burst is always taken; then one per 50 ms; the cut comes with
	 * the first beyond. The raw side sends whole batches and sees the cut
	 * only at the server's on_disconnect (after the teardown's drain): the
	 * batch the cut fell in and the next may have gone out too. */
	ck_assert_int_gt(sent, 256);
	ck_assert_int_le(sent, 257 + (int)(took * 20) + 2 * 100);
	ck_assert_int_le(answers, sent);
	printf("probe flood: %d probes sent in %.2f s (%.0f a second), %d answered, then cut: \"%s\"\n",
	       sent, took, sent / took, answers, e->disconnect_msg);
	raw_free(&r);
	/* Refused from then on, with the reason. */
	raw_expect_penalized(&b, s.port, 1, why, sizeof(why));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keepalive");
	TCase *tc = tcase_create("keepalive");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, hung_peer_found_by_probes);
	tcase_add_test(tc, stalled_peer_told_why);
	tcase_add_test(tc, stuck_send_ends_at_op_timeout);
	tcase_add_test(tc, keepalive_on_client_only);
	tcase_add_test(tc, keepalive_on_server_only);
	tcase_add_test(tc, keepalive_on_both);
	tcase_add_test(tc, one_sided_traffic_is_life);
	tcase_add_test(tc, older_peer_not_probed);
	tcase_add_test(tc, forged_keepalive_refused);
	tcase_add_test(tc, raw_probe_answered);
	tcase_add_test(tc, probe_flood_cut);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
