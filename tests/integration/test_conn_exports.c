/* test_conn_exports.c: regions given with the connection (ez_conn_opts.exports) on a real device: the peer's keys in hand in on_connect both ways, one-sided ops from on_connect with no message first, isolation between connections, a shared secret and two paths, the refusals. */
#include <check.h>
#include <errno.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "testenv.h"
#include "../checkmain.h"
#include "../waits.h"

#define MAXC 3
#define REG 4096		/* bytes of each region */
#define SLICE (2 * REG)		/* a client's slice of the server's arena: read, then write */
#define NMSG 40			/* messages each client sends from its on_connect */

/* One loop, one context, a listener, clients and their servers. The
 * server gives each client two regions of one arena (issue 39's case: a
 * slice each), the client gives the server one. */
static struct {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	ev_timer tick;
	char port[8];
	struct ez_conn_opts sopts;
	struct ez_conn *srv[MAXC], *cli[MAXC];
	int nsrv, srv_up, cli_up, cli_status[MAXC];
	char cli_msg[MAXC][256];
	/* memory */
	uint8_t *arena, *cli_mem[MAXC], *cli_read[MAXC], *cli_src[MAXC], *srv_src;
	struct ez_mr *arena_mr, *cli_mr[MAXC], *cli_read_mr[MAXC], *cli_src_mr[MAXC], *srv_src_mr;
	/* what the callbacks saw */
	struct ez_rkey cli_keys[MAXC][2];
	unsigned int cli_nkeys[MAXC], cli_nown[MAXC], srv_nkeys[MAXC];
	int ops_done, ops_bad, ops_status[8];
	int msgs[MAXC], msgs_out_of_order, send_bad;
	int down;
	int plain;		/* neither side gives regions (the figure's baseline) */
} B;

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static int run_until(const int *flag, int want, double secs)
{
	double end = now_s() + hang_ceiling(secs);

	while (*flag < want && now_s() < end)
		ev_run(B.loop, EVRUN_ONCE);
	return *flag >= want;
}

static void op_done(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)arg;
	if (status) {
		if (B.ops_bad < 8)
			B.ops_status[B.ops_bad] = status;
		B.ops_bad++;
	}
	B.ops_done++;
}

static int conn_index(struct ez_conn *const *tab, struct ez_conn *conn)
{
	for (int i = 0; i < MAXC; i++)
		if (tab[i] == conn)
			return i;
	return -1;
}

/* The server: the client's region is in hand; write "SRV>CLI-i" into it. */
static void srv_on_connect(struct ez_conn *conn, int status, void *arg)
{
	int i = (int)(intptr_t)arg;
	const struct ez_rkey *k;
	unsigned int n = 99;

	ck_assert_msg(status == 0, "server on_connect: %d %s", status, ez_conn_errmsg(conn));
	k = ez_conn_peer_exports(conn, &n);
	B.srv_nkeys[i] = n;
	B.srv_up++;
	if (!n)
		return;
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(k[0].len, REG);
	snprintf((char *)B.srv_src + i * 64, 64, "SRV>CLI-%d", i);
	ck_assert_msg(ez_write(conn, B.srv_src_mr, (size_t)i * 64, 64, &k[0], 0, op_done, NULL) == 0,
		      "ez_write from on_connect: %s", ez_errmsg());
}

static void srv_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	int i = (int)(intptr_t)arg, seq;

	(void)conn;
	memcpy(&seq, ez_buf_data(buf), sizeof(seq));
	if (seq != B.msgs[i])
		B.msgs_out_of_order++;
	B.msgs[i]++;
	ez_buf_release(buf);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)status;
	(void)arg;
	B.down++;
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct ez_conn_cbs cbs = { .on_connect = srv_on_connect, .on_recv = srv_on_recv,
				   .on_disconnect = on_disconnect };
	struct ez_export ex[2] = {
		{ .mr = B.arena_mr, .off = (uint64_t)B.nsrv * SLICE, .len = REG,
		  .access = EZ_MR_REMOTE_READ },
		{ .mr = B.arena_mr, .off = (uint64_t)B.nsrv * SLICE + REG, .len = REG,
		  .access = EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_READ },
	};
	struct ez_conn_opts o = B.sopts;

	(void)l;
	(void)arg;
	ck_assert_int_lt(B.nsrv, MAXC);
	o.exports = ex;		/* copied by ez_accept: a stack array is fine */
	o.nexports = B.plain ? 0 : 2;
	ck_assert_msg(ez_accept(req, &o, &cbs, (void *)(intptr_t)B.nsrv, &B.srv[B.nsrv]) == 0,
		      "ez_accept: %s", ez_errmsg());
	B.nsrv++;
}

/* The client: the server's two keys are in hand; read the first region,
 * write the second, and send NMSG numbered messages, all from here. */
static void cli_on_connect(struct ez_conn *conn, int status, void *arg)
{
	int i = (int)(intptr_t)arg;
	const struct ez_rkey *k;
	unsigned int n = 99, m = 99;

	B.cli_status[i] = status;
	snprintf(B.cli_msg[i], sizeof(B.cli_msg[i]), "%s", ez_conn_errmsg(conn));
	B.cli_up++;
	if (status)
		return;
	k = ez_conn_peer_exports(conn, &n);
	ez_conn_own_exports(conn, &m);
	B.cli_nkeys[i] = n;
	B.cli_nown[i] = m;
	if (B.plain) {
		ck_assert_ptr_null(k);
		ck_assert_uint_eq(n, 0);
		return;
	}
	ck_assert_uint_eq(n, 2);
	memcpy(B.cli_keys[i], k, 2 * sizeof(*k));
	ck_assert_msg(ez_read(conn, B.cli_read_mr[i], 0, REG, &k[0], 0, op_done, NULL) == 0,
		      "ez_read from on_connect: %s", ez_errmsg());
	snprintf((char *)B.cli_src[i], REG, "CLI>SRV-%d", i);
	ck_assert_msg(ez_write(conn, B.cli_src_mr[i], 0, 64, &k[1], 0, op_done, NULL) == 0,
		      "ez_write from on_connect: %s", ez_errmsg());
	for (int s = 0; s < NMSG; s++)
		if (ez_send(conn, &s, sizeof(s), NULL, NULL))
			B.send_bad++;
}

static struct ez_mr *reg(void *p, size_t len, unsigned int access)
{
	struct ez_mr *mr;

	ck_assert_msg(ez_mr_reg(B.ctx, NULL, p, len, access, &mr) == 0, "ez_mr_reg: %s",
		      ez_errmsg());
	return mr;
}

static void bench_init(const struct ez_listen_opts *lo)
{
	memset(&B, 0, sizeof(B));
	B.loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(B.loop);
	ck_assert_int_eq(ez_ctx_new(B.loop, 0, &B.ctx), 0);
	ev_timer_init(&B.tick, on_tick, 0.02, 0.02);
	ev_timer_start(B.loop, &B.tick);
	ck_assert_msg(ez_listen(B.ctx, test_addr(), "0", lo, on_request, NULL, &B.listener) == 0,
		      "ez_listen: %s", ez_errmsg());
	snprintf(B.port, sizeof(B.port), "%u", ez_listener_port(B.listener));
	B.arena = calloc(MAXC, SLICE);
	B.srv_src = calloc(MAXC, 64);
	ck_assert(B.arena && B.srv_src);
	for (int i = 0; i < MAXC; i++) {
		snprintf((char *)B.arena + i * SLICE, REG, "SECRET-OF-CLIENT-%d", i);
		B.cli_mem[i] = calloc(1, REG);
		B.cli_read[i] = calloc(1, REG);
		B.cli_src[i] = calloc(1, REG);
		ck_assert(B.cli_mem[i] && B.cli_read[i] && B.cli_src[i]);
		B.cli_mr[i] = reg(B.cli_mem[i], REG, EZ_MR_REMOTE_WRITE);
		B.cli_read_mr[i] = reg(B.cli_read[i], REG, 0);
		B.cli_src_mr[i] = reg(B.cli_src[i], REG, 0);
	}
	B.arena_mr = reg(B.arena, MAXC * SLICE, EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE);
	B.srv_src_mr = reg(B.srv_src, MAXC * 64, 0);
}

static void connect_one(int i, struct ez_conn_opts o)
{
	struct ez_conn_cbs cbs = { .on_connect = cli_on_connect, .on_disconnect = on_disconnect };
	struct ez_export ex = { .mr = B.cli_mr[i], .off = 0, .len = REG,
				.access = EZ_MR_REMOTE_WRITE };

	o.exports = &ex;
	o.nexports = B.plain ? 0 : 1;
	ck_assert_msg(ez_connect(B.ctx, test_addr(), B.port, &o, &cbs, (void *)(intptr_t)i,
				 &B.cli[i]) == 0, "ez_connect: %s", ez_errmsg());
}

static void bench_fini(void)
{
	for (int i = 0; i < MAXC; i++)
		if (B.cli[i])
			ez_conn_close(B.cli[i]);
	for (int i = 0; i < B.nsrv; i++)
		ez_conn_close(B.srv[i]);
	ez_listener_close(B.listener);
	/* The MRs go once the posted ops that use them are done: wait for
	 * that, with a ceiling that only catches a hang. */
	{
		struct ez_mr **mrs[3 * MAXC + 2];
		int n = 0, left;
		double end = now_s() + CTX_FREE_CEILING_S;

		for (int i = 0; i < MAXC; i++) {
			mrs[n++] = &B.cli_mr[i];
			mrs[n++] = &B.cli_read_mr[i];
			mrs[n++] = &B.cli_src_mr[i];
		}
		mrs[n++] = &B.arena_mr;
		mrs[n++] = &B.srv_src_mr;
		do {
			left = 0;
			for (int i = 0; i < n; i++) {
				if (*mrs[i] && ez_mr_dereg(*mrs[i]) == 0)
					*mrs[i] = NULL;
				left += *mrs[i] != NULL;
			}
			if (left)
				ev_run(B.loop, EVRUN_ONCE);
		} while (left && now_s() < end);
		ck_assert_msg(left == 0, "%d MRs still busy: %s", left, ez_errmsg());
	}
	ck_assert_msg(ctx_free_when_idle(B.loop, B.ctx, CTX_FREE_CEILING_S) == 0, "ez_ctx_free: %s",
		      ez_errmsg());
	ev_timer_stop(B.loop, &B.tick);
	ev_loop_destroy(B.loop);
	for (int i = 0; i < MAXC; i++) {
		free(B.cli_mem[i]);
		free(B.cli_read[i]);
		free(B.cli_src[i]);
	}
	free(B.arena);
	free(B.srv_src);
}

/* nclients connect with opts; each side's one-sided ops from on_connect
 * land, byte for byte, in the slice given to that client alone. */
static void given_case(int nclients, const struct ez_listen_opts *lo, struct ez_conn_opts co)
{
	char want[64];

	for (int i = 0; i < nclients; i++)
		connect_one(i, co);
	ck_assert_msg(run_until(&B.cli_up, nclients, 20), "%d of %d clients up", B.cli_up, nclients);
	for (int i = 0; i < nclients; i++)
		ck_assert_msg(B.cli_status[i] == 0, "client %d: %d %s", i, B.cli_status[i],
			      B.cli_msg[i]);
	ck_assert_msg(run_until(&B.srv_up, nclients, 20), "%d of %d servers up", B.srv_up,
		      nclients);
	/* Each client: a read and a write; each server: a write. */
	ck_assert_msg(run_until(&B.ops_done, 3 * nclients, 20), "%d of %d ops done", B.ops_done,
		      3 * nclients);
	ck_assert_msg(B.ops_bad == 0, "%d ops failed, first %d", B.ops_bad, B.ops_status[0]);
	for (int i = 0; i < nclients; i++) {
		int s = conn_index(B.srv, B.srv[i]);

		ck_assert_int_eq(s, i);
		ck_assert_uint_eq(B.cli_nkeys[i], 2);
		ck_assert_uint_eq(B.cli_nown[i], 1);
		ck_assert_uint_eq(B.srv_nkeys[i], 1);
		/* The keys are for the slice given, not the arena. */
		ck_assert_uint_eq(B.cli_keys[i][0].addr, (uintptr_t)B.arena + (size_t)i * SLICE);
		ck_assert_uint_eq(B.cli_keys[i][1].addr, (uintptr_t)B.arena + (size_t)i * SLICE + REG);
		snprintf(want, sizeof(want), "SECRET-OF-CLIENT-%d", i);
		ck_assert_str_eq((char *)B.cli_read[i], want);
		snprintf(want, sizeof(want), "CLI>SRV-%d", i);
		ck_assert_str_eq((char *)B.arena + i * SLICE + REG, want);
		snprintf(want, sizeof(want), "SRV>CLI-%d", i);
		ck_assert_str_eq((char *)B.cli_mem[i], want);
	}
	/* The messages sent from on_connect: every one, in order (those that
	 * overtook the client's exports on another path were held). */
	for (int i = 0; i < nclients; i++)
		ck_assert_msg(run_until(&B.msgs[i], NMSG, 20), "client %d: %d of %d messages", i,
			      B.msgs[i], NMSG);
	ck_assert_int_eq(B.send_bad, 0);
	ck_assert_int_eq(B.msgs_out_of_order, 0);
	(void)lo;
}

START_TEST(given_both_ways)
{
	struct ez_conn_opts co = { 0 };
	int done;

	bench_init(NULL);
	given_case(2, NULL, co);
	/* Client 0 with client 1's key, on its own connection: refused by the
	 * device, nothing read, and client 0's connection says why. */
	memset(B.cli_read[0], 0, REG);
	done = B.ops_done;
	ck_assert_int_eq(ez_read(B.cli[0], B.cli_read_mr[0], 0, REG, &B.cli_keys[1][0], 0, op_done,
				 NULL), 0);
	ck_assert_msg(run_until(&B.ops_done, done + 1, 20), "the stolen read never ended");
	ck_assert_msg(B.ops_bad == 1, "a read with another connection's key: %d failures", B.ops_bad);
	ck_assert_msg(strstr((char *)B.cli_read[0], "SECRET") == NULL,
		      "client 0 read client 1's region: %s", (char *)B.cli_read[0]);
	printf("given with the connection: 2 clients x (2 regions from the server, 1 to it), read, write and %d messages from on_connect verified; a read with the other client's key: %d (%s)\n",
	       NMSG, B.ops_status[0], ez_strerror(B.ops_status[0]));
	bench_fini();
}
END_TEST

START_TEST(given_keyed_on_two_paths)
{
	static const char key[] = "0123456789abcdef0123456789abcdef";
	struct ez_listen_opts lo = { .auth_key = key, .auth_key_len = 32 };
	struct ez_conn_opts co = { .auth_key = key, .auth_key_len = 32, .paths = 2 };

	bench_init(&lo);
	B.sopts.paths = 2;
	given_case(3, &lo, co);
	printf("given with the connection, shared secret, 2 paths: 3 clients verified\n");
	bench_fini();
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A figure, not a verdict: ez_connect() to on_connect, one connection at
 * a time, with and without regions given both ways. */
START_TEST(connect_time_printed)
{
	enum { RUNS = 7 };
	double t[2][RUNS];

	for (int plain = 1; plain >= 0; plain--)
		for (int r = 0; r < RUNS; r++) {
			double t0;

			bench_init(NULL);
			B.plain = plain;
			t0 = now_s();
			connect_one(0, (struct ez_conn_opts){ 0 });
			ck_assert_msg(run_until(&B.cli_up, 1, 20), "client not up");
			t[plain][r] = now_s() - t0;
			ck_assert_msg(B.cli_status[0] == 0, "%d %s", B.cli_status[0], B.cli_msg[0]);
			ck_assert_msg(run_until(&B.srv_up, 1, 20), "server not up");
			ck_assert_uint_eq(B.srv_nkeys[0], plain ? 0 : 1);
			bench_fini();
		}
	qsort(t[0], RUNS, sizeof(double), cmp_double);
	qsort(t[1], RUNS, sizeof(double), cmp_double);
	printf("connect to on_connect, median of %d: %.2f ms without regions, %.2f ms with 2 from the listener and 1 from the client\n",
	       RUNS, t[1][RUNS / 2] * 1e3, t[0][RUNS / 2] * 1e3);
}
END_TEST

/* What is refused, and how it says so. */
START_TEST(refusals)
{
	struct ez_conn_opts co = { 0 };
	struct ez_conn_cbs cbs = { .on_connect = cli_on_connect, .on_disconnect = on_disconnect };
	struct ez_export ex[EZ_CONN_EXPORTS_MAX + 1];
	struct ez_conn *c = NULL;
	unsigned int n = 99;

	bench_init(NULL);
	for (int i = 0; i <= EZ_CONN_EXPORTS_MAX; i++)
		ex[i] = (struct ez_export){ .mr = B.cli_mr[0], .len = 64,
					    .access = EZ_MR_REMOTE_WRITE };
	co.exports = ex;
	co.nexports = EZ_CONN_EXPORTS_MAX + 1;
	ck_assert_int_eq(ez_connect(B.ctx, test_addr(), B.port, &co, &cbs, NULL, &c), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.nexports 9 with exports set (0..8 regions)");
	co.nexports = 1;
	ex[0].access = EZ_MR_REMOTE_READ;	/* the MR has remote write only */
	ck_assert_int_eq(ez_connect(B.ctx, test_addr(), B.port, &co, &cbs, NULL, &c), -EPERM);
	ck_assert_str_eq(ez_errmsg(),
			 "ez_conn_opts.exports[0]: access 0x1 exceeds the MR's registration (0x2)");
	ex[0].access = EZ_MR_REMOTE_WRITE;
	ex[0].off = REG - 8;
	ck_assert_int_eq(ez_connect(B.ctx, test_addr(), B.port, &co, &cbs, NULL, &c), -EINVAL);
	ck_assert_str_eq(ez_errmsg(),
			 "ez_conn_opts.exports[0]: [4088, +64) is not inside the MR's 4096 bytes");
	ex[0].off = 0;
	ex[0].len = REG;	/* the whole region, as the server's on_connect expects */
	co.send_depth = 1;
	ck_assert_int_eq(ez_connect(B.ctx, test_addr(), B.port, &co, &cbs, NULL, &c), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.nexports 1 needs send_depth 3 or more (it is 1): each region's bind, the message that carries the keys and a shared-secret proof take an op");
	co.send_depth = 0;
	/* Taken: the MR is held until the region is bound. */
	ck_assert_int_eq(ez_connect(B.ctx, test_addr(), B.port, &co, &cbs, NULL, &B.cli[0]), 0);
	ck_assert_int_eq(ez_mr_dereg(B.cli_mr[0]), -EBUSY);
	ck_assert_ptr_null(ez_conn_peer_exports(B.cli[0], &n));
	ck_assert_uint_eq(n, 0);
	ck_assert_msg(strstr(ez_errmsg(), "not up yet"), "%s", ez_errmsg());
	ck_assert_msg(run_until(&B.cli_up, 1, 20), "client not up");
	ck_assert_msg(B.cli_status[0] == 0, "%d %s", B.cli_status[0], B.cli_msg[0]);
	ck_assert_ptr_null(ez_conn_peer_exports(NULL, &n));
	bench_fini();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conn_exports");
	TCase *tc = tcase_create("given");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, given_both_ways);
	tcase_add_test(tc, given_keyed_on_two_paths);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, connect_time_printed);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
