/* pool.h: which device and CQ share each SRQ pool of the connection layer uses. */
#ifndef EZ_CONN_POOL_H
#define EZ_CONN_POOL_H

#include "device/device.h"

struct budget;
struct ez_ctx;
struct ezi_owner;

/* Creates a connection's own pool of ctx on dev and claims room for all
 * its buffers on one CQ of dev, the receive CQ of every QP on the pool
 * (ez_srqpool_new makes the public ones); grow_to (0: none) more buffers
 * are promised on that CQ for pool_grow_to(). The pool and its buffers are
 * used from owner's thread (ctx's owner; ctx is only a key here, so that
 * this file needs no ctx.h). */
int pool_create(struct ez_ctx *ctx, const struct ezi_owner *owner, struct device *dev,
		struct ibv_pd *pd, const struct ez_srqpool_opts *opts, uint32_t grow_to,
		struct ez_srqpool **out);
/* The same on dev's PD, counted in *count while it lives (NULL: not
 * counted). pool_create's pd: dev's (NULL) or a connection's own. */
int pool_make(struct ez_ctx *ctx, const struct ezi_owner *owner, struct device *dev,
	      const struct ez_srqpool_opts *opts, int *count, struct ez_srqpool **out);
int pool_destroy(struct ez_srqpool *pool);
/* A connection's private pool that could not be destroyed with it (the
 * application still holds buffers): kept by its context, destroyed by
 * pool_reap() once they are all released; charge bytes of budget (NULL:
 * none) are released with it. */
void pool_orphan(struct ez_srqpool *pool, struct budget *budget, uint64_t charge);
/* Received buffers the application holds, over every pool of ctx. */
uint64_t pool_held(const struct ez_ctx *ctx);
/* Destroys ctx's orphaned pools whose buffers are all back. */
void pool_reap(struct ez_ctx *ctx);
/* Takes a pool made by pool_create to total buffers (its cap raised), the
 * CQ room for them reserved first; 0 when it has them already. */
int pool_grow_to(struct ez_srqpool *pool, uint32_t total);
/* The device, buffer size and receive CQ of a pool made by pool_create
 * (-ENOENT otherwise). */
int pool_lookup(const struct ez_srqpool *pool, struct device **dev, uint32_t *buf_size,
		struct device_cq **cq);

#endif
