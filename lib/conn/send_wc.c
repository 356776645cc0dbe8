/* send_wc.c: the send queue's completions: the unsignalled run before each, its op's one ending, a failure named and (on a path of several) taken out, a silent send's error. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <arpa/inet.h>

#include "conn_fsm.h"
#include "conn_handle.h"
#include "msg.h"
#include "msg_inline.h"
#include "sendq.h"
#include "conn_export.h"
#include "conn_pd.h"
#include "atomic.h"
#include "keepalive.h"
#include "device/cq.h"
#include "device/device.h"
#include "base/log.h"
#include "device/mr.h"
#include "path.h"
#include "rebuild.h"
#include "rndv.h"
#include "staging.h"
#include "peer_penalty.h"
#include "op_queue.h"
#include "queued.h"
#include "srqpool/srqpool.h"
#include "wire/rx_check.h"

int conn_wc_errno(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return -ECANCELED;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return -EMSGSIZE;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_MW_BIND_ERR:
		return -EACCES;
	case IBV_WC_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ENOBUFS;
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
		return -EREMOTEIO;
	default:
		return -EIO;
	}
}

/* A send-queue completion in error, before the op's callback runs: a
 * fatal one ends the connection now, naming the op, so that the callback
 * (and ez_conn_errmsg() in it) sees the cause, and the end keeps it even
 * when the callback closes the connection in response. A flush we did not
 * cause may be the peer's refused RDMA request (the QP went to ERR without
 * a word): conn_access_check() names it. */
static int send_failure_to_report(struct ez_conn *conn, int status, int fatal)
{
	if (conn_is_ended(conn))
		return 0;
	if (status == -ECANCELED && conn_access_check(conn))
		return 0;
	return fatal;
}

static void send_failure_report(struct ez_conn *conn, const char *what, const struct ibv_wc *wc,
				int status)
{
	conn_fail(conn, status, "%s: %s (QP %u, vendor error 0x%x)", what,
		  ibv_wc_status_str(wc->status), wc->qp_num, wc->vendor_err);
}

static void op_failed(struct ez_conn *conn, const struct op *op, const struct ibv_wc *wc,
		      int status, int fatal)
{
	char what[96];

	if (!send_failure_to_report(conn, status, fatal) || conn_op_reports_own(op))
		return;
	conn_op_describe(op, what, sizeof(what));
	send_failure_report(conn, what, wc, status);
}

/* The application's sends, writes and reads: what conn_op_done() and
 * op_complete() do for one that succeeded, in one place (a streaming
 * sender retires SIG_EVERY of them per completion). */
#define OP_APP_KINDS (OP_KIND_BIT(OP_SEND) | OP_KIND_BIT(OP_SEND_MR) | OP_KIND_BIT(OP_WRITE) | \
		      OP_KIND_BIT(OP_WRITE_IMM) | OP_KIND_BIT(OP_READ))

static inline void app_op_done_ok(struct ez_conn *conn, struct conn_path *p, struct op *e)
{
	EZ_ASSERT(p->posted > 0);
	p->posted--;
	if (e->wr.num_sge)
		p->posted_bytes -= e->sge.length;
	op_finish(conn, e, 0, 1);
}

/* The unsignalled WR at the head of p's list (a later completion came):
 * done, successfully, with the silent sends before it; it completes once,
 * in order. */
static inline void retire_head(struct ez_conn *conn, struct conn_path *p, struct op *e)
{
	p->sq_head = e->next;
	if (!p->sq_head)
		p->sq_tail = NULL;
	silent_retire(conn, p, e);
	if (__builtin_expect(OP_KIND_IN(OP_APP_KINDS, e->kind), 1))
		app_op_done_ok(conn, p, e);
	else
		conn_op_done(conn, e, 0);
}

/* The unsignalled WRs posted on p before upto (its completion came). upto
 * stays at the head. A callback may post on p (a credit message): that
 * goes behind upto, so the list never empties before it. */
static void retire_run(struct ez_conn *conn, struct conn_path *p, struct op *upto)
{
	struct op *e;

	while ((e = p->sq_head) && e != upto)
		retire_head(conn, p, e);
}

void conn_on_send_wc(struct op *op, const struct ibv_wc *wc)
{
	struct ez_conn *conn = op->conn;
	struct conn_path *p = op->path;
	struct device *dev = conn->dev;
	int last_path = 0, status, run = p->sq_head != op;
	struct op *e;

	/* A send queue completes in order, and a WR that fails or is flushed
	 * always completes on its own: the unsignalled WRs posted before
	 * this one are done, successfully. Their callbacks and this op's run
	 * in a batch of their own, so that what they submit goes out as one
	 * chain when it closes (a stream's next sends), even when the device
	 * dispatches this completion outside its batch. */
	if (run) {
		device_batch_open(dev);
		retire_run(conn, p, op);
	}
	if ((e = p->sq_head)) {
		p->sq_head = e->next;
		if (!p->sq_head)
			p->sq_tail = NULL;
	}
	silent_retire(conn, p, op);
	/* The application's op that succeeded ends as its run's did: a
	 * ping-pong signals every send, so this is its every completion. */
	if (__builtin_expect(wc->status == IBV_WC_SUCCESS && OP_KIND_IN(OP_APP_KINDS, op->kind), 1)) {
		conn->sq_ok++;
		app_op_done_ok(conn, p, op);
	} else {
		/* Keepalive's own are no sign of life: a hung peer's device
		 * acknowledges probes too, only its library's answer is one. */
		if (wc->status == IBV_WC_SUCCESS &&
		    !OP_KIND_IN(OP_KIND_BIT(OP_KA_PROBE) | OP_KIND_BIT(OP_KA_ANSWER), op->kind))
			conn->sq_ok++;
		status = conn_wc_errno(wc->status);
		/* A path of several that fails is taken out and the others
		 * carry on; with exact failover its ops wait for the peer's
		 * count (path_park()). */
		if (status && conn->npaths > 1) {
			if (conn->paths_exact && path_park(conn, op, status)) {
				conn_settle_path(conn, p);
				goto parked;
			}
			status = path_on_error(conn, op, status, &last_path);
		}
		if (status)
			op_failed(conn, op, wc, status,
				  conn->npaths > 1 ? last_path : status != -ECANCELED);
		conn_op_done(conn, op, status);
	}
parked:
	if (conn_is_ended(conn))
		conn_drain_check(conn);
	else if (conn->state == CS_CONNECTED)
		conn_kick_if_needed(conn);
	/* dev, not conn->dev: the drain check may have freed conn. */
	if (run)
		device_batch_close(dev);
}

/* A silent send's completion: only an error or a flush gives one (it went
 * unsignalled). Everything posted on p before it is done (in order): the
 * unsignalled ops at the head retire; the first op still carrying silent
 * sends, or the path's tail if none does, counts one fewer. A fatal status
 * ends the connection, naming what failed. */
void conn_on_silent_wc(struct conn_path *p, const struct ibv_wc *wc)
{
	struct ez_conn *conn = p->conn;
	struct device *dev = conn->dev;
	int status = conn_wc_errno(wc->status);
	struct op *e;

	device_batch_open(dev);
	while ((e = p->sq_head) && !e->silent_before)
		retire_head(conn, p, e);
	if (e) {
		e->silent_before--;
	} else if (p->silent_tail) {
		p->silent_tail--;
	} else {
		/* Not ours to count: no silent send is outstanding on p. */
		ezi_log_err("QP %u: a silent send's completion (%s) with none outstanding",
			    wc->qp_num, ibv_wc_status_str(wc->status));
		device_batch_close(dev);
		return;
	}
	p->posted--;
	if (status)
		conn->stats.op_errors++;	/* as its op's completion would count it */
	if (status && send_failure_to_report(conn, status, status != -ECANCELED))
		send_failure_report(conn, "SEND of a callback-less message", wc, status);
	if (conn_is_ended(conn))
		conn_drain_check(conn);
	else if (conn->state == CS_CONNECTED)
		conn_kick_if_needed(conn);
	device_batch_close(dev);
}
