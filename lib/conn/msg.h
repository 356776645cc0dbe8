/* msg.h: the data path: its send side (msg.c: the op lifecycle, posting, credits; send_calls.c and rdma_calls.c: the application's calls; send_wc.c: their completions) and its receive side (recv.c). */
#ifndef EZ_CONN_MSG_H
#define EZ_CONN_MSG_H

#include "conn_types.h"
#include "srqpool/srqpool.h"

void conn_on_send_wc(struct op *op, const struct ibv_wc *wc);
/* The completion of a silent send (an error or a flush) on p. */
void conn_on_silent_wc(struct conn_path *p, const struct ibv_wc *wc);
void conn_on_recv_wc(struct ez_conn *conn, const struct ibv_wc *wc);
/* Gives back the buffers of messages held until the peer's exports came
 * (recv.c): the connection ended first. */
void conn_recv_unpark(struct ez_conn *conn);
int conn_ops_init(struct ez_conn *conn);
void conn_ops_fini(struct ez_conn *conn);
void conn_kick(struct ez_conn *conn);
/* After a completion: a kick only when it has something to do (ops
 * waiting, or credits due that no credit message carries yet), so a
 * ping-pong's completion costs no deferred call that finds nothing. */
static inline void conn_kick_if_needed(struct ez_conn *conn)
{
	if (__builtin_expect(conn->sq.pend_head ||
			     (!conn->sq.credit_inflight && srqpool_credits_due(&conn->acct)), 0))
		conn_kick(conn);
}
/* A work completion's status as the errno an op ends with. */
int conn_wc_errno(enum ibv_wc_status s);
/* An op ends, any kind, any outcome: its callback, exactly once (msg.c's
 * op_finish()). */
void conn_op_complete(struct ez_conn *conn, struct op *op, int status);
/* Exact failover: the ops failed path p held, once settled (path.c
 * decides, this ends each: done, posted again on a live path, unknown,
 * failed), each exactly once. Nothing while p cannot settle yet; p NULL:
 * nothing. */
void conn_settle_path(struct ez_conn *conn, struct conn_path *p);
/* Session resumed (resume.c): the ops path 0's old QP held end exactly
 * once, those to post again on the new path 0; what waited is posted. */
void conn_settle_resumed(struct ez_conn *conn);
/* The pool has credits for this connection again (srqpool_acct.kick). */
void conn_credit_kick(struct srqpool_acct *a);
void conn_unqueue_kick(struct ez_conn *conn);
/* Posts a deferred kick now (a close posts its goodbye behind it). */
void conn_flush_kick(struct ez_conn *conn);
int conn_post_bye(struct ez_conn *conn);
void conn_cancel_pending(struct ez_conn *conn);
/* The QP is in ERR: a queue ending with an unsignalled WR gets a signalled
 * one behind it, so that the drain sees every WR accounted for. */
void conn_seal(struct ez_conn *conn);
/* Points op's wr_id at its device_wr, whose completion is conn_on_send_wc(). */
void conn_op_bind(struct op *op);

#endif
