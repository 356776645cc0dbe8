/* queued.h: the calls a connection's op queue takes past a full window (queued.c): taken, made again when room returns, ended at the connection's end. */
#ifndef EZ_CONN_QUEUED_H
#define EZ_CONN_QUEUED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "conn_types.h"
#include "op_queue.h"

/* The queue takes a call now: it exists, has room, and is not posting
 * (a call it makes again that finds no room goes back to its head). */
static inline int conn_queue_open(const struct ez_conn *conn)
{
	return conn->oq.max && !conn->oq.draining && op_queue_has_room(&conn->oq);
}

/* No room, and the queue does not take fn's call: refused (-ENOBUFS
 * naming it), or while the queue posts, a quiet -ENOBUFS that puts its
 * head back. */
int conn_queue_full(struct ez_conn *conn, const char *fn);
/* fn's call, accepted into the queue (0) or refused (-ENOBUFS: the queue
 * does not take it, -ENOMEM): ez_send()/ez_sendv() (the bytes copied now,
 * as the call promises); ez_send_mr(), ez_write(), ez_write_imm(),
 * ez_read() (the MR held); the atomics. */
int conn_queue_send(struct ez_conn *conn, const struct iovec *iov, int iovcnt, size_t len,
		    ez_op_cb cb, void *op_arg, const char *fn);
int conn_queue_mr_op(struct ez_conn *conn, enum op_kind kind, struct ez_mr *mr, size_t off,
		     size_t len, const struct ez_rkey *remote, uint64_t roff, uint32_t imm,
		     ez_op_cb cb, void *op_arg, const char *fn);
int conn_queue_atomic(struct ez_conn *conn, enum op_kind kind, const struct ez_rkey *remote,
		      uint64_t roff, uint64_t a, uint64_t b, ez_atomic_cb cb, void *op_arg,
		      const char *fn);
/* Room is back: the queue's calls first, then on_send_ready. */
void conn_queue_ready(struct ez_conn *conn);
/* The connection ends: every call still queued ends with -ECANCELED. */
void conn_queue_cancel(struct ez_conn *conn);

#endif
