/* flow.h: the UDP source port policy of a connection (pure logic) and how it is applied to a QP. */
#ifndef EZ_WIRE_FLOW_H
#define EZ_WIRE_FLOW_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "easyrdma.h"

#define FLOW_SPORT_MIN 0xC000u
#define FLOW_SPORT_MAX 0xFFFFu
#define FLOW_SPORTS 0x4000u	/* ports in the RoCEv2 range */

/* The policy's fields of resolved options: 0, or -EINVAL naming the field. */
int flow_opts_check(const struct ez_conn_opts *o);

/* The policy actually in effect (EZ_SPORT_DEFAULT with udp_sport set is FIXED). */
enum ez_sport_policy flow_policy(const struct ez_conn_opts *o);

/* The port the policy picks for a QP with local number qpn; *rr is the
 * round-robin cursor of the caller's context (advanced by EZ_SPORT_RANGE only).
 * 0: leave the port to rdma_cm (EZ_SPORT_DEFAULT without udp_sport). */
uint16_t flow_pick_sport(const struct ez_conn_opts *o, uint32_t qpn, uint32_t *rr);

/* EZ_SPORT_AUTO's formula alone. */
uint16_t flow_auto_sport(uint32_t qpn);

/* Which mechanism carries a port on a port of this link layer whose source
 * GID has this type, on an mlx5 device or not. */
enum ez_sport_mech flow_mech(uint8_t link_layer, int gid_is_rocev2, int is_mlx5);

const char *flow_policy_str(enum ez_sport_policy p);
const char *flow_mech_str(enum ez_sport_mech m);

/* Device side (flowdev.c). The mechanism for the QP's port and source GID
 * index; -errno with the thread's message when a query fails. */
int flowdev_mech(struct ibv_context *verbs, uint8_t port, int is_global, unsigned int sgid_index,
		 enum ez_sport_mech *mech);
/* mlx5dv_modify_qp_udp_sport() (QP in RTS); -EOPNOTSUPP where mlx5dv was not compiled in. */
int flowdev_set_mlx5_sport(struct ibv_qp *qp, uint16_t sport);

#endif
