/* test_datapath.c: the data path (msg.c, sendq.c) without a device, on fakeverbs.h's fake ibv_context: the send fast path and silent sends, a chain the device half-accepts, error completions of silent sends, the seal after ERR, credit edges, receive faults, and conn_sq_post()'s one error idiom: the branches Soft-RoCE cannot produce. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fakeverbs.h"
#include "conn/msg.h"
#include "conn/sendq.h"
#include "device/cq.h"
#include "wire/imm.h"
#include "../checkmain.h"

/* ---- what the application saw ------------------------------------------- */

#define TAG(i) ((void *)(uintptr_t)(i))

static struct {
	uintptr_t tag;
	int status;
} cbs[64];
static int ncb;
static int nready;
static int nrecv;
static char recv_bytes[64];
static size_t recv_len;
static int nwimm;
static uint32_t wimm, wimm_len;

static void op_cb(struct ez_conn *conn, int status, void *arg)
{
	ck_assert_ptr_eq(conn, fv.conn);
	ck_assert_int_lt(ncb, (int)(sizeof(cbs) / sizeof(cbs[0])));
	cbs[ncb].tag = (uintptr_t)arg;
	cbs[ncb].status = status;
	ncb++;
}

static void on_send_ready(struct ez_conn *conn, void *arg)
{
	nready++;
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	nrecv++;
	recv_len = ez_buf_len(buf);
	memset(recv_bytes, 0, sizeof(recv_bytes));
	if (recv_len <= sizeof(recv_bytes))
		memcpy(recv_bytes, ez_buf_data(buf), recv_len);
	ez_buf_release(buf);
}

static void on_write_imm(struct ez_conn *conn, uint32_t imm, uint32_t len, void *arg)
{
	nwimm++;
	wimm = imm;
	wimm_len = len;
}

static void setup(void)
{
	ncb = nready = nrecv = nwimm = 0;
}

static void teardown(void)
{
	fv_conn_free();
}

#define ck_cb(i, tag_, status_) do { \
	ck_assert_uint_eq(cbs[i].tag, (uintptr_t)(tag_)); \
	ck_assert_int_eq(cbs[i].status, (status_)); \
} while (0)

/* The op behind a posted WR's wr_id (conn_op_bind: its device_wr | tag). */
static struct op *op_of_wr(int i)
{
	uint64_t id = fv.wrs[i].wr_id;

	ck_assert_uint_eq(id & CQ_OP_TAG, CQ_OP_TAG);
	return container_of((struct device_wr *)(uintptr_t)(id & ~(uint64_t)CQ_OP_TAG), struct op, dwr);
}

static void ck_wr(int i, unsigned int flags, uint32_t imm, const char *bytes)
{
	const struct fv_wr *w = &fv.wrs[i];

	ck_assert_int_lt(i, fv.nwrs);
	ck_assert_int_eq(w->opcode, IBV_WR_SEND_WITH_IMM);
	ck_assert_uint_eq(w->send_flags, flags);
	ck_assert_uint_eq(w->imm, imm);
	if (bytes) {
		ck_assert_int_eq(w->num_sge, 1);
		ck_assert_uint_eq(w->length, strlen(bytes));
		ck_assert_uint_eq(w->lkey, 0);
		ck_assert_mem_eq(w->bytes, bytes, strlen(bytes));
	} else {
		ck_assert_int_eq(w->num_sge, 0);
	}
}

/* Sends queued inside a completion batch go out as one chain at its end
 * (kick_now()): what a stream's callbacks submit. */
static void queue_sends(int first, int n, const char *const *msgs)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(ez_send(fv.conn, msgs[i], strlen(msgs[i]), op_cb, TAG(first + i)), 0);
}

static const char *const five[] = { "m0", "m01", "m012", "m0123", "m01234" };

/* ==== 1. ez_send()'s fast path ============================================ */

START_TEST(fast_send_signalled)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });
	struct op *op;

	ck_assert_int_eq(ez_send(conn, "hello", 5, op_cb, TAG(1)), 0);
	ck_assert_int_eq(fv.calls, 1);
	ck_assert_int_eq(fv.nwrs, 1);
	ck_wr(0, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "hello");
	op = op_of_wr(0);
	ck_assert(op >= conn->sq.ops && op < conn->sq.ops + conn->sq.nops);
	ck_assert_int_eq(op->kind, OP_SEND);
	ck_assert_uint_eq(conn->sq.send_credits, 3);
	ck_assert_uint_eq(conn->rxt.sent, 1);
	ck_assert_int_eq(conn_sq_posted(conn), 1);
	ck_assert_ptr_eq(conn->paths[0].sq_head, op);
	ck_assert_int_eq(fv_free_ops(), 31);
	ck_assert_uint_eq(conn->stats.msgs_sent, 1);
	ck_assert_uint_eq(conn->stats.bytes_sent, 5);
	ck_assert_uint_eq(conn->paths[0].ops, 1);
	ck_assert_uint_eq(conn->paths[0].bytes, 5);
	ck_assert_uint_eq(conn->stats.sends_unsignalled, 0);
	ck_assert_int_eq(ncb, 0);

	fv_send_done(0, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 1);
	ck_cb(0, 1, 0);
	ck_assert_ptr_eq(conn->sq.free_ops, op);	/* back first, then the callback */
	ck_assert_int_eq(fv_free_ops(), 32);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_ptr_null(conn->paths[0].sq_head);
	ck_assert_uint_eq(conn->sq_ok, 1);
	ck_assert_uint_eq(conn->stats.op_errors, 0);
	ck_assert_uint_eq(conn->sq.send_credits, 3);
	ck_assert_int_eq(fv.fsm_calls, 0);
}
END_TEST

/* The credits owed ride in the next send's immediate. */
START_TEST(fast_send_carries_owed_credits)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });
	uint32_t granted = conn->acct.granted;
	uint64_t rx_granted = conn->rxt.granted;

	conn->cbs.on_recv = on_recv;
	ck_assert_uint_eq(granted, FV_NBUFS - 1);	/* a private pool keeps one back */
	for (int i = 0; i < 4; i++)
		fv_recv(IBV_WC_SUCCESS, 1, 0, "ping", 4);
	ck_assert_int_eq(nrecv, 4);
	ck_assert_uint_eq(conn->acct.granted, granted - 4);
	ck_assert_uint_eq(conn->acct.owed, 4);
	ck_assert_int_eq(fv.calls, 0);	/* not due: no credit message */

	ck_assert_int_eq(ez_send(conn, "pong", 4, op_cb, TAG(1)), 0);
	ck_assert_int_eq(fv.nwrs, 1);
	ck_wr(0, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 4, "pong");
	ck_assert_uint_eq(conn->acct.owed, 0);
	ck_assert_uint_eq(conn->acct.granted, granted);
	ck_assert_uint_eq(conn->rxt.granted, rx_granted + 4);
}
END_TEST

START_TEST(fast_send_silent)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });
	struct conn_path *p = &conn->paths[0];
	struct op *op;

	ck_assert_uint_eq(conn->sq.sends_silent, 1);
	ck_assert_int_eq(ez_send(conn, "a", 1, NULL, NULL), 0);
	ck_assert_int_eq(ez_send(conn, "bb", 2, NULL, NULL), 0);
	ck_assert_int_eq(fv.nwrs, 2);
	ck_wr(0, IBV_SEND_INLINE, 0, "a");
	ck_wr(1, IBV_SEND_INLINE, 0, "bb");
	ck_assert_uint_eq(fv.wrs[0].wr_id, device_wr_id(&p->silent_dwr));
	ck_assert_uint_eq(fv.wrs[1].wr_id, device_wr_id(&p->silent_dwr));
	ck_assert_int_eq(fv_free_ops(), 32);	/* no op of their own */
	ck_assert_int_eq(p->silent_tail, 2);
	ck_assert_int_eq(conn_sq_posted(conn), 2);
	ck_assert_uint_eq(conn->stats.sends_unsignalled, 2);
	ck_assert_uint_eq(conn->stats.msgs_sent, 2);
	ck_assert_uint_eq(conn->stats.bytes_sent, 3);
	ck_assert_uint_eq(conn->sq.send_credits, 2);

	/* The next op carries them and retires them at its completion. */
	ck_assert_int_eq(ez_send(conn, "ccc", 3, op_cb, TAG(7)), 0);
	ck_wr(2, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "ccc");
	op = op_of_wr(2);
	ck_assert_uint_eq(op->silent_before, 2);
	ck_assert_int_eq(p->silent_tail, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 3);
	fv_send_done(2, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 1);
	ck_cb(0, 7, 0);
	ck_assert_uint_eq(op->silent_before, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_int_eq(fv_free_ops(), 32);
	ck_assert_uint_eq(conn->sq.send_credits, 1);
}
END_TEST

/* An op deadline needs every op's completion: no silent sends. */
START_TEST(no_silent_with_op_timeout)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4, .op_timeout_ms = 1000 });
	struct op *op;

	ck_assert_uint_eq(conn->sq.sends_silent, 0);
	ck_assert_int_eq(ez_send(conn, "a", 1, NULL, NULL), 0);
	ck_wr(0, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "a");
	op = op_of_wr(0);
	ck_assert_int_eq(fv_free_ops(), 31);
	ck_assert_uint_eq(conn->stats.sends_unsignalled, 0);
	fv_send_done(0, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 0);
	ck_assert_ptr_eq(conn->sq.free_ops, op);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
}
END_TEST

/* The window full: -ENOBUFS, then on_send_ready once room is back. */
START_TEST(window_full_then_ready)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4, .send_depth = 2 });

	conn->cbs.on_send_ready = on_send_ready;
	ck_assert_uint_eq(conn->sq.sends_silent, 0);
	ck_assert_int_eq(ez_send(conn, "a", 1, op_cb, TAG(0)), 0);
	ck_assert_int_eq(ez_send(conn, "b", 1, op_cb, TAG(1)), 0);
	ck_assert_int_eq(ez_send(conn, "c", 1, op_cb, TAG(2)), -ENOBUFS);
	ck_assert_int_eq(ez_send(conn, "d", 1, NULL, NULL), -ENOBUFS);
	ck_assert_str_eq(ez_errmsg(), "ez_send: 2 operations already outstanding (send_depth)");
	ck_assert_uint_eq(conn->stats.send_refusals, 2);
	ck_assert_int_eq(fv.nwrs, 2);
	ck_assert_uint_eq(conn->sq.send_credits, 2);
	fv_send_done(0, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 1);
	ck_assert_int_eq(nready, 1);
	ck_assert_uint_eq(conn->stats.send_ready_calls, 1);
	fv_send_done(1, IBV_WC_SUCCESS);
	ck_assert_int_eq(nready, 1);	/* once per refusal run */
}
END_TEST

/* ==== 1b. the op queue (ez_conn_opts.queue_depth) ========================= */

/* Past the window, up to queue_depth calls are accepted (0) and posted in
 * call order as completions free room; one more is refused naming both
 * bounds, and on_send_ready runs once the queue has room again. */
START_TEST(queue_past_window_in_order)
{
	static const char *const m[] = { "a", "b", "c", "d", "e" };
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 8, .send_depth = 2,
							       .queue_depth = 3 });
	struct ez_conn_stats st;

	conn->cbs.on_send_ready = on_send_ready;
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(ez_send(conn, m[i], 1, op_cb, TAG(i)), 0);
	ck_assert_int_eq(fv.nwrs, 2);		/* a and b posted, c d e queued */
	ck_assert_uint_eq(conn->oq.n, 3);
	ck_assert_int_eq(ez_send(conn, "f", 1, op_cb, TAG(5)), -ENOBUFS);
	ck_assert_str_eq(ez_errmsg(),
			 "ez_send: the window (send_depth) is full and the op queue holds 3 calls (queue_depth)");
	ck_assert_uint_eq(conn->stats.send_refusals, 1);
	ck_assert_int_eq(nready, 0);

	fv_send_done(0, IBV_WC_SUCCESS);	/* a: c goes, the queue has room */
	ck_assert_int_eq(fv.nwrs, 3);
	ck_wr(2, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "c");
	ck_assert_int_eq(nready, 1);
	fv_send_done(1, IBV_WC_SUCCESS);
	ck_wr(3, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "d");
	fv_send_done(2, IBV_WC_SUCCESS);
	ck_wr(4, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "e");
	ck_assert_uint_eq(conn->oq.n, 0);
	fv_send_done(3, IBV_WC_SUCCESS);
	fv_send_done(4, IBV_WC_SUCCESS);
	ck_assert_int_eq(fv.nwrs, 5);
	ck_assert_int_eq(ncb, 5);
	for (int i = 0; i < 5; i++)
		ck_cb(i, i, 0);
	ck_assert_int_eq(nready, 1);		/* once for the one refusal */
	ck_assert_int_eq(ez_conn_stats(conn, &st), 0);
	ck_assert_uint_eq(st.ops_queued, 3);
	ck_assert_uint_eq(st.ops_queued_most, 3);
	ck_assert_uint_eq(st.msgs_sent, 5);
	ck_assert_uint_eq(st.op_errors, 0);
	ck_assert_int_eq(fv_free_ops(), 2);
}
END_TEST

/* A send made in a callback while calls are queued goes behind them, even
 * though the completion just freed an op. */
static void send_x_on_first(struct ez_conn *conn, int status, void *arg)
{
	op_cb(conn, status, arg);
	if ((uintptr_t)arg == 0)
		ck_assert_int_eq(ez_send(conn, "x", 1, op_cb, TAG(9)), 0);
}

START_TEST(queue_keeps_call_order)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 8, .send_depth = 1,
							       .queue_depth = 4 });

	ck_assert_int_eq(ez_send(conn, "a", 1, send_x_on_first, TAG(0)), 0);
	ck_assert_int_eq(ez_send(conn, "b", 1, op_cb, TAG(1)), 0);
	ck_assert_int_eq(ez_send(conn, "c", 1, op_cb, TAG(2)), 0);
	fv_send_done(0, IBV_WC_SUCCESS);	/* a's callback sends x: queued after c */
	ck_assert_uint_eq(conn->oq.n, 2);
	ck_wr(1, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "b");
	fv_send_done(1, IBV_WC_SUCCESS);
	ck_wr(2, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "c");
	fv_send_done(2, IBV_WC_SUCCESS);
	ck_wr(3, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "x");
	fv_send_done(3, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 4);
	ck_cb(3, 9, 0);
}
END_TEST

/* The connection's end: the ops waiting for credits, then the queued
 * calls, each ends once with -ECANCELED, in call order; a queued send's
 * copy is freed (ASan's leak check). */
START_TEST(queue_cancelled_at_end)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 0, .send_depth = 2,
							       .queue_depth = 8 });
	char big[40];

	memset(big, 'z', sizeof(big));
	for (int i = 0; i < 2; i++)	/* no credit: waiting, not posted */
		ck_assert_int_eq(ez_send(conn, "w", 1, op_cb, TAG(i)), 0);
	for (int i = 2; i < 5; i++)
		ck_assert_int_eq(ez_send(conn, big, sizeof(big), op_cb, TAG(i)), 0);
	ck_assert_int_eq(fv.calls, 0);
	ck_assert_uint_eq(conn->oq.n, 3);
	conn_cancel_pending(conn);
	ck_assert_int_eq(ncb, 5);
	for (int i = 0; i < 5; i++)
		ck_cb(i, i, -ECANCELED);
	ck_assert_uint_eq(conn->oq.n, 0);
	ck_assert_ptr_null(conn->oq.head);
	ck_assert_uint_eq(conn->stats.op_errors, 5);
	ck_assert_int_eq(fv_free_ops(), 2);
}
END_TEST

/* Without a queue nothing changes: a full window refuses (the message of
 * window_full_then_ready), nothing is queued. */
START_TEST(queue_off_refuses)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 8, .send_depth = 1 });

	ck_assert_int_eq(ez_send(conn, "a", 1, op_cb, TAG(0)), 0);
	ck_assert_int_eq(ez_send(conn, "b", 1, op_cb, TAG(1)), -ENOBUFS);
	ck_assert_str_eq(ez_errmsg(), "ez_send: 1 operations already outstanding (send_depth)");
	ck_assert_ptr_null(conn->oq.head);
	ck_assert_uint_eq(conn->oq.total, 0);
}
END_TEST

/* ==== 2. a chain the device half-accepts ================================== */

/* Five sends queued in a batch; at its close the device takes three of
 * the chain and refuses the fourth. */
static struct ez_conn *half_accepted(void)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 8 });

	device_batch_open(&fv.dev);
	queue_sends(0, 5, five);
	ck_assert_int_eq(fv.calls, 0);
	ck_assert_ptr_nonnull(conn->sq.pend_head);
	ck_assert_int_eq(fv_free_ops(), 27);
	fv_refuse_after(3, ENOMEM, 0);
	device_batch_close(&fv.dev);
	return conn;
}

START_TEST(chain_half_accepted)
{
	struct ez_conn *conn = half_accepted();
	const char *want = "ibv_post_send(SEND, 5 bytes): Cannot allocate memory";

	ck_assert_int_eq(fv.calls, 1);	/* one doorbell for the chain */
	ck_assert_int_eq(fv.nwrs, 3);
	for (int i = 0; i < 3; i++)
		ck_wr(i, IBV_SEND_INLINE, 0, five[i]);	/* unsignalled: the chain's last was refused */
	ck_assert_ptr_null(conn->sq.pend_head);
	/* The three it took: accounted as posted. */
	ck_assert_int_eq(conn_sq_posted(conn), 3);
	ck_assert_ptr_eq(conn->paths[0].sq_head, op_of_wr(0));
	ck_assert_ptr_eq(conn->paths[0].sq_tail, op_of_wr(2));
	ck_assert_uint_eq(conn->stats.msgs_sent, 3);
	ck_assert_uint_eq(conn->stats.bytes_sent, 2 + 3 + 4);
	ck_assert_uint_eq(conn->paths[0].ops, 3);
	/* The two it refused: ended once each with the error, in order,
	 * their credits and ops back. */
	ck_assert_int_eq(ncb, 2);
	ck_cb(0, 3, -ENOMEM);
	ck_cb(1, 4, -ENOMEM);
	ck_assert_uint_eq(conn->sq.send_credits, 8 - 3);
	ck_assert_uint_eq(conn->rxt.sent, 3);
	ck_assert_int_eq(fv_free_ops(), 32 - 3);
	ck_assert_uint_eq(conn->stats.op_errors, 2);
	ck_assert_str_eq(ez_errmsg(), want);
	/* The queue now ends unsignalled: only a flush accounts for it, so
	 * the connection ends, with the post's message. */
	ck_assert_int_eq(fv.fsm_calls, 1);
	ck_assert_int_eq(fv.fsm_status, -ENOMEM);
	ck_assert_int_eq(fv.fsm_next, CS_DRAINING);
	ck_assert_str_eq(conn->errmsg, want);
}
END_TEST

/* Refused from its first WR: nothing posted, every op ends with the error
 * (the first last: post_refused() leaves it to the caller), every credit
 * back, the connection up (nothing unsignalled was left behind). */
START_TEST(chain_refused_whole)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 8 });

	device_batch_open(&fv.dev);
	queue_sends(0, 5, five);
	fv_refuse_after(0, ENOMEM, 0);
	device_batch_close(&fv.dev);
	ck_assert_int_eq(fv.calls, 1);
	ck_assert_int_eq(fv.nwrs, 0);
	ck_assert_int_eq(ncb, 5);
	ck_cb(0, 1, -ENOMEM);
	ck_cb(1, 2, -ENOMEM);
	ck_cb(2, 3, -ENOMEM);
	ck_cb(3, 4, -ENOMEM);
	ck_cb(4, 0, -ENOMEM);
	ck_assert_uint_eq(conn->sq.send_credits, 8);
	ck_assert_uint_eq(conn->rxt.sent, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_int_eq(fv_free_ops(), 32);
	ck_assert_uint_eq(conn->stats.msgs_sent, 0);
	ck_assert_int_eq(fv.fsm_calls, 0);
	ck_assert_int_eq(conn->state, CS_CONNECTED);
	ck_assert_str_eq(conn->errmsg, "ibv_post_send(SEND, 2 bytes): Cannot allocate memory");
}
END_TEST

/* Half accepted up to a signalled WR (every 16th is): the queue ends
 * signalled, so the connection carries on; that WR's completion retires
 * the run before it. */
START_TEST(chain_half_accepted_signalled_tail)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 20 });
	static const char *const one[] = { "x" };

	device_batch_open(&fv.dev);
	for (int i = 0; i < 17; i++)
		queue_sends(i, 1, one);
	fv_refuse_after(16, EAGAIN, 0);
	device_batch_close(&fv.dev);
	ck_assert_int_eq(fv.nwrs, 16);
	for (int i = 0; i < 15; i++)
		ck_wr(i, IBV_SEND_INLINE, 0, "x");
	ck_wr(15, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "x");
	ck_assert_int_eq(ncb, 1);
	ck_cb(0, 16, -EAGAIN);
	ck_assert_int_eq(fv.fsm_calls, 0);
	ck_assert_int_eq(conn->state, CS_CONNECTED);
	ck_assert_uint_eq(conn->sq.send_credits, 20 - 16);
	ck_assert_int_eq(conn_sq_posted(conn), 16);
	fv_send_done(15, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 17);
	for (int i = 0; i < 16; i++)
		ck_cb(1 + i, i, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_int_eq(fv_free_ops(), 32);
}
END_TEST

/* ==== 3. error completions of silent sends =============================== */

/* A chain A, B, C (C signalled), silent S1 and S2, then D carrying them. */
static struct ez_conn *chain_then_silent(void)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 8 });
	static const char *const abc[] = { "A", "B", "C" };

	device_batch_open(&fv.dev);
	queue_sends(0, 3, abc);
	device_batch_close(&fv.dev);
	ck_assert_int_eq(ez_send(conn, "S1", 2, NULL, NULL), 0);
	ck_assert_int_eq(ez_send(conn, "S2", 2, NULL, NULL), 0);
	ck_assert_int_eq(ez_send(conn, "D", 1, op_cb, TAG(3)), 0);
	ck_assert_int_eq(fv.nwrs, 6);
	ck_wr(2, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "C");
	ck_wr(3, IBV_SEND_INLINE, 0, "S1");
	ck_assert_uint_eq(op_of_wr(5)->silent_before, 2);
	ck_assert_int_eq(conn_sq_posted(conn), 6);
	conn->srq_drained = 1;	/* the drain waits on the send queue alone */
	return conn;
}

START_TEST(silent_retry_exceeded)
{
	struct ez_conn *conn = chain_then_silent();
	struct op *d = op_of_wr(5);

	fv_send_done(2, IBV_WC_SUCCESS);
	ck_assert_int_eq(ncb, 3);
	ck_cb(0, 0, 0);
	ck_cb(1, 1, 0);
	ck_cb(2, 2, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 3);

	/* S1 failed: everything before it is done; D carries one fewer. */
	fv_send_done(3, IBV_WC_RETRY_EXC_ERR);
	ck_assert_uint_eq(d->silent_before, 1);
	ck_assert_int_eq(conn_sq_posted(conn), 2);
	ck_assert_uint_eq(conn->stats.op_errors, 1);
	ck_assert_int_eq(fv.fsm_calls, 1);
	ck_assert_int_eq(fv.fsm_status, -ETIMEDOUT);
	ck_assert_str_eq(conn->errmsg, "SEND of a callback-less message: transport retry counter "
			 "exceeded (QP 77, vendor error 0x81)");
	ck_assert_int_eq(ncb, 3);

	/* The QP in ERR flushes the rest: S2 (silent), then D. */
	fv_send_done(4, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(d->silent_before, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 1);
	ck_assert_uint_eq(conn->stats.op_errors, 2);
	ck_assert_int_eq(fv.fsm_calls, 1);	/* ended already: no second end */
	fv_send_done(5, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(ncb, 4);
	ck_cb(3, 3, -ECANCELED);
	ck_assert_uint_eq(conn->stats.op_errors, 3);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_int_eq(fv_free_ops(), 32);
	/* Drained: nothing posted is left. */
	ck_assert_int_eq(fv.fsm_calls, 2);
	ck_assert_int_eq(fv.fsm_next, CS_FINISHING);
	ck_assert_str_eq(conn->errmsg, "SEND of a callback-less message: transport retry counter "
			 "exceeded (QP 77, vendor error 0x81)");
}
END_TEST

/* A flush on a live connection is left to whoever moved the QP: counted,
 * not reported; a silent completion with none outstanding is logged and
 * changes nothing. */
START_TEST(silent_flush)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });
	struct conn_path *p = &conn->paths[0];

	ck_assert_int_eq(ez_send(conn, "S1", 2, NULL, NULL), 0);
	ck_assert_int_eq(ez_send(conn, "S2", 2, NULL, NULL), 0);
	ck_assert_int_eq(p->silent_tail, 2);
	fv_send_done(0, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p->silent_tail, 1);
	ck_assert_int_eq(conn_sq_posted(conn), 1);
	ck_assert_uint_eq(conn->stats.op_errors, 1);
	ck_assert_int_eq(fv.fsm_calls, 0);
	fv_send_done(1, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p->silent_tail, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_uint_eq(conn->stats.op_errors, 2);
	ck_assert_int_eq(fv.nlog, 0);

	fv_send_done(1, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_uint_eq(conn->stats.op_errors, 2);
	ck_assert_int_eq(fv.nlog, 1);
	ck_assert_str_eq(fv.log, "QP 77: a silent send's completion (Work Request Flushed Error) "
			 "with none outstanding");
	ck_assert_int_eq(fv.fsm_calls, 0);
	ck_assert_int_eq(conn->state, CS_CONNECTED);
}
END_TEST

/* The unsignalled ops at the head retire, successfully and in order, when
 * a silent send behind them completes in error. No device delivers that
 * before C's own completion (a queue completes in order), so this is the
 * defensive branch of conn_on_silent_wc(), reached by withholding C's. */
START_TEST(silent_error_retires_head)
{
	struct ez_conn *conn = chain_then_silent();
	struct op *d = op_of_wr(5);

	fv_send_done(3, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(ncb, 3);
	ck_cb(0, 0, 0);
	ck_cb(1, 1, 0);
	ck_cb(2, 2, 0);
	ck_assert_ptr_eq(conn->paths[0].sq_head, d);
	ck_assert_uint_eq(d->silent_before, 1);
	ck_assert_int_eq(conn_sq_posted(conn), 2);
	ck_assert_uint_eq(conn->stats.op_errors, 1);
	ck_assert_int_eq(fv.fsm_calls, 0);	/* a flush: not ours to report */
	ck_assert_int_eq(fv_free_ops(), 31);
}
END_TEST

/* ==== 4. the seal after ERR ================================================ */

START_TEST(seal_after_unsignalled_tail)
{
	struct ez_conn *conn = half_accepted();
	struct op *c;

	conn->srq_drained = 1;
	c = op_of_wr(2);
	ck_assert_uint_eq(c->wr.send_flags & IBV_SEND_SIGNALED, 0);
	fv_accept_all();
	conn_seal(conn);
	ck_assert_int_eq(fv.calls, 2);
	ck_assert_int_eq(fv.nwrs, 4);
	ck_wr(3, IBV_SEND_SIGNALED, 0, NULL);
	ck_assert_uint_eq(fv.wrs[3].wr_id, device_wr_id(&conn->sq.seal_op.dwr));
	ck_assert_int_eq(conn->sq.seal_op.kind, OP_SEAL);
	ck_assert_uint_eq(conn->stats.seals, 1);
	ck_assert_int_eq(conn_sq_posted(conn), 4);

	/* Its flush retires the run before it: the three sends the device
	 * took, successfully, in order; then the drain ends. */
	fv_send_done(3, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(ncb, 5);
	ck_cb(2, 0, 0);
	ck_cb(3, 1, 0);
	ck_cb(4, 2, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_int_eq(fv_free_ops(), 32);
	ck_assert_int_eq(fv.fsm_calls, 2);
	ck_assert_int_eq(fv.fsm_next, CS_FINISHING);
	ck_assert_str_eq(conn->errmsg, "ibv_post_send(SEND, 5 bytes): Cannot allocate memory");
}
END_TEST

START_TEST(seal_after_silent)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });

	ck_assert_int_eq(ez_send(conn, "S1", 2, NULL, NULL), 0);
	conn_fail(conn, -ECONNRESET, "the test ends it");
	conn->srq_drained = 1;
	conn_seal(conn);
	ck_assert_int_eq(fv.nwrs, 2);
	ck_wr(1, IBV_SEND_SIGNALED, 0, NULL);
	ck_assert_uint_eq(conn->sq.seal_op.silent_before, 1);
	ck_assert_int_eq(conn->paths[0].silent_tail, 0);
	ck_assert_uint_eq(conn->stats.seals, 1);
	ck_assert_int_eq(conn_sq_posted(conn), 2);
	fv_send_done(1, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
	ck_assert_int_eq(fv.fsm_calls, 2);
	ck_assert_int_eq(fv.fsm_next, CS_FINISHING);
}
END_TEST

START_TEST(seal_not_needed)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });

	conn_seal(conn);	/* nothing posted */
	ck_assert_int_eq(ez_send(conn, "A", 1, op_cb, TAG(0)), 0);
	conn_fail(conn, -ECONNRESET, "the test ends it");
	conn_seal(conn);	/* the queue ends signalled */
	ck_assert_int_eq(fv.calls, 1);
	ck_assert_uint_eq(conn->stats.seals, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 1);
}
END_TEST

START_TEST(seal_refused)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });

	ck_assert_int_eq(ez_send(conn, "S1", 2, NULL, NULL), 0);
	conn_fail(conn, -ECONNRESET, "the test ends it");
	fv_refuse_after(0, ENOMEM, 0);
	conn_seal(conn);
	ck_assert_int_eq(fv.calls, 2);
	ck_assert_int_eq(fv.nwrs, 1);
	ck_assert_uint_eq(conn->stats.seals, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 1);
	ck_assert_int_eq(conn->paths[0].silent_tail, 1);
	ck_assert_int_eq(fv.nlog, 1);
	ck_assert_str_eq(fv.log, "QP 77 in ERR: ibv_post_send(send-queue seal): Cannot allocate "
			 "memory; 1 sends stay unaccounted");
}
END_TEST

/* ==== 5. credit edges ====================================================== */

START_TEST(credit_wait_then_grant)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });

	ck_assert_int_eq(ez_send(conn, "first", 5, op_cb, TAG(0)), 0);
	ck_assert_uint_eq(conn->sq.send_credits, 0);
	/* No credit: queued, in order, not posted; silent or not. */
	ck_assert_int_eq(ez_send(conn, "q1", 2, op_cb, TAG(1)), 0);
	ck_assert_int_eq(ez_send(conn, "q2", 2, NULL, NULL), 0);
	ck_assert_int_eq(ez_send(conn, "q3", 2, op_cb, TAG(3)), 0);
	ck_assert_int_eq(fv.calls, 1);
	ck_assert_uint_eq(conn->stats.waits_for_credits, 3);
	ck_assert_int_eq(fv_free_ops(), 28);

	/* The peer hands two back in a credit-only message: two go, as one
	 * chain, the third waits. */
	fv_recv(IBV_WC_SUCCESS, 1, IMM_CREDIT_ONLY | 2, NULL, 0);
	ck_assert_uint_eq(conn->stats.credit_msgs_recv, 1);
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
	ck_assert_uint_eq(conn->acct.granted, FV_NBUFS - 1);	/* it took no credit of ours */
	ck_assert_int_eq(fv.calls, 2);
	ck_assert_int_eq(fv.nwrs, 3);
	ck_wr(1, IBV_SEND_INLINE, 0, "q1");
	ck_wr(2, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "q2");
	ck_assert_int_eq(fv.wrs[1].call, fv.wrs[2].call);
	ck_assert_uint_eq(conn->sq.send_credits, 0);
	ck_assert_ptr_nonnull(conn->sq.pend_head);
	ck_assert_ptr_eq(conn->sq.pend_head, conn->sq.pend_tail);
	ck_assert_uint_eq(conn->rxt.sent, 3);
	ck_assert_uint_eq(conn->stats.waits_for_credits, 3);

	fv_recv(IBV_WC_SUCCESS, 1, IMM_CREDIT_ONLY | 1, NULL, 0);
	ck_assert_int_eq(fv.nwrs, 4);
	ck_wr(3, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "q3");
	ck_assert_ptr_null(conn->sq.pend_head);
	ck_assert_uint_eq(conn->sq.send_credits, 0);
	ck_assert_int_eq(ncb, 0);
}
END_TEST

/* Credits that come with data (its immediate) release the queue too. */
START_TEST(credit_on_data_message)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });

	conn->cbs.on_recv = on_recv;
	ck_assert_int_eq(ez_send(conn, "first", 5, op_cb, TAG(0)), 0);
	ck_assert_int_eq(ez_send(conn, "q1", 2, op_cb, TAG(1)), 0);
	ck_assert_int_eq(fv.nwrs, 1);
	fv_recv(IBV_WC_SUCCESS, 1, 1, "data", 4);
	ck_assert_int_eq(nrecv, 1);
	ck_assert_mem_eq(recv_bytes, "data", 4);
	ck_assert_int_eq(fv.nwrs, 2);
	ck_wr(1, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0, "q1");
	ck_assert_uint_eq(conn->sq.send_credits, 0);
}
END_TEST

/* Queued ops end with -ECANCELED when the connection gives them up. */
START_TEST(credit_wait_cancelled)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 0 });

	ck_assert_int_eq(ez_send(conn, "q1", 2, op_cb, TAG(1)), 0);
	ck_assert_int_eq(ez_send(conn, "q2", 2, op_cb, TAG(2)), 0);
	ck_assert_int_eq(fv.calls, 0);
	ck_assert_uint_eq(conn->stats.waits_for_credits, 2);
	conn_cancel_pending(conn);
	ck_assert_int_eq(ncb, 2);
	ck_cb(0, 1, -ECANCELED);
	ck_cb(1, 2, -ECANCELED);
	ck_assert_int_eq(fv_free_ops(), 32);
	ck_assert_ptr_null(conn->sq.pend_head);
	ck_assert_uint_eq(conn->stats.op_errors, 2);
}
END_TEST

/* Half the window owed and nothing to carry it: a credit-only message. */
START_TEST(credit_message_when_due)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	uint32_t granted = conn->acct.granted;
	int n = 0;

	conn->cbs.on_recv = on_recv;
	while (!fv.nwrs) {
		fv_recv(IBV_WC_SUCCESS, 1, 0, "x", 1);
		n++;
		ck_assert_int_le(n, (int)granted);
	}
	ck_assert_int_eq(n, 8);	/* owed >= granted: 8 used of 15 */
	ck_assert_int_eq(fv.nwrs, 1);
	ck_wr(0, IBV_SEND_SIGNALED, IMM_CREDIT_ONLY | 8, NULL);
	ck_assert_uint_eq(fv.wrs[0].wr_id, device_wr_id(&conn->sq.credit_op.dwr));
	ck_assert_int_eq(conn->sq.credit_inflight, 1);
	ck_assert_uint_eq(conn->stats.credit_msgs_sent, 1);
	ck_assert_uint_eq(conn->acct.owed, 0);
	ck_assert_uint_eq(conn->acct.granted, granted);
	ck_assert_uint_eq(conn->sq.send_credits, 1);	/* a credit message takes none */
	ck_assert_int_eq(fv_free_ops(), 32);
	fv_send_done(0, IBV_WC_SUCCESS);
	ck_assert_int_eq(conn->sq.credit_inflight, 0);
	ck_assert_int_eq(conn_sq_posted(conn), 0);
}
END_TEST

/* ==== 6. receive faults ===================================================== */

START_TEST(recv_failed_completion)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	uint32_t nfree = fv.pool->nfree;

	conn->cbs.on_recv = on_recv;
	fv_recv(IBV_WC_LOC_LEN_ERR, 0, 0, NULL, 0);
	ck_assert_int_eq(nrecv, 0);
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
	ck_assert_uint_eq(fv.pool->nfree, nfree + 1);	/* the buffer went back */
	ck_assert_int_eq(fv.fsm_calls, 1);
	ck_assert_int_eq(fv.fsm_status, -EMSGSIZE);
	ck_assert_str_eq(conn->errmsg, "receive work completion (QP 77): local length error into a "
			 "4096-byte receive buffer (vendor error 0x44)");
}
END_TEST

START_TEST(recv_flushed)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	uint32_t nfree = fv.pool->nfree;

	conn->cbs.on_recv = on_recv;
	fv_recv(IBV_WC_WR_FLUSH_ERR, 0, 0, NULL, 0);
	ck_assert_int_eq(nrecv, 0);
	ck_assert_uint_eq(fv.pool->nfree, nfree + 1);
	ck_assert_int_eq(fv.fsm_calls, 0);
	ck_assert_int_eq(conn->state, CS_CONNECTED);
}
END_TEST

/* The peer sends beyond its window while our credit message is on its
 * way: the first message without a credit ends the connection. */
START_TEST(recv_without_credit)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	int n = 0;
	char want[160];

	conn->cbs.on_recv = on_recv;
	while (conn->acct.granted) {
		fv_recv(IBV_WC_SUCCESS, 1, 0, "x", 1);
		n++;
		ck_assert_int_le(n, 64);
	}
	ck_assert_int_eq(conn->sq.credit_inflight, 1);	/* one went; not completed */
	ck_assert_int_eq(nrecv, n);
	fv_recv(IBV_WC_SUCCESS, 1, 0, "x", 1);
	ck_assert_int_eq(nrecv, n);
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
	ck_assert_int_eq(fv.fsm_calls, 1);
	ck_assert_int_eq(fv.fsm_status, -EPROTO);
	snprintf(want, sizeof(want), "peer sent a message with no receive credit (%llu granted, %d used)",
		 (unsigned long long)conn->rxt.granted, n);
	ck_assert_str_eq(conn->errmsg, want);
}
END_TEST

START_TEST(recv_too_long)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	static char big[3000];

	conn->cbs.on_recv = on_recv;
	conn->my_max_msg = 1024;	/* advertised below the buffers */
	fv_recv(IBV_WC_SUCCESS, 1, 0, big, sizeof(big));
	ck_assert_int_eq(nrecv, 0);
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
	ck_assert_int_eq(fv.fsm_status, -EPROTO);
	ck_assert_str_eq(conn->errmsg, "peer sent 3000 bytes, max_msg_size 1024");
}
END_TEST

START_TEST(recv_over_return)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });

	ck_assert_int_eq(ez_send(conn, "A", 1, op_cb, TAG(0)), 0);
	fv_recv(IBV_WC_SUCCESS, 1, IMM_CREDIT_ONLY | 3, NULL, 0);
	ck_assert_int_eq(fv.fsm_status, -EPROTO);
	ck_assert_uint_eq(conn->sq.send_credits, 0);
	ck_assert_str_eq(conn->errmsg, "peer returned 3 credits; this side sent 1 messages, so at "
			 "most 2 more could come back");
}
END_TEST

START_TEST(recv_credit_empty)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });

	fv_recv(IBV_WC_SUCCESS, 1, IMM_CREDIT_ONLY, NULL, 0);
	ck_assert_int_eq(fv.fsm_status, -EPROTO);
	ck_assert_str_eq(conn->errmsg, "peer sent a credit message that returns no credit "
			 "(immediate 0x80000000)");
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
}
END_TEST

/* After the end: the buffer goes back, its credit counted, nothing
 * delivered. */
START_TEST(recv_after_end)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	uint32_t owed = conn->acct.owed;

	conn->cbs.on_recv = on_recv;
	conn_fail(conn, -ECONNRESET, "the test ends it");
	fv_recv(IBV_WC_SUCCESS, 1, 5, "late", 4);
	ck_assert_int_eq(nrecv, 0);
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
	ck_assert_uint_eq(conn->acct.owed, owed + 1);
	ck_assert_uint_eq(conn->sq.send_credits, 1);	/* its credits are not taken */
	ck_assert_int_eq(fv.fsm_calls, 1);
}
END_TEST

/* What is not a fault: data, a write with immediate, a goodbye. */
START_TEST(recv_delivered)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 1 });
	struct ibv_wc wc;

	conn->cbs.on_recv = on_recv;
	conn->cbs.on_write_imm = on_write_imm;
	fv_recv(IBV_WC_SUCCESS, 1, 0, "hello", 5);
	ck_assert_int_eq(nrecv, 1);
	ck_assert_uint_eq(recv_len, 5);
	ck_assert_mem_eq(recv_bytes, "hello", 5);
	ck_assert_uint_eq(conn->stats.msgs_recv, 1);
	ck_assert_uint_eq(conn->stats.bytes_recv, 5);
	ck_assert_uint_eq(conn->paths[0].msgs_recv, 1);
	ck_assert_uint_eq(conn->rxt.used, 1);
	ck_assert_uint_eq(conn->acct.owed, 1);

	wc = fv_recv_wc(IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 1, 0xdeadbeef, NULL, 0);
	wc.byte_len = 4096;
	fv_dispatch(&wc, 1);
	ck_assert_int_eq(nwimm, 1);
	ck_assert_uint_eq(wimm, 0xdeadbeef);
	ck_assert_uint_eq(wimm_len, 4096);
	ck_assert_uint_eq(conn->stats.write_imms_recv, 1);
	ck_assert_uint_eq(conn->acct.owed, 2);

	fv_recv(IBV_WC_SUCCESS, 1, IMM_CREDIT_ONLY | IMM_BYE, NULL, 0);
	ck_assert_int_eq(conn->peer_bye, 1);
	ck_assert_uint_eq(conn->stats.credit_msgs_recv, 1);
	ck_assert_uint_eq(fv_bufs_in_use(), 0);
	ck_assert_int_eq(fv.fsm_calls, 0);
}
END_TEST

/* ==== 7. conn_sq_post()'s one error idiom ================================== */

START_TEST(post_error_idiom)
{
	struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad = NULL;

	fv_refuse_after(0, ENOSPC, 0);		/* a provider's own error */
	ck_assert_int_eq(conn_sq_post(&conn->paths[0], &wr, &bad), -ENOSPC);
	ck_assert_ptr_eq(bad, &wr);
	fv_refuse_after(0, -1, ENOSPC);		/* an older one's -1 and errno */
	ck_assert_int_eq(conn_sq_post(&conn->paths[0], &wr, &bad), -ENOSPC);
	fv_refuse_after(0, -1, 0);		/* -1 and no errno */
	ck_assert_int_eq(conn_sq_post(&conn->paths[0], &wr, &bad), -EIO);
	fv_accept_all();
	ck_assert_int_eq(conn_sq_post(&conn->paths[0], &wr, &bad), 0);
}
END_TEST

/* Both idioms end the same through every poster: an op's (ez_send's fast
 * path), a silent send's, a control message's. */
START_TEST(post_error_idiom_senders)
{
	static const int rets[2] = { ENOSPC, -1 };
	const char *want = "ibv_post_send(SEND, 5 bytes): No space left on device";

	for (int k = 0; k < 2; k++) {
		struct ez_conn *conn = fv_conn_new(&(struct fv_opts){ .credits = 4 });

		setup();
		fv_refuse_after(0, rets[k], ENOSPC);
		ck_assert_int_eq(ez_send(conn, "hello", 5, op_cb, TAG(1)), -ENOSPC);
		ck_assert_str_eq(ez_errmsg(), want);
		ck_assert_str_eq(conn->errmsg, want);
		ck_assert_int_eq(ez_send(conn, "quiet", 5, NULL, NULL), -ENOSPC);
		ck_assert_str_eq(ez_errmsg(), want);
		ck_assert_int_eq(conn_post_bye(conn), -ENOSPC);
		ck_assert_int_eq(fv.calls, 3);
		ck_assert_int_eq(ncb, 0);	/* a refused call returns its error: no callback */
		ck_assert_uint_eq(conn->sq.send_credits, 4);
		ck_assert_uint_eq(conn->rxt.sent, 0);
		ck_assert_int_eq(fv_free_ops(), 32);
		ck_assert_int_eq(conn_sq_posted(conn), 0);
		ck_assert_uint_eq(conn->stats.msgs_sent, 0);
		ck_assert_uint_eq(conn->stats.sends_unsignalled, 0);
		ck_assert_int_eq(fv.fsm_calls, 0);
		fv_conn_free();
	}
}
END_TEST

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *datapath_suite(void)
{
	Suite *s = suite_create("datapath");
	TCase *tc;

	tc = tcase(s, "fast_send");
	tcase_add_test(tc, fast_send_signalled);
	tcase_add_test(tc, fast_send_carries_owed_credits);
	tcase_add_test(tc, fast_send_silent);
	tcase_add_test(tc, no_silent_with_op_timeout);
	tcase_add_test(tc, window_full_then_ready);
	tcase_add_test(tc, queue_past_window_in_order);
	tcase_add_test(tc, queue_keeps_call_order);
	tcase_add_test(tc, queue_cancelled_at_end);
	tcase_add_test(tc, queue_off_refuses);
	tc = tcase(s, "half_accepted_chain");
	tcase_add_test(tc, chain_half_accepted);
	tcase_add_test(tc, chain_refused_whole);
	tcase_add_test(tc, chain_half_accepted_signalled_tail);
	tc = tcase(s, "silent_errors");
	tcase_add_test(tc, silent_retry_exceeded);
	tcase_add_test(tc, silent_flush);
	tcase_add_test(tc, silent_error_retires_head);
	tc = tcase(s, "seal");
	tcase_add_test(tc, seal_after_unsignalled_tail);
	tcase_add_test(tc, seal_after_silent);
	tcase_add_test(tc, seal_not_needed);
	tcase_add_test(tc, seal_refused);
	tc = tcase(s, "credits");
	tcase_add_test(tc, credit_wait_then_grant);
	tcase_add_test(tc, credit_on_data_message);
	tcase_add_test(tc, credit_wait_cancelled);
	tcase_add_test(tc, credit_message_when_due);
	tc = tcase(s, "recv_faults");
	tcase_add_test(tc, recv_failed_completion);
	tcase_add_test(tc, recv_flushed);
	tcase_add_test(tc, recv_without_credit);
	tcase_add_test(tc, recv_too_long);
	tcase_add_test(tc, recv_over_return);
	tcase_add_test(tc, recv_credit_empty);
	tcase_add_test(tc, recv_after_end);
	tcase_add_test(tc, recv_delivered);
	tc = tcase(s, "post_idiom");
	tcase_add_test(tc, post_error_idiom);
	tcase_add_test(tc, post_error_idiom_senders);
	return s;
}

int main(void)
{
	return check_run_suite(datapath_suite(), CK_NORMAL);
}
