/* ladder.c: walks a QP from its current state to a target (normally RTS), one validated ibv_modify_qp() per step. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "qpfsm.h"

#define DEFAULT_QKEY 0x11111111u
#define DEFAULT_TIMEOUT 14	/* 4.096 us * 2^14 = 67 ms */
#define DEFAULT_RETRY 7
#define DEFAULT_RNR_RETRY 7	/* 7: retry for ever on RNR NAK */
#define DEFAULT_MIN_RNR_TIMER 12 /* 0.64 ms */
#define DEFAULT_RD_ATOMIC_CAP 16 /* responder resources cost memory per QP */
#define MAX_STEPS 6

uint32_t qpfsm_default_psn(uint32_t qpn)
{
	/* Any bijection mixing the bits will do; both ends compute it from
	 * the sender's QP number. */
	return (qpn * 0x9E3779B1u) >> 8 & 0xffffff;
}

void qpfsm_copy_attr_bit(struct ibv_qp_attr *o, const struct ibv_qp_attr *u, int bit)
{
	switch (bit) {
	case IBV_QP_CUR_STATE: o->cur_qp_state = u->cur_qp_state; break;
	case IBV_QP_EN_SQD_ASYNC_NOTIFY: o->en_sqd_async_notify = u->en_sqd_async_notify; break;
	case IBV_QP_ACCESS_FLAGS: o->qp_access_flags = u->qp_access_flags; break;
	case IBV_QP_PKEY_INDEX: o->pkey_index = u->pkey_index; break;
	case IBV_QP_PORT: o->port_num = u->port_num; break;
	case IBV_QP_QKEY: o->qkey = u->qkey; break;
	case IBV_QP_AV: o->ah_attr = u->ah_attr; break;
	case IBV_QP_PATH_MTU: o->path_mtu = u->path_mtu; break;
	case IBV_QP_TIMEOUT: o->timeout = u->timeout; break;
	case IBV_QP_RETRY_CNT: o->retry_cnt = u->retry_cnt; break;
	case IBV_QP_RNR_RETRY: o->rnr_retry = u->rnr_retry; break;
	case IBV_QP_RQ_PSN: o->rq_psn = u->rq_psn; break;
	case IBV_QP_MAX_QP_RD_ATOMIC: o->max_rd_atomic = u->max_rd_atomic; break;
	case IBV_QP_ALT_PATH:
		o->alt_ah_attr = u->alt_ah_attr;
		o->alt_pkey_index = u->alt_pkey_index;
		o->alt_port_num = u->alt_port_num;
		o->alt_timeout = u->alt_timeout;
		break;
	case IBV_QP_MIN_RNR_TIMER: o->min_rnr_timer = u->min_rnr_timer; break;
	case IBV_QP_SQ_PSN: o->sq_psn = u->sq_psn; break;
	case IBV_QP_MAX_DEST_RD_ATOMIC: o->max_dest_rd_atomic = u->max_dest_rd_atomic; break;
	case IBV_QP_PATH_MIG_STATE: o->path_mig_state = u->path_mig_state; break;
	case IBV_QP_CAP: o->cap = u->cap; break;
	case IBV_QP_DEST_QPN: o->dest_qp_num = u->dest_qp_num; break;
	case IBV_QP_RATE_LIMIT: o->rate_limit = u->rate_limit; break;
	default: break;
	}
}

static int rd_atomic_default(int cap)
{
	if (cap <= 0)
		return 0;
	return cap < DEFAULT_RD_ATOMIC_CAP ? cap : DEFAULT_RD_ATOMIC_CAP;
}

/* Fills a default for a required attribute; 0 when there is none (the
 * address and the peer's QP number only the caller knows). */
static int fill_default(struct ibv_qp_attr *o, int bit, enum ibv_qp_type type, uint32_t qpn,
			const struct qpfsm_limits *lim, uint8_t port,
			const struct ibv_qp_attr *user, int user_mask)
{
	switch (bit) {
	case IBV_QP_PKEY_INDEX: o->pkey_index = 0; return 1;
	case IBV_QP_PORT: o->port_num = port ? port : 1; return 1;
	case IBV_QP_QKEY: o->qkey = DEFAULT_QKEY; return 1;
	case IBV_QP_ACCESS_FLAGS:
		/* The memory regions' own flags still gate every remote access. */
		o->qp_access_flags = type == IBV_QPT_UC ? IBV_ACCESS_REMOTE_WRITE :
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		return 1;
	case IBV_QP_PATH_MTU: {
		unsigned int p = port ? port : 1;

		o->path_mtu = lim && p <= QPFSM_MAX_PORTS && lim->port[p].present ?
			lim->port[p].active_mtu : IBV_MTU_1024;
		return 1;
	}
	case IBV_QP_RQ_PSN:
		if (!(user_mask & IBV_QP_DEST_QPN))
			return 0;
		o->rq_psn = qpfsm_default_psn(user->dest_qp_num);
		return 1;
	case IBV_QP_SQ_PSN: o->sq_psn = qpfsm_default_psn(qpn); return 1;
	case IBV_QP_MAX_DEST_RD_ATOMIC:
		o->max_dest_rd_atomic = lim ? rd_atomic_default(lim->max_qp_rd_atom) : 1;
		return 1;
	case IBV_QP_MAX_QP_RD_ATOMIC:
		o->max_rd_atomic = lim ? rd_atomic_default(lim->max_qp_init_rd_atom) : 1;
		return 1;
	case IBV_QP_MIN_RNR_TIMER: o->min_rnr_timer = DEFAULT_MIN_RNR_TIMER; return 1;
	case IBV_QP_TIMEOUT: o->timeout = DEFAULT_TIMEOUT; return 1;
	case IBV_QP_RETRY_CNT: o->retry_cnt = DEFAULT_RETRY; return 1;
	case IBV_QP_RNR_RETRY: o->rnr_retry = DEFAULT_RNR_RETRY; return 1;
	default: return 0;
	}
}

int qpfsm_ladder_step(enum ibv_qp_type type, uint32_t qpn, enum ibv_qp_state from,
		      enum ibv_qp_state to, const struct qpfsm_limits *lim, uint8_t port,
		      const struct ibv_qp_attr *user, int user_mask, int applied,
		      struct ibv_qp_attr *out)
{
	const struct qpfsm_row *row = qpfsm_lookup(type, from, to);
	static const struct ibv_qp_attr none;
	int mask = IBV_QP_STATE;

	if (!user) {
		user = &none;
		user_mask = 0;
	}
	memset(out, 0, sizeof(*out));
	out->qp_state = to;
	if (!row)
		return mask;
	if ((user_mask & IBV_QP_PORT) && user->port_num)
		port = user->port_num;
	for (int i = 1; i < 31; i++) {
		int bit = 1 << i;

		if (!((row->req | row->opt) & bit))
			continue;
		/* A user's attribute goes with the first step that takes it, and
		 * again with any step that requires it. */
		if ((user_mask & bit) && ((row->req & bit) || !(applied & bit))) {
			qpfsm_copy_attr_bit(out, user, bit);
			mask |= bit;
		} else if ((row->req & bit) &&
			   fill_default(out, bit, type, qpn, lim, port, user, user_mask)) {
			mask |= bit;
		}
	}
	return mask;
}

static int rank(enum ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return 0;
	case IBV_QPS_INIT: return 1;
	case IBV_QPS_RTR: return 2;
	case IBV_QPS_RTS: return 3;
	default: return -1;
	}
}

/* The states to pass through, after cur, to reach target. */
static int plan(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state target,
		enum ibv_qp_state *path, int *n)
{
	static const enum ibv_qp_state climb[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
						   IBV_QPS_RTS };
	enum ibv_qp_state top = target == IBV_QPS_SQD ? IBV_QPS_RTS : target;

	*n = 0;
	if (cur == target)
		return 0;
	if (target == IBV_QPS_RESET || target == IBV_QPS_ERR) {
		path[(*n)++] = target;
		return 0;
	}
	if (rank(top) < 0)
		return ezi_fail(-EINVAL, "%s %s->%s: no ladder leads to %s",
				ez_qp_type_str(type), ez_qp_state_str(cur),
				ez_qp_state_str(target), ez_qp_state_str(target));
	if (cur == IBV_QPS_SQD || (cur == IBV_QPS_SQE && qpfsm_lookup(type, cur, IBV_QPS_RTS))) {
		if (top != IBV_QPS_RTS)
			return ezi_fail(-EINVAL, "%s %s->%s: a ladder only climbs; move the QP to RESET first",
					ez_qp_type_str(type), ez_qp_state_str(cur),
					ez_qp_state_str(target));
		path[(*n)++] = IBV_QPS_RTS;
	} else {
		if (rank(cur) < 0) {
			/* ERR, or SQE of a type without SQE->RTS: start over. */
			path[(*n)++] = IBV_QPS_RESET;
			cur = IBV_QPS_RESET;
		}
		if (rank(cur) > rank(top))
			return ezi_fail(-EINVAL, "%s %s->%s: a ladder only climbs; move the QP to RESET first",
					ez_qp_type_str(type), ez_qp_state_str(cur),
					ez_qp_state_str(target));
		for (int r = rank(cur) + 1; r <= rank(top); r++)
			path[(*n)++] = climb[r];
	}
	if (target == IBV_QPS_SQD)
		path[(*n)++] = IBV_QPS_SQD;
	return 0;
}

int qpfsm_ladder(struct ibv_qp *qp, const struct qpfsm_limits *lim, enum ibv_qp_state target,
		 const struct ibv_qp_attr *attr, int mask, struct qpfsm_ladder_report *rep)
{
	struct qpfsm_ladder_report local;
	struct qpfsm_qp_view view;
	enum ibv_qp_state path[MAX_STEPS];
	int n, err, applied = 0;

	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	if ((err = qpfsm_view(qp, &view)))
		return rep->err = err;
	rep->reached = view.state;
	if ((unsigned)target >= QPFSM_NSTATES)
		return rep->err = ezi_fail(-EINVAL, "%s %s->?: target state %d out of range (0..%d)",
					   ez_qp_type_str(view.type), ez_qp_state_str(view.state),
					   (int)target, IBV_QPS_ERR);
	if ((err = plan(view.type, view.state, target, path, &n)))
		return rep->err = err;
	for (int i = 0; i < n; i++) {
		struct ibv_qp_attr a;
		int m = qpfsm_ladder_step(view.type, qp->qp_num, view.state, path[i], lim,
					  view.port, attr, attr ? mask : 0, applied, &a);

		rep->fail_from = view.state;
		rep->fail_to = path[i];
		if ((err = qpfsm_modify(qp, lim, &view, &a, m)))
			return rep->err = err;
		applied |= m & mask;
		rep->reached = view.state;
		rep->steps++;
	}
	return 0;
}

int ez_qp_ladder(struct ibv_qp *qp, enum ibv_qp_state target, const struct ibv_qp_attr *attr,
		 int attr_mask)
{
	struct qpfsm_limits lim;
	int err;

	if (!qp)
		return ezi_fail(-EINVAL, "ez_qp_ladder: qp is required");
	if ((err = qpfsm_limits_query(qp->context, &lim)))
		return err;
	return qpfsm_ladder(qp, &lim, target, attr, attr_mask, NULL);
}
