/* query.c: ez_qp_query(): ibv_query_qp() that knows which attributes hold a value in the QP's current state. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "qpfsm.h"

static int row_bits(enum ibv_qp_type type, enum ibv_qp_state from, enum ibv_qp_state to)
{
	const struct qpfsm_row *r = qpfsm_lookup(type, from, to);

	return r ? r->req | r->opt : 0;
}

int qpfsm_valid_in_state(enum ibv_qp_type type, enum ibv_qp_state state)
{
	/* What the climb to a state may have set, by the table; the state and
	 * the capabilities (set at creation) always hold. */
	int init = row_bits(type, IBV_QPS_RESET, IBV_QPS_INIT) |
		   row_bits(type, IBV_QPS_INIT, IBV_QPS_INIT);
	int rtr = init | row_bits(type, IBV_QPS_INIT, IBV_QPS_RTR);
	int rts = rtr | row_bits(type, IBV_QPS_RTR, IBV_QPS_RTS) |
		  row_bits(type, IBV_QPS_RTS, IBV_QPS_RTS);
	int v;

	switch (state) {
	case IBV_QPS_INIT: v = init; break;
	case IBV_QPS_RTR: v = rtr; break;
	case IBV_QPS_RTS:
	case IBV_QPS_SQE: v = rts; break;
	case IBV_QPS_SQD:
		v = rts | row_bits(type, IBV_QPS_SQD, IBV_QPS_SQD) | IBV_QP_EN_SQD_ASYNC_NOTIFY;
		break;
	default: v = 0; break; /* RESET, ERR: nothing but the state */
	}
	return (v & ~IBV_QP_CUR_STATE) | IBV_QP_STATE | IBV_QP_CAP;
}

int ez_qp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		struct ibv_qp_init_attr *init_attr)
{
	static const struct ibv_qp_attr zero;
	struct ibv_qp_init_attr local;
	int mask, valid, err;

	if (!qp || !attr)
		return ezi_fail(-EINVAL, "ez_qp_query: qp and attr are required");
	/* The state, and with APM the path (the hardware may have migrated
	 * to the alternate), can change between calls: always read them. */
	mask = attr_mask | IBV_QP_STATE;
	if (mask & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE))
		mask |= IBV_QP_AV | IBV_QP_PATH_MIG_STATE;
	memset(attr, 0, sizeof(*attr));
	err = ibv_query_qp(qp, attr, mask, init_attr ? init_attr : &local);
	if (err)
		return ezi_fail(-err, "%s: ibv_query_qp: %s", ez_qp_type_str(qp->qp_type),
				ez_strerror(err));
	valid = qpfsm_valid_in_state(qp->qp_type, attr->qp_state);
	for (int i = 1; i < 31; i++) {
		int bit = 1 << i;

		if ((mask & bit) && !(valid & bit))
			qpfsm_copy_attr_bit(attr, &zero, bit);
	}
	/* sq_draining means something only in SQD. */
	if (attr->qp_state != IBV_QPS_SQD)
		attr->sq_draining = 0;
	return 0;
}
