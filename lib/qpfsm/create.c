/* create.c: ez_qp_create(): ibv_create_qp() that says plainly when the device cannot make a QP of that type. */
#include "config.h"

#include <errno.h>

#include "base/error.h"
#include "qpfsm.h"

int ez_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *init, struct ibv_qp **qp)
{
	struct ibv_context *ctx;
	const char *dev, *type;
	struct ibv_port_attr pa;
	int err;

	if (!pd || !init || !qp)
		return ezi_fail(-EINVAL, "ez_qp_create: pd, init and qp are required");
	*qp = NULL;
	ctx = pd->context;
	dev = ibv_get_device_name(ctx->device);
	type = ez_qp_type_str(init->qp_type);
	if (!qpfsm_lookup(init->qp_type, IBV_QPS_RESET, IBV_QPS_RESET))
		return ezi_fail(-EOPNOTSUPP, "ez_qp_create on %s: QP type %d not supported",
				dev, (int)init->qp_type);
	/* Raw Ethernet frames need an Ethernet port; say so before the
	 * provider answers with a bare errno. */
	if (init->qp_type == IBV_QPT_RAW_PACKET && !ibv_query_port(ctx, 1, &pa) &&
	    pa.link_layer != IBV_LINK_LAYER_ETHERNET)
		return ezi_fail(-EOPNOTSUPP, "%s QP on %s: port 1 is not Ethernet", type, dev);
	*qp = ibv_create_qp(pd, init);
	if (*qp)
		return 0;
	err = errno ? errno : EINVAL;
	if (err == EOPNOTSUPP || err == ENOSYS || err == EPROTONOSUPPORT)
		return ezi_fail(-EOPNOTSUPP, "%s QP on %s: the device does not offer %s QPs (ibv_create_qp: %s)",
				type, dev, type, ez_strerror(err));
	if (err == EPERM && init->qp_type == IBV_QPT_RAW_PACKET)
		return ezi_fail(-EPERM, "%s QP on %s: needs CAP_NET_RAW (ibv_create_qp: %s)", type,
				dev, ez_strerror(err));
	return ezi_fail(-err, "%s QP on %s: ibv_create_qp: %s", type, dev, ez_strerror(err));
}
