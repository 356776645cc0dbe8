/* atomic.h: RDMA atomics' checks and result words (atomic.c), under msg.c. */
#ifndef EZ_CONN_ATOMIC_H
#define EZ_CONN_ATOMIC_H

#include "conn_types.h"

/* The device can do atomics, the word is 8-byte aligned and inside the key. */
int conn_atomic_check(struct ez_conn *conn, const struct ez_rkey *remote, uint64_t roff,
		      const char *fn);
/* op's result word as its SGE (registered at the first atomic). */
int conn_atomic_prepare(struct ez_conn *conn, struct op *op, const char *fn);
/* The remote word's old value the completed op brought back. */
uint64_t conn_atomic_old(const struct ez_conn *conn, const struct op *op);
void conn_atomic_fini(struct ez_conn *conn);

#endif
