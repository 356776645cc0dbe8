/* modify.c: ez_qp_modify(): validate against the table and the limits, then ibv_modify_qp(). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "qpfsm.h"

int qpfsm_view(struct ibv_qp *qp, struct qpfsm_qp_view *view)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int err;

	memset(&a, 0, sizeof(a));
	/* The state may have moved on its own (SQE, ERR, SQD drained): ask. */
	err = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT, &ia);
	if (err)
		return ezi_fail(-err, "%s: ibv_query_qp: %s", ez_qp_type_str(qp->qp_type),
				ez_strerror(err));
	view->type = qp->qp_type;
	view->state = a.qp_state;
	view->port = a.port_num;
	view->sq_draining = a.sq_draining;
	return 0;
}

int qpfsm_modify(struct ibv_qp *qp, const struct qpfsm_limits *lim, struct qpfsm_qp_view *view,
		 struct ibv_qp_attr *attr, int mask)
{
	struct qpfsm_qp_view local;
	char msg[EZ_ERRMSG_MAX];
	enum ibv_qp_state to;
	int err;

	/* A cached view cannot know when a drain ends: re-read it in SQD. */
	if (!view || view->state == IBV_QPS_SQD) {
		if ((err = qpfsm_view(qp, &local)))
			return err;
		if (view)
			*view = local;
		else
			view = &local;
	}
	if ((err = qpfsm_validate(view, lim, attr, mask, msg, sizeof(msg))))
		return ezi_fail(err, "%s", msg);
	to = (mask & IBV_QP_STATE) ? attr->qp_state : view->state;
	err = ibv_modify_qp(qp, attr, mask);
	if (err)
		return ezi_fail(-err, "%s %s->%s: ibv_modify_qp: %s", ez_qp_type_str(view->type),
				ez_qp_state_str(view->state), ez_qp_state_str(to), ez_strerror(err));
	if (mask & IBV_QP_PORT)
		view->port = attr->port_num;
	view->state = to;
	view->sq_draining = to == IBV_QPS_SQD;
	return 0;
}

int ez_qp_validate(struct ibv_qp *qp, const struct ibv_qp_attr *attr, int attr_mask)
{
	struct qpfsm_limits lim;
	struct qpfsm_qp_view view;
	char msg[EZ_ERRMSG_MAX];
	int err;

	if (!qp || !attr)
		return ezi_fail(-EINVAL, "ez_qp_validate: qp and attr are required");
	if ((err = qpfsm_limits_query(qp->context, &lim)) || (err = qpfsm_view(qp, &view)))
		return err;
	if ((err = qpfsm_validate(&view, &lim, attr, attr_mask, msg, sizeof(msg))))
		return ezi_fail(err, "%s", msg);
	return 0;
}

int ez_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct qpfsm_limits lim;
	int err;

	if (!qp || !attr)
		return ezi_fail(-EINVAL, "ez_qp_modify: qp and attr are required");
	/* The public call has nowhere to keep limits between calls, and modify
	 * is a setup-path call; the connection layer passes its cached copy to
	 * qpfsm_modify() instead. */
	if ((err = qpfsm_limits_query(qp->context, &lim)))
		return err;
	return qpfsm_modify(qp, &lim, NULL, attr, attr_mask);
}
