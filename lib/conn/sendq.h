/* sendq.h: a connection's ops on their way to the send queues (sendq.c). */
#ifndef EZ_CONN_SENDQ_H
#define EZ_CONN_SENDQ_H

#include <errno.h>

#include "base/assert.h"
#include "conn_types.h"

/* A copied send's registered slot of len bytes (sendslab.c), set in op's
 * SGE; and its return, when the op completes or is given up. */
int conn_op_copy_slot(struct ez_conn *conn, struct op *op, size_t len);
void conn_op_release_copy(struct ez_conn *conn, struct op *op);
/* Back on the free list, holding nothing. Inline: every completed op takes
 * it. */
static inline void conn_op_free(struct ez_conn *conn, struct op *op)
{
	EZ_ASSERT(!op->slot && !op->mr);
	op->next = conn->sq.free_ops;
	conn->sq.free_ops = op;
}

/* What an op holds goes back with it: its copy slot, its MR's count
 * (ez_mr_dereg's -EBUSY), its deadline ticks (keepalive.c); then the free
 * list. The common op (inline, or a write or read) holds no slot. */
static inline void conn_op_put(struct ez_conn *conn, struct op *op)
{
	if (__builtin_expect(op->slot != NULL, 0))
		conn_op_release_copy(conn, op);
	if (op->mr) {
		op->mr->inflight--;
		op->mr = NULL;
	}
	op->aged = 0;
	conn_op_free(conn, op);
}

/* The one place an op leaves the free list: NULL when the window
 * (send_depth) is full. A free op holds nothing (conn_op_put); what it
 * will be is the fill's (conn_op_fill(), or a fast path's own). */
static inline struct op *conn_op_take(struct ez_conn *conn)
{
	struct op *op = conn->sq.free_ops;

	if (__builtin_expect(op != NULL, 1))
		conn->sq.free_ops = op->next;
	return op;
}

/* The fields every op sets before it is posted or queued: its kind, its
 * owner's callback, no path pinned, no MR yet, not linked. The WR's
 * opcode, flags and SGE are the kind's own fill. */
static inline void conn_op_fill(struct op *op, enum op_kind kind, ez_op_cb cb, void *arg)
{
	op->kind = kind;
	op->cb = cb;
	op->arg = arg;
	op->pin = 0;
	op->mr = NULL;
	op->next = NULL;
	op->wr.next = NULL;
}

/* The one call of ibv_post_send(): 0, or -errno. A provider returns the
 * error itself (positive); an older one -1 with errno set. */
static inline int conn_sq_post(struct conn_path *p, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad)
{
	int err = ibv_post_send(p->qp, wr, bad);

	if (__builtin_expect(err == 0, 1))
		return 0;
	return err > 0 ? -err : errno ? -errno : -EIO;
}
/* The send queue's settings and counts, for the files that learn them:
 * the QP's inline size (its creation), the bound of a send posted from
 * the caller's bytes (the connection is up), credits the peer granted
 * (the handshake, a message, a path's give-back). */
void conn_sq_set_inline(struct ez_conn *conn, uint32_t max_inline);
void conn_sq_up(struct ez_conn *conn);
void conn_sq_credits_add(struct ez_conn *conn, uint32_t n);
/* An op was refused for lack of room (counted): on_send_ready once
 * there is room again. conn_sq_wait_ready(): room is awaited, nobody
 * refused yet (the context's staging budget marks its waiter so; the
 * send's own refusal, or its place in the op queue, is msg.c's). */
void conn_sq_refused(struct ez_conn *conn);
void conn_sq_wait_ready(struct ez_conn *conn);
/* The window is full (and the op queue, if any): -ENOBUFS naming fn, and
 * on_send_ready once there is room. */
int conn_op_refused(struct ez_conn *conn, const char *fn);
/* on_send_ready, counted. */
void conn_send_ready_fire(struct ez_conn *conn);
/* On a connection with an op queue, after room came back: room is still
 * awaited (waiting: the queue holds ops) or not, and the application's
 * refusal has had its on_send_ready. */
void conn_sq_ready_clear(struct ez_conn *conn, int waiting);
/* The WRs on the connection's send queues (every path's). */
int conn_sq_posted(const struct ez_conn *conn);
/* Called whenever posted work drops: fires CE_DRAINED once a draining
 * connection has nothing posted left and the SRQ is done with it. */
void conn_drain_check(struct ez_conn *conn);
/* A WR just posted on op->path joins that path's list of posted WRs. */
void conn_sq_append(struct ez_conn *conn, struct op *op);
/* The control messages (credits, goodbyes, path notices, auth): op is a
 * dedicated one (bound at setup), or NULL for a free send op (returned at
 * its completion); data (len bytes) is copied. 0, or -errno with nothing
 * posted. */
int conn_post_ctrl(struct ez_conn *conn, struct op *op, enum op_kind kind,
		   struct conn_path *path, uint32_t imm, const void *data, uint32_t len);

const char *op_kind_name(enum op_kind kind);

/* A goodbye that says why (wire/bye.h; only to a peer that set
 * HS_CAP_BYE_REASON), on path 0; the caller then ends the connection with
 * conn_fail_after_bye(). 0 or -errno (nothing posted). */
int conn_post_bye_why(struct ez_conn *conn, const void *why, uint32_t len);

#endif
