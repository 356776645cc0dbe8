/* ctx_objects.c: ez_mr_reg/ez_mr_dereg and ez_srqpool_new_sz: a context's MRs and pools on the device named, counted so that ez_ctx_free() refuses while one lives. */
#include "config.h"

#include <errno.h>

#include "base/abi.h"
#include "base/error.h"
#include "ctx.h"
#include "conn_export.h"
#include "device/mr.h"
#include "pool.h"

#define MR_FLAGS (EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE | EZ_MR_SHARED | EZ_MR_REMOTE_ATOMIC)
#define MR_REMOTE (EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_ATOMIC)

int ez_mr_reg(struct ez_ctx *ctx, const char *device, void *addr, size_t len,
	      unsigned int access, struct ez_mr **out)
{
	struct ez_mr *mr = NULL;
	struct device *dev;
	int ret;

	if (ctx_check_thread(ctx, "ez_mr_reg"))
		return -EPERM;
	if (!ctx || !out || (!addr && len))
		return ezi_fail(-EINVAL, "ez_mr_reg: ctx %p, addr %p, mr pointer %p", (void *)ctx,
				addr, (void *)out);
	if (access & ~(unsigned int)MR_FLAGS)
		return ezi_fail(-EINVAL, "ez_mr_reg: unknown access bits 0x%x",
				access & ~(unsigned int)MR_FLAGS);
	ret = device_by_name(ctx, device, &dev);
	if (ret)
		return ret;
	if ((access & EZ_MR_REMOTE_ATOMIC) && dev->attr.atomic_cap == IBV_ATOMIC_NONE)
		return ezi_fail(-EOPNOTSUPP, "ez_mr_reg: EZ_MR_REMOTE_ATOMIC: device %s has no RDMA atomics (ibv_device_attr.atomic_cap IBV_ATOMIC_NONE)",
				dev->name);
	ret = mr_reg(dev, addr, len, access, &mr);
	if (ret)
		return ret;
	mr->ctx = ctx;
	mr->owner = &ctx->owner;
	ctx->nmrs++;
	*out = mr;
	/* A shared MR's key works on every connection of the context: their
	 * QPs admit its access from now on. */
	if (access & EZ_MR_SHARED)
		ctx_shared_access_add(ctx, access & MR_REMOTE);
	return 0;
}

/* Refused while an op or a window bind uses the MR; the windows bound from
 * it are invalidated (freed) first, so the peers' keys die with it. The
 * handle stays valid memory, marked dead, until ez_ctx_free(). */
int ez_mr_dereg(struct ez_mr *mr)
{
	struct ez_ctx *ctx;
	int ret;

	if (mr && ctx_check_thread(mr->ctx, "ez_mr_dereg"))
		return -EPERM;
	if (!mr)
		return 0;
	if (mr->dead)
		return ezi_fail(-EBADF, "ez_mr_dereg: the MR at %p (%zu bytes) was deregistered already",
				mr->addr, mr->len);
	if (mr->inflight)
		return ezi_fail(-EBUSY, "ez_mr_dereg: %d operations posted or queued still use the MR at %p (wait for their callbacks)",
				mr->inflight, mr->addr);
	ctx = mr->ctx;
	while (mr->windows)
		mr->windows->on_mr_gone(mr->windows);
	while (mr->copies)
		mr->copies->on_src_gone(mr->copies);
	ret = mr_dereg(mr);
	if (ret)
		return ret;
	mr->dead = 1;
	mr->next_dead = ctx->dead_mrs;
	ctx->dead_mrs = mr;
	ctx->nmrs--;
	return 0;
}

int ez_srqpool_new_sz(struct ez_ctx *ctx, const char *device, const struct ez_srqpool_opts *opts,
		      size_t opts_size, struct ez_srqpool **pool)
{
	struct ez_srqpool_opts o;
	struct device *dev;
	int ret;

	if (ctx_check_thread(ctx, "ez_srqpool_new"))
		return -EPERM;
	if (!ctx || !pool)
		return ezi_fail(-EINVAL, "ez_srqpool_new: ctx %p, pool pointer %p", (void *)ctx,
				(void *)pool);
	/* At this library's layout (doc/abi.md); NULL reads as all zero. */
	ret = ezi_struct_in(&o, sizeof(o), opts, opts_size, "ez_srqpool_new", "ez_srqpool_opts");
	if (ret)
		return ret;
	ret = device_by_name(ctx, device, &dev);
	if (ret)
		return ret;
	return pool_make(ctx, &ctx->owner, dev, &o, &ctx->npools, pool);
}
