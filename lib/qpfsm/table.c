/* table.c: the verbs QP state machine as data: per QP type and transition, the attributes required and allowed. */
#include "config.h"

#include "qpfsm.h"

/*
 * Sources, cited per row:
 *  [man]  ibv_modify_qp(3), rdma-core: the required attributes for
 *         Reset->Init->RTR->RTS of UD, UC, RC and RAW_PACKET.
 *  [kern] Linux drivers/infiniband/core/verbs.c, qp_state_table[cur][next]
 *         .req_param / .opt_param (v6.x), checked by ib_modify_qp_is_ok(),
 *         which every provider (rxe included) calls. IB_QPT_XRC_INI and
 *         IB_QPT_XRC_TGT are verbs' IBV_QPT_XRC_SEND and IBV_QPT_XRC_RECV.
 *  [ibta] InfiniBand Architecture Specification vol. 1, ch. 10.3 (QP state
 *         machine) and 11.2.5 (Modify QP).
 *
 * Where the kernel's `.valid` flag is shared by all types but the spec gives
 * a transition only to some (SQE->RTS: the SQE state exists only for UD and
 * UC, [ibta] 10.3.1), the row lists only those types.
 */

#define T(x) (1u << IBV_QPT_##x)
#define S(x) (1u << IBV_QPS_##x)
#define ALL_TYPES (T(RC) | T(UC) | T(UD) | T(RAW_PACKET) | T(XRC_SEND) | T(XRC_RECV))
#define ALL_STATES (S(RESET) | S(INIT) | S(RTR) | S(RTS) | S(SQD) | S(SQE) | S(ERR))

#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QKEY IBV_QP_QKEY
#define ACCESS IBV_QP_ACCESS_FLAGS
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define DQPN IBV_QP_DEST_QPN
#define RQPSN IBV_QP_RQ_PSN
#define SQPSN IBV_QP_SQ_PSN
#define DEST_RD IBV_QP_MAX_DEST_RD_ATOMIC
#define INIT_RD IBV_QP_MAX_QP_RD_ATOMIC
#define RNR_TIMER IBV_QP_MIN_RNR_TIMER
#define TIMEOUT IBV_QP_TIMEOUT
#define RETRY IBV_QP_RETRY_CNT
#define RNR_RETRY IBV_QP_RNR_RETRY
#define ALT IBV_QP_ALT_PATH
#define MIG IBV_QP_PATH_MIG_STATE
#define CUR IBV_QP_CUR_STATE
#define SQD_NOTIFY IBV_QP_EN_SQD_ASYNC_NOTIFY
#define RATE IBV_QP_RATE_LIMIT

const struct qpfsm_row qpfsm_table[] = {
	/* ---- RESET -> INIT ---- */
	{ T(UD), S(RESET), IBV_QPS_INIT, PKEY | PORT | QKEY, 0,
	  "[man] UD Init; [kern] qp_state_table[RESET][INIT].req_param[UD]" },
	{ T(UC), S(RESET), IBV_QPS_INIT, PKEY | PORT | ACCESS, 0,
	  "[man] UC Init; [kern] qp_state_table[RESET][INIT].req_param[UC]" },
	{ T(RC), S(RESET), IBV_QPS_INIT, PKEY | PORT | ACCESS, 0,
	  "[man] RC Init; [kern] qp_state_table[RESET][INIT].req_param[RC]" },
	{ T(XRC_SEND) | T(XRC_RECV), S(RESET), IBV_QPS_INIT, PKEY | PORT | ACCESS, 0,
	  "[kern] qp_state_table[RESET][INIT].req_param[XRC_INI, XRC_TGT]" },
	{ T(RAW_PACKET), S(RESET), IBV_QPS_INIT, PORT, 0,
	  "[man] RAW_PACKET Init; [kern] qp_state_table[RESET][INIT].req_param[RAW_PACKET]" },

	/* ---- INIT -> INIT ---- */
	{ T(UD), S(INIT), IBV_QPS_INIT, 0, PKEY | PORT | QKEY,
	  "[kern] qp_state_table[INIT][INIT].opt_param[UD]" },
	{ T(UC) | T(RC) | T(XRC_SEND) | T(XRC_RECV), S(INIT), IBV_QPS_INIT, 0, PKEY | PORT | ACCESS,
	  "[kern] qp_state_table[INIT][INIT].opt_param[UC, RC, XRC_INI, XRC_TGT]" },
	{ T(RAW_PACKET), S(INIT), IBV_QPS_INIT, 0, 0,
	  "[kern] qp_state_table[INIT][INIT].valid, no RAW_PACKET params" },

	/* ---- INIT -> RTR ---- */
	{ T(UD), S(INIT), IBV_QPS_RTR, 0, PKEY | QKEY,
	  "[man] UD RTR; [kern] qp_state_table[INIT][RTR].opt_param[UD]" },
	{ T(UC), S(INIT), IBV_QPS_RTR, AV | MTU | DQPN | RQPSN, ALT | ACCESS | PKEY,
	  "[man] UC RTR; [kern] qp_state_table[INIT][RTR].req_param/opt_param[UC]" },
	{ T(RC), S(INIT), IBV_QPS_RTR, AV | MTU | DQPN | RQPSN | DEST_RD | RNR_TIMER,
	  ALT | ACCESS | PKEY,
	  "[man] RC RTR; [kern] qp_state_table[INIT][RTR].req_param/opt_param[RC]" },
	/* uverbs' modify_qp_mask() also strips MAX_DEST_RD_ATOMIC and
	 * MIN_RNR_TIMER from XRC_INI masks before the check; we refuse them. */
	{ T(XRC_SEND), S(INIT), IBV_QPS_RTR, AV | MTU | DQPN | RQPSN, ALT | ACCESS | PKEY,
	  "[kern] qp_state_table[INIT][RTR].req_param/opt_param[XRC_INI]" },
	{ T(XRC_RECV), S(INIT), IBV_QPS_RTR, AV | MTU | DQPN | RQPSN | DEST_RD | RNR_TIMER,
	  ALT | ACCESS | PKEY,
	  "[kern] qp_state_table[INIT][RTR].req_param/opt_param[XRC_TGT]" },
	{ T(RAW_PACKET), S(INIT), IBV_QPS_RTR, 0, 0,
	  "[man] RAW_PACKET RTR; [kern] qp_state_table[INIT][RTR].valid" },

	/* ---- RTR -> RTS ---- */
	{ T(UD), S(RTR), IBV_QPS_RTS, SQPSN, CUR | QKEY,
	  "[man] UD RTS; [kern] qp_state_table[RTR][RTS].req_param/opt_param[UD]" },
	{ T(UC), S(RTR), IBV_QPS_RTS, SQPSN, CUR | ALT | ACCESS | MIG,
	  "[man] UC RTS; [kern] qp_state_table[RTR][RTS].req_param/opt_param[UC]" },
	{ T(RC), S(RTR), IBV_QPS_RTS, TIMEOUT | RETRY | RNR_RETRY | SQPSN | INIT_RD,
	  CUR | ALT | ACCESS | RNR_TIMER | MIG,
	  "[man] RC RTS; [kern] qp_state_table[RTR][RTS].req_param/opt_param[RC]" },
	{ T(XRC_SEND), S(RTR), IBV_QPS_RTS, TIMEOUT | RETRY | RNR_RETRY | SQPSN | INIT_RD,
	  CUR | ALT | ACCESS | MIG,
	  "[kern] qp_state_table[RTR][RTS].req_param/opt_param[XRC_INI]" },
	/* uverbs' modify_qp_mask() strips MAX_QP_RD_ATOMIC, RETRY_CNT and
	 * RNR_RETRY from XRC_TGT masks before the check; we refuse them. */
	{ T(XRC_RECV), S(RTR), IBV_QPS_RTS, TIMEOUT | SQPSN, CUR | ALT | ACCESS | RNR_TIMER | MIG,
	  "[kern] qp_state_table[RTR][RTS].req_param/opt_param[XRC_TGT]" },
	{ T(RAW_PACKET), S(RTR), IBV_QPS_RTS, 0, RATE,
	  "[man] RAW_PACKET RTS; [kern] qp_state_table[RTR][RTS].opt_param[RAW_PACKET] = IB_QP_RATE_LIMIT" },

	/* ---- RTS -> RTS ---- */
	{ T(UD), S(RTS), IBV_QPS_RTS, 0, CUR | QKEY,
	  "[kern] qp_state_table[RTS][RTS].opt_param[UD]" },
	{ T(UC) | T(XRC_SEND), S(RTS), IBV_QPS_RTS, 0, CUR | ACCESS | ALT | MIG,
	  "[kern] qp_state_table[RTS][RTS].opt_param[UC, XRC_INI]" },
	{ T(RC) | T(XRC_RECV), S(RTS), IBV_QPS_RTS, 0, CUR | ACCESS | ALT | MIG | RNR_TIMER,
	  "[kern] qp_state_table[RTS][RTS].opt_param[RC, XRC_TGT]" },
	{ T(RAW_PACKET), S(RTS), IBV_QPS_RTS, 0, RATE,
	  "[kern] qp_state_table[RTS][RTS].opt_param[RAW_PACKET] = IB_QP_RATE_LIMIT" },

	/* ---- RTS -> SQD ---- */
	{ T(UD) | T(UC) | T(RC) | T(XRC_SEND) | T(XRC_RECV), S(RTS), IBV_QPS_SQD, 0, SQD_NOTIFY,
	  "[kern] qp_state_table[RTS][SQD].opt_param = IB_QP_EN_SQD_ASYNC_NOTIFY; [ibta] 10.3.1 SQ Drain" },
	{ T(RAW_PACKET), S(RTS), IBV_QPS_SQD, 0, 0,
	  "[kern] qp_state_table[RTS][SQD].valid, no RAW_PACKET params" },

	/* ---- SQD -> RTS ---- */
	{ T(UD), S(SQD), IBV_QPS_RTS, 0, CUR | QKEY,
	  "[kern] qp_state_table[SQD][RTS].opt_param[UD]" },
	{ T(UC) | T(XRC_SEND), S(SQD), IBV_QPS_RTS, 0, CUR | ALT | ACCESS | MIG,
	  "[kern] qp_state_table[SQD][RTS].opt_param[UC, XRC_INI]" },
	{ T(RC) | T(XRC_RECV), S(SQD), IBV_QPS_RTS, 0, CUR | ALT | ACCESS | RNR_TIMER | MIG,
	  "[kern] qp_state_table[SQD][RTS].opt_param[RC, XRC_TGT]" },
	{ T(RAW_PACKET), S(SQD), IBV_QPS_RTS, 0, 0,
	  "[kern] qp_state_table[SQD][RTS].valid, no RAW_PACKET params" },

	/* ---- SQD -> SQD ---- */
	{ T(UD), S(SQD), IBV_QPS_SQD, 0, PKEY | QKEY,
	  "[kern] qp_state_table[SQD][SQD].opt_param[UD]" },
	/* The table lists IB_QP_AV for UC, but no user-space modify gets that
	 * far: uverbs_cmd.c modify_qp() adds IB_QP_PORT to an SQD->SQD modify
	 * that changes the AV ("in SQD, if the primary AV is modified, the
	 * primary port should also be modified"), and UC allows no port here,
	 * so ib_modify_qp_is_ok() refuses every one (seen on rxe: EINVAL). */
	{ T(UC), S(SQD), IBV_QPS_SQD, 0, ALT | ACCESS | PKEY | MIG,
	  "[kern] qp_state_table[SQD][SQD].opt_param[UC] = IB_QP_AV | IB_QP_ALT_PATH | "
	  "IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PATH_MIG_STATE (torvalds/linux f4d8f354), "
	  "less IB_QP_AV: uverbs_cmd.c modify_qp() adds IB_QP_PORT to it, which UC refuses" },
	{ T(RC), S(SQD), IBV_QPS_SQD, 0,
	  PORT | AV | TIMEOUT | RETRY | RNR_RETRY | INIT_RD | DEST_RD | ALT | ACCESS | PKEY |
	  RNR_TIMER | MIG,
	  "[kern] qp_state_table[SQD][SQD].opt_param[RC]" },
	{ T(XRC_SEND), S(SQD), IBV_QPS_SQD, 0,
	  PORT | AV | TIMEOUT | RETRY | RNR_RETRY | INIT_RD | ALT | ACCESS | PKEY | MIG,
	  "[kern] qp_state_table[SQD][SQD].opt_param[XRC_INI]" },
	{ T(XRC_RECV), S(SQD), IBV_QPS_SQD, 0,
	  PORT | AV | TIMEOUT | DEST_RD | ALT | ACCESS | PKEY | RNR_TIMER | MIG,
	  "[kern] qp_state_table[SQD][SQD].opt_param[XRC_TGT]" },
	{ T(RAW_PACKET), S(SQD), IBV_QPS_SQD, 0, 0,
	  "[kern] qp_state_table[SQD][SQD].valid, no RAW_PACKET params" },

	/* ---- SQE -> RTS: UD and UC only ---- */
	{ T(UD), S(SQE), IBV_QPS_RTS, 0, CUR | QKEY,
	  "[kern] qp_state_table[SQE][RTS].opt_param[UD]; [ibta] 10.3.1 SQE only for UD/UC" },
	{ T(UC), S(SQE), IBV_QPS_RTS, 0, CUR | ACCESS,
	  "[kern] qp_state_table[SQE][RTS].opt_param[UC]; [ibta] 10.3.1 SQE only for UD/UC" },

	/* ---- any -> RESET, any but RESET -> ERR ---- */
	{ ALL_TYPES, ALL_STATES, IBV_QPS_RESET, 0, 0,
	  "[kern] qp_state_table[*][RESET].valid; [ibta] 10.3.1 any state to Reset" },
	/* Mainline's table has no [RESET][ERR] entry (some older and vendor
	 * trees had one): a QP in Reset is moved to Init before Error. */
	{ ALL_TYPES, ALL_STATES & ~S(RESET), IBV_QPS_ERR, 0, 0,
	  "[kern] qp_state_table[INIT..ERR][ERR].valid; [ibta] 10.3.1 to Error" },
};

const size_t qpfsm_table_len = sizeof(qpfsm_table) / sizeof(qpfsm_table[0]);

const enum ibv_qp_type qpfsm_types[] = {
	IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV,
};

const size_t qpfsm_ntypes = sizeof(qpfsm_types) / sizeof(qpfsm_types[0]);

const struct qpfsm_row *qpfsm_lookup(enum ibv_qp_type type, enum ibv_qp_state from,
				     enum ibv_qp_state to)
{
	if ((unsigned)type >= 32 || (unsigned)from >= QPFSM_NSTATES ||
	    (unsigned)to >= QPFSM_NSTATES)
		return NULL;
	for (size_t i = 0; i < qpfsm_table_len; i++) {
		const struct qpfsm_row *r = &qpfsm_table[i];

		if ((r->types & (1u << type)) && (r->from & (1u << from)) && r->to == to)
			return r;
	}
	return NULL;
}
