/* op_queue.h: a connection's bounded queue of operations accepted past a full window (ez_conn_opts.queue_depth), in call order, until room returns (op_queue.c; msg.c posts them). */
#ifndef EZ_CONN_OP_QUEUE_H
#define EZ_CONN_OP_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include <easyrdma.h>

/* One call of the application's, as it was made: what msg.c needs to
 * make it again when room returns. A send's bytes are copied (ez_send()
 * promises the copy before it returns); the rest refer to the caller's
 * MR, which counts the call in its inflight (ez_mr_dereg() refuses). */
struct queued_op {
	struct queued_op *next;
	uint8_t kind;		/* enum op_kind: OP_SEND, OP_SEND_MR, OP_WRITE, ... */
	uint8_t has_remote;	/* remote was given (a bare write with immediate has none) */
	struct ez_mr *mr;
	size_t off, len;
	struct ez_rkey remote;
	uint64_t roff;
	uint64_t a, b;		/* an atomic's compare/add and swap */
	uint32_t imm;
	ez_op_cb cb;
	ez_atomic_cb acb;	/* an atomic's */
	void *arg;
	unsigned char data[];	/* OP_SEND: its len bytes */
};

/* The queue, in the connection as conn->oq. */
struct op_queue {
	struct queued_op *head, **tail;
	uint32_t n;		/* queued now */
	uint32_t max;		/* its bound (queue_depth); 0: no queue */
	uint32_t most;		/* the most queued at once */
	uint64_t total;		/* calls ever queued */
	/* msg.c is posting the head: the entry points do not queue behind
	 * the queue (they would overtake nothing: it is their turn). */
	uint8_t draining;
};

void op_queue_init(struct op_queue *q, uint32_t max);
/* Room for one more. */
static inline int op_queue_has_room(const struct op_queue *q)
{
	return q->n < q->max;
}
/* An entry of data_len bytes of data, zeroed, or NULL (out of memory). */
struct queued_op *op_queue_new(size_t data_len);
/* At the tail (the caller checked the room). */
void op_queue_push(struct op_queue *q, struct queued_op *e);
/* The head, out of the queue; NULL when empty. */
struct queued_op *op_queue_pop(struct op_queue *q);
/* Back at the head: it could not be posted yet. */
void op_queue_unpop(struct op_queue *q, struct queued_op *e);
void op_queue_set_draining(struct op_queue *q, int on);

#endif
