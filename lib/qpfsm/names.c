/* names.c: QP states, types and attribute mask bits as strings, for messages and logs. */
#include "config.h"

#include "easyrdma.h"

const char *ez_qp_state_str(enum ibv_qp_state state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",	   [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	if ((unsigned)state < sizeof(names) / sizeof(names[0]))
		return names[state];
	return "UNKNOWN";
}

const char *ez_qp_type_str(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	case IBV_QPT_XRC_SEND: return "XRC_SEND";
	case IBV_QPT_XRC_RECV: return "XRC_RECV";
	case IBV_QPT_DRIVER: return "DRIVER";
	default: return "UNKNOWN";
	}
}

const char *ez_qp_attr_mask_str(int one_mask_bit)
{
	static const char *const names[] = {
		"IBV_QP_STATE", "IBV_QP_CUR_STATE", "IBV_QP_EN_SQD_ASYNC_NOTIFY",
		"IBV_QP_ACCESS_FLAGS", "IBV_QP_PKEY_INDEX", "IBV_QP_PORT", "IBV_QP_QKEY",
		"IBV_QP_AV", "IBV_QP_PATH_MTU", "IBV_QP_TIMEOUT", "IBV_QP_RETRY_CNT",
		"IBV_QP_RNR_RETRY", "IBV_QP_RQ_PSN", "IBV_QP_MAX_QP_RD_ATOMIC", "IBV_QP_ALT_PATH",
		"IBV_QP_MIN_RNR_TIMER", "IBV_QP_SQ_PSN", "IBV_QP_MAX_DEST_RD_ATOMIC",
		"IBV_QP_PATH_MIG_STATE", "IBV_QP_CAP", "IBV_QP_DEST_QPN", NULL, NULL, NULL, NULL,
		"IBV_QP_RATE_LIMIT",
	};
	unsigned int b = (unsigned int)one_mask_bit;

	/* Exactly one bit, and one verbs defines (bits 21..24 are unused). */
	if (b == 0 || (b & (b - 1)))
		return "UNKNOWN";
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (b == 1u << i)
			return names[i] ? names[i] : "UNKNOWN";
	return "UNKNOWN";
}
