/* rdma_calls.c: the application's one-sided calls: ez_write, ez_write_imm, ez_read and the atomics, checked against the MR, the peer's key and its path, made into ops and posted through msg.c. */
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
 * as a chain of one; a refusal is conn_post_refused()'s, the op back on the
 * free list (its MR's count with it), as conn_op_submit() does. */
static inline int rdma_post_now(struct ez_conn *conn, struct op *op, enum op_kind kind,
				uint32_t len)
{
	struct conn_path *p = &conn->paths[0];
	struct ibv_send_wr *bad = NULL;
	const struct chain ch = { .first = op, .last = op, .n = 1,
				  .kinds = OP_KIND_BIT(kind), .bytes = len };
	int err;

	/* What conn_op_submit() would test before posting at once (no credit:
	 * a write or read lands in no receive buffer). */
	EZ_ASSERT(!needs_credit(op) && !conn->sq.pend_head && conn->npaths == 1 &&
		  !conn->dev->dispatching);
	op->path = p;
	err = conn_sq_post(p, &op->wr, &bad);
	if (__builtin_expect(err != 0, 0)) {
		err = conn_post_refused(conn, &ch, bad, err, p->sq_tail);
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
	 * outside a batch: posted at once, as conn_op_submit() -> conn_op_post() ->
	 * conn_post_chain() would post a chain of one (a chain of reads, each
	 * issued by the last one's callback). */
	if (__builtin_expect(kind != OP_WRITE_IMM && !conn->sq.pend_head && conn->npaths == 1 &&
			     !conn->dev->dispatching, 1))
		return rdma_post_now(conn, op, kind, (uint32_t)len);
	return conn_op_submit(conn, op);
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
	return conn_op_submit(conn, op);
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
