/* fakeverbs.c: the fake device of fakeverbs.h: its verbs, the test connection it serves, and completions through the device's own dispatch. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fakeverbs.h"
#include "base/owner.h"
#include "conn/conn_qp.h"
#include "conn/ctx.h"
#include "conn/msg.h"
#include "conn/path.h"
#include "device/cq.h"
#include "loop/loop.h"

struct fv fv;

/* ---- the verbs ----------------------------------------------------------- */

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	fv.calls++;
	ck_assert_ptr_eq(qp, &fv.qp);
	for (; wr; wr = wr->next) {
		struct fv_wr *w;

		if (fv.accept == 0) {
			*bad = wr;
			if (fv.ret < 0)
				errno = fv.err_errno;
			return fv.ret;
		}
		ck_assert_int_lt(fv.nwrs, FV_MAX_WRS);
		w = &fv.wrs[fv.nwrs++];
		memset(w, 0, sizeof(*w));
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->send_flags = wr->send_flags;
		w->imm = ntohl(wr->imm_data);
		w->num_sge = wr->num_sge;
		w->call = fv.calls;
		if (wr->num_sge) {
			ck_assert_int_eq(wr->num_sge, 1);
			w->addr = wr->sg_list[0].addr;
			w->length = wr->sg_list[0].length;
			w->lkey = wr->sg_list[0].lkey;
			/* An inline WR's bytes are read at the post: the
			 * caller may reuse them once it returns. */
			if ((wr->send_flags & IBV_SEND_INLINE) && w->length <= sizeof(w->bytes))
				memcpy(w->bytes, (const void *)(uintptr_t)w->addr, w->length);
		}
		if (fv.accept > 0)
			fv.accept--;
	}
	return 0;
}

static int fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	ck_assert_ptr_eq(srq, &fv.srq_obj);
	for (; wr; wr = wr->next) {
		ck_assert_int_lt(fv.srq_tail - fv.srq_head, (int)(sizeof(fv.srq) / sizeof(fv.srq[0])));
		fv.srq[fv.srq_tail++ % (sizeof(fv.srq) / sizeof(fv.srq[0]))] = wr->wr_id;
	}
	return 0;
}

/* Only a full batch makes the dispatch poll again (the tests' are short). */
static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return 0;
}

void fv_refuse_after(int n, int ret, int e)
{
	fv.accept = n;
	fv.ret = ret;
	fv.err_errno = e;
}

void fv_accept_all(void)
{
	fv.accept = -1;
}

/* ---- the connection's state machine and the log ------------------------ */

/* conn.c's take_transition() would carry the actions out (QPs to ERR, the
 * CM's disconnect, the final callback): here the row is only recorded and
 * its state taken. */
static void fake_fsm_run(struct ez_conn *conn, const struct conn_fsm_row *row, int status)
{
	fv.fsm_calls++;
	fv.fsm_status = status;
	fv.fsm_next = (enum conn_state)row->next;
	fv.fsm_actions = row->actions;
	conn->state = (enum conn_state)row->next;
}

static void on_log(enum ez_log_level level, const char *msg, void *arg)
{
	if (level != EZ_LOG_ERR)
		return;
	fv.nlog++;
	snprintf(fv.log, sizeof(fv.log), "%s", msg);
}

/* ---- the test connection -------------------------------------------------- */

static void pool_new(void)
{
	struct ez_srqpool *pool = calloc(1, sizeof(*pool));

	ck_assert_ptr_nonnull(pool);
	ezi_owner_init(&pool->own);
	pool->owner = &pool->own;
	pool->srq = &fv.srq_obj;
	pool->p.buf_size = pool->p.stride = FV_BUF_SIZE;
	pool->p.nbufs = pool->p.max_bufs = FV_NBUFS;
	pool->p.batch = 4 * FV_NBUFS;	/* a release posts nothing on its own */
	pool->p.watermark = 0;
	pool->lowest_posted = FV_NBUFS;
	pool->srq_max_wr = FV_NBUFS;
	fv.bufs = calloc(FV_NBUFS, sizeof(*fv.bufs));
	fv.mem = calloc(FV_NBUFS, FV_BUF_SIZE);
	ck_assert_ptr_nonnull(fv.bufs);
	ck_assert_ptr_nonnull(fv.mem);
	for (int i = 0; i < FV_NBUFS; i++) {
		srqpool_buf_init(&fv.bufs[i], pool, fv.mem + (size_t)i * FV_BUF_SIZE, FV_BUF_SIZE, 0);
		srqpool_free_push(pool, &fv.bufs[i]);
	}
	pool->total = FV_NBUFS;
	ck_assert_int_eq(srqpool_flush(pool), 0);
	ck_assert_uint_eq(pool->posted, FV_NBUFS);
	srqpool_share_update(pool);
	fv.pool = pool;
}

struct ez_conn *fv_conn_new(const struct fv_opts *o)
{
	struct ez_conn *conn;
	uint32_t initial;

	memset(&fv, 0, sizeof(fv));
	fv.accept = -1;
	ez_set_log(on_log, NULL, EZ_LOG_ERR);
	fv.vctx.ops.post_send = fake_post_send;
	fv.vctx.ops.post_srq_recv = fake_post_srq_recv;
	fv.vctx.ops.poll_cq = fake_poll_cq;
	fv.qp.context = &fv.vctx;
	fv.qp.qp_num = FV_QPN;
	fv.qp.qp_type = IBV_QPT_RC;
	fv.qp.state = IBV_QPS_RTS;
	fv.srq_obj.context = &fv.vctx;
	fv.cq.context = &fv.vctx;
	fv.cq.cqe = 256;

	snprintf(fv.dev.name, sizeof(fv.dev.name), "fake0");
	loop_defer_list_init(&fv.dev.after_batch);
	fv.dev.qp_buckets = 1;
	fv.dev.qps = calloc(1, sizeof(*fv.dev.qps));
	ck_assert_ptr_nonnull(fv.dev.qps);
	fv.dcq.dev = &fv.dev;
	fv.dcq.cq = &fv.cq;
	fv.set.only = &fv.dcq;

	fv.ctx = calloc(1, sizeof(*fv.ctx));
	ck_assert_ptr_nonnull(fv.ctx);
	ezi_owner_init(&fv.ctx->owner);
	pool_new();

	conn = calloc(1, sizeof(*conn));
	ck_assert_ptr_nonnull(conn);
	fv.conn = conn;
	conn->ctx = fv.ctx;
	conn->dev = &fv.dev;
	conn->fsm_run = fake_fsm_run;
	snprintf(conn->host, sizeof(conn->host), "peer.test");
	conn->o.send_depth = o && o->send_depth ? o->send_depth : 32;
	conn->o.op_timeout_ms = o ? o->op_timeout_ms : 0;
	conn->o.queue_depth = o ? o->queue_depth : 0;
	conn->o.max_msg_size = FV_BUF_SIZE;
	conn->o.paths = 1;
	ck_assert_int_eq(path_alloc(conn), 0);
	conn->paths[0].qp = &fv.qp;
	conn->paths[0].qpn = FV_QPN;
	conn->paths[0].live = 1;
	conn->paths_live = 1;
	/* conn->id stays NULL: conn_access_check() (a flush we did not
	 * cause) queries the QPs only of a connection rdma_cm made. */
	device_qp_add(&fv.dev, &conn->paths[0].dqp, &fv.qp, &conn_qp_ops);
	ck_assert_int_eq(conn_ops_init(conn), 0);

	conn->pool = fv.pool;
	conn->own_pool = 1;
	conn->acct.kick = conn_credit_kick;
	ck_assert_int_eq(srqpool_attach(fv.pool, &conn->acct, 1, &initial), 0);
	conn->pool_attached = 1;
	conn->my_credits = initial;
	rx_note_granted(&conn->rxt, initial);
	conn->my_max_msg = FV_BUF_SIZE;
	conn->peer_max_msg = FV_BUF_SIZE;
	conn->sq.send_credits = o ? o->credits : 0;
	conn->peer_credits = conn->sq.send_credits;
	conn->sq.max_inline = o && o->max_inline ? o->max_inline : 64;
	conn->sq.small_send_max = conn->sq.max_inline < OP_INLINE_BYTES ? conn->sq.max_inline : OP_INLINE_BYTES;
	conn->state = CS_CONNECTED;
	return conn;
}

void fv_conn_free(void)
{
	struct ez_conn *conn = fv.conn;

	if (!conn)
		return;
	srqpool_detach(fv.pool, &conn->acct);
	conn_ops_fini(conn);
	path_free(conn);
	free(conn);
	free(fv.pool);
	free(fv.bufs);
	free(fv.mem);
	free(fv.ctx);
	free(fv.dev.qps);
	ez_set_log(NULL, NULL, EZ_LOG_ERR);
	fv.conn = NULL;
}

/* ---- completions -------------------------------------------------------- */

void fv_dispatch(struct ibv_wc *wc, int n)
{
	ck_assert_int_eq(device_set_dispatch(&fv.set, wc, n), n);
}

struct ibv_wc fv_send_wc_of(int i, enum ibv_wc_status st)
{
	ck_assert_int_lt(i, fv.nwrs);
	return (struct ibv_wc){ .wr_id = fv.wrs[i].wr_id, .status = st,
				.opcode = IBV_WC_SEND, .qp_num = FV_QPN,
				.vendor_err = st == IBV_WC_SUCCESS ? 0 : 0x81 };
}

void fv_send_done(int i, enum ibv_wc_status st)
{
	struct ibv_wc wc = fv_send_wc_of(i, st);

	fv_dispatch(&wc, 1);
}

struct ibv_wc fv_recv_wc(enum ibv_wc_status st, enum ibv_wc_opcode opcode, int has_imm,
			 uint32_t imm, const void *bytes, uint32_t len)
{
	struct ibv_wc wc = { .status = st, .opcode = opcode, .qp_num = FV_QPN, .byte_len = len };
	struct ez_buf *b;

	ck_assert_int_lt(fv.srq_head, fv.srq_tail);	/* a receive is posted */
	wc.wr_id = fv.srq[fv.srq_head++ % (sizeof(fv.srq) / sizeof(fv.srq[0]))];
	b = (struct ez_buf *)(uintptr_t)wc.wr_id;
	if (bytes && len && st == IBV_WC_SUCCESS) {
		ck_assert_uint_le(len, b->size);
		memcpy(b->data, bytes, len);
	}
	if (has_imm) {
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = htonl(imm);
	}
	if (st != IBV_WC_SUCCESS)
		wc.vendor_err = 0x44;
	return wc;
}

void fv_recv(enum ibv_wc_status st, int has_imm, uint32_t imm, const void *bytes, uint32_t len)
{
	struct ibv_wc wc = fv_recv_wc(st, IBV_WC_RECV, has_imm, imm, bytes, len);

	fv_dispatch(&wc, 1);
}

int fv_free_ops(void)
{
	int n = 0;

	for (struct op *op = fv.conn->sq.free_ops; op; op = op->next)
		n++;
	return n;
}

uint32_t fv_bufs_in_use(void)
{
	return fv.pool->in_use;
}
