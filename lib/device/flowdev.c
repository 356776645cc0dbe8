/* flowdev.c: which mechanism sets a QP's UDP source port on its device, and the mlx5 one. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

#include "base/error.h"
#include "wire/flow.h"

static int sysfs_gid_type(struct ibv_context *verbs, uint8_t port, unsigned int index,
			  uint32_t *type)
{
	char path[512], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/types/%u", verbs->device->ibdev_path,
		 port, index);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*type = strstr(buf, "v2") ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
	return 0;
}

int flowdev_mech(struct ibv_context *verbs, uint8_t port, int is_global, unsigned int sgid_index,
		 enum ez_sport_mech *mech)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	int is_mlx5 = 0, ret;

	*mech = EZ_SPORT_MECH_NONE;
	ret = ibv_query_port(verbs, port, &pa);
	if (ret)
		return ezi_fail(-ret, "ibv_query_port(%s, %u): %s", ibv_get_device_name(verbs->device),
				port, ez_strerror(ret));
	if (pa.link_layer != IBV_LINK_LAYER_ETHERNET || !is_global)
		return 0;
	memset(&ge, 0, sizeof(ge));
	ret = ibv_query_gid_ex(verbs, port, sgid_index, &ge, 0);
	if (ret) {
		/* Kernels without the GID-table ioctl still publish the type in sysfs. */
		ret = sysfs_gid_type(verbs, port, sgid_index, &ge.gid_type);
		if (ret)
			return ezi_fail(ret, "ibv_query_gid_ex(%s, port %u, index %u): %s",
					ibv_get_device_name(verbs->device), port, sgid_index,
					ez_strerror(ret));
	}
#ifdef HAVE_MLX5DV
	is_mlx5 = mlx5dv_is_supported(verbs->device);
#endif
	*mech = flow_mech(pa.link_layer, ge.gid_type == IBV_GID_TYPE_ROCE_V2, is_mlx5);
	return 0;
}

int flowdev_set_mlx5_sport(struct ibv_qp *qp, uint16_t sport)
{
#ifdef HAVE_MLX5DV
	int ret = mlx5dv_modify_qp_udp_sport(qp, sport);

	if (ret)
		return ezi_fail(ret > 0 ? -ret : ret, "mlx5dv_modify_qp_udp_sport(QP %u, %u): %s",
				qp->qp_num, sport, ez_strerror(ret));
	return 0;
#else
	return ezi_fail(-EOPNOTSUPP, "mlx5dv_modify_qp_udp_sport(QP %u, %u): built without mlx5dv",
			qp->qp_num, sport);
#endif
}
