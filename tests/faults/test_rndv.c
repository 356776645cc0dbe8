/* test_rndv.c: large messages by rendezvous on the device: random sizes 0..16 MiB mixed with small ones arrive byte for byte and in send order through a shared pool of 1 KiB buffers, fetched in chunks (ez_conn_opts.fetch_chunk) that land at their offsets; ez_send_mr offers in place; the pool's large-message bound holds the fetches back until the application releases; EZ_CONN_SMALL_FIRST lets a small message pass a waiting one. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "../checkmain.h"

#define MIB (1u << 20)
#define BIG_MAX (16 * MIB)

/* Message i's byte at offset k: a function of both, so a shifted, short or
 * mixed-up message shows. */
static uint8_t pat(uint32_t i, size_t k)
{
	return (uint8_t)(i * 131u + k * 7u + (k >> 12));
}

static void fill(uint8_t *p, uint32_t i, size_t len)
{
	/* The message's number in its first 4 bytes (when it has them). */
	for (size_t k = 0; k < len; k++)
		p[k] = pat(i, k);
	if (len >= 4)
		memcpy(p, &i, 4);
}

static int check(const uint8_t *p, uint32_t i, size_t len)
{
	uint32_t got;

	if (len >= 4) {
		memcpy(&got, p, 4);
		if (got != i)
			return -1;
	}
	for (size_t k = 4; k < len; k++)
		if (p[k] != pat(i, k))
			return (int)k;
	return 0;
}

struct side {
	struct ez_conn *conn;
	int connected, connect_status, disconnected, disconnect_status;
	char msg[256];
	/* Receiver: the sizes expected, in order. */
	const uint32_t *sizes;
	int n, received, bad, hold;	/* hold: keep buffers in held[] */
	/* by_number: message i is the one numbered i in its first 4 bytes
	 * (delivery order may differ from the send order); order[]: the
	 * numbers as they arrived. */
	int by_number;
	uint32_t order[64];
	struct ez_buf *held[64];
	int nheld;
	int sent_ok, send_err;
	char send_msg[256];
};

static void on_connect(struct ez_conn *c, int status, void *arg)
{
	struct side *s = arg;

	(void)c;
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

static void on_recv(struct ez_conn *c, struct ez_buf *buf, void *arg)
{
	struct side *s = arg;
	int i = s->received++;
	size_t len = ez_buf_len(buf);
	uint32_t num = (uint32_t)i;

	(void)c;
	if (len >= 4)
		memcpy(&num, ez_buf_data(buf), 4);
	if (s->received <= 64)
		s->order[s->received - 1] = num;
	if (s->by_number)
		i = num < (uint32_t)s->n ? (int)num : s->n;
	if (i >= s->n || len != s->sizes[i] || check(ez_buf_data(buf), (uint32_t)i, len)) {
		if (!s->bad)
			fprintf(stderr, "message %d: %zu bytes (expected %u), first difference at %d\n",
				i, len, i < s->n ? s->sizes[i] : 0,
				i < s->n ? check(ez_buf_data(buf), (uint32_t)i, len) : -2);
		s->bad++;
	}
	if (s->hold && s->nheld < 64)
		s->held[s->nheld++] = buf;
	else
		ez_buf_release(buf);
}

static const struct ez_conn_cbs cbs = {
	.on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect,
};

static void on_sent(struct ez_conn *c, int status, void *arg)
{
	struct side *s = arg;

	if (status && !s->send_err) {
		s->send_err = status;
		snprintf(s->send_msg, sizeof(s->send_msg), "%s", ez_conn_errmsg(c));
	}
	if (!status)
		s->sent_ok++;
}

struct bench {
	struct fb b;
	struct ez_srqpool *pool;
	struct ez_listener *l;
	struct side srv, cli;
	struct ez_conn_opts so;
};

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct bench *t = arg;

	(void)l;
	ck_assert_int_eq(ez_accept(req, &t->so, &cbs, &t->srv, &t->srv.conn), 0);
}

/* A server receiving through a shared pool of 1 KiB buffers (large
 * messages bounded by large_max), a client, both with max_msg_size 16 MiB;
 * the server fetches in READs of fetch_chunk bytes (0: the default) and
 * takes flags (EZ_CONN_*). */
static void bench_start_opts(struct bench *t, uint64_t large_max, uint32_t fetch_chunk,
			     uint32_t flags)
{
	struct ez_srqpool_opts po = { .buf_size = 1024, .nbufs = 128, .large_max_bytes = large_max };
	struct ez_conn_opts co = { .max_msg_size = BIG_MAX };
	struct ez_listen_opts lo = { .backlog = 16 };
	char port[8];

	memset(t, 0, sizeof(*t));
	fb_init(&t->b);
	ck_assert_int_eq(ez_srqpool_new(t->b.ctx, NULL, &po, &t->pool), 0);
	t->so.srqpool = t->pool;
	t->so.max_msg_size = BIG_MAX;
	t->so.fetch_chunk = fetch_chunk;
	t->so.flags = flags;
	ck_assert_msg(ez_listen(t->b.ctx, test_addr(), "0", &lo, on_request, t, &t->l) == 0,
		      "ez_listen: %s", ez_errmsg());
	snprintf(port, sizeof(port), "%u", ez_listener_port(t->l));
	ck_assert_int_eq(ez_connect(t->b.ctx, test_addr(), port, &co, &cbs, &t->cli, &t->cli.conn), 0);
	ck_assert(fb_run(&t->b, &t->cli.connected, 1, 10));
	ck_assert_msg(t->cli.connect_status == 0, "connect: %s", t->cli.msg);
	ck_assert(fb_run(&t->b, &t->srv.connected, 1, 5));
}

static void bench_start(struct bench *t, uint64_t large_max)
{
	bench_start_opts(t, large_max, 0, 0);
}

/* The READs that fetch messages of these sizes in chunks of chunk bytes:
 * those above the server's 1 KiB buffers come by rendezvous. */
static uint64_t reads_for(const uint32_t *sizes, int n, uint32_t chunk)
{
	uint64_t reads = 0;

	for (int i = 0; i < n; i++)
		if (sizes[i] > 1024)
			reads += (sizes[i] + chunk - 1) / chunk;
	return reads;
}

static void bench_stop(struct bench *t)
{
	ez_conn_close(t->cli.conn);
	ck_assert(fb_run(&t->b, &t->srv.disconnected, 1, 5));
	ck_assert(fb_run(&t->b, &t->cli.disconnected, 1, 5));
	ez_conn_close(t->srv.conn);
	ez_listener_close(t->l);
	fb_spin(&t->b, 0.3);
	ck_assert_int_eq(ez_srqpool_free(t->pool), 0);
	fb_fini(&t->b);
}

/* Sends message i of len bytes (copied from a scratch buffer), retrying
 * while the send window is full. */
static void send_one(struct bench *t, uint8_t *scratch, uint32_t i, uint32_t len)
{
	int ret;

	fill(scratch, i, len);
	while ((ret = ez_send(t->cli.conn, scratch, len, on_sent, &t->cli)) == -ENOBUFS)
		fb_spin(&t->b, 0.002);
	ck_assert_msg(ret == 0, "ez_send(%u bytes): %d %s", len, ret, ez_errmsg());
}

START_TEST(random_sizes_in_order)
{
	/* The edges around the 1 KiB buffers and the 16 MiB maximum, then
	 * random sizes (log-uniform: most are small or medium, as the run
	 * must fit a TCG guest under ASan), and small ones in between. */
	enum { N = 48 };
	static uint32_t sizes[N];
	static const uint32_t edges[] = { 0, 1, 1023, 1024, 1025, 4096, 65536, BIG_MAX, 3 };
	struct ez_conn_info info;
	struct ez_srqpool_stats st;
	struct ez_conn_stats cst;
	struct bench t;
	uint8_t *scratch = malloc(BIG_MAX);
	uint64_t total = 0;
	double t0, secs;
	uint32_t seed = 24;
	int i;

	ck_assert_ptr_nonnull(scratch);
	for (i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		if (i < (int)(sizeof(edges) / sizeof(edges[0])))
			sizes[i] = edges[i];
		else if (i % 3 == 0)
			sizes[i] = (seed >> 8) % 200;	/* small, eager */
		else
			sizes[i] = (uint32_t)(((seed >> 8) & 0xffff) << ((seed >> 24) % 8)) + 1025;
		if (sizes[i] > BIG_MAX)
			sizes[i] = BIG_MAX;
		total += sizes[i];
	}
	bench_start(&t, 0);
	ck_assert_int_eq(ez_conn_info(t.cli.conn, &info), 0);
	ck_assert_uint_eq(info.max_msg_size, BIG_MAX);
	t.srv.sizes = sizes;
	t.srv.n = N;
	t0 = now_s();
	for (i = 0; i < N; i++)
		send_one(&t, scratch, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.srv.received, N, 120));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, N, 10));
	secs = now_s() - t0;
	ck_assert_msg(t.cli.send_err == 0, "send: %d %s", t.cli.send_err, t.cli.send_msg);
	ck_assert_int_eq(t.srv.bad, 0);
	ck_assert_int_eq(t.srv.disconnected, 0);
	ck_assert_int_eq(ez_srqpool_stats(t.pool, &st), 0);
	ck_assert_uint_eq(st.large_bytes, 0);	/* every large buffer was released */
	ck_assert_uint_eq(st.in_use, 0);
	/* Fetched in READs of the default 256 KiB at most (a 16 MiB message
	 * in 64), not one READ per message. */
	ck_assert_int_eq(ez_conn_stats(t.srv.conn, &cst), 0);
	ck_assert_uint_eq(cst.fetch_reads, reads_for(sizes, N, 256 * 1024));
	ck_assert_uint_eq(cst.small_first, 0);
	printf("%d messages, %llu bytes (largest %u) in order through 1 KiB buffers: %.2f s, %.1f MiB/s, %llu READs\n",
	       N, (unsigned long long)total, BIG_MAX, secs, (double)total / MIB / secs,
	       (unsigned long long)cst.fetch_reads);
	/* Too large for the peer: refused here, nothing sent. */
	ck_assert_int_eq(ez_send(t.cli.conn, scratch, BIG_MAX + 1, NULL, NULL), -EMSGSIZE);
	ck_assert_msg(strstr(ez_errmsg(), "exceed the maximum message size 16777216"), "%s",
		      ez_errmsg());
	bench_stop(&t);
	free(scratch);
}
END_TEST

/* ez_send_mr of a region that can bind a window is offered in place: the
 * MR is in use (ez_mr_dereg refuses) until the receiver has fetched it. */
START_TEST(send_mr_in_place)
{
	static uint32_t sizes[4] = { 3 * MIB + 5, 100, 2 * MIB, 7 };
	struct bench t;
	uint8_t *mem = malloc(8 * MIB);
	struct ez_mr *mr;
	size_t off = 0;
	int i;

	ck_assert_ptr_nonnull(mem);
	bench_start(&t, 0);
	ck_assert_int_eq(ez_mr_reg(t.b.ctx, NULL, mem, 8 * MIB, EZ_MR_REMOTE_READ, &mr), 0);
	t.srv.sizes = sizes;
	t.srv.n = 4;
	for (i = 0; i < 4; i++) {
		fill(mem + off, (uint32_t)i, sizes[i]);
		ck_assert_int_eq(ez_send_mr(t.cli.conn, mr, off, sizes[i], on_sent, &t.cli), 0);
		off += sizes[i];
	}
	ck_assert_int_eq(ez_mr_dereg(mr), -EBUSY);
	ck_assert(fb_run(&t.b, &t.srv.received, 4, 60));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, 4, 10));
	ck_assert_int_eq(t.srv.bad, 0);
	ck_assert_int_eq(ez_mr_dereg(mr), 0);
	bench_stop(&t);
	free(mem);
}
END_TEST

/* The pool's bound: with 3 MiB of large messages allowed and the
 * application holding what it gets, 1 MiB messages stop arriving at the
 * bound (the fetches wait, nothing fails), and the rest come once the
 * application releases, in order. */
START_TEST(bound_backpressure)
{
	enum { N = 10 };
	static uint32_t sizes[N];
	struct ez_srqpool_stats st;
	struct bench t;
	uint8_t *scratch = malloc(MIB);
	int i, got;

	ck_assert_ptr_nonnull(scratch);
	for (i = 0; i < N; i++)
		sizes[i] = i == 4 ? 10 : MIB;
	bench_start(&t, 3 * MIB);
	t.srv.sizes = sizes;
	t.srv.n = N;
	t.srv.hold = 1;
	for (i = 0; i < N; i++)
		send_one(&t, scratch, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.srv.received, 3, 30));
	fb_spin(&t.b, 1.0);
	got = t.srv.received;
	ck_assert_int_eq(ez_srqpool_stats(t.pool, &st), 0);
	printf("bound 3 MiB, application holding: %d of %d delivered, %llu bytes held, %llu waits\n",
	       got, N, (unsigned long long)st.large_bytes, (unsigned long long)st.large_waits);
	ck_assert_int_eq(got, 3);
	ck_assert_uint_eq(st.large_bytes, 3 * MIB);
	ck_assert_uint_eq(st.large_max_bytes, 3 * MIB);
	ck_assert_uint_ge(st.large_waits, 1);
	ck_assert_int_eq(t.srv.disconnected, 0);
	/* Three acknowledged, and the small one (eager: its own completion). */
	ck_assert_int_eq(t.cli.sent_ok, 4);
	t.srv.hold = 0;
	for (i = 0; i < t.srv.nheld; i++)
		ez_buf_release(t.srv.held[i]);
	t.srv.nheld = 0;
	ck_assert(fb_run(&t.b, &t.srv.received, N, 60));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, N, 10));
	ck_assert_int_eq(t.srv.bad, 0);
	bench_stop(&t);
	free(scratch);
}
END_TEST

/* Chunks of 12 KiB (the receiver's fetch_chunk): sizes one byte either
 * side of a chunk and of several, each fetched in exactly ceil(len / chunk)
 * READs, and every byte in place (a chunk at a wrong offset of the buffer
 * or of the offer shows in the pattern). */
START_TEST(chunks_land_at_their_offsets)
{
	enum { CHUNK = 12288, N = 9 };
	static uint32_t sizes[N] = { CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 1,
				     40, 5 * CHUNK - 1, MIB + 7, 3 * MIB + 4095 };
	struct ez_conn_stats cst;
	struct bench t;
	uint8_t *scratch = malloc(4 * MIB);
	int i;

	ck_assert_ptr_nonnull(scratch);
	bench_start_opts(&t, 0, CHUNK, 0);
	t.srv.sizes = sizes;
	t.srv.n = N;
	for (i = 0; i < N; i++)
		send_one(&t, scratch, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.srv.received, N, 120));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, N, 10));
	ck_assert_msg(t.cli.send_err == 0, "send: %d %s", t.cli.send_err, t.cli.send_msg);
	ck_assert_int_eq(t.srv.bad, 0);
	ck_assert_int_eq(t.srv.disconnected, 0);
	ck_assert_int_eq(ez_conn_stats(t.srv.conn, &cst), 0);
	/* 1+1+2+2+3 + 5 + 86 + 257 */
	ck_assert_uint_eq(cst.fetch_reads, reads_for(sizes, N, CHUNK));
	ck_assert_uint_eq(cst.fetch_reads, 357);
	ck_assert_uint_eq(cst.reads, 0);	/* the application's READs: none */
	printf("%d messages in chunks of %u bytes: %llu READs\n", N, CHUNK,
	       (unsigned long long)cst.fetch_reads);
	bench_stop(&t);
	free(scratch);
}
END_TEST

/* EZ_CONN_SMALL_FIRST: a small message passes a large one whose fetch
 * waits (the pool's bound of 1 MiB is held by the application), and the
 * large one still comes after the release. Deterministic: the second large
 * message cannot be fetched before the release. */
START_TEST(small_first_passes_a_waiting_fetch)
{
	static uint32_t sizes[3] = { MIB, MIB, 10 };
	struct ez_conn_stats cst;
	struct bench t;
	uint8_t *scratch = malloc(MIB);

	ck_assert_ptr_nonnull(scratch);
	bench_start_opts(&t, MIB, 0, EZ_CONN_SMALL_FIRST);
	t.srv.sizes = sizes;
	t.srv.n = 3;
	t.srv.by_number = 1;
	t.srv.hold = 1;
	send_one(&t, scratch, 0, sizes[0]);
	ck_assert(fb_run(&t.b, &t.srv.received, 1, 30));
	send_one(&t, scratch, 1, sizes[1]);	/* waits: 1 MiB held of 1 MiB */
	send_one(&t, scratch, 2, sizes[2]);
	ck_assert(fb_run(&t.b, &t.srv.received, 2, 30));
	ck_assert_uint_eq(t.srv.order[0], 0);
	ck_assert_uint_eq(t.srv.order[1], 2);	/* the small one, ahead of 1 */
	ck_assert_int_eq(ez_conn_stats(t.srv.conn, &cst), 0);
	ck_assert_uint_eq(cst.small_first, 1);
	ck_assert_int_eq(t.srv.nheld, 2);
	t.srv.hold = 0;
	ez_buf_release(t.srv.held[0]);
	ez_buf_release(t.srv.held[1]);
	t.srv.nheld = 0;
	ck_assert(fb_run(&t.b, &t.srv.received, 3, 30));
	ck_assert_uint_eq(t.srv.order[2], 1);
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, 3, 10));
	ck_assert_int_eq(t.srv.bad, 0);
	ck_assert_int_eq(t.srv.disconnected, 0);
	bench_stop(&t);
	free(scratch);
}
END_TEST

/* The process's resident bytes now (/proc/self/statm). */
static uint64_t rss_bytes(void)
{
	unsigned long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu %lu", &size, &res), 2);
	fclose(f);
	return (uint64_t)res * 4096;
}

/* Issue 42: memory given back. 120 MiB of large messages both ways through
 * the device's buffers (the sender's copies and the receiver's fetches),
 * then nothing: the cache that kept up to 64 MiB of them is emptied once
 * idle for BIGBUF_TRIM_MS (5 s; waited for by its counter, not by a
 * clock), and the process's RSS is back within 16 MiB of what it was
 * before the first message (the buffers are mapped and unmapped, not left
 * in malloc's heap). */
START_TEST(idle_cache_given_back)
{
	enum { N = 40 };
	static uint32_t sizes[N];
	static const uint32_t cycle[4] = { MIB + 1, 3 * MIB, 4 * MIB, 2 * MIB + 5 };
	struct ez_srqpool_stats st;
	struct bench t;
	uint8_t *scratch = malloc(4 * MIB);
	uint64_t rss0, rss_busy, rss1, cached_busy;
	double t0;
	int i;

	ck_assert_ptr_nonnull(scratch);
	memset(scratch, 1, 4 * MIB);	/* resident before the first figure */
	for (i = 0; i < N; i++)
		sizes[i] = cycle[i % 4];
	bench_start(&t, 0);
	t.srv.sizes = sizes;
	t.srv.n = N;
	rss0 = rss_bytes();
	for (i = 0; i < N; i++)
		send_one(&t, scratch, (uint32_t)i, sizes[i]);
	ck_assert(fb_run(&t.b, &t.srv.received, N, 300));
	ck_assert(fb_run(&t.b, &t.cli.sent_ok, N, 30));
	ck_assert_int_eq(t.srv.bad, 0);
	rss_busy = rss_bytes();
	ck_assert_int_eq(ez_srqpool_stats(t.pool, &st), 0);
	cached_busy = st.large_cached_bytes;
	ck_assert_uint_eq(st.large_bytes, 0);
	ck_assert_uint_le(cached_busy, 64 * MIB);	/* BIGBUF_CACHE_MAX */
	t0 = now_s();
	for (;;) {
		ck_assert_int_eq(ez_srqpool_stats(t.pool, &st), 0);
		if (st.large_trimmed_bytes && !st.large_cached_bytes)
			break;
		ck_assert_msg(now_s() - t0 < 120, "cache not trimmed in 120 s: %llu bytes cached",
			      (unsigned long long)st.large_cached_bytes);
		fb_spin(&t.b, 0.1);
	}
	rss1 = rss_bytes();
	printf("RSS idle %.1f MiB, after %d large messages (120 MiB) %.1f MiB with %.1f MiB cached, trimmed %.1f MiB after %.1f s idle: RSS %.1f MiB\n",
	       (double)rss0 / MIB, N, (double)rss_busy / MIB, (double)cached_busy / MIB,
	       (double)st.large_trimmed_bytes / MIB, now_s() - t0, (double)rss1 / MIB);
	ck_assert_msg(rss1 <= rss0 + 16 * MIB, "RSS %.1f MiB idle, %.1f MiB after the trim",
		      (double)rss0 / MIB, (double)rss1 / MIB);
	bench_stop(&t);
	free(scratch);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rndv");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, random_sizes_in_order);
	tcase_add_test(tc, send_mr_in_place);
	tcase_add_test(tc, bound_backpressure);
	tcase_add_test(tc, chunks_land_at_their_offsets);
	tcase_add_test(tc, small_first_passes_a_waiting_fetch);
	tcase_add_test(tc, idle_cache_given_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run_suite(suite(), CK_NORMAL);
}
