/* conn_qp.h: a connection's entries in its device's QP registry (conn_qp.c). */
#ifndef EZ_CONN_CONN_QP_H
#define EZ_CONN_CONN_QP_H

#include "conn_types.h"

/* The device's registry (conn_qp.c): the ops of the connection's first QP
 * (its dqp) and of each extra path's (conn_path's dqp). Receives and QP
 * events go to the connection; port and device events come through its
 * first QP only. */
extern const struct device_qp_ops conn_qp_ops;
extern const struct device_qp_ops path_qp_ops;

#endif
