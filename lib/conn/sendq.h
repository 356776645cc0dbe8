/* sendq.h: a connection's ops on their way to the send queues (sendq.c). */
#ifndef EZ_CONN_SENDQ_H
#define EZ_CONN_SENDQ_H

#include "conn_types.h"

/* A copied send's registered slot of len bytes (sendslab.c), set in op's
 * SGE; and its return, when the op completes or is given up. */
int conn_op_copy_slot(struct ez_conn *conn, struct op *op, size_t len);
void conn_op_release_copy(struct ez_conn *conn, struct op *op);
/* Back on the free list (its copy slot returned). */
void conn_op_put(struct ez_conn *conn, struct op *op);
/* Back on the free list. Inline: every completed op takes it. */
static inline void conn_op_free(struct ez_conn *conn, struct op *op)
{
	op->next = conn->free_ops;
	conn->free_ops = op;
}
/* A WR just posted on op->path joins that path's list of posted WRs. */
void conn_sq_append(struct ez_conn *conn, struct op *op);
/* The control messages (credits, goodbyes, path notices, auth): op is a
 * dedicated one (bound at setup), or NULL for a free send op (returned at
 * its completion); data (len bytes) is copied. 0, or -errno with nothing
 * posted. */
int conn_post_ctrl(struct ez_conn *conn, struct op *op, enum op_kind kind,
		   struct conn_path *path, uint32_t imm, const void *data, uint32_t len);

const char *op_kind_name(enum op_kind kind);

#endif
