/* msg.c: the data path's send side: sends (copied, inline, zero-copy), RDMA write/read, atomics, their posting and completions, credits (the receive side is recv.c). */
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

/* At most this many WRs in a row go unsignalled: one completion then
 * accounts for the whole run (a send queue completes in order). */
#define SIG_EVERY 16
_Static_assert(CONN_UNSIG_SPARES == SIG_EVERY - 1, "the QP's room for silent sends");

static void op_wc_done(struct device_wr *wr, const struct ibv_wc *wc)
{
	conn_on_send_wc(container_of(wr, struct op, dwr), wc);
}

static void silent_wc_done(struct device_wr *wr, const struct ibv_wc *wc)
{
	conn_on_silent_wc(container_of(wr, struct conn_path, silent_dwr), wc);
}

/* A silent send's WR, all but its bytes, length and immediate. */
static void silent_bind(struct conn_path *p)
{
	p->silent_dwr.done = silent_wc_done;
	p->silent_sge.lkey = 0;
	p->silent_wr = (struct ibv_send_wr){ .wr_id = device_wr_id(&p->silent_dwr),
					     .sg_list = &p->silent_sge, .num_sge = 1,
					     .opcode = IBV_WR_SEND_WITH_IMM,
					     .send_flags = IBV_SEND_INLINE };
	p->silent_tail = 0;
}

void conn_op_bind(struct op *op)
{
	op->dwr.done = op_wc_done;
	op->wr.wr_id = device_wr_id(&op->dwr);
}

/* Callback-less small sends may go out silent (unsignalled, no op): at
 * most SIG_EVERY - 1 WRs waiting on the path, beyond the application's
 * window of send_depth ops. A window below two runs keeps every send
 * signalled (the silent ones would outnumber it); an op deadline
 * (op_timeout_ms) needs every op's own completion; several paths pick by
 * what each holds. */
static int unsig_ok(const struct ez_conn *conn)
{
	return conn->o.send_depth >= 2 * SIG_EVERY && !conn->o.op_timeout_ms &&
	       (conn->o.paths ? conn->o.paths : 1) == 1;
}

int conn_ops_init(struct ez_conn *conn)
{
	uint32_t i, n = conn->o.send_depth;

	conn->sq.ops = calloc(n, sizeof(*conn->sq.ops));
	if (!conn->sq.ops)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -ENOMEM,
				     "send ops: out of memory");
	for (i = 0; i < n; i++) {
		struct op *op = &conn->sq.ops[i];

		op->conn = conn;
		conn_op_bind(op);
		op->wr.sg_list = &op->sge;
		op->next = conn->sq.free_ops;
		conn->sq.free_ops = op;
	}
	conn->sq.nops = n;
	conn->sq.sends_silent = (uint8_t)unsig_ok(conn);
	op_queue_init(&conn->oq, conn->o.queue_depth);
	/* The control messages' own ops, bound once: conn_post_ctrl() fills
	 * the rest at each use. */
	conn_op_bind(&conn->sq.credit_op);
	conn_op_bind(&conn->bye_op);
	conn_op_bind(&conn->ka.probe_op);
	conn_op_bind(&conn->ka.answer_op);
	conn_op_bind(&conn->sq.seal_op);
	conn->op_bind = conn_op_bind;
	for (i = 0; i < (conn->o.paths ? conn->o.paths : 1); i++) {
		conn_op_bind(&conn->paths[i].bye_op);
		conn_op_bind(&conn->paths[i].down_op);
		silent_bind(&conn->paths[i]);
	}
	return 0;
}

/* The control messages' own ops, as conn_ops_init() bound them. A goodbye
 * that says why carries a copy, and with retry_count 7 (for ever on
 * Soft-RoCE) one to a vanished peer never completes: the cluster test's
 * server logged "send slots of rxe0: 3000 still handed out at close". */
static void ctrl_ops_release(struct ez_conn *conn)
{
	struct op *own[] = { &conn->sq.credit_op, &conn->bye_op, &conn->ka.probe_op,
			     &conn->ka.answer_op, &conn->sq.seal_op };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		conn_op_release_copy(conn, own[i]);
	for (uint32_t i = 0; conn->paths && i < (conn->o.paths ? conn->o.paths : 1); i++) {
		conn_op_release_copy(conn, &conn->paths[i].bye_op);
		conn_op_release_copy(conn, &conn->paths[i].down_op);
	}
}

void conn_ops_fini(struct ez_conn *conn)
{
	/* Every op has completed by now, or never will (its QPs are gone); a
	 * slot still held goes back all the same, or the device would log it
	 * as lost at close. */
	for (uint32_t i = 0; conn->sq.ops && i < conn->sq.nops; i++)
		conn_op_release_copy(conn, &conn->sq.ops[i]);
	ctrl_ops_release(conn);
	/* Its end ended every queued call (conn_cancel_pending()). */
	EZ_ASSERT(!conn->oq.head);
	conn_rndv_fini(conn);
	free(conn->sq.ops);
	conn->sq.ops = NULL;
	conn_atomic_fini(conn);
}

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

static void send_ready_now(struct ez_conn *conn)
{
	send_ready_check(conn);
}

/* What an op that is not a plain success (an error, an expired deadline,
 * an atomic's result, a large send's staging) changes in its ending, for
 * op_finish(). Out of line: the common ending pays nothing for it. */
struct op_end {
	ez_atomic_cb acb;	/* an atomic's callback, with old */
	uint64_t old;
	int large;		/* a large send: its staged copy went back */
};

static __attribute__((noinline)) int op_end_of(struct ez_conn *conn, const struct op *op,
					       int status, struct op_end *end)
{
	/* Flushed because its deadline passed (keepalive.c): it says so. */
	if (op->aged == OP_EXPIRED && status == -ECANCELED)
		status = -ETIMEDOUT;
	if (op->kind == OP_ATOMIC_CAS || op->kind == OP_ATOMIC_FADD) {
		end->acb = op->acb;
		end->old = status ? 0 : conn_atomic_old(conn, op);
	}
	end->large = op->kind == OP_SEND_RNDV;
	if (status)
		conn->stats.op_errors++;
	return status;
}

/* The one place an op ends for its owner: it goes back to the free list
 * (so that its callback can post the next), then the application's
 * callback runs, exactly once, with the outcome. plain (a constant): an
 * application send, write or read that succeeded, which needs nothing of
 * op_end_of() (a stream's every completion). */
static inline __attribute__((always_inline)) void op_finish(struct ez_conn *conn, struct op *op,
							     int status, const int plain)
{
	ez_op_cb cb = op->cb;
	void *arg = op->arg;
	struct op_end end = { 0 };

	if (!plain)
		status = op_end_of(conn, op, status, &end);
	conn_op_put(conn, op);
	if (__builtin_expect(end.acb != NULL, 0))
		end.acb(conn, status, end.old, arg);
	else if (cb)
		cb(conn, status, arg);
	send_ready_check(conn);
	/* Its staged copy went back (rndv.c): connections refused for the
	 * context's staging budget may send again. */
	if (__builtin_expect(end.large, 0) && conn->ctx->staged_waiters)
		staging_wake(conn->ctx, send_ready_now);
}

/* An op ends, any kind, any outcome. */
static void op_complete(struct ez_conn *conn, struct op *op, int status)
{
	op_finish(conn, op, status, 0);
}

void conn_op_complete(struct ez_conn *conn, struct op *op, int status)
{
	op_complete(conn, op, status);
}

/* The library's own ops at their completion (op_kind_ops.done). */
static void bye_done(struct ez_conn *conn, struct op *op, int status)
{
	if (--conn->byes_left <= 0)
		conn_fire(conn, CE_BYE_DONE, 0);
}

static void credit_done(struct ez_conn *conn, struct op *op, int status)
{
	conn->sq.credit_inflight = 0;
}

/* A large send's header: the op ends at the peer's acknowledgement, or
 * now if the header failed (rndv.c). */
static void rndv_header_done(struct ez_conn *conn, struct op *op, int status)
{
	if (conn_rndv_sent(conn, op, status))
		op_complete(conn, op, status);
}

/* A path notice or a seal: nothing waits on it. */
static void nothing_done(struct ez_conn *conn, struct op *op, int status)
{
}

/* A path notice: with exact failover it carried our count in a copy slot. */
static void notice_done(struct ez_conn *conn, struct op *op, int status)
{
	conn_op_release_copy(conn, op);
}

/* What a failed op was and what it touched, for the connection's message
 * (op_kind_ops.describe): "RDMA READ of rkey 0x223 [0x7f0000001000, +4096)",
 * "SEND of 64 bytes". */
static uint32_t op_bytes(const struct op *op)
{
	return op->wr.num_sge ? op->sge.length : 0;
}

static void describe_rdma(const struct op *op, char *out, size_t len)
{
	snprintf(out, len, "%s of rkey 0x%x [0x%llx, +%u)", op_kind_name(op->kind),
		 op->wr.wr.rdma.rkey, (unsigned long long)op->wr.wr.rdma.remote_addr, op_bytes(op));
}

static void describe_send(const struct op *op, char *out, size_t len)
{
	snprintf(out, len, "SEND of %u bytes", op_bytes(op));
}

static void describe_atomic(const struct op *op, char *out, size_t len)
{
	snprintf(out, len, "%s of rkey 0x%x [0x%llx, +8)", op_kind_name(op->kind),
		 op->wr.wr.atomic.rkey, (unsigned long long)op->wr.wr.atomic.remote_addr);
}

static void describe_rndv(const struct op *op, char *out, size_t len)
{
	snprintf(out, len, "rendezvous header of a %u-byte message", op->rndv_len);
}

static void describe_auth(const struct op *op, char *out, size_t len)
{
	snprintf(out, len, "shared-secret message of %u bytes", op_bytes(op));
}

/* Each kind's behaviour where it differs, in one table: its completion
 * (after the path's counts), what it holds that a refused post or a
 * cancel gives back besides the op (release), the charge a refused post
 * undoes besides the credits (uncharge), its words in a failed op's
 * message (NULL: its name), and whether it names its own failure (a
 * keepalive op with the retry budget that ran out, a fetch with the offer
 * it read). The per-op bits of the data path stay masks (OP_*_KINDS in
 * conn_types.h): one shift and test where this would be a load. */
struct op_kind_ops {
	void (*done)(struct ez_conn *conn, struct op *op, int status);
	void (*release)(struct ez_conn *conn, struct op *op);
	void (*uncharge)(struct ez_conn *conn, struct op *op);
	void (*describe)(const struct op *op, char *out, size_t len);
	uint8_t own_report;
};

static const struct op_kind_ops kind_ops[] = {
	[OP_SEND] = { .done = op_complete, .describe = describe_send },
	[OP_SEND_MR] = { .done = op_complete, .describe = describe_send },
	[OP_WRITE] = { .done = op_complete, .describe = describe_rdma },
	[OP_WRITE_IMM] = { .done = op_complete, .describe = describe_rdma },
	[OP_READ] = { .done = op_complete, .describe = describe_rdma },
	[OP_CREDIT] = { .done = credit_done },
	[OP_BYE] = { .done = bye_done },
	[OP_PATH_DOWN] = { .done = notice_done },
	[OP_AUTH] = { .done = op_complete, .describe = describe_auth },
	[OP_BIND] = { .done = op_complete },
	[OP_KA_PROBE] = { .done = conn_live_sent, .own_report = 1 },
	[OP_KA_ANSWER] = { .done = conn_live_sent, .own_report = 1 },
	[OP_ATOMIC_CAS] = { .done = op_complete, .describe = describe_atomic },
	[OP_ATOMIC_FADD] = { .done = op_complete, .describe = describe_atomic },
	[OP_SEND_RNDV] = { .done = rndv_header_done, .release = conn_rndv_release,
			   .uncharge = conn_rndv_unposted, .describe = describe_rndv },
	[OP_RNDV_READ] = { .done = conn_rndv_op_done, .own_report = 1 },
	[OP_RNDV_ACK] = { .done = conn_rndv_op_done, .own_report = 1 },
	[OP_PATH_UP] = { .done = op_complete },
	[OP_EXPORTS] = { .done = op_complete },
	[OP_SEAL] = { .done = nothing_done },
};
_Static_assert(sizeof(kind_ops) / sizeof(kind_ops[0]) == OP_SEAL + 1,
	       "every op kind has its behaviour");

static const struct op_kind_ops *kind_of(const struct op *op)
{
	EZ_ASSERT((unsigned)op->kind <= OP_SEAL && kind_ops[op->kind].done);
	return &kind_ops[op->kind];
}

/* An op not posted (refused by the device, or cancelled while queued)
 * gives back what its kind holds besides the op. */
static void op_release(struct ez_conn *conn, struct op *op)
{
	const struct op_kind_ops *k = kind_of(op);

	if (k->release)
		k->release(conn, op);
}

/* One posted WR is done: its callback, or the library's own bookkeeping. */
static void op_done(struct ez_conn *conn, struct op *op, int status)
{
	EZ_ASSERT(op->path->posted > 0);
	op->path->posted--;
	if (!OP_KIND_IN(OP_CTRL_KINDS, op->kind) && op->wr.num_sge)
		op->path->posted_bytes -= op->sge.length;
	kind_of(op)->done(conn, op, status);
}

static void op_describe(const struct op *op, char *out, size_t len)
{
	const struct op_kind_ops *k = kind_of(op);

	if (k->describe)
		k->describe(op, out, len);
	else
		snprintf(out, len, "%s", op_kind_name(op->kind));
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

/* Sends carry the credits we owe in their immediate data; a write with
 * immediate carries the application's value instead. */
/* A rendezvous header's immediate and its transfer's id: out of line, so
 * that the common op's charge takes no registers of its own. */
static __attribute__((noinline)) void op_charge_rndv(struct ez_conn *conn, struct op *op,
						     uint32_t give)
{
	op->wr.imm_data = htonl(IMM_RNDV | give);
	conn_rndv_posted(conn, op);
}

static inline void op_charge(struct ez_conn *conn, struct op *op)
{
	if (OP_KIND_IN(OP_IMM_CREDIT_KINDS, op->kind)) {
		uint32_t give = credits_to_give(conn);

		if (__builtin_expect(op->kind == OP_SEND_RNDV, 0))
			op_charge_rndv(conn, op, give);
		else
			op->wr.imm_data = htonl(give);
		rx_note_granted(&conn->rxt, give);
	}
	if (needs_credit(op)) {
		EZ_ASSERT(conn->sq.send_credits > 0);	/* the poster waited for one */
		conn->sq.send_credits--;
		rx_note_sent(&conn->rxt);
	}
}

static void op_uncharge(struct ez_conn *conn, struct op *op)
{
	const struct op_kind_ops *k = kind_of(op);

	if (OP_KIND_IN(OP_IMM_CREDIT_KINDS, op->kind)) {
		uint32_t n = ntohl(op->wr.imm_data) & IMM_CREDITS_MASK;

		srqpool_credits_unreturn(conn->pool, &conn->acct, n);
		rx_note_ungranted(&conn->rxt, n, 0);
	}
	if (k->uncharge)
		k->uncharge(conn, op);
	if (needs_credit(op)) {
		conn->sq.send_credits++;
		EZ_ASSERT(conn->sq.send_credits <= RX_MAX_CREDITS);
		rx_note_unsent(&conn->rxt);
	}
}

/* What a posted op adds to the connection's counts by kind. */
static void op_count_kind(struct ez_conn *conn, const struct op *op)
{
	switch (op->kind) {
	case OP_SEND:
	case OP_SEND_MR:
		conn->stats.msgs_sent++;
		conn->stats.bytes_sent += op->sge.length;
		break;
	case OP_SEND_RNDV:
		conn->stats.msgs_sent++;
		conn->stats.bytes_sent += op->rndv_len;
		break;
	case OP_WRITE_IMM:
		conn->stats.write_imms++;
		/* fall through */
	case OP_WRITE:
		conn->stats.writes++;
		conn->stats.rdma_bytes += op->wr.num_sge ? op->sge.length : 0;
		break;
	case OP_ATOMIC_CAS:
	case OP_ATOMIC_FADD:
		conn->stats.atomics++;
		break;
	default:
		conn->stats.reads++;
		conn->stats.rdma_bytes += op->sge.length;
		break;
	}
}

static void op_count(struct ez_conn *conn, const struct op *op)
{
	op->path->ops++;	/* owner: the data path counts what it posts on a path */
	op->path->bytes += op->wr.num_sge ? op->sge.length : 0;	/* owner: as above */
	op_count_kind(conn, op);
}

/* A chain of the application's ops to post with one doorbell (kick_now,
 * op_post): linked through wr.next and op->next, on one path, the last
 * one signalled; its count, payload bytes and the kinds in it, so that a
 * chain that went out is accounted for at once, not op by op. */
struct chain {
	struct op *first, *last;
	uint32_t n;
	uint32_t kinds;		/* OP_KIND_BIT()s */
	uint64_t bytes;		/* of the WRs' sges */
};

static inline void chain_add(struct chain *ch, struct op *op)
{
	op->wr.next = NULL;
	op->next = NULL;
	if (ch->last) {
		ch->last->wr.next = &op->wr;
		ch->last->next = op;
	} else {
		ch->first = op;
	}
	ch->last = op;
	ch->n++;
	ch->kinds |= OP_KIND_BIT(op->kind);
	ch->bytes += op->wr.num_sge ? op->sge.length : 0;
}

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
	/* A chain of writes alone, or of reads alone (op_count_kind()'s
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
		op_count_kind(conn, op);
}

/* The device refused a chain (conn_sq_post() returned err, bad the first
 * WR it did not take): what it took is accounted op by op, the rest is
 * uncharged and ends with the error, but a refused first op, which is left
 * to the caller (its error is returned; 0 when the first went out). Out of
 * line: the posts' common road pays nothing for it. */
static __attribute__((noinline, cold)) int post_refused(struct ez_conn *conn,
							 const struct chain *ch,
							 struct ibv_send_wr *bad, int err,
							 const struct op *tail_before)
{
	struct ibv_send_wr *wr, *next;
	struct op *op, *first = ch->first;
	struct conn_path *path = first->path;
	int ret;

	if (!bad)
		bad = &first->wr;
	err = -err;	/* conn_sq_post()'s -errno, as the messages name it */
	for (wr = &first->wr; wr != bad; wr = wr->next) {
		op = container_of(wr, struct op, wr);
		op_count(conn, op);
		conn_sq_append(conn, op);
	}
	op = container_of(bad, struct op, wr);
	ret = ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -err,
			    "ibv_post_send(%s, %u bytes): %s", op_kind_name(op->kind),
			    op->wr.num_sge ? op->sge.length : 0, ez_strerror(err));
	for (wr = bad; wr; wr = next) {
		next = wr->next;
		op = container_of(wr, struct op, wr);
		op_uncharge(conn, op);
		wr->next = NULL;
		if (op != first)
			op_complete(conn, op, ret);
	}
	/* Only a completion accounts for an unsignalled WR; if the queue now
	 * ends with one, the flush of the QP in ERR completes it. */
	if (path->sq_tail != tail_before && !(path->sq_tail->wr.send_flags & IBV_SEND_SIGNALED)) {
		/* conn_fail() formats into conn->errmsg: from a copy, since
		 * vsnprintf() from its own output is undefined (glibc left it
		 * empty; test_datapath's chain_half_accepted). */
		char why[sizeof(conn->errmsg)];

		memcpy(why, conn->errmsg, sizeof(why));
		conn_fail(conn, ret, "%s", why);
	}
	return bad == &first->wr ? ret : 0;
}

/* Its WRs that land in the peer's receive queue (exact failover counts
 * them per path): a stream's chain holds only sends. */
static inline uint32_t chain_recvs(const struct chain *ch)
{
	const struct op *op;
	uint32_t n = 0;

	if (!(ch->kinds & ~OP_RECV_KINDS))
		return ch->n;
	if (!(ch->kinds & OP_RECV_KINDS))
		return 0;
	for (op = ch->first; op; op = op->next)
		n += OP_KIND_IN(OP_RECV_KINDS, op->kind);
	return n;
}

/* Posts a chain (charged) with one conn_sq_post(); a refusal is
 * post_refused()'s. */
static int post_chain(struct ez_conn *conn, const struct chain *ch)
{
	struct ibv_send_wr *bad = NULL;
	struct op *first = ch->first;
	struct conn_path *path = first->path;	/* every op of a chain takes the same path */
	struct op *tail_before = path->sq_tail;
	int err;

	err = conn_sq_post(path, &first->wr, &bad);
	if (__builtin_expect(!err, 1)) {
		chain_account(conn, path, ch);
		path_count_tx(path, chain_recvs(ch));
		return 0;
	}
	return post_refused(conn, ch, bad, err, tail_before);
}

/* Called once the QP is in ERR (the teardown). A WR that went unsignalled
 * and completed gives no completion, not even a flushed one, so a send
 * queue that ends with one (an op or a silent send) would never drain: one
 * signalled WR more goes behind it, flushed at once, and its completion
 * retires the run. It takes the goodbye's room: the queue ends with an
 * unsignalled send only when no goodbye went behind it, and none goes
 * after this. */
void conn_seal(struct ez_conn *conn)
{
	struct conn_path *p = conn->paths;
	int ret;

	if (!conn->paths || conn->npaths != 1 ||
	    (!p->silent_tail && (!p->sq_tail || (p->sq_tail->wr.send_flags & IBV_SEND_SIGNALED))))
		return;
	ret = conn_post_ctrl(conn, &conn->sq.seal_op, OP_SEAL, p, 0, NULL, 0);
	if (ret)
		ezi_log_err("QP %u in ERR: ibv_post_send(send-queue seal): %s; %d sends stay "
			    "unaccounted", conn_qpn0(conn), ez_strerror(ret), conn_sq_posted(conn));
	else
		conn->stats.seals++;
}

/* One op now, signalled: a chain of one. */
static int op_post(struct ez_conn *conn, struct op *op)
{
	struct chain ch = { 0 };

	op_charge(conn, op);
	op->wr.send_flags |= IBV_SEND_SIGNALED;
	op->path = op->pin ? &conn->paths[op->pin - 1] : path_pick(conn);
	chain_add(&ch, op);
	return post_chain(conn, &ch);
}

/* An op a failed path held goes out again as it was (its charge,
 * immediate and bytes kept) on a live path; a refusal ends it with the
 * error. */
static void op_repost(struct ez_conn *conn, struct op *op)
{
	struct ez_conn_stats *s = &conn->stats;
	/* The application's op was counted when first posted: the
	 * connection's counts take it once; the new path's (ops posted on
	 * it) take it again. */
	const struct ez_conn_stats was = *s;
	struct chain ch = { 0 };
	int ret;

	op->wr.send_flags |= IBV_SEND_SIGNALED;
	op->path = path_pick(conn);
	chain_add(&ch, op);
	ret = post_chain(conn, &ch);
	s->msgs_sent = was.msgs_sent;
	s->bytes_sent = was.bytes_sent;
	s->writes = was.writes;
	s->reads = was.reads;
	s->rdma_bytes = was.rdma_bytes;
	s->write_imms = was.write_imms;
	if (ret)
		kind_of(op)->done(conn, op, ret);
}

/* A held op ends exactly once, by its action (wire/settle.h). */
static void settle_one(struct ez_conn *conn, struct op *op, enum settle_action a, int st)
{
	switch (a) {
	case SETTLE_DONE:
		kind_of(op)->done(conn, op, 0);
		break;
	case SETTLE_REPOST:
		op_repost(conn, op);
		break;
	case SETTLE_UNKNOWN:
		kind_of(op)->done(conn, op, -EZ_OUTCOME_UNKNOWN);
		break;
	case SETTLE_FAIL:
		kind_of(op)->done(conn, op, st);
		break;
	}
}

void conn_settle_path(struct ez_conn *conn, struct conn_path *p)
{
	enum settle_action a;
	struct op *op;
	int st;

	/* The active side makes a failed path again later (rebuild.c). */
	if (p)
		rebuild_arm(conn);
	if (!p || !path_settle_begin(conn, p))
		return;
	while ((op = path_settle_next(conn, p, &a, &st)))
		settle_one(conn, op, a, st);
	if (conn->state == CS_CONNECTED)
		conn_kick_if_needed(conn);
}

void conn_settle_resumed(struct ez_conn *conn)
{
	enum settle_action a;
	struct op *op;
	int st;

	while ((op = path_resume_settle_next(conn, &a, &st)))
		settle_one(conn, op, a, st);
	rebuild_arm(conn);
	if (conn->state == CS_CONNECTED)
		conn_kick_if_needed(conn);
}

/* Hands credits back in a message of their own when no send is there to
 * carry them and half the window is owed, as far as the pool lets it
 * (the connection's share, buffers posted). */
static void maybe_send_credits(struct ez_conn *conn)
{
	uint32_t give;
	int ret;

	if (conn->sq.credit_inflight || conn->state != CS_CONNECTED || !srqpool_credits_due(&conn->acct))
		return;
	give = srqpool_credits_return(conn->pool, &conn->acct, IMM_CREDITS_MASK);
	if (!give)
		return;
	ret = conn_post_ctrl(conn, &conn->sq.credit_op, OP_CREDIT, path_pick(conn),
			     IMM_CREDIT_ONLY | give, NULL, 0);
	if (ret) {
		ezi_log_warn("ibv_post_send(credit message): %s", ez_strerror(ret));
		srqpool_credits_unreturn(conn->pool, &conn->acct, give);
		return;
	}
	rx_note_granted(&conn->rxt, give);
	conn->sq.credit_inflight = 1;
	conn->stats.credit_msgs_sent++;
}

void conn_credit_kick(struct srqpool_acct *a)
{
	maybe_send_credits(container_of(a, struct ez_conn, acct));
}

int conn_post_bye(struct ez_conn *conn)
{
	int ret;

	/* Each path's goodbye goes behind that path's work: the teardown
	 * waits for all of them. */
	if (conn->npaths > 1) {
		conn->byes_left = path_post_byes(conn);
		return conn->byes_left ? 0 : -EIO;
	}
	ret = conn_post_ctrl(conn, &conn->bye_op, OP_BYE, &conn->paths[0],
			     IMM_CREDIT_ONLY | IMM_BYE, NULL, 0);
	if (ret)
		return ret;
	conn->byes_left = 1;
	return 0;
}

/* While the device dispatches completions, kicks wait: what the callbacks
 * submit goes out after the batch, as one chain per connection. */
static void run_kick(struct loop_defer *d)
{
	conn_kick(container_of(d, struct ez_conn, sq.kick_after));
}

static void kick_later(struct ez_conn *conn)
{
	conn->sq.kick_after.fn = run_kick;
	device_after_batch(conn->dev, &conn->sq.kick_after);
}

void conn_unqueue_kick(struct ez_conn *conn)
{
	device_after_batch_cancel(conn->dev, &conn->sq.kick_after);
}

/* A chain closes at this many bytes. Batching doorbells pays for small
 * messages; for large ones it only makes bursts: on Soft-RoCE one post of
 * 16 x 64 KiB makes 1,024 packets at once, whose receive processing then
 * moves from the sender's system call to ksoftirqd, which a busy-polling
 * sender competes with (64 KiB writes: 25 vs 32 MiB/s for ib_write_bw,
 * which posts one WR at a time). */
#define CHAIN_BYTES (64u << 10)

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

/* Whether op, a send the application wants no callback of, may go silent:
 * its bytes inline, copied into the op (no slot, no MR: nothing to give
 * back later), so the device has all of it at the post. */
static inline int silent_op_fits(const struct ez_conn *conn, const struct op *op,
				 const struct conn_path *p)
{
	return !op->cb && op->kind == OP_SEND && !op->slot && !op->mr &&
	       (op->wr.send_flags & IBV_SEND_INLINE) && silent_fits(conn, p);
}

/* op (charged, on ch of one) posted silent: its WR with the path's silent
 * wr_id, unsignalled; the op is free again once the device took it. A
 * refusal is post_refused()'s, as a chain's. */
static int post_op_silent(struct ez_conn *conn, const struct chain *ch)
{
	struct op *op = ch->first;
	struct conn_path *p = op->path;
	struct ibv_send_wr *bad = NULL;
	int err;

	op->wr.send_flags &= ~IBV_SEND_SIGNALED;
	op->wr.wr_id = p->silent_wr.wr_id;
	err = conn_sq_post(p, &op->wr, &bad);
	op->wr.wr_id = device_wr_id(&op->dwr);
	if (err)
		return post_refused(conn, ch, bad, err, p->sq_tail);
	silent_posted(conn, p, op->sge.length);
	conn_op_put(conn, op);
	return 0;
}

/* Ends a chain: its last WR signalled, so that every WR is accounted for;
 * but a chain of one callback-less small send (an echo sent from a
 * callback of a batch) goes silent as ez_send() would post it. By value:
 * kick_now()'s chain stays in registers while it grows. */
static void chain_post(struct ez_conn *conn, struct chain ch)
{
	int ret;

	if (ch.n == 1 && silent_op_fits(conn, ch.last, ch.last->path)) {
		ret = post_op_silent(conn, &ch);
	} else {
		ch.last->wr.send_flags |= IBV_SEND_SIGNALED;
		ret = post_chain(conn, &ch);
	}
	if (ret)
		op_complete(conn, ch.first, ret);
}

/* Posts what the credits allow from the pending list in chains of up to
 * CHAIN_BYTES: one doorbell each, and a completion for every SIG_EVERY
 * WRs and for the last of each chain. */
static void kick_now(struct ez_conn *conn)
{
	struct chain ch = { 0 };
	struct conn_path *path = NULL;
	struct op *op;

	while ((op = conn->sq.pend_head) && conn->state == CS_CONNECTED) {
		struct conn_path *want;

		if (needs_credit(op) && !conn->sq.send_credits)
			break;
		/* An op with a window's key goes on the path it is bound to:
		 * a chain on another path closes first. */
		want = op->pin ? &conn->paths[op->pin - 1] : NULL;
		if (ch.first && want && want != path) {
			chain_post(conn, ch);
			ch = (struct chain){ 0 };
			path = NULL;
		}
		conn->sq.pend_head = op->next;
		if (!conn->sq.pend_head)
			conn->sq.pend_tail = NULL;
		op_charge(conn, op);
		/* One chain, one path: the least loaded when the chain starts. */
		if (!path)
			path = want ? want : path_pick(conn);
		op->path = path;
		if ((ch.n + 1) % SIG_EVERY)
			op->wr.send_flags &= ~IBV_SEND_SIGNALED;
		else
			op->wr.send_flags |= IBV_SEND_SIGNALED;
		chain_add(&ch, op);
		if (ch.bytes >= CHAIN_BYTES) {
			chain_post(conn, ch);
			ch = (struct chain){ 0 };
			path = NULL;
		}
	}
	if (ch.first)
		chain_post(conn, ch);
	maybe_send_credits(conn);
}

void conn_kick(struct ez_conn *conn)
{
	if (conn->dev && conn->dev->dispatching)
		kick_later(conn);
	else
		kick_now(conn);
}

void conn_flush_kick(struct ez_conn *conn)
{
	conn_unqueue_kick(conn);
	kick_now(conn);
}

void conn_cancel_pending(struct ez_conn *conn)
{
	struct op *op;
	int st;

	while ((op = conn->sq.pend_head)) {
		conn->sq.pend_head = op->next;
		if (!conn->sq.pend_head)
			conn->sq.pend_tail = NULL;
		/* A large send not posted yet has its window bound already. */
		op_release(conn, op);
		op_complete(conn, op, -ECANCELED);
	}
	/* Large sends whose header went out and that wait for the peer's
	 * acknowledgement: their windows go now, before the QP. */
	while ((op = conn_rndv_cancel_next(conn)))
		op_complete(conn, op, -ECANCELED);
	/* Ops a failed path held for a count that will not come now. */
	while ((op = path_unpark_next(conn, &st)))
		kind_of(op)->done(conn, op, st);
	/* Calls accepted into the op queue, younger than all of those. */
	conn_queue_cancel(conn);
}

/* Posts now when nothing is queued ahead and credits allow; else queues. */
static int op_submit(struct ez_conn *conn, struct op *op)
{
	int ret;

	if (!conn->sq.pend_head && (!needs_credit(op) || conn->sq.send_credits) &&
	    !conn->dev->dispatching) {
		ret = op_post(conn, op);
		if (ret) {
			op_release(conn, op);
			conn_op_put(conn, op);
			return ret;
		}
		return 0;
	}
	if (needs_credit(op) && !conn->sq.send_credits)
		conn->stats.waits_for_credits++;
	op->next = NULL;
	if (conn->sq.pend_tail)
		conn->sq.pend_tail->next = op;
	else
		conn->sq.pend_head = op;
	conn->sq.pend_tail = op;
	if (conn->dev->dispatching)
		kick_later(conn);
	return 0;
}

static int check_conn_slow(struct ez_conn *conn, const char *fn);

/* The common case in one expression (established, open, the owner's
 * thread); every refusal and its message is check_conn_slow()'s. */
static inline int check_conn(struct ez_conn *conn, const char *fn)
{
	if (__builtin_expect(conn && conn->state == CS_CONNECTED && !conn->app_closed &&
			     conn->ctx->owner.token == ezi_thread_token(), 1))
		return 0;
	return check_conn_slow(conn, fn);
}

static __attribute__((noinline)) int check_conn_slow(struct ez_conn *conn, const char *fn)
{
	int ret;

	if (!conn)
		return ezi_fail(-EINVAL, "%s: conn is NULL", fn);
	/* A void handle fails the inline test too: closed (conn_retire()). */
	ret = conn_check_handle(conn, fn);
	if (ret)
		return ret;
	/* Every path down, the session resuming: on_send_ready says when. */
	if (conn->state == CS_RESUMING && !conn->app_closed)
		return ezi_fail(-EAGAIN, "%s: the session is resuming (every path went down; on_send_ready follows once it is back)",
				fn);
	if (conn->state != CS_CONNECTED || conn->app_closed)
		return ezi_fail(-ENOTCONN, "%s: connection is not established (%s)", fn,
				conn->app_closed ? "closed" : conn->state < CS_CONNECTED ?
				"connecting" : "down");
	return 0;
}

/* A free op in call order, or NULL: the window is full, or calls wait in
 * the op queue ahead of this one (queued.c then queues it or
 * refuse it). The queue's own posts (draining) take their turn. */
static inline struct op *op_get(struct ez_conn *conn)
{
	if (__builtin_expect(conn->oq.head != NULL && !conn->oq.draining, 0))
		return NULL;
	return conn_op_take(conn);
}

static void prep_send(struct ez_conn *conn, struct op *op, enum op_kind kind, uint32_t len,
		      ez_op_cb cb, void *arg);

/* The largest message ez_send may send: by rendezvous when both sides
 * announced it, else what the peer's receive buffers take. */
static uint32_t max_send(const struct ez_conn *conn)
{
	uint32_t peer = conn->rndv.ok && conn->rndv.peer_max > conn->peer_max_msg ?
			conn->rndv.peer_max : conn->peer_max_msg;

	return peer < conn->o.max_msg_size ? peer : conn->o.max_msg_size;
}

/* No room for a large send: queued, or refused. window: the window was
 * full (else the refusal's message is the rendezvous's, already set). */
static __attribute__((noinline, cold)) int large_no_room(struct ez_conn *conn,
							  const struct iovec *iov, int iovcnt,
							  struct ez_mr *mr, size_t off, size_t len,
							  ez_op_cb cb, void *op_arg, const char *fn,
							  int window)
{
	if (conn_queue_open(conn))
		return mr ? conn_queue_mr_op(conn, OP_SEND_MR, mr, off, len, NULL, 0, 0, cb, op_arg, fn) :
			    conn_queue_send(conn, iov, iovcnt, len, cb, op_arg, fn);
	if (window || conn->oq.draining)
		return conn_queue_full(conn, fn);
	conn_sq_refused(conn);
	return -ENOBUFS;
}

/* A message above the peer's receive buffers: a rendezvous header in
 * place of its bytes, which the peer fetches (rndv.c). The op completes
 * at the peer's acknowledgement. */
static int send_large(struct ez_conn *conn, const struct iovec *iov, int iovcnt, struct ez_mr *mr,
		      size_t off, size_t len, ez_op_cb cb, void *op_arg, const char *fn)
{
	struct op *op;
	uint8_t pin;
	int ret;

	if (len > max_send(conn))
		return ezi_fail(-EMSGSIZE, "%s: %zu bytes exceed the maximum message size %u%s", fn,
				len, max_send(conn), conn->rndv.ok || len > conn->o.max_msg_size ? "" :
				" (the peer takes no larger messages by rendezvous)");
	op = op_get(conn);
	if (!op)
		return large_no_room(conn, iov, iovcnt, mr, off, len, cb, op_arg, fn, 1);
	ret = conn_rndv_prepare(conn, op, iov, iovcnt, mr, off, len);
	if (ret) {
		conn_op_put(conn, op);
		/* No second op for its window's bind, or the context's
		 * staging bound: no room, as for a full window. */
		if (ret == -ENOBUFS)
			return large_no_room(conn, iov, iovcnt, mr, off, len, cb, op_arg, fn, 0);
		return ret;
	}
	pin = op->pin;	/* the path its window is bound to */
	prep_send(conn, op, OP_SEND_RNDV, RNDV_HDR_LEN, cb, op_arg);
	op->pin = pin;
	if (op->sge.addr == (uintptr_t)op->inl)
		op->wr.send_flags |= IBV_SEND_INLINE;
	if (mr && !op->rndv_stage) {
		/* Offered in place: the MR is in use until the acknowledgement. */
		op->mr = mr;
		mr->inflight++;
	}
	return op_submit(conn, op);
}

static void prep_send(struct ez_conn *conn, struct op *op, enum op_kind kind, uint32_t len,
		      ez_op_cb cb, void *arg)
{
	conn_op_fill(op, kind, cb, arg);
	op->sge.length = len;
	op->wr.num_sge = len ? 1 : 0;
	op->wr.opcode = IBV_WR_SEND_WITH_IMM;
	op->wr.send_flags = IBV_SEND_SIGNALED;
	if (kind == OP_SEND && len <= conn->sq.max_inline)
		op->wr.send_flags |= IBV_SEND_INLINE;
}

int ez_sendv(struct ez_conn *conn, const struct iovec *iov, int iovcnt, ez_op_cb cb, void *op_arg)
{
	size_t len = 0, off = 0;
	struct op *op;
	char *dst;
	int i, ret;

	ret = check_conn(conn, "ez_send");
	if (ret)
		return ret;
	if (iovcnt < 0 || (iovcnt && !iov))
		return ezi_fail(-EINVAL, "ez_sendv: iov %p, iovcnt %d", (const void *)iov, iovcnt);
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > conn->peer_max_msg || len > conn->o.max_msg_size)
		return send_large(conn, iov, iovcnt, NULL, 0, len, cb, op_arg, "ez_send");
	op = op_get(conn);
	if (!op)
		return conn_queue_send(conn, iov, iovcnt, len, cb, op_arg, "ez_send");
	if (len <= sizeof(op->inl) && len <= conn->sq.max_inline) {
		/* Posted inline (prep_send): the device copies the bytes at
		 * the post, so the op's own buffer holds them until then. */
		op->sge.addr = (uintptr_t)op->inl;
		op->sge.lkey = 0;
		dst = op->inl;
	} else {
		if ((ret = conn_op_copy_slot(conn, op, len))) {
			conn_op_put(conn, op);
			return ret;
		}
		dst = (char *)op->slot->addr;
	}
	for (i = 0; len && i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	prep_send(conn, op, OP_SEND, (uint32_t)len, cb, op_arg);
	return op_submit(conn, op);
}

/* The common send, checked in one expression: a connection established,
 * on its owner's thread, a message of 1..small_send_max bytes (inline on
 * the QP, within the op's copy and the peer's buffers; len - 1 wraps for
 * 0). What ez_sendv would do for it, without the vector and its loops;
 * anything else (and every error's message) is ez_sendv's. */
static inline int send_small_ok(const struct ez_conn *conn, const void *data, size_t len)
{
	return conn && data && len - 1 < conn->sq.small_send_max &&
	       conn->state == CS_CONNECTED && !conn->app_closed &&
	       conn->ctx->owner.token == ezi_thread_token();
}

/* An op as a small send of one SGE on p, posted at once (not queued). */
static inline void small_send_fill(struct op *op, struct conn_path *p, ez_op_cb cb, void *arg)
{
	conn_op_fill(op, OP_SEND, cb, arg);
	op->path = p;
	op->wr.num_sge = 1;
	op->wr.opcode = IBV_WR_SEND_WITH_IMM;
}

/* A small inline send posted at once, as prep_send(), op_submit(),
 * op_post() and post_chain() together do it for one op on a connection of
 * one path with nothing queued, a credit in hand and no batch being
 * dispatched (a ping-pong's every send): filled, charged (the credits owed
 * ride in its immediate), signalled, posted, and accounted as a chain of
 * one would be. Its checks are the callers' (send_small_ok() and the
 * above); a refusal is post_refused()'s, the op back on the free list. */
static inline int send_inline_now(struct ez_conn *conn, struct op *op, const void *data,
				  uint32_t len, ez_op_cb cb, void *arg)
{
	struct conn_path *p = &conn->paths[0];
	struct ibv_send_wr *bad = NULL;
	const struct chain ch = { .first = op, .last = op, .n = 1,
				  .kinds = OP_KIND_BIT(OP_SEND), .bytes = len };
	uint32_t give = credits_to_give(conn);
	int err;

	/* What op_submit() would test before posting at once. */
	EZ_ASSERT(!conn->sq.pend_head && conn->sq.send_credits > 0 && conn->npaths == 1 &&
		  !conn->dev->dispatching && len <= conn->sq.max_inline);
	small_send_fill(op, p, cb, arg);
	/* The device copies inline data at the post: the caller's bytes are
	 * read there, not copied into the op first (the op is not kept for
	 * a later post: a refusal frees it). */
	op->sge.addr = (uintptr_t)data;
	op->sge.lkey = 0;
	op->sge.length = len;
	op->wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	op->wr.imm_data = htonl(give);
	rx_note_granted(&conn->rxt, give);
	conn->sq.send_credits--;
	rx_note_sent(&conn->rxt);
	err = conn_sq_post(p, &op->wr, &bad);
	if (__builtin_expect(err != 0, 0)) {
		err = post_refused(conn, &ch, bad, err, p->sq_tail);
		conn_op_put(conn, op);
		return err;
	}
	chain_account(conn, p, &ch);	/* its constants fold: a chain of one send */
	return 0;
}

/* The device refused a silent send: it goes through post_refused() as the
 * op it would have been (one is free: ez_send() checked), for the same
 * uncharge and message. Out of line: the post's common road pays nothing. */
static __attribute__((noinline, cold)) int silent_refused(struct ez_conn *conn,
							   struct conn_path *p, int err)
{
	struct op *op = conn_op_take(conn);	/* one is free: ez_send() checked */
	struct chain ch = { .first = op, .last = op, .n = 1, .kinds = OP_KIND_BIT(OP_SEND) };
	int ret;

	small_send_fill(op, p, NULL, NULL);
	op->sge = p->silent_sge;
	op->wr.send_flags = p->silent_wr.send_flags;
	op->wr.imm_data = p->silent_wr.imm_data;
	ret = post_refused(conn, &ch, &op->wr, err, p->sq_tail);
	conn_op_put(conn, op);
	return ret;
}

/* A callback-less small send posted silent, as send_inline_now() posts
 * one with its op, but with none: the path's WR template gets the bytes'
 * address, length and the credits owed, unsignalled; the device copies
 * the WR and the inline bytes at the post. No completion of its own: the
 * next op posted on the path carries it (silent_before) and retires it,
 * a seal after ERR at the latest (conn_seal()); an error or a flush of it
 * completes at silent_dwr (conn_on_silent_wc()). */
static inline int send_silent_now(struct ez_conn *conn, struct conn_path *p, const void *data,
				  uint32_t len)
{
	struct ibv_send_wr *bad = NULL;
	uint32_t give = credits_to_give(conn);
	int err;

	EZ_ASSERT(!conn->sq.pend_head && conn->sq.send_credits > 0 && conn->npaths == 1 &&
		  !conn->dev->dispatching && silent_fits(conn, p));
	p->silent_sge.addr = (uintptr_t)data;
	p->silent_sge.length = len;
	p->silent_wr.imm_data = htonl(give);
	rx_note_granted(&conn->rxt, give);
	conn->sq.send_credits--;
	rx_note_sent(&conn->rxt);
	err = conn_sq_post(p, &p->silent_wr, &bad);
	if (__builtin_expect(err != 0, 0))
		return silent_refused(conn, p, err);
	silent_posted(conn, p, len);
	return 0;
}

/* A small send that cannot go out at once (queued behind others, no
 * credit, a batch open, several paths): copied into its op and submitted. */
static inline int send_small_queued(struct ez_conn *conn, struct op *op,
							const void *data, size_t len, ez_op_cb cb,
							void *op_arg)
{
	memcpy(op->inl, data, len);
	op->sge.addr = (uintptr_t)op->inl;
	op->sge.lkey = 0;
	prep_send(conn, op, OP_SEND, (uint32_t)len, cb, op_arg);
	return op_submit(conn, op);
}

/* Everything ez_send() does not post from its own frame: a larger or
 * vectored send, and every refusal with its message. */
static __attribute__((noinline)) int send_other(struct ez_conn *conn, const void *data,
						 size_t len, ez_op_cb cb, void *op_arg)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };

	if (len && !data)
		return ezi_fail(-EINVAL, "ez_send: data is NULL with len %zu", len);
	return ez_sendv(conn, &iov, 1, cb, op_arg);
}

/* No op free, or calls queued ahead: queued behind them, or refused. */
static __attribute__((noinline)) int send_no_room(struct ez_conn *conn, const void *data,
						   size_t len, ez_op_cb cb, void *op_arg)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };

	if (!conn->oq.max)
		return conn_op_refused(conn, "ez_send");
	return conn_queue_send(conn, &iov, 1, len, cb, op_arg, "ez_send");
}

/* A silent send holds no op, but is refused as one would be when the
 * window is full: send_depth means the same with or without callbacks. */
int ez_send(struct ez_conn *conn, const void *data, size_t len, ez_op_cb cb, void *op_arg)
{
	struct op *op;

	if (__builtin_expect(!send_small_ok(conn, data, len), 0))
		return send_other(conn, data, len, cb, op_arg);
	if (__builtin_expect(!conn->sq.free_ops || conn->oq.head != NULL, 0))
		return send_no_room(conn, data, len, cb, op_arg);
	if (__builtin_expect(!conn->sq.pend_head && conn->sq.send_credits && conn->npaths == 1 &&
			     !conn->dev->dispatching, 1)) {
		if (!cb && silent_fits(conn, &conn->paths[0]))
			return send_silent_now(conn, &conn->paths[0], data, (uint32_t)len);
		op = conn_op_take(conn);	/* free_ops checked above */
		return send_inline_now(conn, op, data, (uint32_t)len, cb, op_arg);
	}
	op = conn_op_take(conn);
	return send_small_queued(conn, op, data, len, cb, op_arg);
}

static int check_mr_slow(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
			 const char *fn);

/* An MR range the op may use: live, on the connection's device, inside
 * the MR and one WR's size; each refusal is check_mr_slow()'s. */
static inline int check_mr(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
			   const char *fn)
{
	if (__builtin_expect(mr && !mr->dead && mr->dev == conn->dev && off <= mr->mr->length &&
			     len <= mr->mr->length - off && len <= UINT32_MAX &&
			     len <= conn->dev->attr.max_mr_size, 1))
		return 0;
	return check_mr_slow(conn, mr, off, len, fn);
}

static __attribute__((noinline)) int check_mr_slow(struct ez_conn *conn, struct ez_mr *mr,
						   size_t off, size_t len, const char *fn)
{
	if (!mr)
		return ezi_fail(-EINVAL, "%s: mr is NULL", fn);
	if (mr->dead)
		return ezi_fail(-EBADF, "%s: the MR at %p was deregistered", fn, mr->addr);
	if (mr->dev != conn->dev)
		return ezi_fail(-EINVAL, "%s: MR is registered on %s, the connection runs on %s",
				fn, mr->dev->name, conn->dev->name);
	if (off > mr->mr->length || len > mr->mr->length - off)
		return ezi_fail(-EINVAL, "%s: [%zu, +%zu) is outside the MR's %zu bytes", fn, off,
				len, mr->mr->length);
	if (len > UINT32_MAX || len > conn->dev->attr.max_mr_size)
		return ezi_fail(-EMSGSIZE, "%s: %zu bytes exceed one work request", fn, len);
	return 0;
}

int ez_send_mr(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len, ez_op_cb cb,
	       void *op_arg)
{
	struct op *op;
	int ret;

	ret = check_conn(conn, "ez_send_mr");
	if (!ret)
		ret = check_mr(conn, mr, off, len, "ez_send_mr");
	if (ret)
		return ret;
	if (len > conn->peer_max_msg || len > conn->o.max_msg_size)
		return send_large(conn, NULL, 0, mr, off, len, cb, op_arg, "ez_send_mr");
	op = op_get(conn);
	if (!op)
		return conn_queue_mr_op(conn, OP_SEND_MR, mr, off, len, NULL, 0, 0, cb, op_arg,
				   "ez_send_mr");
	ret = conn_pd_lkey(conn, mr, &op->sge.lkey);
	if (ret) {
		conn_op_put(conn, op);
		return ret;
	}
	prep_send(conn, op, OP_SEND_MR, (uint32_t)len, cb, op_arg);
	op->sge.addr = (uintptr_t)mr->mr->addr + off;
	op->pin = 0;
	op->mr = mr;
	mr->inflight++;
	return op_submit(conn, op);
}

/* A key from the peer's ez_conn_export() names the path its window is
 * bound to (EZ_RKEY_PATH_BOUND): the op must take that path. */
static int rkey_path_refused(struct ez_conn *conn, const struct ez_rkey *remote,
			     const char *fn);

static inline int rkey_path(struct ez_conn *conn, const struct ez_rkey *remote, const char *fn,
			    uint8_t *pin)
{
	uint32_t idx;

	*pin = 0;
	if (!remote || !(remote->path_binding & EZ_RKEY_PATH_BOUND))
		return 0;
	idx = remote->path_binding & 0xff;
	if (__builtin_expect(idx >= conn->npaths || !conn->paths[idx].live, 0))
		return rkey_path_refused(conn, remote, fn);
	*pin = (uint8_t)(idx + 1);
	return 0;
}

/* Why a bound key's path cannot take the op. */
static __attribute__((noinline, cold)) int rkey_path_refused(struct ez_conn *conn,
							      const struct ez_rkey *remote,
							      const char *fn)
{
	uint32_t idx = remote->path_binding & 0xff;

	if (idx >= conn->npaths)
		return ezi_fail(-EINVAL, "%s: rkey 0x%x is bound to path %u; the connection has %u",
				fn, remote->rkey, idx, conn->npaths);
	return ezi_fail(-ENETDOWN, "%s: rkey 0x%x is bound to path %u, which is down",
			fn, remote->rkey, idx);
}

/* A write or read filled by rdma_op() (signalled), posted and accounted
 * as a chain of one; a refusal is post_refused()'s, the op back on the
 * free list (its MR's count with it), as op_submit() does. */
static inline int rdma_post_now(struct ez_conn *conn, struct op *op, enum op_kind kind,
				uint32_t len)
{
	struct conn_path *p = &conn->paths[0];
	struct ibv_send_wr *bad = NULL;
	const struct chain ch = { .first = op, .last = op, .n = 1,
				  .kinds = OP_KIND_BIT(kind), .bytes = len };
	int err;

	/* What op_submit() would test before posting at once (no credit:
	 * a write or read lands in no receive buffer). */
	EZ_ASSERT(!needs_credit(op) && !conn->sq.pend_head && conn->npaths == 1 &&
		  !conn->dev->dispatching);
	op->path = p;
	err = conn_sq_post(p, &op->wr, &bad);
	if (__builtin_expect(err != 0, 0)) {
		err = post_refused(conn, &ch, bad, err, p->sq_tail);
		conn_op_put(conn, op);
		return err;
	}
	chain_account(conn, p, &ch);
	return 0;
}

/* Why the peer's side of a write or read is refused. */
static __attribute__((noinline, cold)) int rdma_remote_refused(const struct ez_rkey *remote,
								uint64_t roff, size_t len,
								const char *fn)
{
	if (!remote)
		return ezi_fail(-EINVAL, "%s: remote is NULL", fn);
	return ezi_fail(-EINVAL, "%s: remote [%llu, +%zu) is outside the peer's %llu bytes", fn,
			(unsigned long long)roff, len, (unsigned long long)remote->len);
}

/* Inlined into each of ez_write(), ez_write_imm() and ez_read(): with the
 * kind a constant, its name, opcode and the chain's accounting fold. */
static inline __attribute__((always_inline)) int rdma_op(struct ez_conn *conn,
							  enum op_kind kind, struct ez_mr *mr,
							  size_t off, size_t len,
							  const struct ez_rkey *remote,
							  uint64_t roff, uint32_t imm, ez_op_cb cb,
							  void *op_arg)
{
	const char *fn = kind == OP_WRITE ? "ez_write" : kind == OP_READ ? "ez_read" : "ez_write_imm";
	/* A write with immediate of 0 bytes carries only the value: no
	 * memory on either side is touched. */
	int bare_imm = kind == OP_WRITE_IMM && len == 0;
	struct op *op;
	uint8_t pin;
	int ret;

	ret = check_conn(conn, fn);
	if (!ret && !bare_imm)
		ret = check_mr(conn, mr, off, len, fn);
	if (ret)
		return ret;
	if (__builtin_expect((!remote && !bare_imm) ||
			     (remote && (roff > remote->len || len > remote->len - roff)), 0))
		return rdma_remote_refused(remote, roff, len, fn);
	ret = rkey_path(conn, remote, fn, &pin);
	if (ret)
		return ret;
	op = op_get(conn);
	if (!op)
		return conn_queue_mr_op(conn, kind, mr, off, len, remote, roff, imm, cb, op_arg, fn);
	conn_op_fill(op, kind, cb, op_arg);
	op->pin = pin;
	if (!bare_imm) {
		ret = conn_pd_lkey(conn, mr, &op->sge.lkey);
		if (ret) {
			conn_op_put(conn, op);
			return ret;
		}
		op->sge.addr = (uintptr_t)mr->mr->addr + off;
		op->mr = mr;
		mr->inflight++;
	}
	op->sge.length = (uint32_t)len;
	op->wr.num_sge = len ? 1 : 0;
	op->wr.opcode = kind == OP_WRITE ? IBV_WR_RDMA_WRITE :
			kind == OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE_WITH_IMM;
	op->wr.send_flags = IBV_SEND_SIGNALED;
	op->wr.imm_data = htonl(imm);
	op->wr.wr.rdma.remote_addr = remote ? remote->addr + roff : 0;
	op->wr.wr.rdma.rkey = remote ? remote->rkey : 0;
	/* A write or read (no credit, no immediate) on a connection of one
	 * path (which a bound key's pin names too) with nothing queued,
	 * outside a batch: posted at once, as op_submit() -> op_post() ->
	 * post_chain() would post a chain of one (a chain of reads, each
	 * issued by the last one's callback). */
	if (__builtin_expect(kind != OP_WRITE_IMM && !conn->sq.pend_head && conn->npaths == 1 &&
			     !conn->dev->dispatching, 1))
		return rdma_post_now(conn, op, kind, (uint32_t)len);
	return op_submit(conn, op);
}

int ez_write(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
	     const struct ez_rkey *remote, uint64_t roff, ez_op_cb cb, void *op_arg)
{
	return rdma_op(conn, OP_WRITE, mr, off, len, remote, roff, 0, cb, op_arg);
}

int ez_write_imm(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		 const struct ez_rkey *remote, uint64_t roff, uint32_t imm, ez_op_cb cb,
		 void *op_arg)
{
	return rdma_op(conn, OP_WRITE_IMM, mr, off, len, remote, roff, imm, cb, op_arg);
}

int ez_read(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
	    const struct ez_rkey *remote, uint64_t roff, ez_op_cb cb, void *op_arg)
{
	return rdma_op(conn, OP_READ, mr, off, len, remote, roff, 0, cb, op_arg);
}

/* Atomics: the device's capability, an aligned word inside the key, a
 * result word of the op's own; then one op like a read (no credit). */
static int atomic_op(struct ez_conn *conn, enum op_kind kind, const struct ez_rkey *remote,
		     uint64_t roff, uint64_t a, uint64_t b, ez_atomic_cb cb, void *op_arg)
{
	const char *fn = kind == OP_ATOMIC_CAS ? "ez_atomic_cas" : "ez_atomic_fadd";
	struct op *op;
	uint8_t pin;
	int ret;

	ret = check_conn(conn, fn);
	if (!ret)
		ret = conn_atomic_check(conn, remote, roff, fn);
	if (!ret)
		ret = rkey_path(conn, remote, fn, &pin);
	if (ret)
		return ret;
	op = op_get(conn);
	if (!op)
		return conn_queue_atomic(conn, kind, remote, roff, a, b, cb, op_arg, fn);
	ret = conn_atomic_prepare(conn, op, fn);
	if (ret) {
		conn_op_put(conn, op);
		return ret;
	}
	conn_op_fill(op, kind, NULL, op_arg);
	op->acb = cb;
	op->pin = pin;
	op->wr.num_sge = 1;
	op->wr.opcode = kind == OP_ATOMIC_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
	op->wr.send_flags = IBV_SEND_SIGNALED;
	op->wr.imm_data = 0;
	op->wr.wr.atomic.remote_addr = remote->addr + roff;
	op->wr.wr.atomic.rkey = remote->rkey;
	op->wr.wr.atomic.compare_add = a;
	op->wr.wr.atomic.swap = b;
	return op_submit(conn, op);
}

int ez_atomic_cas(struct ez_conn *conn, const struct ez_rkey *remote, uint64_t roff,
		  uint64_t expect, uint64_t swap, ez_atomic_cb cb, void *op_arg)
{
	return atomic_op(conn, OP_ATOMIC_CAS, remote, roff, expect, swap, cb, op_arg);
}

int ez_atomic_fadd(struct ez_conn *conn, const struct ez_rkey *remote, uint64_t roff,
		   uint64_t add, ez_atomic_cb cb, void *op_arg)
{
	return atomic_op(conn, OP_ATOMIC_FADD, remote, roff, add, 0, cb, op_arg);
}

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

	if (!send_failure_to_report(conn, status, fatal) || kind_of(op)->own_report)
		return;
	op_describe(op, what, sizeof(what));
	send_failure_report(conn, what, wc, status);
}

/* The application's sends, writes and reads: what op_done() and
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
		op_done(conn, e, 0);
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
		op_done(conn, op, status);
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
