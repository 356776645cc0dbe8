/* msg.h: the data path (msg.c): sends, RDMA ops, their completions, receive dispatch, credits. */
#ifndef EZ_CONN_MSG_H
#define EZ_CONN_MSG_H

#include "conn_types.h"

void conn_on_send_wc(struct op *op, const struct ibv_wc *wc);
/* The completion of a silent send (an error or a flush) on p. */
void conn_on_silent_wc(struct conn_path *p, const struct ibv_wc *wc);
void conn_on_recv_wc(struct ez_conn *conn, const struct ibv_wc *wc);
int conn_ops_init(struct ez_conn *conn);
void conn_ops_fini(struct ez_conn *conn);
void conn_kick(struct ez_conn *conn);
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
