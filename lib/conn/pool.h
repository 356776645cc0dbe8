/* pool.h: which device and CQ share each SRQ pool of the connection layer uses. */
#ifndef EZ_CONN_POOL_H
#define EZ_CONN_POOL_H

#include "device/device.h"

/* Creates a connection's own pool on dev and reserves CQ room for all its
 * buffers (ez_srqpool_new makes the public ones). */
int pool_create(struct device *dev, const struct ez_srqpool_opts *opts, struct ez_srqpool **out);
/* The same, counted in *count while it lives (NULL: not counted). */
int pool_make(struct device *dev, const struct ez_srqpool_opts *opts, int *count,
	      struct ez_srqpool **out);
int pool_destroy(struct ez_srqpool *pool);
/* Takes a pool made by pool_create to total buffers (its cap raised), the
 * CQ room for them reserved first; 0 when it has them already. */
int pool_grow_to(struct ez_srqpool *pool, uint32_t total);
/* The device and buffer size of a pool made by pool_create (-ENOENT otherwise). */
int pool_lookup(const struct ez_srqpool *pool, struct device **dev, uint32_t *buf_size);

#endif
