/* sendq.c: what every op of a connection goes through: its copy slot, the free list, the per-path lists of posted WRs, and the one poster of control messages. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "sendq.h"
#include "conn_pd.h"
#include "device/mr.h"

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

void conn_op_put(struct ez_conn *conn, struct op *op)
{
	conn_op_release_copy(conn, op);
	/* The MR is no longer in use by this op (ez_mr_dereg's -EBUSY). */
	if (op->mr) {
		op->mr->inflight--;
		op->mr = NULL;
	}
	op->aged = 0;	/* a new op's deadline starts afresh (keepalive.c) */
	conn_op_free(conn, op);
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
	conn->posted++;
	p->posted++;
	if (!OP_KIND_IN(OP_CTRL_KINDS, op->kind) && op->wr.num_sge)
		p->posted_bytes += op->sge.length;
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
		op = conn->free_ops;
		if (!op)
			return -ENOBUFS;
		conn->free_ops = op->next;
		op->cb = NULL;
		op->arg = NULL;
	}
	op->pin = 0;
	op->aged = 0;
	op->mr = NULL;
	op->conn = conn;
	op->kind = kind;
	op->path = path;
	op->wr.sg_list = &op->sge;
	op->wr.next = NULL;
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
	/* ibv_post_send() returns the error; errno may be stale. */
	err = ibv_post_send(path->qp, &op->wr, &bad);
	if (err) {
		err = err > 0 ? -err : -EIO;
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

/* What an op is, in the words of the connection's messages (a failed or
 * overdue op, a post that failed). */
const char *op_kind_name(enum op_kind kind)
{
	switch (kind) {
	case OP_SEND:
	case OP_SEND_MR:
		return "SEND";
	case OP_WRITE:
		return "RDMA WRITE";
	case OP_WRITE_IMM:
		return "RDMA WRITE with immediate";
	case OP_READ:
		return "RDMA READ";
	case OP_CREDIT:
		return "credit message";
	case OP_BYE:
		return "goodbye message";
	case OP_PATH_DOWN:
		return "path-down notice";
	case OP_AUTH:
		return "shared-secret message";
	case OP_BIND:
		return "memory window bind";
	case OP_KA_PROBE:
		return "keepalive probe";
	case OP_KA_ANSWER:
		return "keepalive answer";
	case OP_ATOMIC_CAS:
		return "RDMA atomic compare-and-swap";
	case OP_ATOMIC_FADD:
		return "RDMA atomic fetch-and-add";
	case OP_SEND_RNDV:
		return "rendezvous header";
	case OP_RNDV_READ:
		return "RDMA READ of a rendezvous transfer";
	case OP_RNDV_ACK:
		return "rendezvous acknowledgement";
	case OP_SEAL:
		return "send-queue seal";
	}
	return "operation";
}
