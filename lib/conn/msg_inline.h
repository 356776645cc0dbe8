/* msg_inline.h: the send side's inline pieces, one copy each, that msg.c's
 * posting, the application's calls (send_calls.c, rdma_calls.c) and the
 * completions (send_wc.c) are composed from: an op's one ending
 * (op_finish()), the credit a post takes, a chain's accounting, silent sends,
 * the checks every call starts with. The hand-tuned fast paths inline them;
 * the rest of the op lifecycle is msg.c's, declared below. */
#ifndef EZ_CONN_MSG_INLINE_H
#define EZ_CONN_MSG_INLINE_H

#include <arpa/inet.h>

#include "conn_types.h"
#include "queued.h"
#include "sendq.h"
#include "staging.h"
#include "srqpool/srqpool.h"
#include "device/mr.h"
#include "base/owner.h"

/* At most this many WRs in a row go unsignalled: one completion then
 * accounts for the whole run (a send queue completes in order). */
#define SIG_EVERY 16
_Static_assert(CONN_UNSIG_SPARES == SIG_EVERY - 1, "the QP's room for silent sends");

/* msg.c's, for the pieces below and the files composed from them. */
void conn_send_ready_now(struct ez_conn *conn);
struct op_end;
int conn_op_end_of(struct ez_conn *conn, const struct op *op, int status, struct op_end *end);
void conn_op_count_kind(struct ez_conn *conn, const struct op *op);
struct chain;
int conn_post_refused(struct ez_conn *conn, const struct chain *ch, struct ibv_send_wr *bad,
		      int err, const struct op *tail_before);
/* A chain of ops, posted with one doorbell; 0 or the device's refusal. */
int conn_post_chain(struct ez_conn *conn, const struct chain *ch);
/* One op, charged and posted now (a chain of one). */
int conn_op_post(struct ez_conn *conn, struct op *op);
/* Posts now when nothing is queued ahead and credits allow; else queues. */
int conn_op_submit(struct ez_conn *conn, struct op *op);
/* An op's ending through its kind (op_kind_ops.done). */
void conn_op_done(struct ez_conn *conn, struct op *op, int status);
/* "SEND of 42 bytes", "RDMA READ of ...": what an error message names. */
void conn_op_describe(const struct op *op, char *out, size_t len);
/* Whether the op's kind reports its own failure (op_kind_ops.own_report). */
int conn_op_reports_own(const struct op *op);

/* Room is back after a refusal: on_send_ready, once. Its own callback
 * may have taken the room again (then the next completion tells). With an
 * op queue, the queue's ops go first (conn_queue_ready()). */
static inline void send_ready_check(struct ez_conn *conn)
{
	if (!conn->sq.send_refused || !conn->sq.free_ops || conn->state != CS_CONNECTED ||
	    conn->app_closed)
		return;
	if (__builtin_expect(conn->oq.max != 0, 0)) {
		conn_queue_ready(conn);
		return;
	}
	conn->sq.send_refused = 0;
	conn_send_ready_fire(conn);
}

/* What an op that is not a plain success (an error, an expired deadline,
 * an atomic's result, a large send's staging) changes in its ending, for
 * op_finish(). Out of line: the common ending pays nothing for it. */
struct op_end {
	ez_atomic_cb acb;	/* an atomic's callback, with old */
	uint64_t old;
	int large;		/* a large send: its staged copy went back */
};

/* The one place an op ends for its owner: it goes back to the free list
 * (so that its callback can post the next), then the application's
 * callback runs, exactly once, with the outcome. plain (a constant): an
 * application send, write or read that succeeded, which needs nothing of
 * conn_op_end_of() (a stream's every completion). */
static inline __attribute__((always_inline)) void op_finish(struct ez_conn *conn, struct op *op,
							     int status, const int plain)
{
	ez_op_cb cb = op->cb;
	void *arg = op->arg;
	struct op_end end = { 0 };

	if (!plain)
		status = conn_op_end_of(conn, op, status, &end);
	conn_op_put(conn, op);
	if (__builtin_expect(end.acb != NULL, 0))
		end.acb(conn, status, end.old, arg);
	else if (cb)
		cb(conn, status, arg);
	send_ready_check(conn);
	/* Its staged copy went back (rndv.c): connections refused for the
	 * context's staging budget may send again. */
	if (__builtin_expect(end.large, 0) && conn->ctx->staged_waiters)
		staging_wake(conn->ctx, conn_send_ready_now);
}

/* Whether the op lands in one of the peer's receive buffers, and so needs
 * one of its credits. A write with immediate does: its immediate value is
 * delivered through a receive completion. */

/* One test of a bit, not a compare per kind: it runs for every op posted. */
static inline int needs_credit(const struct op *op)
{
	return OP_KIND_IN(OP_CREDIT_KINDS, op->kind);
}

/* The credits we owe, for an op's immediate: no call while nothing is owed
 * (a streaming sender receives nothing). */
static inline uint32_t credits_to_give(struct ez_conn *conn)
{
	return conn->acct.owed ? srqpool_credits_return(conn->pool, &conn->acct, IMM_CREDITS_MASK)
			       : 0;
}

/* A chain of the application's ops to post with one doorbell (kick_now,
 * conn_op_post): linked through wr.next and op->next, on one path, the last
 * one signalled; its count, payload bytes and the kinds in it, so that a
 * chain that went out is accounted for at once, not op by op. */
struct chain {
	struct op *first, *last;
	uint32_t n;
	uint32_t kinds;		/* OP_KIND_BIT()s */
	uint64_t bytes;		/* of the WRs' sges */
};

/* A chain the device took: onto its path's send list (conn_sq_append's
 * counts, for the whole chain), and into the statistics: the path's per
 * chain, the kinds' per chain too when it holds only sends (a stream). */
static inline __attribute__((always_inline)) void chain_account(struct ez_conn *conn,
								 struct conn_path *p,
								 const struct chain *ch)
{
	const struct op *op;

	ch->first->silent_before = (uint8_t)p->silent_tail;
	p->silent_tail = 0;
	if (p->sq_tail)
		p->sq_tail->next = ch->first;
	else
		p->sq_head = ch->first;
	p->sq_tail = ch->last;
	p->posted += (int)ch->n;
	p->posted_bytes += ch->bytes;	/* a chain holds no control message */
	p->ops += ch->n;	/* owner: the data path counts what it posts on a path */
	p->bytes += ch->bytes;	/* owner: as above */
	if (!(ch->kinds & ~(OP_KIND_BIT(OP_SEND) | OP_KIND_BIT(OP_SEND_MR)))) {
		conn->stats.msgs_sent += ch->n;
		conn->stats.bytes_sent += ch->bytes;
		return;
	}
	/* A chain of writes alone, or of reads alone (conn_op_count_kind()'s
	 * counts, for the whole chain). */
	if (ch->kinds == OP_KIND_BIT(OP_WRITE) || ch->kinds == OP_KIND_BIT(OP_READ)) {
		if (ch->kinds == OP_KIND_BIT(OP_WRITE))
			conn->stats.writes += ch->n;
		else
			conn->stats.reads += ch->n;
		conn->stats.rdma_bytes += ch->bytes;
		return;
	}
	for (op = ch->first; op; op = op->next)
		conn_op_count_kind(conn, op);
}

/* Whether a send may go out silent on p (no op, no completion of its
 * own): on a connection that allows it (conn->sq.sends_silent), with fewer
 * than SIG_EVERY - 1 WRs waiting on p for a completion. */
static inline int silent_fits(const struct ez_conn *conn, const struct conn_path *p)
{
	return conn->sq.sends_silent && p->posted < SIG_EVERY - 1;
}

/* A silent send the device took on p: counted on the connection and the
 * path until the completion of the next op posted there (silent_before),
 * and in the statistics as a chain of one send is (chain_account()); its
 * bytes are not in p->posted_bytes, which only a choice among several
 * paths reads. */
static inline void silent_posted(struct ez_conn *conn, struct conn_path *p, uint32_t len)
{
	p->posted++;
	p->silent_tail++;
	conn->stats.sends_unsignalled++;
	conn->stats.msgs_sent++;
	conn->stats.bytes_sent += len;
	p->ops++;	/* owner: the data path counts what it posts on a path */
	p->bytes += len;	/* owner: as above */
}

/* The silent sends retired with e (its completion came, or one behind it:
 * a send queue completes in order). A free op's silent_before is 0 (each
 * posted op leaves through here), so only the op that starts a chain or
 * a control message needs it set when posted (chain_account(),
 * conn_sq_append()). A stream's ops carry none: one test each. */
static inline void silent_retire(struct ez_conn *conn, struct conn_path *p, struct op *e)
{
	if (__builtin_expect(!e->silent_before, 1))
		return;
	p->posted -= e->silent_before;
	e->silent_before = 0;
}

int conn_check_slow(struct ez_conn *conn, const char *fn);

/* The common case in one expression (established, open, the owner's
 * thread); every refusal and its message is conn_check_slow()'s. */
static inline int check_conn(struct ez_conn *conn, const char *fn)
{
	if (__builtin_expect(conn && conn->state == CS_CONNECTED && !conn->app_closed &&
			     conn->ctx->owner.token == ezi_thread_token(), 1))
		return 0;
	return conn_check_slow(conn, fn);
}

/* A free op in call order, or NULL: the window is full, or calls wait in
 * the op queue ahead of this one (queued.c then queues or
 * refuses it). The queue's own posts (draining) take their turn. */
static inline struct op *op_get(struct ez_conn *conn)
{
	if (__builtin_expect(conn->oq.head != NULL && !conn->oq.draining, 0))
		return NULL;
	return conn_op_take(conn);
}

int conn_check_mr_slow(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		       const char *fn);

/* An MR range the op may use: live, on the connection's device, inside
 * the MR and one WR's size; each refusal is conn_check_mr_slow()'s. */
static inline int check_mr(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
			   const char *fn)
{
	if (__builtin_expect(mr && !mr->dead && mr->dev == conn->dev && off <= mr->mr->length &&
			     len <= mr->mr->length - off && len <= UINT32_MAX &&
			     len <= conn->dev->attr.max_mr_size, 1))
		return 0;
	return conn_check_mr_slow(conn, mr, off, len, fn);
}

#endif
