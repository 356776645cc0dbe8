/* msg.c: the send side's op lifecycle: ops bound and freed, each kind's ending and description (a table), the credit a post takes, chains posted with one doorbell, the pending list and its kick, exact failover's settling, credits and goodbyes; the call checks. The application's calls are send_calls.c and rdma_calls.c, the completions send_wc.c, the inline pieces msg_inline.h (the receive side is recv.c). */
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


void conn_send_ready_now(struct ez_conn *conn)
{
	send_ready_check(conn);
}


__attribute__((noinline)) int conn_op_end_of(struct ez_conn *conn, const struct op *op,
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
int conn_op_reports_own(const struct op *op)
{
	return kind_of(op)->own_report;
}

static void op_release(struct ez_conn *conn, struct op *op)
{
	const struct op_kind_ops *k = kind_of(op);

	if (k->release)
		k->release(conn, op);
}

/* One posted WR is done: its callback, or the library's own bookkeeping. */
void conn_op_done(struct ez_conn *conn, struct op *op, int status)
{
	EZ_ASSERT(op->path->posted > 0);
	op->path->posted--;
	if (!OP_KIND_IN(OP_CTRL_KINDS, op->kind) && op->wr.num_sge)
		op->path->posted_bytes -= op->sge.length;
	kind_of(op)->done(conn, op, status);
}

void conn_op_describe(const struct op *op, char *out, size_t len)
{
	const struct op_kind_ops *k = kind_of(op);

	if (k->describe)
		k->describe(op, out, len);
	else
		snprintf(out, len, "%s", op_kind_name(op->kind));
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
void conn_op_count_kind(struct ez_conn *conn, const struct op *op)
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
	conn_op_count_kind(conn, op);
}


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


/* The device refused a chain (conn_sq_post() returned err, bad the first
 * WR it did not take): what it took is accounted op by op, the rest is
 * uncharged and ends with the error, but a refused first op, which is left
 * to the caller (its error is returned; 0 when the first went out). Out of
 * line: the posts' common road pays nothing for it. */
__attribute__((noinline, cold)) int conn_post_refused(struct ez_conn *conn,
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
 * conn_post_refused()'s. */
int conn_post_chain(struct ez_conn *conn, const struct chain *ch)
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
	return conn_post_refused(conn, ch, bad, err, tail_before);
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
int conn_op_post(struct ez_conn *conn, struct op *op)
{
	struct chain ch = { 0 };

	op_charge(conn, op);
	op->wr.send_flags |= IBV_SEND_SIGNALED;
	op->path = op->pin ? &conn->paths[op->pin - 1] : path_pick(conn);
	chain_add(&ch, op);
	return conn_post_chain(conn, &ch);
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
	ret = conn_post_chain(conn, &ch);
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
 * refusal is conn_post_refused()'s, as a chain's. */
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
		return conn_post_refused(conn, ch, bad, err, p->sq_tail);
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
		ret = conn_post_chain(conn, &ch);
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
int conn_op_submit(struct ez_conn *conn, struct op *op)
{
	int ret;

	if (!conn->sq.pend_head && (!needs_credit(op) || conn->sq.send_credits) &&
	    !conn->dev->dispatching) {
		ret = conn_op_post(conn, op);
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


__attribute__((noinline)) int conn_check_slow(struct ez_conn *conn, const char *fn)
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

__attribute__((noinline)) int conn_check_mr_slow(struct ez_conn *conn, struct ez_mr *mr,
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








