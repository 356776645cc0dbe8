/* test_rndv_paths.c: large messages by rendezvous on connections of several paths: each transfer keeps to one path (its window bound to that QP, its header there, the receiver's READ there), the paths share them, every message arrives once byte for byte; a path taken out while nothing is outstanding on it leaves the others carrying large messages; a path taken out under a transfer ends the connection with a message naming it, and no message is lost unreported or delivered twice. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "conn/path.h"
#include "../checkmain.h"

#define MIB (1u << 20)
#define BIG_MAX (16 * MIB)
#define NMAX 64

/* Message i's byte at offset k (its number in its first 4 bytes). */
static uint8_t pat(uint32_t i, size_t k)
{
	return (uint8_t)(i * 131u + k * 7u + (k >> 12));
}

static void fill(uint8_t *p, uint32_t i, size_t len)
{
	for (size_t k = 0; k < len; k++)
		p[k] = pat(i, k);
	memcpy(p, &i, 4);
}

struct side;

/* What the sender's callback said of one message. */
struct sent {
	struct side *s;
	int done, status;
};

struct side {
	struct ez_conn *conn;
	int connected, connect_status, disconnected, disconnect_status;
	char msg[256];
	/* Receiver: the sizes by message number, how often each came. */
	const uint32_t *sizes;
	int n, received, bad;
	int seen[NMAX];
	/* Sender. */
	struct sent sent[NMAX];
	int sent_ok, sent_err, path_downs;
};

static void on_connect(struct ez_conn *c, int status, void *arg)
{
	struct side *s = arg;

	s->connected = 1;
	s->connect_status = status;
	if (status)
		snprintf(s->msg, sizeof(s->msg), "%s", ez_conn_errmsg(c));
}

static void on_disconnect(struct ez_conn *c, int status, void *arg)
{
	struct side *s = arg;

	s->disconnected = 1;
	s->disconnect_status = status;
	snprintf(s->msg, sizeof(s->msg), "%s", ez_conn_errmsg(c));
}

/* Several paths: messages may arrive in another order than sent, so each
 * is checked against its own number. */
static void on_recv(struct ez_conn *c, struct ez_buf *buf, void *arg)
{
	struct side *s = arg;
	size_t len = ez_buf_len(buf);
	const uint8_t *p = ez_buf_data(buf);
	uint32_t i = UINT32_MAX;
	size_t k;

	(void)c;
	s->received++;
	if (len >= 4)
		memcpy(&i, p, 4);
	if (i >= (uint32_t)s->n || len != s->sizes[i]) {
		fprintf(stderr, "a message of %zu bytes numbered %u: not one sent\n", len, i);
		s->bad++;
	} else {
		for (k = 4; k < len && p[k] == pat(i, k); k++)
			;
		if (k < len) {
			fprintf(stderr, "message %u: first difference at %zu\n", i, k);
			s->bad++;
		}
		s->seen[i]++;
	}
	ez_buf_release(buf);
}

static void on_path_down(struct ez_conn *c, unsigned int path, int status, unsigned int left,
			 void *arg)
{
	struct side *s = arg;

	(void)c;
	s->path_downs++;
	printf("path %u down (%d), %u left\n", path, status, left);
}

static const struct ez_conn_cbs cbs = {
	.on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect,
	.on_path_down = on_path_down,
};

static void on_sent(struct ez_conn *c, int status, void *arg)
{
	struct sent *m = arg;

	(void)c;
	m->done = 1;
	m->status = status;
	if (status)
		m->s->sent_err++;
	else
		m->s->sent_ok++;
}

struct bench {
	struct fb b;
	struct ez_srqpool *pool;
	struct ez_listener *l;
	struct side srv, cli;
	struct ez_conn_opts so;
	uint8_t *scratch;
};

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct bench *t = arg;

	(void)l;
	ck_assert_int_eq(ez_accept(req, &t->so, &cbs, &t->srv, &t->srv.conn), 0);
}

/* A server on a shared pool of 1 KiB buffers and a client, both asking for
 * paths paths and 16 MiB messages. */
static double test_t0;

static void bench_start(struct bench *t, uint32_t paths)
{
	struct ez_srqpool_opts po = { .buf_size = 1024, .nbufs = 128 };
	struct ez_conn_opts co = { .max_msg_size = BIG_MAX, .paths = paths };
	struct ez_listen_opts lo = { .backlog = 16 };
	struct ez_conn_info info;
	char port[8];

	memset(t, 0, sizeof(*t));
	test_t0 = now_s();
	fb_init(&t->b);
	t->scratch = malloc(BIG_MAX);
	ck_assert_ptr_nonnull(t->scratch);
	ck_assert_int_eq(ez_srqpool_new(t->b.ctx, NULL, &po, &t->pool), 0);
	t->so.srqpool = t->pool;
	t->so.max_msg_size = BIG_MAX;
	t->so.paths = paths;
	ck_assert_msg(ez_listen(t->b.ctx, test_addr(), "0", &lo, on_request, t, &t->l) == 0,
		      "ez_listen: %s", ez_errmsg());
	snprintf(port, sizeof(port), "%u", ez_listener_port(t->l));
	ck_assert_int_eq(ez_connect(t->b.ctx, test_addr(), port, &co, &cbs, &t->cli, &t->cli.conn), 0);
	ck_assert(fb_run(&t->b, &t->cli.connected, 1, 10));
	ck_assert_msg(t->cli.connect_status == 0, "connect: %s", t->cli.msg);
	ck_assert(fb_run(&t->b, &t->srv.connected, 1, 5));
	ck_assert_int_eq(ez_conn_info(t->cli.conn, &info), 0);
	ck_assert_uint_eq(info.paths, paths);
	/* Rendezvous is on: the limit is the large maximum, not 1 KiB. */
	ck_assert_uint_eq(info.max_msg_size, BIG_MAX);
	for (int i = 0; i < NMAX; i++)
		t->cli.sent[i].s = &t->cli;
}

static void bench_stop(struct bench *t)
{
	/* Each handle is closed once, ended or not. */
	ez_conn_close(t->cli.conn);
	ck_assert(fb_run(&t->b, &t->srv.disconnected, 1, 5));
	ck_assert(fb_run(&t->b, &t->cli.disconnected, 1, 5));
	ez_conn_close(t->srv.conn);
	ez_listener_close(t->l);
	fb_spin(&t->b, 0.3);
	ck_assert_int_eq(ez_srqpool_free(t->pool), 0);
	fb_fini(&t->b);
	free(t->scratch);
	printf("test time %.1f s\n", now_s() - test_t0);
}

static void send_one(struct bench *t, uint32_t i, uint32_t len)
{
	int ret;

	fill(t->scratch, i, len);
	while ((ret = ez_send(t->cli.conn, t->scratch, len, on_sent, &t->cli.sent[i])) == -ENOBUFS)
		fb_spin(&t->b, 0.002);
	ck_assert_msg(ret == 0, "ez_send(%u bytes): %d %s", len, ret, ez_errmsg());
}

/* Message i arrived exactly once. */
static void all_once(const struct side *s, int from, int to)
{
	for (int i = from; i < to; i++)
		ck_assert_msg(s->seen[i] == 1, "message %d arrived %d times", i, s->seen[i]);
}

START_TEST(large_on_four_paths)
{
	enum { N = 24 };
	static uint32_t sizes[N];
	struct ez_conn_stats st;
	struct bench t;
	uint32_t seed = 24, used = 0;
	uint64_t total = 0;
	double t0, secs;
	int i;

	for (i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		sizes[i] = i % 4 == 3 ? 4 + (seed >> 8) % 200 : 1025 + (seed >> 8) % MIB;
		total += sizes[i];
	}
	total += 4 * MIB - sizes[0];
	sizes[0] = 4 * MIB;
	bench_start(&t, 4);
	t.srv.sizes = sizes;
	t.srv.n = N;
	t0 = now_s();
	for (i = 0; i < N; i++)
		send_one(&t, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.srv.received, N, 120));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, N, 10));
	secs = now_s() - t0;
	ck_assert_int_eq(t.cli.sent_err, 0);
	ck_assert_int_eq(t.srv.bad, 0);
	all_once(&t.srv, 0, N);
	ck_assert_int_eq(t.srv.disconnected, 0);
	/* The receiver fetched on the paths the headers came on: more than one. */
	ck_assert_int_eq(ez_conn_stats(t.srv.conn, &st), 0);
	for (i = 0; i < 4; i++) {
		printf("path %d: %llu messages received\n", i,
		       (unsigned long long)st.path_msgs_recv[i]);
		used += st.path_msgs_recv[i] > 0;
	}
	ck_assert_uint_ge(used, 2);
	printf("%d messages, %llu bytes on 4 paths through 1 KiB buffers: %.2f s, %.1f MiB/s\n", N,
	       (unsigned long long)total, secs, (double)total / MIB / secs);
	bench_stop(&t);
}
END_TEST

/* A path taken out with nothing outstanding on it: the rest carry on,
 * large messages included. */
START_TEST(path_down_when_idle)
{
	enum { N = 8 };
	static uint32_t sizes[N];
	struct bench t;
	int i;

	for (i = 0; i < N; i++)
		sizes[i] = MIB / 2 + (uint32_t)i * 4099;
	bench_start(&t, 2);
	t.srv.sizes = sizes;
	t.srv.n = N;
	for (i = 0; i < 4; i++)
		send_one(&t, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, 4, 60));
	ck_assert_int_eq(path_test_break(t.cli.conn, 1), 0);
	ck_assert(fb_run(&t.b, &t.srv.path_downs, 1, 10));
	for (; i < N; i++)
		send_one(&t, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.srv.received, N, 60));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, N, 10));
	ck_assert_int_eq(t.srv.bad, 0);
	all_once(&t.srv, 0, N);
	ck_assert_int_eq(t.cli.disconnected, 0);
	ck_assert_int_eq(t.srv.disconnected, 0);
	bench_stop(&t);
}
END_TEST

/* A path taken out under transfers of 4 MiB: the connection ends, one side
 * naming the transfer; a message whose callback said 0 arrived exactly
 * once, none arrived twice, and every callback ran. */
START_TEST(path_down_under_a_transfer)
{
	enum { N = 4 };
	static uint32_t sizes[N];
	struct bench t;
	int i, ended, named;

	for (i = 0; i < N; i++)
		sizes[i] = 4 * MIB + (uint32_t)i;
	bench_start(&t, 2);
	t.srv.sizes = sizes;
	t.srv.n = N;
	for (i = 0; i < N; i++)
		send_one(&t, (uint32_t)i, sizes[i]);
	/* Each 4 MiB READ takes far longer than this on Soft-RoCE. */
	fb_spin(&t.b, 0.05);
	ck_assert_int_eq(path_test_break(t.cli.conn, 1), 0);
	ck_assert(fb_run(&t.b, &t.cli.disconnected, 1, 30));
	ck_assert(fb_run(&t.b, &t.srv.disconnected, 1, 10));
	fb_spin(&t.b, 0.5);
	printf("client on_disconnect(%d) \"%s\"\nserver on_disconnect(%d) \"%s\"\n",
	       t.cli.disconnect_status, t.cli.msg, t.srv.disconnect_status, t.srv.msg);
	named = strstr(t.cli.msg, "rendezvous transfer ") != NULL ||
		strstr(t.srv.msg, "rendezvous transfer ") != NULL;
	ck_assert_msg(named, "neither side names the transfer");
	ck_assert(strstr(t.cli.msg, "does not move to another path") ||
		  strstr(t.srv.msg, "does not move to another path"));
	ended = 0;
	for (i = 0; i < N; i++) {
		ck_assert_msg(t.cli.sent[i].done, "message %d: no callback", i);
		ck_assert_msg(t.srv.seen[i] <= 1, "message %d arrived %d times", i, t.srv.seen[i]);
		if (t.cli.sent[i].status == 0)
			ck_assert_msg(t.srv.seen[i] == 1, "message %d: sent (0) but never arrived", i);
		else
			ended++;
	}
	printf("%d of %d delivered, %d failed at the end\n", t.srv.received, N, ended);
	ck_assert_int_ge(ended, 1);
	ck_assert_int_eq(t.srv.bad, 0);
	bench_stop(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rndv_paths");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, large_on_four_paths);
	tcase_add_test(tc, path_down_when_idle);
	tcase_add_test(tc, path_down_under_a_transfer);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
