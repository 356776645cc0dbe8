/* mr.c: memory registration with least-privilege access on a device, type-2 memory windows bound from it, and the shared export of (addr, rkey, len). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "mr.h"

#define REMOTE (EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_ATOMIC)

int device_has_mw2(const struct device *dev)
{
	return (dev->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && dev->attr.max_mw > 0;
}

int mr_access_flags(const struct device *dev, unsigned int access)
{
	int flags = IBV_ACCESS_LOCAL_WRITE;

	/* The MR's own rkey grants remote access only when the application
	 * asked every peer of the context to have it. */
	if (access & EZ_MR_SHARED) {
		if (access & EZ_MR_REMOTE_READ)
			flags |= IBV_ACCESS_REMOTE_READ;
		if (access & EZ_MR_REMOTE_WRITE)
			flags |= IBV_ACCESS_REMOTE_WRITE;
		if (access & EZ_MR_REMOTE_ATOMIC)
			flags |= IBV_ACCESS_REMOTE_ATOMIC;
	}
	if ((access & REMOTE) && device_has_mw2(dev))
		flags |= IBV_ACCESS_MW_BIND;
	return flags;
}

int mr_reg(struct device *dev, void *addr, size_t len, unsigned int access, struct ez_mr **out)
{
	struct ez_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr)
		return ezi_fail(-ENOMEM, "ez_mr_reg: out of memory");
	mr->mr = ibv_reg_mr(dev->pd, addr, len, mr_access_flags(dev, access));
	if (!mr->mr) {
		ret = ezi_fail(-errno, "ibv_reg_mr(%s, %zu bytes, access 0x%x): %s", dev->name, len,
			       mr_access_flags(dev, access), ez_strerror(errno));
		free(mr);
		return ret;
	}
	mr->dev = dev;
	mr->access = access;
	mr->addr = addr;
	mr->len = len;
	*out = mr;
	return 0;
}

int mr_dereg(struct ez_mr *mr)
{
	int ret = ibv_dereg_mr(mr->mr);

	if (ret)
		return ezi_fail(-ret, "ibv_dereg_mr: %s (an operation still uses the MR?)",
				ez_strerror(ret));
	mr->mr = NULL;
	return 0;
}

/* For the calls that return a value, not an error: refused and logged. */
static int mr_wrong_thread(const struct ez_mr *mr, const char *fn)
{
	if (!mr->owner || !ezi_owner_check(mr->owner, fn, "the context"))
		return 0;
	ezi_log_err("%s", ez_errmsg());
	return 1;
}

/* The access flags of a window's exact registration (see mr.h). */
static int mw_exact_flags(int access)
{
	int flags = IBV_ACCESS_MW_BIND;

	/* A bind granting remote write or atomics needs local write on the
	 * MR (IBTA C10-73; rxe_check_bind_mw()). */
	if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC))
		flags |= IBV_ACCESS_LOCAL_WRITE;
	return flags;
}

static void mw_exact_dereg(struct mw *w)
{
	int ret;

	if (!w->exact)
		return;
	ret = ibv_dereg_mr(w->exact);
	if (ret)
		ezi_log_err("ibv_dereg_mr(a window's exact registration, %zu bytes at %p, window rkey 0x%x): %s",
			    w->exact->length, w->exact->addr, w->rkey, ez_strerror(ret));
	w->exact = NULL;
}

int mw_alloc(struct ez_mr *mr, uint64_t addr, uint64_t len, int access, struct mw *w)
{
	int flags = mw_exact_flags(access), err;

	w->exact = ibv_reg_mr(mr->dev->pd, (void *)(uintptr_t)addr, len, flags);
	if (!w->exact) {
		err = errno ? errno : ENOMEM;
		return ezi_fail(-err, "ibv_reg_mr(%s, a window's exact range: %llu bytes at +%llu of the MR at %p, access 0x%x): %s",
				mr->dev->name, (unsigned long long)len,
				(unsigned long long)(addr - (uintptr_t)mr->addr), mr->addr, flags,
				ez_strerror(err));
	}
	w->mw = ibv_alloc_mw(mr->dev->pd, IBV_MW_TYPE_2);
	if (!w->mw) {
		err = errno ? errno : ENOMEM;
		mw_exact_dereg(w);
		return ezi_fail(-err, "ibv_alloc_mw(%s, IBV_MW_TYPE_2): %s", mr->dev->name,
				ez_strerror(err));
	}
	w->mr = mr;
	w->mr_prev = NULL;
	w->mr_next = mr->windows;
	if (mr->windows)
		mr->windows->mr_prev = w;
	mr->windows = w;
	return 0;
}

void mw_bind_wr(struct mw *w, uint64_t addr, uint64_t len, int access, struct ibv_send_wr *wr)
{
	/* A fresh key for every binding: a key handed out before (to this
	 * or another connection) never names this binding. */
	w->rkey = ibv_inc_rkey(w->mw->rkey);
	wr->opcode = IBV_WR_BIND_MW;
	wr->num_sge = 0;
	wr->bind_mw.mw = w->mw;
	wr->bind_mw.rkey = w->rkey;
	wr->bind_mw.bind_info.mr = w->exact;
	wr->bind_mw.bind_info.addr = addr;
	wr->bind_mw.bind_info.length = len;
	wr->bind_mw.bind_info.mw_access_flags = (unsigned int)access;
}

void mw_free(struct mw *w)
{
	struct ez_mr *mr = w->mr;
	int ret;

	if (!w->mw)
		return;
	/* The window first: a registration with a window bound over it cannot
	 * be deregistered (rxe: -EINVAL while num_mw > 0). */
	ret = ibv_dealloc_mw(w->mw);
	if (ret)
		ezi_log_err("ibv_dealloc_mw(rkey 0x%x): %s", w->rkey, ez_strerror(ret));
	w->mw = NULL;
	mw_exact_dereg(w);
	if (w->mr_prev)
		w->mr_prev->mr_next = w->mr_next;
	else if (mr)
		mr->windows = w->mr_next;
	if (w->mr_next)
		w->mr_next->mr_prev = w->mr_prev;
	w->mr = NULL;
	w->mr_next = w->mr_prev = NULL;
}

int mr_copy_reg(struct ez_mr *src, struct ibv_pd *pd, size_t off, size_t len, int access,
		struct mr_copy *c)
{
	access |= IBV_ACCESS_LOCAL_WRITE;
	c->mr = ibv_reg_mr(pd, (uint8_t *)src->addr + off, len, access);
	if (!c->mr)
		return ezi_fail(errno ? -errno : -ENOMEM,
				"ibv_reg_mr(%s, a connection's own PD, %zu bytes at +%zu, access 0x%x): %s",
				src->dev->name, len, off, access, ez_strerror(errno ? errno : ENOMEM));
	c->src = src;
	c->src_prev = NULL;
	c->src_next = src->copies;
	if (src->copies)
		src->copies->src_prev = c;
	src->copies = c;
	return 0;
}

void mr_copy_dereg(struct mr_copy *c)
{
	uint32_t rkey;
	int ret;

	if (!c->mr)
		return;
	rkey = c->mr->rkey;
	ret = ibv_dereg_mr(c->mr);
	if (ret)
		ezi_log_err("ibv_dereg_mr(a connection's copy, rkey 0x%x): %s", rkey,
			    ez_strerror(ret));
	c->mr = NULL;
	if (c->src_prev)
		c->src_prev->src_next = c->src_next;
	else if (c->src)
		c->src->copies = c->src_next;
	if (c->src_next)
		c->src_next->src_prev = c->src_prev;
	c->src = NULL;
	c->src_next = c->src_prev = NULL;
}

void *ez_mr_addr(const struct ez_mr *mr)
{
	if (mr && mr_wrong_thread(mr, "ez_mr_addr"))
		return NULL;
	return mr ? mr->addr : NULL;
}

size_t ez_mr_len(const struct ez_mr *mr)
{
	if (mr && mr_wrong_thread(mr, "ez_mr_len"))
		return 0;
	return mr ? mr->len : 0;
}

int ez_mr_export(const struct ez_mr *mr, struct ez_rkey *out)
{
	if (mr && mr->owner && ezi_owner_check(mr->owner, "ez_mr_export", "the context"))
		return -EPERM;
	if (!mr || !out)
		return ezi_fail(-EINVAL, "ez_mr_export: mr %p, out %p", (const void *)mr, (void *)out);
	if (mr->dead)
		return ezi_fail(-EBADF, "ez_mr_export: the MR at %p was deregistered", mr->addr);
	if (!(mr->access & REMOTE))
		return ezi_fail(-EPERM, "ez_mr_export: the MR grants no remote access (register it with EZ_MR_REMOTE_READ and/or EZ_MR_REMOTE_WRITE)");
	if (!(mr->access & EZ_MR_SHARED))
		return ezi_fail(-EPERM, "ez_mr_export: the MR was not registered with EZ_MR_SHARED (reachable by every peer of the context); export it to one connection with ez_conn_export()");
	out->addr = (uintptr_t)mr->mr->addr;
	out->len = mr->mr->length;
	out->rkey = mr->mr->rkey;
	out->path_binding = 0;
	return 0;
}
