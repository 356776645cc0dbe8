/* path.c: multi-path connections: the extra RC QPs, their ladder after QP 0, the path each op takes, a path's failure. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_fsm.h"
#include "sendq.h"
#include "conn_pd.h"
#include "device/cq.h"
#include "device/device.h"
#include "wire/flow.h"
#include "wire/settle.h"
#include "base/log.h"
#include "path.h"
#include "srqpool/srqpool.h"

_Static_assert(HS_MAX_PATHS == EZ_MAX_PATHS, "the handshake carries up to EZ_MAX_PATHS paths");

/* A WR's weight beyond its bytes, so that zero-length ops count too. */
#define PATH_WR_COST 64

static void path_on_tell(struct loop_defer *d);
static void path_on_count_wait(struct loop_timer *t);

/* PATH_COUNT_WAIT_MS, and a side that keeps its counts: test hooks
 * (path_test_count_wait()). */
static uint32_t count_wait_ms = PATH_COUNT_WAIT_MS;

int path_alloc(struct ez_conn *conn)
{
	uint32_t i, n = conn->o.paths ? conn->o.paths : 1;

	conn->tell_defer.fn = path_on_tell;	/* owner: the failover step of this file */
	conn->count_timer.fn = path_on_count_wait;	/* owner: as above */

	conn->paths = calloc(n, sizeof(*conn->paths));
	if (!conn->paths)
		return ezi_fail(-ENOMEM, "connection paths: out of memory");
	for (i = 0; i < n; i++) {
		conn->paths[i].conn = conn;
		conn->paths[i].idx = (uint8_t)i;
	}
	conn->npaths = n;
	return 0;
}

void path_free(struct ez_conn *conn)
{
	if (conn->ctx) {
		loop_defer_cancel(&conn->ctx->loop, &conn->tell_defer);
		loop_timer_stop(&conn->ctx->loop, &conn->count_timer);
	}
	free(conn->ladder);
	conn->ladder = NULL;	/* owner: the paths' ladder is this file's */
	free(conn->paths);
	conn->paths = NULL;
}

void path_grant(struct ez_conn *conn, const struct hs_msg *peer)
{
	uint32_t want = (peer->caps & HS_CAP_PATHS) ? peer->paths : 1, i;

	if (want < conn->npaths)
		conn->npaths = want;
	for (i = 1; i < conn->npaths; i++)
		conn->paths[i].remote_qpn = peer->path_qpn[i];
	/* owner: the paths' negotiation is this file's */
	conn->paths_exact = conn->npaths > 1 && (peer->caps & HS_CAP_FAILOVER);
}

/* 0 once in ERR, 1 with nothing to move (no QP, or one still in RESET,
 * from which ERR is no valid transition: it is simply destroyed), or
 * -errno (logged). */
static int path_qp_to_err(struct conn_path *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (!p->qp || p->qp->state == IBV_QPS_RESET)
		return 1;
	/* Against the device's cached limits, as every step of the ladder:
	 * one ibv_modify_qp(), no query. The device may have moved the QP to
	 * ERR already (any state but RESET may go to ERR, so the cached view
	 * is enough). */
	if (qpfsm_modify(p->qp, &p->conn->dev->lim, &p->qpv, &a, IBV_QP_STATE) &&
	    ibv_modify_qp(p->qp, &a, IBV_QP_STATE)) {
		int err = -errno;

		ezi_log_err("QP %u (path %u) to ERR: %s", p->qpn, p->idx, ez_strerror(-err));
		return err;
	}
	return 0;
}

int path_first_to_err(struct ez_conn *conn)
{
	return conn->paths ? path_qp_to_err(&conn->paths[0]) : 1;
}

static void path_destroy_one(struct ez_conn *conn, struct conn_path *p)
{
	if (!p->qp)
		return;
	device_qp_del(conn->dev, &p->dqp);
	if (ibv_destroy_qp(p->qp))
		ezi_log_err("ibv_destroy_qp(%u, path %u): %s", p->qpn, p->idx, ez_strerror(errno));
	p->qp = NULL;
	p->live = 0;
}

int path_create_first(struct ez_conn *conn, struct ibv_qp_init_attr *ia,
		      const struct device_qp_ops *ops0)
{
	struct conn_path *p0 = &conn->paths[0];
	struct device *dev = conn->dev;
	uint32_t want_inline = ia->cap.max_inline_data;

	p0->qp = ibv_create_qp(conn_pd_of(conn), ia);
	if (!p0->qp && want_inline) {
		/* The device may not inline this much; send from the buffer. */
		ia->cap.max_inline_data = 0;
		p0->qp = ibv_create_qp(conn_pd_of(conn), ia);
	}
	if (!p0->qp)
		return ezi_fail(-errno,
			"ibv_create_qp(%s, RC, max_send_wr %u, srq): %s (this context has %u QPs on "
			"it; device max_qp %d)", dev->name, ia->cap.max_send_wr, ez_strerror(errno),
			dev->nqp, dev->attr.max_qp);
	p0->qpn = p0->qp->qp_num;
	/* Every step of the ladder is validated against the device's cached
	 * limits and this view, so it costs one ibv_modify_qp() a step. */
	p0->qpv = (struct qpfsm_qp_view){ .type = IBV_QPT_RC, .state = IBV_QPS_RESET };
	device_qp_add(dev, &p0->dqp, p0->qp, ops0);
	return 0;
}

int path_create(struct ez_conn *conn, struct ibv_qp_init_attr *ia,
		const struct device_qp_ops *ops, const struct device_qp_ops *ops0)
{
	struct conn_path *p0 = &conn->paths[0];
	uint32_t i;

	p0->live = 1;
	conn->paths_live = 1;
	if (conn->npaths > 1) {
		/* owner: the paths' ladder is this file's */
		conn->ladder = calloc(1, sizeof(*conn->ladder));
		if (!conn->ladder)
			return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -ENOMEM,
					     "path ladder: out of memory");
		conn->ladder->ia = *ia;
		conn->ladder->ops = ops;
		conn->ladder->ops0 = ops0;
	}
	for (i = 1; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];

		p->qp = ibv_create_qp(conn_pd_of(conn), ia);
		if (!p->qp)
			return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -errno,
					     "ibv_create_qp(%s, RC, path %u of %u, max_send_wr %u, srq): %s",
					     conn->dev->name, i, conn->npaths, ia->cap.max_send_wr,
					     ez_strerror(errno));
		p->qpn = p->qp->qp_num;
		p->qpv = (struct qpfsm_qp_view){ .type = IBV_QPT_RC, .state = IBV_QPS_RESET };
		p->live = 1;
		conn->paths_live++;
		device_qp_add(conn->dev, &p->dqp, p->qp, ops);
	}
	return 0;
}

/* Consecutive choices of the connection's policy: AUTO (and DEFAULT, whose
 * rdma_cm label would be the same for every path) from each QP's own number,
 * RANGE the next ports of the context's cursor, FIXED the ports after the
 * one asked for. */
static uint16_t path_sport(struct ez_conn *conn, struct conn_path *p)
{
	if (conn->sport_mech == EZ_SPORT_MECH_NONE)
		return 0;
	switch (flow_policy(&conn->o)) {
	case EZ_SPORT_RANGE:
		return flow_pick_sport(&conn->o, p->qpn, &conn->ctx->sport_rr);
	case EZ_SPORT_FIXED:
		return (uint16_t)(FLOW_SPORT_MIN +
				  (conn->o.udp_sport - FLOW_SPORT_MIN + p->idx) % FLOW_SPORTS);
	case EZ_SPORT_AUTO:
	case EZ_SPORT_DEFAULT:
		break;
	}
	return flow_auto_sport(p->qpn);
}

/* INIT, RTR, RTS: the ladder's step for a state (-1: none). */
static int ladder_step(enum ibv_qp_state st)
{
	return st == IBV_QPS_INIT ? 0 : st == IBV_QPS_RTR ? 1 : st == IBV_QPS_RTS ? 2 : -1;
}

int path_modify(struct ez_conn *conn, const struct ibv_qp_attr *a, int mask)
{
	uint32_t i;
	int ret, st = ladder_step(a->qp_state);

	if (conn->ladder && st >= 0) {
		conn->ladder->step[st] = *a;
		conn->ladder->mask[st] = mask;
	}
	/* Every path's address vector is QP 0's (one pair of ports today):
	 * kept per path for ez_conn_path_info(). */
	for (i = 0; a->qp_state == IBV_QPS_RTR && (mask & IBV_QP_AV) && i < conn->npaths; i++) {
		conn->paths[i].is_global = a->ah_attr.is_global;
		conn->paths[i].sgid_index = a->ah_attr.grh.sgid_index;
		conn->paths[i].dgid = a->ah_attr.grh.dgid;
	}
	for (i = 1; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];
		struct ibv_qp_attr b = *a;
		int m = mask;

		if (a->qp_state == IBV_QPS_RTR) {
			b.dest_qp_num = p->remote_qpn;
			b.rq_psn = hs_path_psn(a->rq_psn, i);
			m |= IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
			p->sport = path_sport(conn, p);
			if (p->sport && conn->sport_mech == EZ_SPORT_MECH_FLOW_LABEL)
				b.ah_attr.grh.flow_label = ez_udp_sport_to_flow_label(p->sport);
		} else if (a->qp_state == IBV_QPS_RTS) {
			b.sq_psn = hs_path_psn(a->sq_psn, i);
			m |= IBV_QP_SQ_PSN;
		}
		ret = qpfsm_modify(p->qp, &conn->dev->lim, &p->qpv, &b, m);
		if (ret)
			return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), ret,
					     "path %u (QP %u): %s", i, p->qpn, ez_errmsg());
	}
	return 0;
}

int path_after_rts(struct ez_conn *conn)
{
	uint32_t i;
	int ret;

	conn->paths[0].sport = conn->sport;
	if (conn->sport_mech != EZ_SPORT_MECH_MLX5DV)
		return 0;
	for (i = 1; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];

		if (!p->sport)
			continue;
		ret = flowdev_set_mlx5_sport(p->qp, p->sport);
		if (ret)
			return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), ret, "path %u: %s",
					     i, ez_errmsg());
	}
	return 0;
}

int path_take_reply(struct ez_conn *conn, const struct hs_msg *rep)
{
	uint32_t granted = (rep->caps & HS_CAP_PATHS) ? rep->paths : 1, i;

	if (granted > conn->npaths)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -EPROTO,
				     "rdma_connect(%s): the reply grants %u paths, %u were asked",
				     conn->host, granted, conn->npaths);
	for (i = granted; i < conn->npaths; i++) {
		path_destroy_one(conn, &conn->paths[i]);
		conn->paths_live--;
	}
	conn->npaths = granted;
	for (i = 1; i < granted; i++)
		conn->paths[i].remote_qpn = rep->path_qpn[i];
	/* owner: the paths' negotiation is this file's */
	conn->paths_exact = granted > 1 && (rep->caps & HS_CAP_FAILOVER);
	return 0;
}

void path_hs_fill(const struct ez_conn *conn, struct hs_msg *m)
{
	uint32_t i;

	if (conn->npaths < 2)
		return;
	m->caps |= HS_CAP_PATHS | HS_CAP_FAILOVER;
	m->paths = (uint8_t)conn->npaths;
	for (i = 1; i < conn->npaths; i++)
		m->path_qpn[i] = conn->paths[i].qpn;
}

static uint64_t path_load(const struct conn_path *p)
{
	return p->posted_bytes + (uint64_t)p->posted * PATH_WR_COST;
}

struct conn_path *path_pick(struct ez_conn *conn)
{
	struct conn_path *best = NULL;
	uint32_t n = conn->npaths, start, i;

	if (n == 1)
		return &conn->paths[0];
	/* The cursor moves every time so that equal loads take turns. */
	start = conn->path_rr++;
	for (i = 0; i < n; i++) {
		struct conn_path *p = &conn->paths[(start + i) % n];

		if (p->live && (!best || path_load(p) < path_load(best)))
			best = p;
	}
	return best ? best : &conn->paths[0];
}

unsigned int path_index(const struct ez_conn *conn, uint32_t qpn)
{
	uint32_t i;

	for (i = 1; i < conn->npaths; i++)
		if (conn->paths[i].qpn == qpn)
			return i;
	return 0;
}

/* Our side of the path is dead; the peer's QP may never notice (it only
 * would by its transport timeout if it sent on it), so it is told on a
 * path still live. Outside the credit window, like credit messages. */
static void path_tell_peer(struct ez_conn *conn, struct conn_path *p)
{
	struct conn_path *via = path_pick(conn);

	if (!via->live ||
	    conn_post_ctrl(conn, &p->down_op, OP_PATH_DOWN, via,
			   IMM_CREDIT_ONLY | IMM_PATH_DOWN | (uint32_t)p->idx << IMM_PATH_SHIFT,
			   NULL, 0))
		ezi_log_warn("connection %s: path %u down not told to the peer", conn->host, p->idx);
}

static void path_down(struct ez_conn *conn, struct conn_path *p, int status, int tell)
{
	p->live = 0;
	p->down_status = status;
	conn->paths_live--;
	conn->stats.paths_down++;
	/* Work still on its send queue flushes with the path's status. */
	path_qp_to_err(p);
	/* Exact failover: each side tells its count, told or not, once the
	 * path's receive side is flushed and its receives are in
	 * (path_on_tell). */
	if (conn->paths_exact) {
		p->fo.down_ns = loop_now_ns();
		loop_defer(&conn->ctx->loop, &conn->tell_defer);
	}
	else if (tell)
		path_tell_peer(conn, p);
	ezi_log_warn("connection %s: path %u (QP %u, UDP source port %u) down: %s; %u paths left",
		     conn->host, p->idx, p->qpn, p->sport, ez_strerror(status), conn->paths_live);
	if (conn->cbs.on_path_down)
		conn->cbs.on_path_down(conn, p->idx, status, conn->paths_live, conn->arg);
	/* The last one: the session waits to resume, its ops held (resume.c,
	 * through the table); a connection not up yet ends. */
	if (!conn->paths_live && !conn_is_ended(conn)) {
		if (conn_fsm_row(conn->state, CE_PATHS_LOST)->valid)
			conn_fire(conn, CE_PATHS_LOST, status);
		else
			conn_fail(conn, status, "every path failed before the connection was up (%s)",
				  ez_strerror(status));
	}
}

/* Whether the last live path may fail without ending the connection: the
 * session resumes instead (resume.c). */
static int path_last_resumes(const struct ez_conn *conn)
{
	return conn->paths_exact && conn_resumable(conn);
}

void path_take_all_down(struct ez_conn *conn, int status)
{
	for (uint32_t i = 0; i < conn->npaths && !conn_is_ended(conn); i++)
		if (conn->paths[i].live)
			path_down(conn, &conn->paths[i], status, 0);
}

int path_lose_all(struct ez_conn *conn, int status, const char *why)
{
	if (!path_last_resumes(conn))
		return 0;
	/* Already waiting to resume (a send failed first): nothing to do. */
	if (conn->state == CS_RESUMING)
		return 1;
	if (conn->state != CS_CONNECTED || !conn->paths_live)
		return 0;
	ezi_log_warn("connection %s: %s: every path taken down, the session resumes", conn->host, why);
	path_take_all_down(conn, status);
	return 1;
}

/* A send the peer did not take (or, without exact failover, may not have
 * taken): the credits it carried are ours to hand back again, and the one
 * it used the peer's again. Without exact failover, a send that did arrive
 * with only its ACK lost risks an RNR retry at worst, where losing the
 * credits would shrink the window for good. */
static void path_give_back(struct ez_conn *conn, const struct op *op, int slack)
{
	if (op->kind == OP_SEND || op->kind == OP_SEND_MR || op->kind == OP_CREDIT) {
		uint32_t carried = ntohl(op->wr.imm_data) & IMM_CREDITS_MASK;

		if (carried) {
			srqpool_credits_unreturn(conn->pool, &conn->acct, carried);
			rx_note_ungranted(&conn->rxt, carried, slack);
		}
	}
	if (op->kind == OP_SEND || op->kind == OP_SEND_MR || op->kind == OP_WRITE_IMM)
		conn_sq_credits_add(conn, 1);
}

int path_on_error(struct ez_conn *conn, struct op *op, int status, int *conn_fails)
{
	struct conn_path *p = op->path;

	*conn_fails = 0;
	if (conn_is_ended(conn))
		return status;
	path_give_back(conn, op, 1);
	if (!p->live)
		return status == -ECANCELED && p->down_status ? p->down_status : status;
	/* A flush with no error of its own: the QP entered ERR from outside
	 * (a fatal async error, or the test hook). */
	if (status == -ECANCELED)
		status = -EIO;
	if (conn->paths_live <= 1 && !path_last_resumes(conn)) {
		*conn_fails = 1;
		return status;
	}
	path_down(conn, p, status, 1);
	return status;
}

struct conn_path *path_on_peer_down(struct ez_conn *conn, unsigned int idx, uint32_t count)
{
	struct conn_path *p;

	if (conn_is_ended(conn) || idx >= conn->npaths)
		return NULL;
	p = &conn->paths[idx];
	if (conn->paths_exact) {
		p->fo.peer_count = count;
		p->fo.peer_told = 1;
	}
	if (p->live) {
		if (conn->paths_live <= 1) {
			conn_fail(conn, -ECONNRESET, "peer took the last path (%u) out", idx);
			return NULL;
		}
		path_down(conn, p, -ECONNRESET, 0);
	}
	return conn->paths_exact ? p : NULL;
}

/* ---- Exact failover (wire/settle.h says the model) ---- */

/* Our count of receives on p goes to the peer, on a live path; receives
 * that complete on p after this are dropped (path_rx_drop): the peer
 * settles by this count and sends those again. Without a live path to say
 * it on, or with the device refusing the post, the peer could never settle
 * its side: the connection ends. */
static void path_tell_count(struct ez_conn *conn, struct conn_path *p)
{
	struct conn_path *via = path_pick(conn);
	uint8_t b[PATH_COUNT_LEN];
	int ret = -ENOTCONN;

	p->fo.told = 1;
	p->fo.told_ns = loop_now_ns();
	path_count_encode(p->fo.rx, b);
	if (conn->fo_mute)
		return;
	if (via->live)
		ret = conn_post_ctrl(conn, &p->down_op, OP_PATH_DOWN, via,
				     IMM_CREDIT_ONLY | IMM_PATH_DOWN | (uint32_t)p->idx << IMM_PATH_SHIFT,
				     b, sizeof(b));
	if (ret)
		conn_fail(conn, ret, "path %u down: its count (%u received) could not be sent to the peer: %s",
			  p->idx, p->fo.rx, ez_strerror(ret));
}

/* Nanoseconds until p's count may go (PATH_LAST_WQE_WAIT_MS), 0 when
 * the device flushed its receive side or did not say so in time. */
static uint64_t path_tell_left(const struct conn_path *p, uint64_t now)
{
	uint64_t wait = (uint64_t)PATH_LAST_WQE_WAIT_MS * 1000000u;

	if (p->last_wqe || now - p->fo.down_ns >= wait)
		return 0;
	return p->fo.down_ns + wait - now;
}

/* Tells the counts of the paths down whose receive side is flushed; the
 * receive CQ polled first, so that every receive the device completed on
 * them is in the counts. Returns the nanoseconds until the next one waiting
 * may go (0: none waits). Never inside a CQ poll. */
static uint64_t path_tell_ready(struct ez_conn *conn, uint64_t now)
{
	uint64_t next = 0, left;
	uint32_t i;

	/* Resuming: no path to tell on; the counts wait for the new path 0
	 * (resume.c defers this again once it is up). */
	if (!conn->paths_live)
		return 0;

	if (conn->rcq)
		cq_poll(conn->rcq);
	for (i = 0; i < conn->npaths && !conn_is_ended(conn); i++) {
		struct conn_path *p = &conn->paths[i];

		if (p->live || !p->qp || p->fo.told || p->fo.reopened)
			continue;
		left = path_tell_left(p, now);
		if (!left)
			path_tell_count(conn, p);
		else if (!next || left < next)
			next = left;
	}
	return next;
}

/* The count timer at the earliest of: a count waiting for its flush, a
 * told count's deadline for the peer's. Stopped when neither is due. */
static void path_count_timer_arm(struct ez_conn *conn, uint64_t now, uint64_t next)
{
	uint64_t wait = (uint64_t)count_wait_ms * 1000000u;
	uint32_t i;

	for (i = 0; i < conn->npaths; i++) {
		const struct conn_path *p = &conn->paths[i];

		if (!p->fo.told || p->fo.peer_told)
			continue;
		if (!next || p->fo.told_ns + wait - now < next)
			next = p->fo.told_ns + wait - now;
	}
	if (next)
		loop_timer_start(&conn->ctx->loop, &conn->count_timer,
				 (uint32_t)(next / 1000000u) + 1);
	else
		loop_timer_stop(&conn->ctx->loop, &conn->count_timer);
}

/* Deferred from path_down() and from the flush event of a path down. */
static void path_on_tell(struct loop_defer *d)
{
	struct ez_conn *conn = container_of(d, struct ez_conn, tell_defer);
	uint64_t now = loop_now_ns(), next = path_tell_ready(conn, now);

	if (!conn_is_ended(conn))
		path_count_timer_arm(conn, now, next);
}

/* A count waiting for its path's flush may go now; PATH_COUNT_WAIT_MS
 * after a count of ours went out, the peer's must be in, or the
 * connection ends, naming it (the ops the path holds end with their
 * status). Again while one is due. */
static void path_on_count_wait(struct loop_timer *t)
{
	struct ez_conn *conn = container_of(t, struct ez_conn, count_timer);
	uint64_t now = loop_now_ns(), wait = (uint64_t)count_wait_ms * 1000000u, next;
	uint32_t i;

	/* Resuming: the peer cannot tell; the wait starts again once resumed. */
	if (conn_is_ended(conn) || !conn->paths_live)
		return;
	for (i = 0; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];

		if (p->fo.told && !p->fo.peer_told && now - p->fo.told_ns >= wait) {
			conn_fail(conn, -ETIMEDOUT,
				  "path %u down: the peer did not tell how many messages it received there within %u ms",
				  i, count_wait_ms);
			return;
		}
	}
	next = path_tell_ready(conn, now);
	if (!conn_is_ended(conn))
		path_count_timer_arm(conn, now, next);
}

/* What an op of a failed path is, for settle_decide(). */
static enum settle_class path_op_class(const struct op *op)
{
	switch (op->kind) {
	case OP_WRITE:
	case OP_READ:
		return op->pin ? SETTLE_BOUND : SETTLE_RDMA;
	case OP_WRITE_IMM:
		return op->pin ? SETTLE_MSG_BOUND : SETTLE_MSG;
	case OP_ATOMIC_CAS:
	case OP_ATOMIC_FADD:
		return SETTLE_ATOMIC;
	case OP_SEND_RNDV:
		/* Its offer is a window bound to the failed QP. */
		return SETTLE_MSG_BOUND;
	case OP_BIND:
	case OP_RNDV_READ:
	case OP_SEAL:
		return SETTLE_BOUND;
	default:
		return SETTLE_MSG;
	}
}

/* A fault of the path (the op would go through on another), not the op's. */
static int path_fault(int status)
{
	return status == -ECANCELED || status == -ETIMEDOUT || status == -ENOBUFS || status == -EIO;
}

int path_park(struct ez_conn *conn, struct op *op, int status)
{
	struct conn_path *p = op->path;
	struct path_failover *fo = &p->fo;

	if (!conn->paths_exact || conn_is_ended(conn))
		return 0;
	/* The last live path failing ends the connection (no path to settle
	 * on), unless the session resumes: then the counts come with it. */
	if (p->live && conn->paths_live <= 1 && !path_last_resumes(conn))
		return 0;
	EZ_ASSERT(p->posted > 0);
	p->posted--;
	if (!OP_KIND_IN(OP_CTRL_KINDS, op->kind) && op->wr.num_sge)
		p->posted_bytes -= op->sge.length;
	/* owner: a failed path holds its ops until they settle (exact failover) */
	op->park_status = status;
	/* owner: as above, on the path's own list */
	op->next = NULL;
	if (fo->park_tail)
		fo->park_tail->next = op;	/* owner: as above */
	else
		fo->park_head = op;
	fo->park_tail = op;
	fo->parked++;
	if (p->live)
		path_down(conn, p, status == -ECANCELED ? -EIO : status, 1);
	return 1;
}

int path_settle_begin(struct ez_conn *conn, struct conn_path *p)
{
	struct path_failover *fo = &p->fo;
	uint32_t unacked = 0, count = fo->peer_count;
	enum settle_fault f;
	struct op *op;

	if (!fo->peer_told || p->posted > 0 || conn_is_ended(conn) || !fo->park_head)
		return 0;
	for (op = fo->park_head; op; op = op->next)
		unacked += (uint32_t)settle_takes_recv(path_op_class(op));
	f = settle_check_count(count, fo->tx, unacked);
	if (f) {
		conn_fail(conn, -EPROTO,
			  "peer counts %u messages received on path %u: %s (%u sent there, %u of them acknowledged)",
			  count, p->idx, settle_fault_str(f), fo->tx, fo->tx - unacked);
		return 0;
	}
	fo->settle_seq = fo->tx - unacked;
	return 1;
}

struct op *path_settle_next(struct ez_conn *conn, struct conn_path *p, enum settle_action *a,
			    int *status)
{
	struct path_failover *fo = &p->fo;
	struct op *op = fo->park_head;
	enum settle_class c;
	uint32_t seq = 0;

	if (!op)
		return NULL;
	fo->park_head = op->next;
	if (!fo->park_head)
		fo->park_tail = NULL;
	fo->parked--;
	c = path_op_class(op);
	if (settle_takes_recv(c))
		seq = fo->settle_seq++;
	*status = op->park_status;
	if (*status == -ECANCELED && p->down_status)
		*status = p->down_status;
	/* A callback may have ended the connection: the rest end with the
	 * status they had. */
	*a = conn_is_ended(conn) ? SETTLE_FAIL :
				   settle_decide(c, path_fault(op->park_status), seq, fo->peer_count);
	switch (*a) {
	case SETTLE_DONE:
		fo->settled_done++;
		break;
	case SETTLE_REPOST:
		fo->reposted++;
		break;
	case SETTLE_UNKNOWN:
		fo->unknown++;
		break;
	case SETTLE_FAIL:
		/* Not arrived (or, the connection ending, not known): its
		 * credits are handed back exactly. */
		if (settle_takes_recv(c) && !conn_is_ended(conn))
			path_give_back(conn, op, 0);
		break;
	}
	return op;
}

struct op *path_unpark_next(struct ez_conn *conn, int *status)
{
	uint32_t i;

	for (i = 0; conn->paths && i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];
		struct op *op = p->fo.park_head;

		if (!op)
			continue;
		p->fo.park_head = op->next;
		if (!p->fo.park_head)
			p->fo.park_tail = NULL;
		p->fo.parked--;
		*status = op->park_status == -ECANCELED && p->down_status ? p->down_status :
									     op->park_status;
		return op;
	}
	return NULL;
}

int path_on_qp_event(struct ez_conn *conn, uint32_t qpn, int status)
{
	struct conn_path *p;

	if (conn->npaths < 2)
		return 1;
	if (conn_is_ended(conn))
		return 0;
	p = &conn->paths[path_index(conn, qpn)];
	if (!p->live)
		return 0;
	if (conn->paths_live <= 1 && !path_last_resumes(conn))
		return 1;
	path_down(conn, p, status, 1);
	return 0;
}

int path_on_last_wqe(struct ez_conn *conn, uint32_t qpn)
{
	struct conn_path *p = &conn->paths[path_index(conn, qpn)];
	uint32_t i;

	p->last_wqe = 1;
	/* A failed path's count waits for this (PATH_LAST_WQE_WAIT_MS). */
	if (conn->paths_exact && !p->live && !p->fo.told && !p->fo.reopened && !conn_is_ended(conn))
		loop_defer(&conn->ctx->loop, &conn->tell_defer);
	for (i = 0; i < conn->npaths; i++)
		if (conn->paths[i].qp && !conn->paths[i].last_wqe)
			return 0;
	return 1;
}

int path_post_byes(struct ez_conn *conn)
{
	uint32_t i;
	int n = 0, ret;

	for (i = 0; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];

		if (!p->live)
			continue;
		ret = conn_post_ctrl(conn, &p->bye_op, OP_BYE, p, IMM_CREDIT_ONLY | IMM_BYE, NULL, 0);
		if (ret) {
			ezi_log_warn("ibv_post_send(goodbye, path %u): %s", i, ez_strerror(ret));
			continue;
		}
		n++;
	}
	return n;
}

void path_teardown(struct ez_conn *conn)
{
	uint32_t i;

	for (i = 1; i < conn->npaths; i++)
		if (conn->paths[i].qp && !conn->paths[i].down_status)
			path_qp_to_err(&conn->paths[i]);
}

int path_destroy(struct ez_conn *conn)
{
	uint32_t i;
	int had_first;

	if (!conn->paths)
		return 0;
	for (i = 1; i < conn->npaths; i++)
		path_destroy_one(conn, &conn->paths[i]);
	had_first = conn->paths[0].qp != NULL;
	path_destroy_one(conn, &conn->paths[0]);
	return had_first;
}

/* ---- A failed path made again (rebuild.c drives the exchange) ---- */

int path_can_reopen(const struct ez_conn *conn, const struct conn_path *p)
{
	return conn->paths_exact && conn->ladder && !p->live && p->posted == 0 &&
	       !p->fo.park_head && (p->fo.reopened || (p->fo.told && p->fo.peer_told));
}

/* p's old QP destroyed, a new one made as the first was and brought to
 * INIT; the path's counts are the caller's. */
static int path_new_qp(struct ez_conn *conn, struct conn_path *p)
{
	struct path_ladder *lad = conn->ladder;
	struct ibv_qp_init_attr ia = lad->ia;	/* ibv_create_qp() writes the caps back */
	struct ibv_qp_attr a = lad->step[0];
	int ret;

	path_destroy_one(conn, p);
	p->qp = ibv_create_qp(conn_pd_of(conn), &ia);
	if (!p->qp)
		return ezi_fail(-errno, "ibv_create_qp(%s, RC, path %u again, max_send_wr %u, srq): %s",
				conn->dev->name, p->idx, ia.cap.max_send_wr, ez_strerror(errno));
	p->qpn = p->qp->qp_num;
	p->qpv = (struct qpfsm_qp_view){ .type = IBV_QPT_RC, .state = IBV_QPS_RESET };
	p->last_wqe = 0;
	p->sq_head = p->sq_tail = NULL;
	p->posted_bytes = 0;
	device_qp_add(conn->dev, &p->dqp, p->qp, p->idx ? lad->ops : lad->ops0);
	ret = qpfsm_modify(p->qp, &conn->dev->lim, &p->qpv, &a, lad->mask[0]);
	if (ret)
		return ezi_fail(ret, "path %u (QP %u) to INIT: %s", p->idx, p->qpn, ez_errmsg());
	p->qp_access = (int)a.qp_access_flags;
	return 0;
}

int path_reopen(struct ez_conn *conn, struct conn_path *p)
{
	/* A new QP: its counts start again (the settled ones' stay). */
	p->fo.tx = p->fo.rx = p->fo.peer_count = 0;
	p->fo.told = p->fo.peer_told = 0;
	/* A try that fails from here (no answer, the peer holds it) may be
	 * made again: the failure stays settled. */
	p->fo.reopened = 1;
	return path_new_qp(conn, p);
}

/* ---- Session resume (resume.c drives the exchange) ---- */

int path_resume_ready(const struct ez_conn *conn, uint64_t now)
{
	const struct conn_path *p = &conn->paths[0];

	return !conn->paths_live && p->posted == 0 && path_tell_left(p, now) == 0;
}

uint32_t path_resume_count_of(const struct ez_conn *conn)
{
	return conn->paths[0].fo.rx;
}

int path_resume_reopen(struct ez_conn *conn)
{
	struct conn_path *p = &conn->paths[0];

	if (!conn->ladder || conn->paths_live || p->posted)
		return ezi_fail(-EBUSY, "path 0 not ready for a new QP (%u paths live, %d WRs on its old QP)",
				conn->paths_live, p->posted);
	/* The old QP's counts and held ops stay: path_resume_count() settles
	 * them. Its receives are all in (the caller polled). */
	p->fo.told = 1;
	return path_new_qp(conn, p);
}

int path_resume_count(struct ez_conn *conn, uint32_t peer_count)
{
	struct conn_path *p = &conn->paths[0];
	struct path_failover *fo = &p->fo;
	uint32_t unacked = 0;
	enum settle_fault f;
	struct op *op;

	/* A count told before (path 0 failed while another path lived) is
	 * the same number: the peer's final count of the old QP. */
	if (fo->peer_told && fo->peer_count != peer_count)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -EPROTO,
				     "peer's resume counts %u messages received on path 0, its path-down notice %u",
				     peer_count, fo->peer_count);
	for (op = fo->park_head; op; op = op->next)
		unacked += (uint32_t)settle_takes_recv(path_op_class(op));
	f = settle_check_count(peer_count, fo->tx, unacked);
	if (f)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -EPROTO,
				     "peer's resume counts %u messages received on path 0: %s (%u sent there, %u of them acknowledged)",
				     peer_count, settle_fault_str(f), fo->tx, fo->tx - unacked);
	fo->peer_count = peer_count;
	fo->settle_seq = fo->tx - unacked;
	/* From here the path's counts are the new QP's (receives on it may
	 * come before the session is back on this side). */
	fo->tx = fo->rx = 0;
	fo->told = fo->peer_told = 0;
	fo->reopened = 0;
	return 0;
}

void path_resume_up(struct ez_conn *conn)
{
	struct conn_path *p = &conn->paths[0];

	p->live = 1;
	p->down_status = 0;
	conn->paths_live++;	/* owner: path 0 back by the resume exchange (path_up()'s, for it) */
	ezi_log_info("connection %s: session resumed on path 0 (QP %u to the peer's %u); %u held ops to settle",
		     conn->host, p->qpn, p->remote_qpn, p->fo.parked);
}

struct op *path_resume_settle_next(struct ez_conn *conn, enum settle_action *a, int *status)
{
	return path_settle_next(conn, &conn->paths[0], a, status);
}

int path_reconnect(struct ez_conn *conn, struct conn_path *p, uint32_t remote_qpn,
		   uint32_t rq_psn, uint32_t sq_psn)
{
	struct path_ladder *lad = conn->ladder;
	struct ibv_qp_attr a = lad->step[1];
	int ret;

	p->remote_qpn = remote_qpn;
	a.dest_qp_num = remote_qpn;
	a.rq_psn = rq_psn;
	p->sport = path_sport(conn, p);
	if (!p->idx)
		conn->sport = p->sport;	/* owner: path 0's port is QP 0's (ez_conn_info) */
	if (p->sport && conn->sport_mech == EZ_SPORT_MECH_FLOW_LABEL)
		a.ah_attr.grh.flow_label = ez_udp_sport_to_flow_label(p->sport);
	ret = qpfsm_modify(p->qp, &conn->dev->lim, &p->qpv, &a,
			   lad->mask[1] | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	if (ret)
		return ezi_fail(ret, "path %u (QP %u) to RTR: %s", p->idx, p->qpn, ez_errmsg());
	a = lad->step[2];
	a.sq_psn = sq_psn;
	ret = qpfsm_modify(p->qp, &conn->dev->lim, &p->qpv, &a, lad->mask[2] | IBV_QP_SQ_PSN);
	if (ret)
		return ezi_fail(ret, "path %u (QP %u) to RTS: %s", p->idx, p->qpn, ez_errmsg());
	if (p->sport && conn->sport_mech == EZ_SPORT_MECH_MLX5DV) {
		ret = flowdev_set_mlx5_sport(p->qp, p->sport);
		if (ret)
			return ezi_fail(ret, "path %u (QP %u): UDP source port %u: %s", p->idx, p->qpn,
					p->sport, ez_errmsg());
	}
	return 0;
}

void path_up(struct ez_conn *conn, struct conn_path *p)
{
	p->live = 1;
	p->fo.reopened = 0;
	p->down_status = 0;
	conn->paths_live++;
	ezi_log_info("connection %s: path %u made again (QP %u to the peer's %u, UDP source port %u); %u paths live",
		     conn->host, p->idx, p->qpn, p->remote_qpn, p->sport, conn->paths_live);
}

void path_info(const struct ez_conn *conn, struct ez_conn_info *info)
{
	uint32_t i;

	info->paths = conn->npaths;
	info->paths_live = conn->paths_live;
	for (i = 0; i < conn->npaths; i++) {
		const struct conn_path *p = &conn->paths[i];

		info->path_qp_num[i] = p->qpn;
		info->path_remote_qp_num[i] = i ? p->remote_qpn : info->remote_qp_num;
		info->path_udp_sport[i] = i ? p->sport : info->udp_sport;
		info->path_status[i] = p->down_status;
	}
}

void path_info_one(const struct ez_conn *conn, uint32_t i, struct ez_path_info *out)
{
	const struct conn_path *p = &conn->paths[i];

	memset(out, 0, sizeof(*out));
	out->index = i;
	out->qp_num = p->qpn;
	out->remote_qp_num = p->remote_qpn;
	out->status = p->down_status;
	out->live = p->live;
	out->port = conn->port;
	out->udp_sport = p->sport;
	out->gid_index = p->sgid_index;
	if (p->is_global)
		memcpy(out->remote_gid, p->dgid.raw, sizeof(out->remote_gid));
	out->posted = p->posted > 0 ? (uint32_t)p->posted : 0;
	out->ops = p->ops;
	out->bytes = p->bytes;
	out->msgs_recv = p->msgs_recv;
	out->settled_done = p->fo.settled_done;
	out->reposted = p->fo.reposted;
	out->outcome_unknown = p->fo.unknown;
	out->recvs_dropped = p->fo.dropped;
}

int path_test_break(struct ez_conn *conn, unsigned int path)
{
	struct conn_path *p;

	if (!conn || path >= conn->npaths || !conn->paths[path].qp)
		return -EINVAL;
	p = &conn->paths[path];
	path_qp_to_err(p);
	/* What the device's IBV_EVENT_QP_FATAL would start. Waiting for the
	 * flushes instead may never end on Soft-RoCE: with no work of ours on
	 * the path, only the peer's retransmissions into it would show it,
	 * and rxe (Linux 6.1) was seen not to time them out. */
	if (path_on_qp_event(conn, p->qpn, -EIO))
		conn_fail(conn, -EIO, "QP %u (path %u) entered the error state", p->qpn, path);
	return 0;
}

void path_test_count_wait(struct ez_conn *conn, uint32_t wait_ms, int mute)
{
	if (wait_ms)
		count_wait_ms = wait_ms;
	if (conn)
		conn->fo_mute = (uint8_t)mute;	/* owner: a test hook of this file */
}
