/* queued.c: the calls a connection's op queue (ez_conn_opts.queue_depth) took past a full window: taken with their bytes or MR, made again in call order when room returns, ended with -ECANCELED at the connection's end (op_queue.c holds the list). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "queued.h"
#include "sendq.h"
#include "device/mr.h"
#include "base/assert.h"
#include "base/error.h"

/* No room, and the queue does not take fn's call: refused, or while the
 * queue posts, a quiet -ENOBUFS that puts its head back. */
__attribute__((noinline, cold)) int conn_queue_full(struct ez_conn *conn, const char *fn)
{
	if (conn->oq.draining)
		return -ENOBUFS;
	return conn_op_refused(conn, fn);
}

/* Accepted: the call waits in order for room (send_ready_check() posts it). */
static int queue_add(struct ez_conn *conn, struct queued_op *e)
{
	if (e->mr)
		mr_hold(e->mr);
	op_queue_push(&conn->oq, e);
	conn_sq_wait_ready(conn);
	return 0;
}

/* A new entry of kind for fn's call (data_len bytes of copy room), or
 * NULL with *ret: the queue does not take it (conn_queue_full()) or no memory. */
static struct queued_op *queue_take(struct ez_conn *conn, enum op_kind kind, size_t data_len,
				    const char *fn, int *ret)
{
	struct queued_op *e;

	if (!conn_queue_open(conn)) {
		*ret = conn_queue_full(conn, fn);
		return NULL;
	}
	e = op_queue_new(data_len);
	if (!e) {
		*ret = ezi_fail(-ENOMEM, "%s: out of memory for a queued call (%zu bytes)", fn,
				data_len);
		return NULL;
	}
	e->kind = (uint8_t)kind;
	return e;
}

/* ez_send()/ez_sendv(): the bytes are copied now, as the call promises. */
__attribute__((noinline, cold)) int conn_queue_send(struct ez_conn *conn,
						       const struct iovec *iov, int iovcnt,
						       size_t len, ez_op_cb cb, void *op_arg,
						       const char *fn)
{
	struct queued_op *e;
	size_t off = 0;
	int ret;

	e = queue_take(conn, OP_SEND, len, fn, &ret);
	if (!e)
		return ret;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(e->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	e->len = len;
	e->cb = cb;
	e->arg = op_arg;
	return queue_add(conn, e);
}

/* ez_send_mr(), ez_write(), ez_write_imm(), ez_read(): the MR is held (its
 * bytes are read or written when the op is posted, as the call says). */
/* What a one-sided call names at the peer, and its callback's argument:
 * the part every queued READ, WRITE and atomic shares. */
static void queue_target(struct queued_op *e, const struct ez_rkey *remote, uint64_t roff,
			 void *op_arg)
{
	if (remote) {
		e->remote = *remote;
		e->has_remote = 1;
	}
	e->roff = roff;
	e->arg = op_arg;
}

__attribute__((noinline, cold)) int conn_queue_mr_op(struct ez_conn *conn, enum op_kind kind,
							struct ez_mr *mr, size_t off, size_t len,
							const struct ez_rkey *remote, uint64_t roff,
							uint32_t imm, ez_op_cb cb, void *op_arg,
							const char *fn)
{
	int ret;
	struct queued_op *e = queue_take(conn, kind, 0, fn, &ret);

	if (!e)
		return ret;
	e->mr = mr;
	e->off = off;
	e->len = len;
	e->imm = imm;
	e->cb = cb;
	queue_target(e, remote, roff, op_arg);
	return queue_add(conn, e);
}

__attribute__((noinline, cold)) int conn_queue_atomic(struct ez_conn *conn, enum op_kind kind,
							 const struct ez_rkey *remote, uint64_t roff,
							 uint64_t a, uint64_t b, ez_atomic_cb cb,
							 void *op_arg, const char *fn)
{
	int ret;
	struct queued_op *e = queue_take(conn, kind, 0, fn, &ret);

	if (!e)
		return ret;
	e->a = a;
	e->b = b;
	e->acb = cb;
	queue_target(e, remote, roff, op_arg);
	return queue_add(conn, e);
}

/* The call again, as the application made it (its checks again too: a
 * key bound to a path that went down since is refused now). */
static int queue_replay(struct ez_conn *conn, struct queued_op *e)
{
	struct iovec iov = { .iov_base = e->data, .iov_len = e->len };
	const struct ez_rkey *remote = e->has_remote ? &e->remote : NULL;

	switch (e->kind) {
	case OP_SEND:
		return ez_sendv(conn, &iov, 1, e->cb, e->arg);
	case OP_SEND_MR:
		return ez_send_mr(conn, e->mr, e->off, e->len, e->cb, e->arg);
	case OP_WRITE:
		return ez_write(conn, e->mr, e->off, e->len, remote, e->roff, e->cb, e->arg);
	case OP_WRITE_IMM:
		return ez_write_imm(conn, e->mr, e->off, e->len, remote, e->roff, e->imm, e->cb,
				    e->arg);
	case OP_READ:
		return ez_read(conn, e->mr, e->off, e->len, remote, e->roff, e->cb, e->arg);
	case OP_ATOMIC_CAS:
		return ez_atomic_cas(conn, remote, e->roff, e->a, e->b, e->acb, e->arg);
	default:
		EZ_ASSERT(e->kind == OP_ATOMIC_FADD);
		return ez_atomic_fadd(conn, remote, e->roff, e->a, e->acb, e->arg);
	}
}

/* A queued call ends unposted (refused when made again, or the
 * connection's end: -ECANCELED): its callback, once, as a posted op's
 * would run with that status. */
static void queue_fail(struct ez_conn *conn, struct queued_op *e, int status)
{
	conn->stats.op_errors++;
	if (e->kind == OP_ATOMIC_CAS || e->kind == OP_ATOMIC_FADD) {
		if (e->acb)
			e->acb(conn, status, 0, e->arg);
	} else if (e->cb) {
		e->cb(conn, status, e->arg);
	}
}

/* Posts the queue's head while room lasts, in call order. A call that
 * finds no room goes back to the head; one refused for another reason
 * ends with it (its callback, after which the queue goes on). */
static void queue_drain(struct ez_conn *conn)
{
	struct queued_op *e;
	int ret;

	while (conn->state == CS_CONNECTED && !conn->app_closed &&
	       (e = op_queue_pop(&conn->oq))) {
		if (e->mr)
			mr_unhold(e->mr);	/* the call holds it again if posted */
		op_queue_set_draining(&conn->oq, 1);
		ret = queue_replay(conn, e);
		op_queue_set_draining(&conn->oq, 0);
		if (ret == -ENOBUFS) {
			if (e->mr)
				mr_hold(e->mr);
			op_queue_unpop(&conn->oq, e);
			return;
		}
		if (ret)
			queue_fail(conn, e, ret);
		free(e);
	}
}

/* Room is back on a connection with an op queue: the queue's calls go
 * first, then on_send_ready if the application was refused (the queue
 * was full) and the queue has room again. Out of line: a connection
 * without a queue never comes here. */
__attribute__((noinline)) void conn_queue_ready(struct ez_conn *conn)
{
	queue_drain(conn);
	if (conn->state != CS_CONNECTED || conn->app_closed)
		return;
	if (conn->sq.app_refused && op_queue_has_room(&conn->oq)) {
		conn_sq_ready_clear(conn, conn->oq.head != NULL);
		conn_send_ready_fire(conn);
	} else if (!conn->sq.app_refused && !conn->oq.head) {
		conn_sq_ready_clear(conn, 0);
	}
}

/* The connection ends: every call still queued ends with -ECANCELED,
 * in order, after the posted ops that waited for credits. */
void conn_queue_cancel(struct ez_conn *conn)
{
	struct queued_op *e;

	while ((e = op_queue_pop(&conn->oq))) {
		if (e->mr)
			mr_unhold(e->mr);
		queue_fail(conn, e, -ECANCELED);
		free(e);
	}
}
