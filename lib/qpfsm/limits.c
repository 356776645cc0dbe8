/* limits.c: the device and port limits the validator checks against, queried once per device. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "qpfsm.h"

int qpfsm_limits_query(struct ibv_context *ctx, struct qpfsm_limits *lim)
{
	struct ibv_device_attr_ex dx;
	int err;

	memset(lim, 0, sizeof(*lim));
	memset(&dx, 0, sizeof(dx));
	/* The extended query carries the packet-pacing caps; fall back to the
	 * plain one on providers without it. */
	err = ibv_query_device_ex(ctx, NULL, &dx);
	if (err) {
		err = ibv_query_device(ctx, &dx.orig_attr);
		if (err)
			return ezi_fail(-err, "ibv_query_device(%s): %s",
					ibv_get_device_name(ctx->device), ez_strerror(err));
		memset(&dx.packet_pacing_caps, 0, sizeof(dx.packet_pacing_caps));
	}
	lim->phys_port_cnt = dx.orig_attr.phys_port_cnt;
	lim->device_cap_flags = dx.orig_attr.device_cap_flags;
	lim->max_qp_rd_atom = dx.orig_attr.max_qp_rd_atom;
	lim->max_qp_init_rd_atom = dx.orig_attr.max_qp_init_rd_atom;
	lim->rate_limit_min = dx.packet_pacing_caps.qp_rate_limit_min;
	lim->rate_limit_max = dx.packet_pacing_caps.qp_rate_limit_max;
	lim->pacing_qpts = dx.packet_pacing_caps.supported_qpts;
	for (unsigned int p = 1; p <= lim->phys_port_cnt && p <= QPFSM_MAX_PORTS; p++) {
		struct ibv_port_attr pa;

		err = ibv_query_port(ctx, p, &pa);
		if (err)
			return ezi_fail(-err, "ibv_query_port(%s, %u): %s",
					ibv_get_device_name(ctx->device), p, ez_strerror(err));
		lim->port[p].present = 1;
		lim->port[p].link_layer = pa.link_layer;
		lim->port[p].flags = pa.flags;
		lim->port[p].active_mtu = pa.active_mtu;
		lim->port[p].max_mtu = pa.max_mtu;
		lim->port[p].pkey_tbl_len = pa.pkey_tbl_len;
		lim->port[p].gid_tbl_len = pa.gid_tbl_len;
	}
	return 0;
}
