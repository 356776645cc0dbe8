/* test_api24.c: issue 24's API on a real device: send readiness (on_send_ready), the listener's accept data on the client (with and without a shared secret), RDMA atomics (two clients on one word, CAS, refusals). */
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

#define MAXC 4

/* One loop, one context, a listener, up to MAXC clients and their servers. */
struct bench {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	ev_timer tick;
	char port[8];
	/* server side */
	struct ez_conn_opts sopts;
	struct ez_conn *srv[MAXC];
	int nsrv, srv_up;
	void (*srv_on_connect)(struct ez_conn *conn, int status, void *arg);
	/* client side */
	struct ez_conn *cli[MAXC];
	int cli_up, cli_status[MAXC];
	char cli_msg[MAXC][256];
	void (*cli_on_connect)(struct ez_conn *conn, int status, void *arg);
	void (*cli_on_recv)(struct ez_conn *conn, struct ez_buf *buf, void *arg);
	void (*cli_on_send_ready)(struct ez_conn *conn, void *arg);
	/* what the tests count */
	int recvd, ready, ready_sends, done;
	int down;
};

static struct bench B;

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static int run_until(const int *flag, int want, double secs)
{
	double end = now_s() + hang_ceiling(secs);	/* tests/waits.h */

	while (*flag < want && now_s() < end)
		ev_run(B.loop, EVRUN_ONCE);
	return *flag >= want;
}

static void run_for(double secs)
{
	double end = now_s() + secs;

	while (now_s() < end)
		ev_run(B.loop, EVRUN_ONCE);
}

static void srv_on_connect(struct ez_conn *conn, int status, void *arg)
{
	(void)arg;
	ck_assert_msg(status == 0, "server on_connect: %d %s", status, ez_conn_errmsg(conn));
	B.srv_up++;
	if (B.srv_on_connect)
		B.srv_on_connect(conn, status, arg);
}

static void srv_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	(void)conn;
	(void)arg;
	B.recvd++;
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

	(void)l;
	(void)arg;
	ck_assert_int_lt(B.nsrv, MAXC);
	ck_assert_msg(ez_accept(req, &B.sopts, &cbs, NULL, &B.srv[B.nsrv]) == 0, "ez_accept: %s",
		      ez_errmsg());
	B.nsrv++;
}

static void cli_on_connect(struct ez_conn *conn, int status, void *arg)
{
	int i = (int)(intptr_t)arg;

	B.cli_status[i] = status;
	snprintf(B.cli_msg[i], sizeof(B.cli_msg[i]), "%s", ez_conn_errmsg(conn));
	B.cli_up++;
	if (B.cli_on_connect)
		B.cli_on_connect(conn, status, arg);
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
}

static void connect_one(int i, const struct ez_conn_opts *o)
{
	struct ez_conn_cbs cbs = { .on_connect = cli_on_connect, .on_recv = B.cli_on_recv,
				   .on_disconnect = on_disconnect,
				   .on_send_ready = B.cli_on_send_ready };

	ck_assert_msg(ez_connect(B.ctx, test_addr(), B.port, o, &cbs, (void *)(intptr_t)i,
				 &B.cli[i]) == 0, "ez_connect: %s", ez_errmsg());
}

static void connect_all(int n, const struct ez_conn_opts *o)
{
	for (int i = 0; i < n; i++)
		connect_one(i, o);
	ck_assert_msg(run_until(&B.cli_up, n, 20), "%d of %d clients up", B.cli_up, n);
	ck_assert_msg(run_until(&B.srv_up, n, 20), "%d of %d servers up", B.srv_up, n);
	for (int i = 0; i < n; i++)
		ck_assert_msg(B.cli_status[i] == 0, "client %d: %d %s", i, B.cli_status[i],
			      B.cli_msg[i]);
}

static void bench_fini(void)
{
	int n = 0;

	for (int i = 0; i < MAXC; i++)
		if (B.cli[i]) {
			ez_conn_close(B.cli[i]);
			n++;
		}
	for (int i = 0; i < B.nsrv; i++)
		ez_conn_close(B.srv[i]);
	n += B.nsrv;
	/* Closed handles free themselves after their final callback, which
	 * comes when their teardown is done: wait for that, not for a time. */
	ez_listener_close(B.listener);
	ck_assert_msg(ctx_free_when_idle(B.loop, B.ctx, CTX_FREE_CEILING_S) == 0, "ez_ctx_free: %s",
		      ez_errmsg());
	ev_timer_stop(B.loop, &B.tick);
	ev_loop_destroy(B.loop);
	(void)n;
}

/* ---- send readiness ---------------------------------------------------- */

#define DEPTH 4
#define ROUNDS 6

static void ready_cb(struct ez_conn *conn, void *arg)
{
	char msg[16] = "after-ready";
	int ret;

	(void)arg;
	B.ready++;
	/* Room is back: a send succeeds from the callback itself. */
	ret = ez_send(conn, msg, sizeof(msg), NULL, NULL);
	ck_assert_msg(ret == 0, "ez_send from on_send_ready: %d %s", ret, ez_errmsg());
	B.ready_sends++;
}

START_TEST(send_ready_once_per_refusal)
{
	struct ez_conn_opts o = { .send_depth = DEPTH };
	struct ez_conn_stats st;
	char msg[32] = "x";
	int round, sent = 0, ok, ret, k;

	bench_init(NULL);
	B.cli_on_send_ready = ready_cb;
	connect_all(1, &o);
	for (round = 1; round <= ROUNDS; round++) {
		/* Fill the window in one go: the loop does not run, so no
		 * completion frees room meanwhile. */
		for (ok = 0; (ret = ez_send(B.cli[0], msg, sizeof(msg), NULL, NULL)) == 0; ok++)
			sent++;
		ck_assert_int_eq(ret, -ENOBUFS);
		ck_assert_msg(strstr(ez_errmsg(), "operations already outstanding (send_depth)"),
			      "message: %s", ez_errmsg());
		ck_assert_int_le(ok, DEPTH);
		ck_assert_int_ge(ok, round == 1 ? DEPTH : 0);
		/* More refusals before room returns: still one callback. */
		for (k = 0; k < round % 3; k++)
			ck_assert_int_eq(ez_send(B.cli[0], msg, sizeof(msg), NULL, NULL), -ENOBUFS);
		ck_assert_int_eq(B.ready, round - 1);
		ck_assert_msg(run_until(&B.ready, round, 10), "round %d: on_send_ready did not run",
			      round);
		/* Exactly once: nothing more while the window drains. */
		run_for(0.05);
		ck_assert_int_eq(B.ready, round);
		sent++;	/* the callback's own send */
	}
	ck_assert_msg(run_until(&B.recvd, sent, 10), "server received %d of %d", B.recvd, sent);
	run_for(0.1);
	ck_assert_int_eq(B.ready, ROUNDS);
	ck_assert_int_eq(B.ready_sends, ROUNDS);
	ck_assert_int_eq(ez_conn_stats(B.cli[0], &st), 0);
	ck_assert_uint_eq(st.send_ready_calls, ROUNDS);
	ck_assert_uint_eq(st.send_refusals, ROUNDS + 0 + 1 + 2 + 0 + 1 + 2);
	printf("send readiness: %d rounds, %d messages, %llu refusals, %llu on_send_ready\n",
	       ROUNDS, sent, (unsigned long long)st.send_refusals,
	       (unsigned long long)st.send_ready_calls);
	bench_fini();
}
END_TEST

/* No callback set: refusals are counted, nothing runs, and sends work after. */
START_TEST(send_ready_without_callback)
{
	struct ez_conn_opts o = { .send_depth = DEPTH };
	struct ez_conn_stats st;
	char msg[8] = "y";
	int n = 0;

	bench_init(NULL);
	connect_all(1, &o);
	while (ez_send(B.cli[0], msg, sizeof(msg), NULL, NULL) == 0)
		n++;
	ck_assert_int_eq(n, DEPTH);
	ck_assert_msg(run_until(&B.recvd, n, 10), "received %d", B.recvd);
	ck_assert_int_eq(ez_send(B.cli[0], msg, sizeof(msg), NULL, NULL), 0);
	ck_assert_int_eq(ez_conn_stats(B.cli[0], &st), 0);
	ck_assert_uint_eq(st.send_refusals, 1);
	ck_assert_uint_eq(st.send_ready_calls, 1);
	bench_fini();
}
END_TEST

/* ---- the accept data on the client ------------------------------------ */

static uint8_t want_data[EZ_ACCEPT_DATA_MAX];
static size_t want_len;
static uint8_t got_data[EZ_ACCEPT_DATA_MAX];
static size_t got_len;
static int got_nonnull;

static void accept_data_on_connect(struct ez_conn *conn, int status, void *arg)
{
	const void *d;

	(void)arg;
	if (status)
		return;
	d = ez_conn_accept_data(conn, &got_len);
	got_nonnull = d != NULL;
	if (d)
		memcpy(got_data, d, got_len);
}

static void accept_data_case(int keyed, size_t len)
{
	static const char key[] = "0123456789abcdef0123456789abcdef";
	struct ez_listen_opts lo = { 0 };
	struct ez_conn_opts co = { 0 };
	const void *d;
	size_t n = 99;

	if (keyed) {
		lo.auth_key = key;
		lo.auth_key_len = 32;
		co.auth_key = key;
		co.auth_key_len = 32;
	}
	for (size_t i = 0; i < sizeof(want_data); i++)
		want_data[i] = (uint8_t)(rand() & 0xff);
	want_data[0] = 0;	/* a zero byte first: not a string */
	want_len = len;
	got_len = 0;
	got_nonnull = 0;
	bench_init(&lo);
	B.sopts.private_data = len ? want_data : NULL;
	B.sopts.private_data_len = (uint32_t)len;
	B.cli_on_connect = accept_data_on_connect;
	connect_one(0, &co);
	/* Before the reply: nothing, and it says why. */
	d = ez_conn_accept_data(B.cli[0], &n);
	ck_assert_ptr_null(d);
	ck_assert_uint_eq(n, 0);
	ck_assert_msg(strstr(ez_errmsg(), "no reply from the listener yet"), "%s", ez_errmsg());
	ck_assert_msg(run_until(&B.cli_up, 1, 20), "client not up");
	ck_assert_msg(B.cli_status[0] == 0, "connect: %d %s", B.cli_status[0], B.cli_msg[0]);
	ck_assert_msg(run_until(&B.srv_up, 1, 20), "server not up");
	ck_assert_int_eq(got_nonnull, 1);
	ck_assert_uint_eq(got_len, want_len);
	ck_assert_msg(!memcmp(got_data, want_data, want_len), "accept data differ");
	/* Still there after on_connect, the same bytes. */
	d = ez_conn_accept_data(B.cli[0], &n);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(n, want_len);
	ck_assert(!memcmp(d, want_data, want_len));
	/* The accepted side has none of its peer's: refused with a reason. */
	ck_assert_ptr_null(ez_conn_accept_data(B.srv[0], &n));
	ck_assert_uint_eq(n, 0);
	ck_assert_msg(strstr(ez_errmsg(), "ez_conn_req_data"), "%s", ez_errmsg());
	ck_assert_ptr_null(ez_conn_accept_data(NULL, &n));
	printf("accept data: %zu bytes%s arrived byte for byte\n", len,
	       keyed ? " (shared secret)" : "");
	bench_fini();
}

START_TEST(accept_data_plain)
{
	accept_data_case(0, EZ_ACCEPT_DATA_MAX);
	accept_data_case(0, 1);
	accept_data_case(0, 0);
}
END_TEST

START_TEST(accept_data_keyed)
{
	accept_data_case(1, EZ_ACCEPT_DATA_MAX_AUTH);
	accept_data_case(1, 17);
}
END_TEST

/* ---- atomics ------------------------------------------------------------ */

#define NADD 200	/* fetch-and-adds per client */
#define WINDOW 8

static uint64_t *word_mem;	/* the server's region: word 0 is the counter */
static struct ez_mr *word_mr;
static struct ez_rkey keys[MAXC];
static int have_key;
static uint64_t olds[MAXC][NADD];
static int nold[MAXC], posted[MAXC];
static int atomic_status_bad;

/* The server exports the word to each connection and sends it the key. */
static void atomic_srv_up(struct ez_conn *conn, int status, void *arg)
{
	struct ez_rkey k;
	int ret;

	(void)status;
	(void)arg;
	ret = ez_conn_export(conn, word_mr, 0, 4096, EZ_MR_REMOTE_ATOMIC | EZ_MR_REMOTE_READ, &k);
	ck_assert_msg(ret == 0, "ez_conn_export(atomic): %d %s", ret, ez_errmsg());
	ck_assert_int_eq(ez_send(conn, &k, sizeof(k), NULL, NULL), 0);
}

static void atomic_cli_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	int i = (int)(intptr_t)arg;

	(void)conn;
	ck_assert_uint_eq(ez_buf_len(buf), sizeof(struct ez_rkey));
	memcpy(&keys[i], ez_buf_data(buf), sizeof(keys[i]));
	ez_buf_release(buf);
	have_key++;
}

static void post_fadd(int i);

static void fadd_done(struct ez_conn *conn, int status, uint64_t old, void *arg)
{
	int i = (int)(intptr_t)arg;

	(void)conn;
	if (status) {
		atomic_status_bad = status;
		B.done++;
		return;
	}
	olds[i][nold[i]++] = old;
	if (nold[i] == NADD)
		B.done++;
	if (posted[i] < NADD)
		post_fadd(i);
}

static void post_fadd(int i)
{
	int ret = ez_atomic_fadd(B.cli[i], &keys[i], 0, 1, fadd_done, (void *)(intptr_t)i);

	ck_assert_msg(ret == 0, "ez_atomic_fadd: %d %s", ret, ez_errmsg());
	posted[i]++;
}

static uint64_t cas_old;
static int cas_status;

static void cas_done(struct ez_conn *conn, int status, uint64_t old, void *arg)
{
	(void)conn;
	(void)arg;
	cas_status = status;
	cas_old = old;
	B.done++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void atomic_bench(void)
{
	struct ez_conn_opts o = { .send_depth = 16 };

	bench_init(NULL);
	have_key = 0;
	memset(nold, 0, sizeof(nold));
	memset(posted, 0, sizeof(posted));
	atomic_status_bad = 0;
	ck_assert_int_eq(posix_memalign((void **)&word_mem, 4096, 4096), 0);
	memset(word_mem, 0, 4096);
	ck_assert_msg(ez_mr_reg(B.ctx, NULL, word_mem, 4096,
				EZ_MR_REMOTE_ATOMIC | EZ_MR_REMOTE_READ, &word_mr) == 0,
		      "ez_mr_reg(EZ_MR_REMOTE_ATOMIC): %s", ez_errmsg());
	B.srv_on_connect = atomic_srv_up;
	B.cli_on_recv = atomic_cli_recv;
	connect_all(2, &o);
	ck_assert_msg(run_until(&have_key, 2, 10), "keys: %d", have_key);
}

static void atomic_bench_fini(void)
{
	for (int i = 0; i < MAXC; i++)
		if (B.cli[i]) {
			ez_conn_close(B.cli[i]);
			B.cli[i] = NULL;
		}
	for (int i = 0; i < B.nsrv; i++)
		ez_conn_close(B.srv[i]);
	B.nsrv = 0;
	/* The MR is busy until the closed connections' exports are gone with
	 * them: wait for that (-EBUSY until then), a hang caught at the ceiling. */
	{
		double end = now_s() + HANG_CEILING_S;
		int ret;

		while ((ret = ez_mr_dereg(word_mr)) == -EBUSY && now_s() < end)
			run_for(0.02);
		ck_assert_msg(ret == 0, "ez_mr_dereg: %s", ez_errmsg());
	}
	bench_fini();
	free(word_mem);
}

START_TEST(atomics_two_clients_one_word)
{
	uint64_t all[2 * NADD];
	double t0, t;
	int i, k;

	atomic_bench();
	t0 = now_s();
	for (i = 0; i < 2; i++)
		for (k = 0; k < WINDOW; k++)
			post_fadd(i);
	ck_assert_msg(run_until(&B.done, 2, 60), "fetch-and-adds done: %d, %d of %d", nold[0],
		      nold[1], NADD);
	t = now_s() - t0;
	ck_assert_int_eq(atomic_status_bad, 0);
	/* The exact final value, and the old values: distinct, 0..2N-1. */
	ck_assert_uint_eq(word_mem[0], 2 * NADD);
	memcpy(all, olds[0], sizeof(olds[0][0]) * NADD);
	memcpy(all + NADD, olds[1], sizeof(olds[1][0]) * NADD);
	qsort(all, 2 * NADD, sizeof(all[0]), cmp_u64);
	for (k = 0; k < 2 * NADD; k++)
		ck_assert_msg(all[k] == (uint64_t)k, "old values sorted: [%d] = %llu", k,
			      (unsigned long long)all[k]);
	/* Each client's own old values rise (its ops complete in order). */
	for (i = 0; i < 2; i++)
		for (k = 1; k < NADD; k++)
			ck_assert(olds[i][k] > olds[i][k - 1]);
	printf("atomics: 2 clients x %d fetch-and-add on one word: final %llu, old values distinct 0..%d, %.0f ops/s\n",
	       NADD, (unsigned long long)word_mem[0], 2 * NADD - 1, 2 * NADD / t);

	/* Compare-and-swap: success (old == expect, swapped), then failure. */
	B.done = 0;
	ck_assert_int_eq(ez_atomic_cas(B.cli[0], &keys[0], 0, 2 * NADD, 0x1122334455667788ull,
				       cas_done, NULL), 0);
	ck_assert(run_until(&B.done, 1, 10));
	ck_assert_int_eq(cas_status, 0);
	ck_assert_uint_eq(cas_old, 2 * NADD);
	ck_assert_uint_eq(word_mem[0], 0x1122334455667788ull);
	B.done = 0;
	ck_assert_int_eq(ez_atomic_cas(B.cli[1], &keys[1], 0, 2 * NADD, 99, cas_done, NULL), 0);
	ck_assert(run_until(&B.done, 1, 10));
	ck_assert_int_eq(cas_status, 0);
	ck_assert_uint_eq(cas_old, 0x1122334455667788ull);
	ck_assert_uint_eq(word_mem[0], 0x1122334455667788ull);	/* unchanged */
	/* Another word of the region, at an offset. */
	word_mem[5] = 41;
	B.done = 0;
	ck_assert_int_eq(ez_atomic_fadd(B.cli[1], &keys[1], 40, 1, cas_done, NULL), 0);
	ck_assert(run_until(&B.done, 1, 10));
	ck_assert_uint_eq(cas_old, 41);
	ck_assert_uint_eq(word_mem[5], 42);
	atomic_bench_fini();
}
END_TEST

START_TEST(atomics_refused)
{
	struct ez_rkey k;
	struct ez_mr *plain;
	static uint64_t plain_mem[64];

	atomic_bench();
	/* Misaligned, outside the key, NULL: -EINVAL before anything is posted. */
	ck_assert_int_eq(ez_atomic_fadd(B.cli[0], &keys[0], 4, 1, cas_done, NULL), -EINVAL);
	ck_assert_msg(strstr(ez_errmsg(), "is not 8-byte aligned"), "%s", ez_errmsg());
	ck_assert_int_eq(ez_atomic_cas(B.cli[0], &keys[0], 4092, 0, 1, cas_done, NULL), -EINVAL);
	ck_assert_msg(strstr(ez_errmsg(), "outside the peer's 4096 bytes"), "%s", ez_errmsg());
	ck_assert_int_eq(ez_atomic_cas(B.cli[0], NULL, 0, 0, 1, cas_done, NULL), -EINVAL);
	ck_assert_int_eq(ez_atomic_fadd(NULL, &keys[0], 0, 1, cas_done, NULL), -EINVAL);
	/* A region registered without EZ_MR_REMOTE_ATOMIC cannot be given for it. */
	ck_assert_int_eq(ez_mr_reg(B.ctx, NULL, plain_mem, sizeof(plain_mem), EZ_MR_REMOTE_READ,
				   &plain), 0);
	ck_assert_int_eq(ez_conn_export(B.srv[0], plain, 0, sizeof(plain_mem),
					EZ_MR_REMOTE_ATOMIC, &k), -EPERM);
	ck_assert_msg(strstr(ez_errmsg(), "exceeds the MR's registration"), "%s", ez_errmsg());
	ck_assert_int_eq(ez_mr_dereg(plain), 0);
	/* Nothing was posted by the refusals: the word is untouched and a
	 * good op still works. */
	B.done = 0;
	ck_assert_int_eq(ez_atomic_fadd(B.cli[0], &keys[0], 8, 5, cas_done, NULL), 0);
	ck_assert(run_until(&B.done, 1, 10));
	ck_assert_int_eq(cas_status, 0);
	ck_assert_uint_eq(cas_old, 0);
	ck_assert_uint_eq(word_mem[1], 5);
	ck_assert_uint_eq(word_mem[0], 0);
	atomic_bench_fini();
}
END_TEST

/* A window given for reads only: the peer's atomic is refused by our
 * responder, and the client's op completes with an error. */
START_TEST(atomics_window_without_atomic_access)
{
	struct ez_rkey k;

	atomic_bench();
	ck_assert_int_eq(ez_conn_export(B.srv[0], word_mr, 0, 4096, EZ_MR_REMOTE_READ, &k), 0);
	/* The client uses the read-only key as if it allowed atomics. */
	keys[0] = k;
	B.done = 0;
	ck_assert_int_eq(ez_atomic_fadd(B.cli[0], &keys[0], 0, 1, cas_done, NULL), 0);
	ck_assert(run_until(&B.done, 1, 10));
	ck_assert_int_ne(cas_status, 0);
	ck_assert_uint_eq(cas_old, 0);
	ck_assert_uint_eq(word_mem[0], 0);
	printf("atomic on a read-only window: %d (%s); client: %s\n", cas_status,
	       ez_strerror(cas_status), ez_conn_errmsg(B.cli[0]));
	atomic_bench_fini();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api24");
	TCase *ready = tcase_create("send_ready"), *acc = tcase_create("accept_data"),
	      *at = tcase_create("atomics");

	tcase_set_timeout(ready, 60);
	tcase_set_timeout(acc, 90);
	tcase_set_timeout(at, 90);
	tcase_add_test(ready, send_ready_once_per_refusal);
	tcase_add_test(ready, send_ready_without_callback);
	tcase_add_test(acc, accept_data_plain);
	tcase_add_test(acc, accept_data_keyed);
	tcase_add_test(at, atomics_two_clients_one_word);
	tcase_add_test(at, atomics_refused);
	tcase_add_test(at, atomics_window_without_atomic_access);
	suite_add_tcase(s, ready);
	suite_add_tcase(s, acc);
	suite_add_tcase(s, at);
	return check_run_suite(s, CK_NORMAL);
}
