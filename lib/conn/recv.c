/* recv.c: the data path's receive side: a receive completion checked against what this side granted (lib/wire/rx_check.c), then delivered, or the connection ended naming the rule the peer broke. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "conn_fsm.h"
#include "msg.h"
#include "sendq.h"
#include "conn_auth.h"
#include "conn_export.h"
#include "keepalive.h"
#include "base/log.h"
#include "path.h"
#include "rebuild.h"
#include "wire/bye.h"
#include "wire/settle.h"
#include "rndv.h"
#include "peer_penalty.h"
#include "srqpool/srqpool.h"
#include "wire/rx_check.h"

/* A receive that failed: the peer's message did not fit the buffer (or
 * another transport error). The connection ends with the completion's
 * status; the buffer goes back to the pool, which the other connections
 * keep drawing from. A flushed receive is a QP in ERR (a close, a path
 * taken out), which whoever moved it there reports. */
static void recv_failed(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc)
{
	/* buf is the application's handle (a generation in its top bits),
	 * not a descriptor to read. */
	uint32_t size = srqpool_buf_size(conn->pool);

	ez_buf_release(buf);
	if (wc->status == IBV_WC_WR_FLUSH_ERR || conn_is_ended(conn))
		return;
	conn_fail(conn, conn_wc_errno(wc->status),
		  "receive work completion (QP %u): %s into a %u-byte receive buffer (vendor error 0x%x)",
		  wc->qp_num, ibv_wc_status_str(wc->status), size, wc->vendor_err);
}

static enum rx_auth auth_view(const struct ez_conn *conn)
{
	if (!conn->auth)
		return RX_AUTH_NOKEY;
	if (conn->state == CS_AWAITING_PROOF)
		return RX_AUTH_AWAIT_PROOF;
	if (conn->state == CS_AUTHENTICATING)
		return RX_AUTH_AWAIT_VERDICT;
	return RX_AUTH_DONE;
}

/* What rx_check() reads of a data message (an immediate of credits alone:
 * check_data() and take_returns()), and rx_commit() of RX_DATA. Every
 * message takes the same checks; a data message, the common one, does not
 * pay for the paths, the keepalive and the rendezvous parts of the view. */
static void rx_view_data_of(const struct ez_conn *conn, struct rx_view *v)
{
	v->t = &conn->rxt;
	v->max_msg = conn->my_max_msg;
	v->recv_granted = conn->acct.granted;
	v->recv_max_granted = conn->acct.max_granted;
	v->send_credits = conn->sq.send_credits;
	v->max_send_credits = RX_MAX_CREDITS;
	v->auth = (uint8_t)auth_view(conn);
	v->rndv = conn->rndv.ok;
	v->exact = conn->paths_exact;
}

/* The whole view: every kind of message, and a fault's message. */
static void rx_view_of(const struct ez_conn *conn, struct rx_view *v)
{
	uint32_t i;

	rx_view_data_of(conn, v);
	v->npaths = (uint8_t)conn->npaths;
	v->live = 0;
	for (i = 0; i < conn->npaths; i++)
		if (conn->paths[i].live)
			v->live |= (uint8_t)(1u << i);
	v->rndv_max = conn->o.max_msg_size;
	v->exports_due = conn->ex.peer_due;
	conn_live_view(conn, v);
}

/* The peer broke a rule: this connection ends (-EPROTO), naming what it
 * did. A listener waiting for the proof refuses it as conn_auth.c refuses
 * any message that is not the proof (-EACCES), so the peer is told.
 * Otherwise the QP goes to ERR and the CM disconnects: the peer sees its
 * work flushed and the disconnect. */
static void recv_refused(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc,
			 const struct rx_in *in, const struct rx_view *v, enum rx_fault f)
{
	char why[160];

	if (conn->state == CS_AWAITING_PROOF) {
		conn_auth_on_recv(conn, buf, wc);
		return;
	}
	ez_buf_release(buf);
	rx_fault_format(f, in, v, why, sizeof(why));
	conn_fail(conn, -EPROTO, "%s", why);
	/* Counted against its address like a refused RDMA request: a peer
	 * cut for breaking the rules and back at once is refused a while. */
	peer_penalty_note(conn);
}

/* A rendezvous header's contents, or an acknowledgement's id, against the
 * rules (rx_check.c) and, for an ack, our transfers: a lie ends the
 * connection (-EPROTO) naming it. Fills *h (an ack's id in h->id). */
static int rndv_refused(struct ez_conn *conn, struct ez_buf *buf, const struct rx_view *v,
			const struct rx_msg *m, struct rndv_hdr *h, unsigned int path)
{
	const uint8_t *bytes = ez_buf_data(buf);
	enum rx_fault f;
	char why[200];

	memset(h, 0, sizeof(*h));
	if (m->kind == RX_RNDV) {
		rndv_hdr_decode(bytes, h);
		f = conn_rndv_check(conn, h, v, path);
	} else {
		struct op *op;

		h->id = rndv_ack_decode(bytes);
		for (op = conn->rndv.tx; op && op->rndv_id != h->id; op = op->rndv_next)
			;
		f = conn_rndv_check_ack(conn, v, h->id, op && !(op->rndv_flags & RNDV_TX_ACKED));
	}
	if (!f)
		return 0;
	ez_buf_release(buf);
	rx_rndv_fault_format(f, h, v, why, sizeof(why));
	conn_fail(conn, -EPROTO, "%s", why);
	peer_penalty_note(conn);
	return 1;
}

static void deliver_write_imm(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc)
{
	/* The peer's ez_write_imm(): its data is already in our memory and
	 * the immediate value is the application's, not credits. The receive
	 * buffer it used holds nothing: straight back, and owed like any
	 * message's. */
	ez_buf_release(buf);
	conn->stats.write_imms_recv++;
	if (conn->cbs.on_write_imm)
		conn->cbs.on_write_imm(conn, ntohl(wc->imm_data), wc->byte_len, conn->arg);
}

static void deliver(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc)
{
	conn->stats.msgs_recv++;
	conn->stats.bytes_recv += wc->byte_len;
	/* owner: the receive path counts what came in on a path */
	conn->paths[conn->npaths == 1 ? 0 : path_index(conn, wc->qp_num)].msgs_recv++;
	if (conn->cbs.on_recv)
		conn->cbs.on_recv(conn, buf, conn->arg);
	else
		ez_buf_release(buf);
}

/* An accepted message, acted on: the connection is CONNECTED. */
static void dispatch(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc,
		     const struct rx_msg *m, const struct rndv_hdr *rh)
{
	enum rx_fault f;

	switch (m->kind) {
	case RX_DATA:
		if (conn->rndv.rq.n)
			conn_rndv_on_small(conn, buf, wc->byte_len);
		else
			deliver(conn, buf, wc);
		break;
	case RX_RNDV:
		ez_buf_release(buf);
		conn_rndv_on_header(conn, rh, path_index(conn, wc->qp_num));
		break;
	case RX_RNDV_ACK: {
		struct op *op;

		ez_buf_release(buf);
		conn->stats.credit_msgs_recv++;
		op = conn_rndv_on_ack(conn, rh->id, &f);
		if (op)
			conn_op_complete(conn, op, 0);
		break;
	}
	case RX_WRITE_IMM:
		deliver_write_imm(conn, buf, wc);
		break;
	case RX_PATH_UP: {
		uint8_t b[PATH_UP_LEN];

		memcpy(b, ez_buf_data(buf), sizeof(b));
		conn->stats.credit_msgs_recv++;	/* owner: the receive path counts what came in */
		ez_buf_release(buf);
		rebuild_on_msg(conn, m->path, b, wc->qp_num);
		break;
	}
	case RX_PATH_DOWN: {
		/* With exact failover, the peer's count of receives on the path. */
		uint32_t count = conn->paths_exact ? path_count_decode(ez_buf_data(buf)) : 0;

		conn->stats.credit_msgs_recv++;
		ez_buf_release(buf);
		conn_settle_path(conn, path_on_peer_down(conn, m->path, count));
		break;
	}
	default:
		conn->stats.credit_msgs_recv++;
		if (m->kind == RX_BYE && wc->byte_len == BYE_REASON_LEN)
			/* owner: the receive path records what the goodbye said */
			conn->peer_bye_reason = bye_reason_decode(ez_buf_data(buf), &conn->peer_bye_ms);
		ez_buf_release(buf);
		if (m->kind == RX_BYE)
			conn->peer_bye = 1;
		else if (m->kind == RX_KA_PROBE)
			conn_live_on_probe(conn, m->answer);
		break;
	}
}

/* A message for the application that came before the peer's exports
 * message: the peer's other paths may overtake path 0, where the exports
 * travel first. Held in arrival order (at most the credits we granted:
 * they are our receive buffers already) until the exports came. */
struct rx_parked {
	struct rx_parked *next;
	struct ez_buf *buf;
	struct ibv_wc wc;
	struct rx_msg m;
	struct rndv_hdr rh;
};

static int parks(const struct rx_msg *m)
{
	return m->kind == RX_DATA || m->kind == RX_RNDV || m->kind == RX_WRITE_IMM;
}

static void park(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc,
		 const struct rx_msg *m, const struct rndv_hdr *rh)
{
	struct rx_parked *p = malloc(sizeof(*p));

	if (!p) {
		ez_buf_release(buf);
		conn_fail(conn, -ENOMEM, "peer %s: holding a message that came before its exports: out of memory",
			  conn->host);
		return;
	}
	*p = (struct rx_parked){ .buf = buf, .wc = *wc, .m = *m };
	if (m->kind == RX_RNDV)
		p->rh = *rh;	/* read from the header only for RX_RNDV */
	if (!conn->park.head)
		conn->park.tail = &conn->park.head;
	*conn->park.tail = p;
	conn->park.tail = &p->next;
}

void conn_recv_unpark(struct ez_conn *conn)
{
	while (conn->park.head) {
		struct rx_parked *p = conn->park.head;

		conn->park.head = p->next;
		ez_buf_release(p->buf);
		free(p);
	}
}

/* The peer's exports message: its keys kept, the connection up on this
 * side, then what came before it, in order. */
static void exports_in(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc)
{
	int ret = conn_exports_on_msg(conn, ez_buf_data(buf), wc->byte_len);

	conn->stats.credit_msgs_recv++;	/* owner: the receive path counts what came in */
	ez_buf_release(buf);
	if (ret)
		return;
	conn_fire(conn, CE_EXPORTS_IN, 0);
	while (conn->park.head && conn->state == CS_CONNECTED) {
		struct rx_parked *p = conn->park.head;

		conn->park.head = p->next;
		dispatch(conn, p->buf, &p->wc, &p->m, &p->rh);
		free(p);
	}
	if (conn->state == CS_CONNECTED)
		conn_kick_if_needed(conn);
}

void conn_on_recv_wc(struct ez_conn *conn, const struct ibv_wc *wc)
{
	struct ez_buf *buf = srqpool_take(((struct ez_buf *)(uintptr_t)wc->wr_id)->pool, wc->wr_id,
					  wc->byte_len);
	struct rx_in in;
	struct rx_view v;
	struct rx_msg m;
	struct rndv_hdr rh;
	enum rx_fault f;

	if (!buf)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		recv_failed(conn, buf, wc);
		return;
	}
	/* Exact failover counts every receive per path, and drops those that
	 * complete on a path after its count went to the peer (path.h). */
	if (__builtin_expect(conn->paths_exact, 0) && path_rx_drop(conn, wc->qp_num)) {
		ez_buf_release(buf);
		return;
	}
	in.write_imm = wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM;
	in.has_imm = !!(wc->wc_flags & IBV_WC_WITH_IMM);
	in.imm = in.has_imm ? ntohl(wc->imm_data) : 0;
	in.byte_len = wc->byte_len;
	/* A stream's message (data handing back no credit) on an established
	 * connection with no large message coming in: rx_check()'s verdict
	 * without its view (rx_plain_data()), delivered as below. */
	if (__builtin_expect(rx_plain_data(&in, conn->my_max_msg, conn->acct.granted,
					   conn->sq.send_credits) &&
			     conn->state == CS_CONNECTED && !conn->rndv.rq.n, 1)) {
		rx_commit_plain(&conn->rxt);
		srqpool_credit_used(conn->pool, &conn->acct);
		deliver(conn, buf, wc);
		if (conn->state == CS_CONNECTED)
			conn_kick_if_needed(conn);
		return;
	}
	if (conn_is_ended(conn)) {
		/* Its credit dies with the QP; counted all the same. */
		if (in.write_imm || !(in.imm & IMM_CREDIT_ONLY))
			srqpool_credit_used(conn->pool, &conn->acct);
		ez_buf_release(buf);
		return;
	}
	if (in.has_imm && !in.write_imm && !(in.imm & ~IMM_CREDITS_MASK))
		rx_view_data_of(conn, &v);
	else
		rx_view_of(conn, &v);
	f = rx_check(&in, &v, &m);
	if (f) {
		rx_view_of(conn, &v);	/* the fault's message may name any of it */
		recv_refused(conn, buf, wc, &in, &v, f);
		return;
	}
	if ((m.kind == RX_RNDV || m.kind == RX_RNDV_ACK) &&
	    rndv_refused(conn, buf, &v, &m, &rh, path_index(conn, wc->qp_num)))
		return;
	rx_commit(&conn->rxt, &v, &m);
	if (m.kind == RX_DATA || m.kind == RX_WRITE_IMM || m.kind == RX_RNDV)
		srqpool_credit_used(conn->pool, &conn->acct);
	conn_sq_credits_add(conn, m.credits);
	/* Nothing reaches the application before the shared secret is proved. */
	if (conn->state == CS_AWAITING_PROOF || conn->state == CS_AUTHENTICATING) {
		conn_auth_on_recv(conn, buf, wc);
		return;
	}
	/* A message can overtake the RTU: the QP is in RTS, so the peer has
	 * already seen our reply and counts the connection as established. */
	if (conn->state == CS_ACCEPTING)
		conn_up_after_exports(conn, CE_RTU);
	/* Likewise a resumed session's first message before the resume's
	 * RTU: the peer has our reply, so the session is back (resume.c). */
	if (conn->state == CS_RESUMING && !conn->active && path_index(conn, wc->qp_num) == 0)
		conn_fire(conn, CE_RTU, 0);
	if (m.kind == RX_EXPORTS && conn->state == CS_AWAITING_EXPORTS) {
		exports_in(conn, buf, wc);
		return;
	}
	if (conn->state == CS_AWAITING_EXPORTS && parks(&m)) {
		park(conn, buf, wc, &m, &rh);
		return;
	}
	if (conn->state != CS_CONNECTED) {
		ez_buf_release(buf);
		return;
	}
	dispatch(conn, buf, wc, &m, &rh);
	if (conn->state == CS_CONNECTED)
		conn_kick_if_needed(conn);
}
