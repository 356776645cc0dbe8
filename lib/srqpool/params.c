/* params.c: the pool's options (defaults, validation), watermark and credit math, ibv_modify_srq rules. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "pool.h"

void srqpool_limits_from_device(const struct ibv_device_attr *da, struct srqpool_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->max_srq = da->max_srq > 0 ? (uint32_t)da->max_srq : 0;
	lim->max_srq_wr = da->max_srq_wr > 0 ? (uint32_t)da->max_srq_wr : 0;
	lim->max_srq_sge = da->max_srq_sge > 0 ? (uint32_t)da->max_srq_sge : 0;
	lim->max_mr_size = da->max_mr_size;
	lim->can_resize = !!(da->device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	lim->phys_port_cnt = da->phys_port_cnt;
}

/* Rounded down, but never 0: srq_limit 0 disarms the event the pool lives on. */
uint32_t srqpool_watermark_pct(uint32_t nbufs, uint32_t pct)
{
	uint64_t wm = (uint64_t)nbufs * pct / 100;

	return wm ? (uint32_t)wm : 1;
}

/* Credits a connection may have in flight: the sum over all connections never
 * exceeds the buffers registered, so one busy peer cannot take the others'. */
uint32_t srqpool_fair_share(uint32_t bufs, uint32_t conns)
{
	uint32_t share;

	if (!conns)
		return bufs;
	share = bufs / conns;
	return share ? share : 1;
}

int srqpool_resolve(const struct ez_srqpool_opts *opts, const struct srqpool_limits *lim,
		    struct srqpool_params *p)
{
	struct ez_srqpool_opts o;
	uint64_t slab;

	if (opts)
		o = *opts;
	else
		memset(&o, 0, sizeof(o));
	memset(p, 0, sizeof(*p));

	if (!lim->max_srq || !lim->max_srq_wr || !lim->max_srq_sge)
		return ezi_fail(-EOPNOTSUPP, "ibv_create_srq: the device has no SRQ "
				"(ibv_query_device: max_srq %u, max_srq_wr %u, max_srq_sge %u)",
				lim->max_srq, lim->max_srq_wr, lim->max_srq_sge);

	p->buf_size = o.buf_size ? o.buf_size : SRQPOOL_DEF_BUF_SIZE;
	if (p->buf_size > SRQPOOL_MAX_BUF_SIZE)
		return ezi_fail(-EINVAL, "srqpool: buf_size %u exceeds 2 GiB, the largest RDMA message",
				p->buf_size);
	p->stride = (p->buf_size + SRQPOOL_ALIGN - 1) & ~(SRQPOOL_ALIGN - 1);
	if (!p->stride) /* buf_size just under 4 GiB cannot happen past the check above */
		return ezi_fail(-EINVAL, "srqpool: buf_size %u too large", p->buf_size);

	p->nbufs = o.nbufs ? o.nbufs : SRQPOOL_DEF_NBUFS;
	if (p->nbufs < 2)
		return ezi_fail(-EINVAL, "srqpool: nbufs %u: a pool needs at least 2 buffers "
				"(one below the watermark, one above)", p->nbufs);
	if (p->nbufs > lim->max_srq_wr)
		return ezi_fail(-EINVAL, "srqpool: nbufs %u exceeds the device's max_srq_wr %u "
				"(ibv_query_device)", p->nbufs, lim->max_srq_wr);

	slab = (uint64_t)p->stride * p->nbufs;
	if (lim->max_mr_size && slab > lim->max_mr_size)
		return ezi_fail(-EINVAL, "srqpool: nbufs %u x buf_size %u = %llu bytes exceeds the "
				"device's max_mr_size %llu (ibv_query_device)", p->nbufs, p->buf_size,
				(unsigned long long)slab, (unsigned long long)lim->max_mr_size);

	if (o.low_watermark && o.low_watermark_pct)
		return ezi_fail(-EINVAL, "srqpool: low_watermark %u and low_watermark_pct %u both set; "
				"set one", o.low_watermark, o.low_watermark_pct);
	if (o.low_watermark_pct >= 100)
		return ezi_fail(-EINVAL, "srqpool: low_watermark_pct %u must be below 100 "
				"(percent of nbufs)", o.low_watermark_pct);
	if (o.low_watermark)
		p->watermark = o.low_watermark;
	else if (o.low_watermark_pct)
		p->watermark = srqpool_watermark_pct(p->nbufs, o.low_watermark_pct);
	else
		p->watermark = srqpool_watermark_pct(p->nbufs, 25);
	if (p->watermark >= p->nbufs)
		return ezi_fail(-EINVAL, "srqpool: low_watermark %u must be below nbufs %u "
				"(srq_limit fires when fewer than low_watermark receives remain posted)",
				p->watermark, p->nbufs);

	/* A batch larger than the pool is harmless: it just means "all of them". */
	p->batch = o.refill_batch ? o.refill_batch : SRQPOOL_DEF_BATCH;
	if (p->batch > p->nbufs)
		p->batch = p->nbufs;

	p->max_bufs = o.max_bufs > p->nbufs ? o.max_bufs : p->nbufs;
	if (p->max_bufs > lim->max_srq_wr)
		return ezi_fail(-EINVAL, "srqpool: max_bufs %u exceeds the device's max_srq_wr %u "
				"(ibv_query_device)", p->max_bufs, lim->max_srq_wr);
	p->grow_step = p->nbufs;
	return 0;
}

int srqpool_check_modify(const struct srqpool_limits *lim, uint32_t cur_max_wr,
			 uint32_t registered, const struct ibv_srq_attr *attr, int attr_mask)
{
	const int allowed = IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT;
	uint32_t max_wr = cur_max_wr;

	if (!attr_mask)
		return ezi_fail(-EINVAL, "ibv_modify_srq: empty attr_mask");
	if (attr_mask & ~allowed)
		return ezi_fail(-EINVAL, "ibv_modify_srq: attr_mask 0x%x: only IBV_SRQ_MAX_WR and "
				"IBV_SRQ_LIMIT are modifiable", (unsigned)attr_mask);
	if (attr_mask & IBV_SRQ_MAX_WR) {
		if (!lim->can_resize)
			return ezi_fail(-EOPNOTSUPP, "ibv_modify_srq IBV_SRQ_MAX_WR %u: the device lacks "
					"IBV_DEVICE_SRQ_RESIZE (ibv_query_device); the pool stays at "
					"%u buffers", attr->max_wr, registered);
		if (attr->max_wr > lim->max_srq_wr)
			return ezi_fail(-EINVAL, "ibv_modify_srq IBV_SRQ_MAX_WR %u: above the device's "
					"max_srq_wr %u", attr->max_wr, lim->max_srq_wr);
		if (attr->max_wr < registered)
			return ezi_fail(-EINVAL, "ibv_modify_srq IBV_SRQ_MAX_WR %u: below the %u buffers "
					"registered (an SRQ never shrinks under posted WRs)",
					attr->max_wr, registered);
		max_wr = attr->max_wr;
	}
	if (attr_mask & IBV_SRQ_LIMIT) {
		if (!attr->srq_limit)
			return ezi_fail(-EINVAL, "ibv_modify_srq IBV_SRQ_LIMIT 0: would disarm the limit "
					"event the pool refills on");
		if (attr->srq_limit >= max_wr)
			return ezi_fail(-EINVAL, "ibv_modify_srq IBV_SRQ_LIMIT %u: must be below max_wr %u",
					attr->srq_limit, max_wr);
		if (attr->srq_limit >= registered)
			return ezi_fail(-EINVAL, "ibv_modify_srq IBV_SRQ_LIMIT %u: must be below the %u "
					"buffers registered, or it fires for ever", attr->srq_limit, registered);
	}
	return 0;
}
