/* sport.c: RoCEv2 UDP source port <-> GRH flow label, as rdma-core's ibv_flow_label_to_udp_sport(). */
#include "config.h"

#include "easyrdma.h"
#include "qpfsm.h"

#define SPORT_MIN 0xC000u	/* IB_ROCE_UDP_ENCAP_VALID_PORT_MIN */

uint16_t ez_flow_label_to_udp_sport(uint32_t flow_label)
{
	/* Fold the 20-bit label into 14 bits: the top 6 bits XOR into the low. */
	uint32_t low = flow_label & 0x03fff, high = flow_label & 0xfc000;

	return (uint16_t)((low ^ (high >> 14)) | SPORT_MIN);
}

uint32_t ez_udp_sport_to_flow_label(uint16_t sport)
{
	/* Label 0 means "let the device choose", so never return it: put 1 in
	 * the high bits and XOR it out of the low ones. */
	if (sport < SPORT_MIN)
		return 0;
	return (1u << 14) | ((sport & 0x3fffu) ^ 1u);
}

uint32_t qpfsm_flow_label_of_qpns(uint32_t lqpn, uint32_t rqpn)
{
	/* The kernel's rdma_calc_flow_label(): the label a RoCEv2 QP whose
	 * label is 0 gets, from its own and its peer's QP numbers. */
	uint64_t v = (uint64_t)lqpn * rqpn;

	v ^= v >> 20;
	v ^= v >> 40;
	return (uint32_t)(v & 0xFFFFF);
}
