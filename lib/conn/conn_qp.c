/* conn_qp.c: a connection's entries in its device's QP and work-request registry, turned into calls on the connection. */
#include "config.h"

#include "conn_fsm.h"
#include "conn_qp.h"
#include "conn_auth.h"
#include "msg.h"
#include "base/log.h"
#include "device/cq.h"
#include "path.h"
#include "sendq.h"

static void conn_on_last_wqe(struct ez_conn *conn, uint32_t qpn)
{
	if (!conn)
		return;
	ezi_log_debug("QP %u: IBV_EVENT_QP_LAST_WQE_REACHED", qpn);
	/* A multi-path connection has drained once every QP has. */
	if (!path_on_last_wqe(conn, qpn))
		return;
	conn->srq_drained = 1;
	ctx_timer_stop(conn->ctx, &conn->drain_timer);
	conn_drain_check(conn);
}

static void conn_on_comm_est(struct ez_conn *conn)
{
	/* Data arrived before the RTU: tell the CM, which then reports ESTABLISHED. */
	if (conn && !conn->active && conn->id &&
	    (conn->state == CS_ACCEPTING || conn->state == CS_AWAITING_PROOF ||
	     conn->state == CS_AWAITING_EXPORTS))
		rdma_notify(conn->id, IBV_EVENT_COMM_EST);
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
		/* With session resume the session waits for the port. */
		if (ev->port == conn->port && !path_lose_all(conn, ev->status, ev->why))
			conn_fail(conn, ev->status, "%s", ev->why);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		conn_fail(conn, ev->status, "%s", ev->why);
		break;
	default:
		/* Before the proof a keyed listener's QPs grant no remote
		 * access: a peer whose RDMA hit that (a replayed request) is
		 * refused now, not at the deadline. */
		if (conn && conn->remote_closed && conn->state == CS_AWAITING_PROOF) {
			conn_auth_refuse(conn, "ez_accept(%s): the peer tried remote access before its shared-secret proof (%s)",
					 conn->host, ev->why);
			break;
		}
		/* QP fatal and kin: one path of several is taken out; the
		 * last, or a single path, ends the connection. */
		if (path_on_qp_event(conn, qp->qpn, ev->status))
			conn_fail(conn, ev->status, "%s", ev->why);
		break;
	}
}

static struct ez_conn *path_conn_of(struct device_qp *qp)
{
	return container_of(qp, struct conn_path, dqp)->conn;
}

static void path_recv(struct device_qp *qp, const struct ibv_wc *wc)
{
	conn_on_recv_wc(path_conn_of(qp), wc);
}

/* QP 0's entry (path 0's, whichever QP it is now) takes every event. */
static void conn_event(struct device_qp *qp, const struct device_event *ev)
{
	on_event(path_conn_of(qp), qp, ev);
}

/* A port or device event reaches the connection through its first QP. */
static void path_event(struct device_qp *qp, const struct device_event *ev)
{
	if (ev->type != IBV_EVENT_PORT_ERR && ev->type != IBV_EVENT_DEVICE_FATAL)
		on_event(path_conn_of(qp), qp, ev);
}

const struct device_qp_ops conn_qp_ops = { .on_recv = path_recv, .on_async_event = conn_event };
const struct device_qp_ops path_qp_ops = { .on_recv = path_recv, .on_async_event = path_event };
