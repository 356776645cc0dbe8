/* sendslab.h: a device's registered memory for send copies, carved per connection. */
#ifndef EZ_CONN_SENDSLAB_H
#define EZ_CONN_SENDSLAB_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "extents.h"

/* Registering memory costs a system call and page pinning per connection
 * (0.4-0.5 ms on Soft-RoCE, more than the QP); copies into registered
 * memory need no MR of their own. So a device registers chunks and hands
 * each connection a range of one: connections made after the first
 * register nothing. */
struct slab_chunk {
	struct slab_chunk *next;
	uint8_t *base;
	size_t size;
	struct ibv_mr *mr;
	struct extents ranges;
};

struct sendslab {
	struct ibv_pd *pd;
	struct slab_chunk *chunks;
	size_t next_size;	/* of the next chunk; grows to SENDSLAB_MAX_CHUNK */
	unsigned int nchunks;
	uint64_t registrations;	/* ibv_reg_mr calls made, for tests and stats */
};

/* A connection's range. */
struct slab_range {
	struct slab_chunk *chunk;
	uint8_t *addr;
	size_t len;
	uint32_t lkey;
};

void sendslab_init(struct sendslab *s, struct ibv_pd *pd);
/* Deregisters and frees every chunk; every range must be back. */
void sendslab_fini(struct sendslab *s, const char *devname);
/* len bytes (rounded up to 64) of registered memory, local access only.
 * 0, or a negative errno with the reason in errmsg. */
int sendslab_get(struct sendslab *s, size_t len, struct slab_range *r, char *errmsg,
		 size_t errlen);
/* Gives a range back; a chunk left empty is deregistered unless it is the
 * only empty one (kept for the next connection). */
void sendslab_put(struct sendslab *s, struct slab_range *r);

#endif
