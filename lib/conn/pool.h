/* pool.h: which device and CQ share each SRQ pool of the connection layer uses. */
#ifndef EZ_CONN_POOL_H
#define EZ_CONN_POOL_H

#include "device/device.h"

/* Creates a pool on dev and reserves CQ room for all its buffers. */
int pool_create(struct device *dev, const struct ez_srqpool_opts *opts, int owned_by_conn,
		struct ez_srqpool **out);
int pool_destroy(struct ez_srqpool *pool);
/* The device and buffer size of a pool made by pool_create (-ENOENT otherwise). */
int pool_lookup(const struct ez_srqpool *pool, struct device **dev, uint32_t *buf_size);

#endif
