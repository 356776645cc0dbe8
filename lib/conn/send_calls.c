/* send_calls.c: the application's sends: ez_send (its inline and silent fast paths), ez_sendv, ez_send_mr, a large message handed to rendezvous; made into ops and posted through msg.c. */
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
	return conn_op_submit(conn, op);
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
	return conn_op_submit(conn, op);
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

/* A small inline send posted at once, as prep_send(), conn_op_submit(),
 * conn_op_post() and conn_post_chain() together do it for one op on a connection of
 * one path with nothing queued, a credit in hand and no batch being
 * dispatched (a ping-pong's every send): filled, charged (the credits owed
 * ride in its immediate), signalled, posted, and accounted as a chain of
 * one would be. Its checks are the callers' (send_small_ok() and the
 * above); a refusal is conn_post_refused()'s, the op back on the free list. */
static inline int send_inline_now(struct ez_conn *conn, struct op *op, const void *data,
				  uint32_t len, ez_op_cb cb, void *arg)
{
	struct conn_path *p = &conn->paths[0];
	struct ibv_send_wr *bad = NULL;
	const struct chain ch = { .first = op, .last = op, .n = 1,
				  .kinds = OP_KIND_BIT(OP_SEND), .bytes = len };
	uint32_t give = credits_to_give(conn);
	int err;

	/* What conn_op_submit() would test before posting at once. */
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
		err = conn_post_refused(conn, &ch, bad, err, p->sq_tail);
		conn_op_put(conn, op);
		return err;
	}
	chain_account(conn, p, &ch);	/* its constants fold: a chain of one send */
	return 0;
}

/* The device refused a silent send: it goes through conn_post_refused() as the
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
	ret = conn_post_refused(conn, &ch, &op->wr, err, p->sq_tail);
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
	return conn_op_submit(conn, op);
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
	return conn_op_submit(conn, op);
}
