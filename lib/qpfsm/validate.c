/* validate.c: the pure check of one ibv_modify_qp() call against the transition table and the device/port limits. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "qpfsm.h"

struct vctx {
	const struct qpfsm_qp_view *qp;
	const struct qpfsm_limits *lim;
	enum ibv_qp_state to;
	int to_known;
	char *msg;
	size_t msglen;
};

/* "RC INIT->RTR: <what>" */
static int refuse(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct vctx *v, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (v->msg && v->msglen) {
		n = snprintf(v->msg, v->msglen, "%s %s->%s: ", ez_qp_type_str(v->qp->type),
			     ez_qp_state_str(v->qp->state),
			     v->to_known ? ez_qp_state_str(v->to) : "?");
		if (n >= 0 && (size_t)n < v->msglen) {
			va_start(ap, fmt);
			vsnprintf(v->msg + n, v->msglen - n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

static int mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

static const struct qpfsm_port_limits *port_lim(const struct vctx *v, unsigned int port)
{
	if (!v->lim || port == 0 || port > v->lim->phys_port_cnt || port > QPFSM_MAX_PORTS ||
	    !v->lim->port[port].present)
		return NULL;
	return &v->lim->port[port];
}

static int check_range(struct vctx *v, const char *name, unsigned long val, unsigned long max)
{
	if (val > max)
		return refuse(v, "%s %lu out of range (0..%lu)", name, val, max);
	return 0;
}

static int check_port_num(struct vctx *v, const char *name, unsigned int port)
{
	if (!v->lim)
		return port == 0 ? refuse(v, "%s 0 out of range (1..)", name) : 0;
	if (port == 0 || port > v->lim->phys_port_cnt)
		return refuse(v, "%s %u out of range (1..%u)", name, port, v->lim->phys_port_cnt);
	return 0;
}

static int check_pkey(struct vctx *v, const char *name, unsigned int idx, unsigned int port)
{
	const struct qpfsm_port_limits *pl = port_lim(v, port);

	if (pl && idx >= pl->pkey_tbl_len)
		return refuse(v, "%s %u out of range (0..%d)", name, idx, (int)pl->pkey_tbl_len - 1);
	return 0;
}

static int port_needs_grh(const struct qpfsm_port_limits *pl)
{
	return pl && (pl->link_layer == IBV_LINK_LAYER_ETHERNET ||
		      (pl->flags & IBV_QPF_GRH_REQUIRED));
}

static int check_ah(struct vctx *v, const char *name, const struct ibv_ah_attr *ah)
{
	const struct qpfsm_port_limits *pl;
	int err;

	if ((err = check_port_num(v, "ah_attr.port_num", ah->port_num)))
		return err;
	if ((err = check_range(v, "ah_attr.sl", ah->sl, 15)))
		return err;
	pl = port_lim(v, ah->port_num);
	if (!ah->is_global) {
		if (port_needs_grh(pl))
			return refuse(v, "%s.is_global 0 but port %u requires a GRH (%s)", name,
				      ah->port_num,
				      pl->link_layer == IBV_LINK_LAYER_ETHERNET ?
					      "Ethernet link layer" : "IBV_QPF_GRH_REQUIRED");
		return 0;
	}
	if (pl && ah->grh.sgid_index >= pl->gid_tbl_len)
		return refuse(v, "%s.grh.sgid_index %u out of range (0..%ld)", name,
			      ah->grh.sgid_index, (long)pl->gid_tbl_len - 1);
	if (ah->grh.flow_label > 0xfffff)
		return refuse(v, "%s.grh.flow_label 0x%x out of range (0..0xfffff)", name,
			      ah->grh.flow_label);
	return 0;
}

/* Bits the table refuses, with the device-capability reason first when the
 * capability is what is missing. */
static int check_forbidden(struct vctx *v, int extra)
{
	for (int i = 0; i < 31; i++) {
		int bit = 1 << i;

		if (!(extra & bit))
			continue;
		if (bit == IBV_QP_CAP && v->lim &&
		    !(v->lim->device_cap_flags & IBV_DEVICE_RESIZE_MAX_WR))
			return refuse(v, "IBV_QP_CAP needs IBV_DEVICE_RESIZE_MAX_WR (the device cannot resize a QP)");
		return refuse(v, "%s not allowed", ez_qp_attr_mask_str(bit));
	}
	return 0;
}

static int check_values(struct vctx *v, const struct ibv_qp_attr *a, int mask)
{
	const struct qpfsm_limits *lim = v->lim;
	unsigned int port = (mask & IBV_QP_PORT) ? a->port_num : v->qp->port;
	int err;

	if (port == 0)
		port = 1;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != v->qp->state)
		return refuse(v, "cur_qp_state %s does not match the QP's state %s",
			      ez_qp_state_str(a->cur_qp_state), ez_qp_state_str(v->qp->state));
	if ((mask & IBV_QP_PORT) && (err = check_port_num(v, "port_num", a->port_num)))
		return err;
	if ((mask & IBV_QP_PKEY_INDEX) && (err = check_pkey(v, "pkey_index", a->pkey_index, port)))
		return err;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return refuse(v, "qp_access_flags 0x%x has bits other than LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC",
			      a->qp_access_flags);
	if ((mask & IBV_QP_AV) && (err = check_ah(v, "ah_attr", &a->ah_attr)))
		return err;
	/* The primary path leaves from the QP's port (uverbs_cmd.c
	 * modify_qp() refuses a dest.port_num that differs from it). */
	if ((mask & IBV_QP_AV) && v->qp->port && a->ah_attr.port_num != port)
		return refuse(v, "ah_attr.port_num %u differs from the QP's port %u",
			      a->ah_attr.port_num, port);
	if (mask & IBV_QP_PATH_MTU) {
		const struct qpfsm_port_limits *pl = port_lim(v, port);

		if (!mtu_bytes(a->path_mtu))
			return refuse(v, "path_mtu %d unknown (IBV_MTU_256..IBV_MTU_4096)", (int)a->path_mtu);
		if (pl && a->path_mtu > pl->active_mtu)
			return refuse(v, "path_mtu %d above the port's active MTU %d",
				      mtu_bytes(a->path_mtu), mtu_bytes(pl->active_mtu));
	}
	if ((mask & IBV_QP_TIMEOUT) && (err = check_range(v, "timeout", a->timeout, 31)))
		return err;
	if ((mask & IBV_QP_RETRY_CNT) && (err = check_range(v, "retry_cnt", a->retry_cnt, 7)))
		return err;
	if ((mask & IBV_QP_RNR_RETRY) && (err = check_range(v, "rnr_retry", a->rnr_retry, 7)))
		return err;
	if ((mask & IBV_QP_MIN_RNR_TIMER) &&
	    (err = check_range(v, "min_rnr_timer", a->min_rnr_timer, 31)))
		return err;
	if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > 0xffffff)
		return refuse(v, "rq_psn 0x%x out of range (0..0xffffff)", a->rq_psn);
	if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > 0xffffff)
		return refuse(v, "sq_psn 0x%x out of range (0..0xffffff)", a->sq_psn);
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return refuse(v, "dest_qp_num 0x%x out of range (0..0xffffff)", a->dest_qp_num);
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && lim && a->max_rd_atomic > lim->max_qp_init_rd_atom)
		return refuse(v, "max_rd_atomic %u above the device's max_qp_init_rd_atom %d",
			      a->max_rd_atomic, lim->max_qp_init_rd_atom);
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && lim && a->max_dest_rd_atomic > lim->max_qp_rd_atom)
		return refuse(v, "max_dest_rd_atomic %u above the device's max_qp_rd_atom %d",
			      a->max_dest_rd_atomic, lim->max_qp_rd_atom);
	if (mask & IBV_QP_ALT_PATH) {
		const struct qpfsm_port_limits *pl = port_lim(v, port);

		if (lim && !(lim->device_cap_flags & IBV_DEVICE_AUTO_PATH_MIG))
			return refuse(v, "IBV_QP_ALT_PATH needs IBV_DEVICE_AUTO_PATH_MIG (the device has no alternate paths)");
		/* verbs.c _ib_modify_qp(): the core handles APM for IB only. */
		if (pl && pl->link_layer == IBV_LINK_LAYER_ETHERNET)
			return refuse(v, "IBV_QP_ALT_PATH not supported on an Ethernet (RoCE) port");
		if ((err = check_port_num(v, "alt_port_num", a->alt_port_num)) ||
		    (err = check_pkey(v, "alt_pkey_index", a->alt_pkey_index, a->alt_port_num)) ||
		    (err = check_range(v, "alt_timeout", a->alt_timeout, 31)) ||
		    (err = check_ah(v, "alt_ah_attr", &a->alt_ah_attr)))
			return err;
	}
	if ((mask & IBV_QP_PATH_MIG_STATE) && a->path_mig_state > IBV_MIG_ARMED)
		return refuse(v, "path_mig_state %d unknown (MIGRATED, REARM, ARMED)", (int)a->path_mig_state);
	if ((mask & IBV_QP_RATE_LIMIT) && lim) {
		if (!lim->rate_limit_max || !(lim->pacing_qpts & (1u << v->qp->type)))
			return refuse(v, "IBV_QP_RATE_LIMIT needs packet pacing for %s QPs (the device has none)",
				      ez_qp_type_str(v->qp->type));
		/* 0 lifts the limit. */
		if (a->rate_limit &&
		    (a->rate_limit < lim->rate_limit_min || a->rate_limit > lim->rate_limit_max))
			return refuse(v, "rate_limit %u out of range (%u..%u kbps)", a->rate_limit,
				      lim->rate_limit_min, lim->rate_limit_max);
	}
	return 0;
}

int qpfsm_validate(const struct qpfsm_qp_view *qp, const struct qpfsm_limits *lim,
		   const struct ibv_qp_attr *attr, int mask, char *msg, size_t msglen)
{
	struct vctx v = { .qp = qp, .lim = lim, .msg = msg, .msglen = msglen };
	const struct qpfsm_row *row;
	int err;

	if (msg && msglen)
		msg[0] = '\0';
	/* Without IBV_QP_STATE the QP stays where it is: cur -> cur. */
	v.to = (mask & IBV_QP_STATE) ? attr->qp_state : qp->state;
	v.to_known = (unsigned)v.to < QPFSM_NSTATES;
	if ((unsigned)qp->state >= QPFSM_NSTATES)
		return refuse(&v, "current state %d unknown", (int)qp->state);
	if (!v.to_known)
		return refuse(&v, "qp_state %d out of range (0..%d)", (int)attr->qp_state, IBV_QPS_ERR);
	if (mask & ~QPFSM_KNOWN_MASK)
		return refuse(&v, "attr_mask bits 0x%x unknown", (unsigned)(mask & ~QPFSM_KNOWN_MASK));
	row = qpfsm_lookup(qp->type, qp->state, v.to);
	if (!row) {
		if (!qpfsm_lookup(qp->type, IBV_QPS_RESET, IBV_QPS_RESET))
			return refuse(&v, "QP type %d not supported", (int)qp->type);
		return refuse(&v, "transition not allowed");
	}
	for (int i = 0; i < 31; i++) {
		int bit = 1 << i;

		if ((row->req & bit) && !(mask & bit))
			return refuse(&v, "%s required", ez_qp_attr_mask_str(bit));
	}
	if ((err = check_forbidden(&v, mask & ~(row->req | row->opt | IBV_QP_STATE))))
		return err;
	/* rxe_qp.c __qp_chk_state() and [ibta] 10.3.1: leaving SQD for
	 * anything but Error (or Reset) waits for the drain to complete. */
	if (qp->state == IBV_QPS_SQD && qp->sq_draining && (mask & IBV_QP_STATE) &&
	    v.to != IBV_QPS_ERR && v.to != IBV_QPS_RESET)
		return refuse(&v, "the send queue is still draining (wait for IBV_EVENT_SQ_DRAINED)");
	return check_values(&v, attr, mask);
}
