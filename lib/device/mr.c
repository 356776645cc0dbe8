/* mr.c: memory registration with least-privilege access on a device, and the export of (addr, rkey, len). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/log.h"
#include "mr.h"

int mr_access_flags(unsigned int access)
{
	int flags = IBV_ACCESS_LOCAL_WRITE;

	if (access & EZ_MR_REMOTE_READ)
		flags |= IBV_ACCESS_REMOTE_READ;
	if (access & EZ_MR_REMOTE_WRITE)
		flags |= IBV_ACCESS_REMOTE_WRITE;
	return flags;
}

int mr_reg(struct device *dev, void *addr, size_t len, unsigned int access, struct ez_mr **out)
{
	struct ez_mr *mr = calloc(1, sizeof(*mr));
	int ret;

	if (!mr)
		return ezi_fail(-ENOMEM, "ez_mr_reg: out of memory");
	mr->mr = ibv_reg_mr(dev->pd, addr, len, mr_access_flags(access));
	if (!mr->mr) {
		ret = ezi_fail(-errno, "ibv_reg_mr(%s, %zu bytes, access 0x%x): %s", dev->name, len,
			       mr_access_flags(access), ez_strerror(errno));
		free(mr);
		return ret;
	}
	mr->dev = dev;
	mr->access = access;
	*out = mr;
	return 0;
}

int mr_dereg(struct ez_mr *mr)
{
	int ret = ibv_dereg_mr(mr->mr);

	if (ret)
		return ezi_fail(-ret, "ibv_dereg_mr: %s (an operation still uses the MR?)",
				ez_strerror(ret));
	free(mr);
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

void *ez_mr_addr(const struct ez_mr *mr)
{
	if (mr && mr_wrong_thread(mr, "ez_mr_addr"))
		return NULL;
	return mr ? mr->mr->addr : NULL;
}

size_t ez_mr_len(const struct ez_mr *mr)
{
	if (mr && mr_wrong_thread(mr, "ez_mr_len"))
		return 0;
	return mr ? mr->mr->length : 0;
}

int ez_mr_export(const struct ez_mr *mr, struct ez_rkey *out)
{
	if (mr && mr->owner && ezi_owner_check(mr->owner, "ez_mr_export", "the context"))
		return -EPERM;
	if (!mr || !out)
		return ezi_fail(-EINVAL, "ez_mr_export: mr %p, out %p", (const void *)mr, (void *)out);
	if (!(mr->access & (EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE)))
		return ezi_fail(-EPERM, "ez_mr_export: the MR grants no remote access (register it with EZ_MR_REMOTE_READ and/or EZ_MR_REMOTE_WRITE)");
	out->addr = (uintptr_t)mr->mr->addr;
	out->len = mr->mr->length;
	out->rkey = mr->mr->rkey;
	out->reserved = 0;
	return 0;
}
