/* testdev.c: opens the test RDMA device and picks its RoCEv2 GID. */
#include "../checkmain.h"	/* check.h, passing assertions silent */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testdev.h"

/* A RoCEv2 GID with an IPv4-mapped address is what rdma_cm would pick for an
 * IPv4 connection; IB ports have one GID per index and use index 0. */
static int pick_gid(struct testdev *d)
{
	int best = -1;

	for (int i = 0; i < d->port_attr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(d->ctx, d->port, i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		/* ::ffff:a.b.c.d */
		if (!memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
			return i;
		if (best < 0)
			best = i;
	}
	return best < 0 ? 0 : best;
}

void testdev_open(struct testdev *d)
{
	struct ibv_device **list;
	const char *want = getenv("EZ_DEVICE");
	int n;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	ck_assert_msg(list && n > 0, "no RDMA device: the integration tier needs one");
	for (int i = 0; i < n && !d->ctx; i++) {
		if (want && strcmp(ibv_get_device_name(list[i]), want))
			continue;
		d->ctx = ibv_open_device(list[i]);
		snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
	}
	ibv_free_device_list(list);
	ck_assert_msg(d->ctx, "cannot open device %s", want ? want : "(first)");
	ck_assert_int_eq(ibv_query_device(d->ctx, &d->dev_attr), 0);
	d->port = 1;
	ck_assert_int_eq(ibv_query_port(d->ctx, d->port, &d->port_attr), 0);
	ck_assert_msg(d->port_attr.state == IBV_PORT_ACTIVE, "%s port 1 is not active", d->name);
	d->gid_index = pick_gid(d);
	ck_assert_int_eq(ibv_query_gid(d->ctx, d->port, d->gid_index, &d->gid), 0);
}

void testdev_close(struct testdev *d)
{
	if (d->ctx)
		ck_assert_int_eq(ibv_close_device(d->ctx), 0);
	d->ctx = NULL;
}

void testdev_self_ah(const struct testdev *d, struct ibv_ah_attr *ah, uint32_t flow_label)
{
	memset(ah, 0, sizeof(*ah));
	ah->port_num = d->port;
	ah->dlid = d->port_attr.lid;
	if (d->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ||
	    (d->port_attr.flags & IBV_QPF_GRH_REQUIRED)) {
		ah->is_global = 1;
		ah->grh.dgid = d->gid;
		ah->grh.sgid_index = d->gid_index;
		ah->grh.hop_limit = 64;
		ah->grh.flow_label = flow_label;
	}
}
