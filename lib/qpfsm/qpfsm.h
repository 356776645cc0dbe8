/* qpfsm.h: the QP state machine's internal interface (table, validator, limits, ladder) for the connection layer. */
#ifndef EZ_QPFSM_H
#define EZ_QPFSM_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "easyrdma.h"

/* Every mask bit ibv_modify_qp() knows: IBV_QP_STATE .. IBV_QP_DEST_QPN and
 * IBV_QP_RATE_LIMIT (bits 21..24 were never exposed by libibverbs). */
#define QPFSM_KNOWN_MASK ((int)(((IBV_QP_DEST_QPN << 1) - 1) | IBV_QP_RATE_LIMIT))
#define QPFSM_NSTATES (IBV_QPS_ERR + 1)

/*
 * One legal transition: for the QP types in `types` (bit 1 << ibv_qp_type)
 * and the current states in `from` (bit 1 << ibv_qp_state), moving to `to`
 * requires every bit of `req` and accepts the bits of `opt` (IBV_QP_STATE is
 * implied). `src` cites where the row comes from.
 */
struct qpfsm_row {
	uint32_t types;
	uint32_t from;
	enum ibv_qp_state to;
	int req;
	int opt;
	const char *src;
};

extern const struct qpfsm_row qpfsm_table[];
extern const size_t qpfsm_table_len;

/* QP types the table knows (RC, UC, UD, RAW_PACKET, XRC_SEND, XRC_RECV). */
extern const enum ibv_qp_type qpfsm_types[];
extern const size_t qpfsm_ntypes;

/* The row for (type, from, to), or NULL when the transition is illegal. */
const struct qpfsm_row *qpfsm_lookup(enum ibv_qp_type type, enum ibv_qp_state from,
				     enum ibv_qp_state to);

/* What the validator needs to know about the device and its ports. Filled
 * once per device by qpfsm_limits_query() and kept by the caller, so that
 * validation never goes back to the device. */
#define QPFSM_MAX_PORTS 8
struct qpfsm_port_limits {
	uint8_t present;	/* queried */
	uint8_t link_layer;	/* IBV_LINK_LAYER_* */
	uint8_t flags;		/* ibv_port_attr.flags (IBV_QPF_GRH_REQUIRED) */
	enum ibv_mtu active_mtu;
	enum ibv_mtu max_mtu;
	uint16_t pkey_tbl_len;
	int gid_tbl_len;
};

struct qpfsm_limits {
	uint8_t phys_port_cnt;
	unsigned int device_cap_flags;	/* IBV_DEVICE_RESIZE_MAX_WR, IBV_DEVICE_AUTO_PATH_MIG */
	int max_qp_rd_atom;		/* bound of max_dest_rd_atomic */
	int max_qp_init_rd_atom;	/* bound of max_rd_atomic */
	uint32_t rate_limit_min;	/* packet pacing, kbps; max 0: no pacing */
	uint32_t rate_limit_max;
	uint32_t pacing_qpts;		/* bit 1 << ibv_qp_type */
	struct qpfsm_port_limits port[QPFSM_MAX_PORTS + 1]; /* by port number */
};

int qpfsm_limits_query(struct ibv_context *ctx, struct qpfsm_limits *lim);

/* The QP as the validator sees it. port: the QP's port (0: unknown, then
 * port 1 is assumed for port-dependent checks). */
struct qpfsm_qp_view {
	enum ibv_qp_type type;
	enum ibv_qp_state state;
	uint8_t port;
	uint8_t sq_draining;
};

/*
 * Pure check of one ibv_modify_qp() call: 0, or -EINVAL with msg set to e.g.
 * "RC INIT->RTR: IBV_QP_AV required". lim may be NULL (transition and spec
 * ranges only, no device/port checks).
 */
int qpfsm_validate(const struct qpfsm_qp_view *qp, const struct qpfsm_limits *lim,
		   const struct ibv_qp_attr *attr, int mask, char *msg, size_t msglen);

/* Reads the QP's state, port and sq_draining (one ibv_query_qp()). */
int qpfsm_view(struct ibv_qp *qp, struct qpfsm_qp_view *view);

/* ez_qp_modify() with the caller's cached limits and a known view of the QP
 * (view NULL: it is queried). On success view->state follows. */
int qpfsm_modify(struct ibv_qp *qp, const struct qpfsm_limits *lim, struct qpfsm_qp_view *view,
		 struct ibv_qp_attr *attr, int mask);

/* How a ladder went: the last state reached, and the step that failed. */
struct qpfsm_ladder_report {
	enum ibv_qp_state reached;
	enum ibv_qp_state fail_from;	/* valid when err != 0 and a step failed */
	enum ibv_qp_state fail_to;
	int steps;			/* ibv_modify_qp() calls that succeeded */
	int err;
};

int qpfsm_ladder(struct ibv_qp *qp, const struct qpfsm_limits *lim, enum ibv_qp_state target,
		 const struct ibv_qp_attr *attr, int mask, struct qpfsm_ladder_report *rep);

/* The attributes the ladder would send for one step (defaults filled for
 * what the caller left out). Returns the mask; exposed for tests and for
 * callers that want to see the plan. applied: user bits already sent. */
int qpfsm_ladder_step(enum ibv_qp_type type, uint32_t qpn, enum ibv_qp_state from,
		      enum ibv_qp_state to, const struct qpfsm_limits *lim, uint8_t port,
		      const struct ibv_qp_attr *user, int user_mask, int applied,
		      struct ibv_qp_attr *out);

/* Copies the field(s) of one mask bit from u to o (IBV_QP_ALT_PATH: the four
 * alt_ fields). */
void qpfsm_copy_attr_bit(struct ibv_qp_attr *o, const struct ibv_qp_attr *u, int bit);

/* Default PSN the ladder uses for a QP number: the sender's sq_psn and the
 * receiver's rq_psn (computed from dest_qp_num) agree without an exchange. */
uint32_t qpfsm_default_psn(uint32_t qpn);

/* Attributes that hold a value in a state, for the type (ez_qp_query). */
int qpfsm_valid_in_state(enum ibv_qp_type type, enum ibv_qp_state state);

/* sport.c: the flow label the kernel gives a RoCEv2 QP whose label is 0
 * (rdma_calc_flow_label()), from the local and remote QP numbers. */
uint32_t qpfsm_flow_label_of_qpns(uint32_t lqpn, uint32_t rqpn);

/* IBV_EVENT_SQ_DRAINED dispatch to hooks registered by ez_qp_drain_sq(). */
int qpfsm_sqd_dispatch(struct ibv_qp *qp);

#endif
