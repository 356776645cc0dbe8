/* sendq.c: what every op of a connection goes through: its copy slot, the free list, the per-path lists of posted WRs, and the one poster of control messages. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "sendq.h"
#include "conn_pd.h"
#include "device/mr.h"
#include "wire/rx_check.h"
#include "op_queue.h"
#include "base/error.h"

void conn_op_release_copy(struct ez_conn *conn, struct op *op)
{
	if (op->slot) {
		if (conn->own_pd)
			conn_pd_slot_put(conn, op->slot);
		else
			sendslab_put(&conn->dev->slab, op->slot);
		op->slot = NULL;
	}
}

/* A copy of len bytes for op, in a registered slot of the device. */
int conn_op_copy_slot(struct ez_conn *conn, struct op *op, size_t len)
{
	int ret = conn->own_pd ? conn_pd_slot_get(conn, len, &op->slot) :
		  device_slot_get(conn->dev, len, &op->slot);

	if (ret)
		return ret;
	op->sge.addr = (uintptr_t)op->slot->addr;
	op->sge.lkey = op->slot->lkey;
	return 0;
}

void conn_sq_set_inline(struct ez_conn *conn, uint32_t max_inline)
{
	conn->sq.max_inline = max_inline;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void conn_sq_up(struct ez_conn *conn)
{
	conn->sq.small_send_max = min_u32(min_u32(conn->sq.max_inline, OP_INLINE_BYTES),
					  min_u32(conn->peer_max_msg, conn->o.max_msg_size));
}

void conn_sq_credits_add(struct ez_conn *conn, uint32_t n)
{
	conn->sq.send_credits += n;
	EZ_ASSERT(conn->sq.send_credits <= RX_MAX_CREDITS);	/* rx_check() bounds a grant */
}

void conn_sq_wait_ready(struct ez_conn *conn)
{
	conn->sq.send_refused = 1;
}

void conn_sq_refused(struct ez_conn *conn)
{
	conn->sq.send_refused = 1;
	conn->sq.app_refused = 1;
	conn->stats.send_refusals++;
}

void conn_sq_ready_clear(struct ez_conn *conn, int waiting)
{
	conn->sq.send_refused = (uint8_t)!!waiting;
	conn->sq.app_refused = 0;
}

/* Each path's send queue completes in order: one list per path (op->path).
 * The silent sends posted since the last op are done when op is. */
void conn_sq_append(struct ez_conn *conn, struct op *op)
{
	struct conn_path *p = op->path;

	op->silent_before = (uint8_t)p->silent_tail;
	p->silent_tail = 0;
	op->next = NULL;
	if (p->sq_tail)
		p->sq_tail->next = op;
	else
		p->sq_head = op;
	p->sq_tail = op;
	p->posted++;
	if (!OP_KIND_IN(OP_CTRL_KINDS, op->kind) && op->wr.num_sge)
		p->posted_bytes += op->sge.length;
	/* owner: exact failover counts every receive-taking WR a path posts (path.h) */
	p->fo.tx += OP_KIND_IN(OP_RECV_KINDS, op->kind);
}

/* What the connection has on its send queues: its paths' counts (kept
 * once, per path; a path taken out keeps its count until it drains). */
int conn_sq_posted(const struct ez_conn *conn)
{
	int n = 0;

	for (uint32_t i = 0; conn->paths && i < conn->npaths; i++) {
		EZ_ASSERT(conn->paths[i].posted >= 0);
		n += conn->paths[i].posted;
	}
	return n;
}

void conn_drain_check(struct ez_conn *conn)
{
	if (conn->state == CS_DRAINING && conn->srq_drained && conn_sq_posted(conn) == 0)
		conn_fire(conn, CE_DRAINED, 0);
}

/* The one place the library's own messages are posted: credits, goodbyes,
 * path notices, the shared-secret proof, verdict and refusal. They carry no
 * credit of the peer's (its reserve takes them) and are always signalled. */
int conn_post_ctrl(struct ez_conn *conn, struct op *op, enum op_kind kind,
		   struct conn_path *path, uint32_t imm, const void *data, uint32_t len)
{
	int from_free = !op, err;
	struct ibv_send_wr *bad;

	if (from_free) {
		op = conn_op_take(conn);
		if (!op)
			return -ENOBUFS;
	}
	conn_op_fill(op, kind, NULL, NULL);
	op->aged = 0;
	op->conn = conn;
	op->path = path;
	op->wr.sg_list = &op->sge;
	op->wr.opcode = IBV_WR_SEND_WITH_IMM;
	op->wr.send_flags = IBV_SEND_SIGNALED;
	op->wr.imm_data = htonl(imm);
	op->wr.num_sge = len ? 1 : 0;
	op->sge.length = len;
	if (len) {
		err = conn_op_copy_slot(conn, op, len);
		if (err)
			goto refused;
		memcpy(op->slot->addr, data, len);
	}
	err = conn_sq_post(path, &op->wr, &bad);
	if (err) {
		conn_op_release_copy(conn, op);
		goto refused;
	}
	conn_sq_append(conn, op);
	return 0;
refused:
	if (from_free)
		conn_op_put(conn, op);
	return err;
}

int conn_post_bye_why(struct ez_conn *conn, const void *why, uint32_t len)
{
	int ret;

	/* One goodbye on path 0, behind its work; the other paths' work is
	 * flushed by the teardown as on any end. */
	if (!conn->paths[0].live)
		return -ENOTCONN;
	ret = conn_post_ctrl(conn, &conn->bye_op, OP_BYE, &conn->paths[0],
			     IMM_CREDIT_ONLY | IMM_BYE, why, len);
	if (ret)
		return ret;
	conn->byes_left = 1;	/* owner: the goodbye's poster counts what the teardown waits for */
	return 0;
}

/* What an op is, in the words of the connection's messages (a failed or
 * overdue op, a post that failed). */
static const char *const op_kind_names[] = {
	[OP_SEND] = "SEND",
	[OP_SEND_MR] = "SEND",
	[OP_WRITE] = "RDMA WRITE",
	[OP_WRITE_IMM] = "RDMA WRITE with immediate",
	[OP_READ] = "RDMA READ",
	[OP_CREDIT] = "credit message",
	[OP_BYE] = "goodbye message",
	[OP_PATH_DOWN] = "path-down notice",
	[OP_AUTH] = "shared-secret message",
	[OP_BIND] = "memory window bind",
	[OP_KA_PROBE] = "keepalive probe",
	[OP_KA_ANSWER] = "keepalive answer",
	[OP_ATOMIC_CAS] = "RDMA atomic compare-and-swap",
	[OP_ATOMIC_FADD] = "RDMA atomic fetch-and-add",
	[OP_SEND_RNDV] = "rendezvous header",
	[OP_RNDV_READ] = "RDMA READ of a rendezvous transfer",
	[OP_RNDV_ACK] = "rendezvous acknowledgement",
	[OP_PATH_UP] = "path rebuild message",
	[OP_EXPORTS] = "exports message",
	[OP_SEAL] = "send-queue seal",
};
_Static_assert(sizeof(op_kind_names) / sizeof(op_kind_names[0]) == OP_SEAL + 1,
	       "every op kind has a name");

const char *op_kind_name(enum op_kind kind)
{
	if (NEVER((unsigned)kind > OP_SEAL || !op_kind_names[kind]))
		return "operation";
	return op_kind_names[kind];
}

void conn_send_ready_fire(struct ez_conn *conn)
{
	/* owner: the readiness callback is the send queue's; its count beside it */
	conn->stats.send_ready_calls++;
	if (conn->cbs.on_send_ready)
		conn->cbs.on_send_ready(conn, conn->arg);
}

__attribute__((noinline)) int conn_op_refused(struct ez_conn *conn, const char *fn)
{
	conn_sq_refused(conn);
	/* A sender that keeps its window full gets here once per completion:
	 * the message is formatted only if it is read. */
	if (conn->oq.max)
		return ezi_fail_lazy(-ENOBUFS, "%s: the window (send_depth) is full and the op queue holds %u calls (queue_depth)",
				     fn, conn->oq.n);
	return ezi_fail_lazy(-ENOBUFS, "%s: %u operations already outstanding (send_depth)", fn,
			     conn->o.send_depth);
}
