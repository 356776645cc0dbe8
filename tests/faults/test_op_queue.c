/* test_op_queue.c: the op queue (ez_conn_opts.queue_depth) on a device: sends, writes, reads, atomics and large messages accepted past a full window and done in call order; its bound refused with a message and on_send_ready; the MR held while queued; every queued call ended once at a close. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fault.h"
#include "../checkmain.h"

#define SEND_DEPTH 4
#define QUEUE_DEPTH 60
#define NCALLS (SEND_DEPTH + QUEUE_DEPTH)	/* accepted: the window and the queue */
#define REGION (64u << 10)
#define WRITE_AT 0u		/* the writes' part of the region: 16 x 512 bytes */
#define READ_AT (32u << 10)	/* the reads' part, filled by the server before */
#define WORD_AT (60u << 10)	/* the atomics' word */
#define PIECE 512u

/* The client: its connection and what its callbacks saw, in order. */
static struct cli {
	struct ez_conn *conn;
	int connected, connect_status, disconnected, disconnect_status;
	int ready;		/* on_send_ready calls */
	int done;		/* op callbacks */
	int order[NCALLS + 16];	/* the call index of each callback, in callback order */
	int status[NCALLS + 16];
	uint64_t old[NCALLS + 16];
} C;

static void cli_connect(struct ez_conn *conn, int status, void *arg)
{
	C.connected = 1;
	C.connect_status = status;
}

static void cli_disconnect(struct ez_conn *conn, int status, void *arg)
{
	C.disconnected = 1;
	C.disconnect_status = status;
}

static void cli_ready(struct ez_conn *conn, void *arg)
{
	C.ready++;
}

static void cli_op(struct ez_conn *conn, int status, void *arg)
{
	ck_assert_int_lt(C.done, NCALLS + 16);
	C.order[C.done] = (int)(uintptr_t)arg;
	C.status[C.done++] = status;
}

static void cli_atomic(struct ez_conn *conn, int status, uint64_t old, void *arg)
{
	C.old[(uintptr_t)arg] = old;
	cli_op(conn, status, arg);
}

static const struct ez_conn_cbs cli_cbs = { .on_connect = cli_connect,
					    .on_disconnect = cli_disconnect,
					    .on_send_ready = cli_ready };

struct bench {
	struct fb b;
	struct srv s;
	uint8_t *region, *local;
	struct ez_mr *rmr, *lmr;
	struct ez_rkey key;
};

/* A client with the op queue connected to a counting server; the server's
 * region exported to its end of the connection, the client's buffer
 * registered. */
static void bench_up(struct bench *t, uint32_t max_msg)
{
	struct ez_conn_opts o = { .send_depth = SEND_DEPTH, .queue_depth = QUEUE_DEPTH,
				  .max_msg_size = max_msg };
	unsigned int acc = EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_ATOMIC;

	memset(&C, 0, sizeof(C));
	memset(t, 0, sizeof(*t));
	fb_init(&t->b);
	t->s.no_echo = 1;
	t->s.opts.max_msg_size = max_msg;
	srv_start(&t->b, &t->s, 2);
	ck_assert_int_eq(ez_connect(t->b.ctx, test_addr(), t->s.port, &o, &cli_cbs, NULL, &C.conn),
			 0);
	ck_assert_msg(fb_run(&t->b, &C.connected, 1, 60), "no on_connect");
	ck_assert_msg(C.connect_status == 0, "connect: %d %s", C.connect_status,
		      ez_conn_errmsg(C.conn));
	ck_assert(fb_run(&t->b, &t->s.connected, 1, 60));
	t->region = calloc(1, REGION);
	t->local = calloc(1, REGION);
	ck_assert(t->region && t->local);
	for (uint32_t i = 0; i < REGION; i++)
		t->region[i] = (uint8_t)(i * 7 + 3);
	ck_assert_int_eq(ez_mr_reg(t->b.ctx, NULL, t->region, REGION, acc, &t->rmr), 0);
	ck_assert_int_eq(ez_mr_reg(t->b.ctx, NULL, t->local, REGION, 0, &t->lmr), 0);
	ck_assert_int_eq(ez_conn_export(t->s.eps[0].conn, t->rmr, 0, REGION, acc, &t->key), 0);
	memset(t->region + WORD_AT, 0, 8);
}

static void bench_down(struct bench *t)
{
	if (!C.disconnected) {
		ez_conn_close(C.conn);
		ck_assert(fb_run(&t->b, &C.disconnected, 1, 60));
	}
	srv_stop(&t->s);
	ck_assert_int_eq(ez_mr_dereg(t->lmr), 0);
	ck_assert_int_eq(ez_mr_dereg(t->rmr), 0);
	fb_fini(&t->b);
	free(t->region);
	free(t->local);
}

/* Call i of the mixed run: a send (sequence number i / 4), a write, a read,
 * a fetch-and-add, in turn. */
static int call(struct bench *t, int i)
{
	uint32_t k = (uint32_t)i / 4;
	void *tag = (void *)(uintptr_t)i;

	switch (i % 4) {
	case 0: {
		uint64_t seq = k;

		return ez_send(C.conn, &seq, sizeof(seq), cli_op, tag);
	}
	case 1:
		memset(t->local + WRITE_AT + k * PIECE, 0x40 + (int)k, PIECE);
		return ez_write(C.conn, t->lmr, WRITE_AT + k * PIECE, PIECE, &t->key,
				WRITE_AT + k * PIECE, cli_op, tag);
	case 2:
		return ez_read(C.conn, t->lmr, READ_AT + k * PIECE, PIECE, &t->key,
			       READ_AT + k * PIECE, cli_op, tag);
	default:
		return ez_atomic_fadd(C.conn, &t->key, WORD_AT, 1, cli_atomic, tag);
	}
}

/* 64 calls of four kinds made at once on a window of 4: all accepted, and
 * done in call order (the callbacks' order, the sequence numbers the
 * server saw, the fetch-and-adds' old values 0, 1, 2, ...); the 65th is
 * refused naming both bounds, and on_send_ready runs once. While calls
 * wait, their MR cannot be deregistered. */
START_TEST(mixed_calls_in_order)
{
	struct bench t;
	struct ez_conn_stats st;
	const char *want = "ez_send: the window (send_depth) is full and the op queue holds 60 calls (queue_depth)";
	uint64_t seq = 99;

	bench_up(&t, 4096);
	for (int i = 0; i < NCALLS; i++) {
		int r = call(&t, i);

		ck_assert_msg(r == 0, "call %d: %d %s", i, r, ez_errmsg());
	}
	ck_assert_int_eq(ez_send(C.conn, &seq, sizeof(seq), cli_op, (void *)(uintptr_t)NCALLS),
			 -ENOBUFS);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_int_eq(ez_mr_dereg(t.lmr), -EBUSY);
	ck_assert_msg(strstr(ez_errmsg(), "operations posted or queued still use the MR"), "%s",
		      ez_errmsg());
	ck_assert_msg(fb_run(&t.b, &C.done, NCALLS, 120), "%d of %d callbacks", C.done, NCALLS);
	for (int i = 0; i < NCALLS; i++) {
		ck_assert_msg(C.order[i] == i, "callback %d was call %d's", i, C.order[i]);
		ck_assert_msg(C.status[i] == 0, "call %d: status %d", i, C.status[i]);
		if (i % 4 == 3)
			ck_assert_uint_eq(C.old[i], (uint64_t)(i / 4));
	}
	ck_assert_int_eq(C.ready, 1);
	/* What arrived: every message in order, every write, every read. */
	ck_assert(fb_run(&t.b, &t.s.eps[0].received, NCALLS / 4, 60));
	ck_assert_int_eq(t.s.eps[0].bad_seq, 0);
	for (uint32_t k = 0; k < NCALLS / 4; k++) {
		for (uint32_t j = 0; j < PIECE; j++)
			ck_assert_uint_eq(t.region[WRITE_AT + k * PIECE + j], 0x40 + k);
		ck_assert_mem_eq(t.local + READ_AT + k * PIECE, t.region + READ_AT + k * PIECE,
				 PIECE);
	}
	ck_assert_uint_eq(*(volatile uint64_t *)(t.region + WORD_AT), NCALLS / 4);
	ck_assert_int_eq(ez_conn_stats(C.conn, &st), 0);
	printf("op queue: %d calls on a window of %d: %llu queued (most at once %llu), "
	       "refusals %llu, on_send_ready %d\n", NCALLS, SEND_DEPTH,
	       (unsigned long long)st.ops_queued, (unsigned long long)st.ops_queued_most,
	       (unsigned long long)st.send_refusals, C.ready);
	ck_assert_uint_eq(st.ops_queued, QUEUE_DEPTH);
	ck_assert_uint_eq(st.ops_queued_most, QUEUE_DEPTH);
	ck_assert_uint_eq(st.send_refusals, 1);
	ck_assert_uint_eq(st.op_errors, 0);
	bench_down(&t);
}
END_TEST

/* Large messages (rendezvous: each takes its window's bind and its header)
 * queue as well: 12 of 192 KiB on a window of 4, all arrive in order with
 * their bytes. */
START_TEST(large_sends_queued)
{
	enum { N = 12, LEN = 192 << 10 };
	struct bench t;
	uint8_t *m = malloc(LEN);

	ck_assert_ptr_nonnull(m);
	bench_up(&t, 256 << 10);
	for (int i = 0; i < N; i++) {
		uint64_t seq = (uint64_t)i;

		memset(m, 'a' + i, LEN);
		memcpy(m, &seq, sizeof(seq));
		ck_assert_msg(ez_send(C.conn, m, LEN, cli_op, (void *)(uintptr_t)i) == 0, "send %d: %s",
			      i, ez_errmsg());
	}
	free(m);	/* queued sends hold copies */
	ck_assert_msg(fb_run(&t.b, &C.done, N, 120), "%d of %d callbacks", C.done, N);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(C.order[i], i);
		ck_assert_int_eq(C.status[i], 0);
	}
	ck_assert(fb_run(&t.b, &t.s.eps[0].received, N, 60));
	ck_assert_int_eq(t.s.eps[0].bad_seq, 0);
	bench_down(&t);
}
END_TEST

/* A queued call holds its MR by itself: the window full of sends (no MR),
 * one write queued behind them, and ez_mr_dereg() of the write's MR is
 * refused while it waits (the posted sends hold none), then allowed once
 * it is done (bench_down). */
START_TEST(queued_call_holds_its_mr)
{
	struct bench t;
	uint64_t seq;
	char want[160];

	bench_up(&t, 4096);
	for (int i = 0; i < SEND_DEPTH; i++) {
		seq = (uint64_t)i;
		ck_assert_int_eq(ez_send(C.conn, &seq, sizeof(seq), cli_op, (void *)(uintptr_t)i), 0);
	}
	ck_assert_int_eq(ez_write(C.conn, t.lmr, 0, PIECE, &t.key, 0, cli_op,
				  (void *)(uintptr_t)SEND_DEPTH), 0);
	ck_assert_int_eq(ez_mr_dereg(t.lmr), -EBUSY);
	snprintf(want, sizeof(want), "ez_mr_dereg: 1 operations posted or queued still use the MR at %p (wait for their callbacks)",
		 (void *)t.local);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_msg(fb_run(&t.b, &C.done, SEND_DEPTH + 1, 120), "%d callbacks", C.done);
	ck_assert_int_eq(C.order[SEND_DEPTH], SEND_DEPTH);
	ck_assert_int_eq(C.status[SEND_DEPTH], 0);
	bench_down(&t);
}
END_TEST

/* Closed with calls queued: each call ends exactly once; those still
 * queued with -ECANCELED (the window's may have completed), all before
 * on_disconnect. */
START_TEST(close_ends_queued_calls)
{
	struct bench t;

	bench_up(&t, 4096);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(call(&t, i), 0);
	ez_conn_close(C.conn);
	ck_assert(fb_run(&t.b, &C.disconnected, 1, 60));
	ck_assert_int_eq(C.done, 40);
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(C.order[i], i);
		if (i >= SEND_DEPTH)
			ck_assert_msg(C.status[i] == -ECANCELED, "call %d: %d", i, C.status[i]);
		else
			ck_assert_msg(C.status[i] == 0 || C.status[i] == -ECANCELED, "call %d: %d", i,
				      C.status[i]);
	}
	bench_down(&t);
	ck_assert_int_eq(C.done, 40);	/* none ran twice while the server's end was run */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("op_queue");
	TCase *tc = tcase_create("queue");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, mixed_calls_in_order);
	tcase_add_test(tc, large_sends_queued);
	tcase_add_test(tc, queued_call_holds_its_mr);
	tcase_add_test(tc, close_ends_queued_calls);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_VERBOSE);
}
