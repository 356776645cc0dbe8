/* conn_qp.c: a connection's entries in its device's QP and work-request registry, turned into calls on the connection. */
#include "config.h"

#include "conn.h"
#include "device/cq.h"
#include "path.h"

static void op_wc_done(struct device_wr *wr, const struct ibv_wc *wc)
{
	conn_on_send_wc(container_of(wr, struct op, dwr), wc);
}

void conn_op_bind(struct op *op)
{
	op->dwr.done = op_wc_done;
	op->wr.wr_id = device_wr_id(&op->dwr);
}

static void on_event(struct ez_conn *conn, struct device_qp *qp, const struct device_event *ev)
{
	switch (ev->type) {
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		conn_on_last_wqe(conn, qp->qpn);
		break;
	case IBV_EVENT_COMM_EST:
		conn_on_comm_est(conn);
		break;
	case IBV_EVENT_PORT_ERR:
		if (ev->port == conn->port)
			conn_fail(conn, ev->status, "%s", ev->why);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		conn_fail(conn, ev->status, "%s", ev->why);
		break;
	default:
		/* QP fatal and kin: one path of several is taken out; the
		 * last, or a single path, ends the connection. */
		if (path_on_qp_event(conn, qp->qpn, ev->status))
			conn_fail(conn, ev->status, "%s", ev->why);
		break;
	}
}

static struct ez_conn *conn_of(struct device_qp *qp)
{
	return container_of(qp, struct ez_conn, dqp);
}

static struct ez_conn *path_conn_of(struct device_qp *qp)
{
	return container_of(qp, struct conn_path, dqp)->conn;
}

static void conn_recv(struct device_qp *qp, const struct ibv_wc *wc)
{
	conn_on_recv_wc(conn_of(qp), wc);
}

static void path_recv(struct device_qp *qp, const struct ibv_wc *wc)
{
	conn_on_recv_wc(path_conn_of(qp), wc);
}

static void conn_event(struct device_qp *qp, const struct device_event *ev)
{
	on_event(conn_of(qp), qp, ev);
}

/* A port or device event reaches the connection through its first QP. */
static void path_event(struct device_qp *qp, const struct device_event *ev)
{
	if (ev->type != IBV_EVENT_PORT_ERR && ev->type != IBV_EVENT_DEVICE_FATAL)
		on_event(path_conn_of(qp), qp, ev);
}

const struct device_qp_ops conn_qp_ops = { .on_recv = conn_recv, .on_async_event = conn_event };
const struct device_qp_ops path_qp_ops = { .on_recv = path_recv, .on_async_event = path_event };
