/* atomic.c: RDMA atomics (compare-and-swap, fetch-and-add): the device's capability, the word's alignment and range, and the registered words their old values land in. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "atomic.h"
#include "conn_pd.h"

static const char *atomic_cap_name(enum ibv_atomic_cap c)
{
	switch (c) {
	case IBV_ATOMIC_NONE:
		return "IBV_ATOMIC_NONE";
	case IBV_ATOMIC_HCA:
		return "IBV_ATOMIC_HCA";
	case IBV_ATOMIC_GLOB:
		return "IBV_ATOMIC_GLOB";
	}
	return "unknown";
}

int conn_atomic_check(struct ez_conn *conn, const struct ez_rkey *remote, uint64_t roff,
		      const char *fn)
{
	uint64_t addr;

	if (conn->dev->attr.atomic_cap == IBV_ATOMIC_NONE)
		return ezi_fail(-EOPNOTSUPP, "%s: device %s has no RDMA atomics (ibv_device_attr.atomic_cap %s)",
				fn, conn->dev->name, atomic_cap_name(conn->dev->attr.atomic_cap));
	if (!remote)
		return ezi_fail(-EINVAL, "%s: remote is NULL", fn);
	if (roff > remote->len || remote->len - roff < 8)
		return ezi_fail(-EINVAL, "%s: remote word [%llu, +8) is outside the peer's %llu bytes",
				fn, (unsigned long long)roff, (unsigned long long)remote->len);
	addr = remote->addr + roff;
	if (addr & 7)
		return ezi_fail(-EINVAL, "%s: remote address 0x%llx is not 8-byte aligned", fn,
				(unsigned long long)addr);
	return 0;
}

/* One word per op of send_depth, indexed by the op's place: registered
 * once per connection, at its first atomic (most connections never do
 * one, and setup registers no memory). */
static int atomic_words(struct ez_conn *conn, const char *fn)
{
	size_t len = (size_t)conn->o.send_depth * sizeof(uint64_t);
	void *mem;

	if (conn->atomic.mr)
		return 0;
	if (posix_memalign(&mem, 64, len))
		return ezi_fail(-ENOMEM, "%s: out of memory for %zu bytes of atomic results", fn, len);
	conn->atomic.res = mem;
	conn->atomic.mr = ibv_reg_mr(conn_pd_of(conn), conn->atomic.res, len, IBV_ACCESS_LOCAL_WRITE);
	if (!conn->atomic.mr) {
		int err = errno ? errno : ENOMEM;

		free(conn->atomic.res);
		conn->atomic.res = NULL;
		return ezi_fail(-err, "%s: ibv_reg_mr(%s, %zu bytes of atomic results, local write): %s",
				fn, conn->dev->name, len, ez_strerror(err));
	}
	return 0;
}

int conn_atomic_prepare(struct ez_conn *conn, struct op *op, const char *fn)
{
	int ret = atomic_words(conn, fn);
	uint64_t *w;

	if (ret)
		return ret;
	w = &conn->atomic.res[op - conn->sq.ops];
	*w = 0;
	op->sge.addr = (uintptr_t)w;
	op->sge.length = sizeof(*w);
	op->sge.lkey = conn->atomic.mr->lkey;
	return 0;
}

uint64_t conn_atomic_old(const struct ez_conn *conn, const struct op *op)
{
	return conn->atomic.res[op - conn->sq.ops];
}

void conn_atomic_fini(struct ez_conn *conn)
{
	if (conn->atomic.mr && ibv_dereg_mr(conn->atomic.mr))
		ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -EIO,
			      "ibv_dereg_mr(atomic results): %s", ez_strerror(errno));
	conn->atomic.mr = NULL;
	free(conn->atomic.res);
	conn->atomic.res = NULL;
}
