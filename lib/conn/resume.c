/* resume.c: a session whose every path failed, resumed: the active side dials the listener again and proves the session, and both sides settle path 0's held ops on a new path 0 (resume.h says the model). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "base/log.h"
#include "conn_fsm.h"
#include "ctx.h"
#include "device/cq.h"
#include "device/device.h"
#include "keepalive.h"
#include "msg.h"
#include "path.h"
#include "resume.h"
#include "session_route.h"
#include "wire/auth.h"
#include "wire/resume.h"

enum resume_step {
	RS_IDLE,	/* live; or resuming, the active side waiting for its next dial */
	RS_RESOLVING,	/* active: the dial's address and route */
	RS_DIALED,	/* active: request sent, the reply awaited */
	RS_FLUSHING,	/* passive: a request taken, its old path 0 flushing */
	RS_ANSWERED,	/* passive: reply sent, the RTU awaited */
};

struct conn_resume {
	struct ez_conn *conn;
	struct cm_handler cm;		/* the exchange's id's context */
	struct rdma_cm_id *id;		/* the exchange's id (NULL: none) */
	uint8_t token[HS_TOKEN_LEN];
	uint32_t epoch;
	uint8_t step;			/* enum resume_step */
	uint32_t attempt;		/* the active side's dials since the loss */
	uint64_t lost_ns;
	int lost_status;
	uint32_t psn;			/* our new path-0 QP's first send PSN */
	uint32_t peer_qpn;		/* passive: the client's new path-0 QP */
	struct resume_msg req;		/* the request: ours (active) or the peer's */
	struct resume_msg rep;		/* passive: our reply */
	const struct auth_key *key;	/* the session's shared secret (conn_auth.c's), NULL: none */
	uint64_t step_ns;		/* passive: when the step began */
	struct loop_timer timer;	/* active: the next dial; passive: the step's bound */
	struct loop_timer window;	/* the resume window */
	char last[160];			/* why the last dial failed */
	struct session_node ix;		/* passive: in the context's index by token */
	int indexed;
	struct session_route route;	/* passive, accepted on a context a listener handed it to:
					 * that listener's way here (session_route.h) */
};

static void on_timer(struct loop_timer *t);
static void on_window(struct loop_timer *t);
static void on_cm(struct cm_handler *h, const struct cm_event *ev);

static uint64_t now_ns(void)
{
	return loop_now_ns();
}

/* The old QP's flushed sends (its posted count) and completed receives
 * (its count), taken in before either is read. */
static void poll_cqs(struct ez_conn *conn)
{
	if (conn->cqr.cq)
		cq_poll(conn->cqr.cq);
	if (conn->rcq && conn->rcq != conn->cqr.cq)
		cq_poll(conn->rcq);
}

static uint32_t random24(void)
{
	uint32_t v = 0;

	if (auth_random(&v, sizeof(v)))
		v = (uint32_t)now_ns();
	return v & 0xffffffu;
}

static struct conn_resume *resume_new(struct ez_conn *conn)
{
	struct conn_resume *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->conn = conn;
	rs->cm.on_event = on_cm;
	rs->timer.fn = on_timer;
	rs->window.fn = on_window;
	conn->resume = rs;	/* owner: the session's state is this file's, made at the grant */
	return rs;
}

void resume_hs_fill(struct ez_conn *conn, struct hs_msg *m)
{
	if (m->kind == HS_REQ && conn->o.resume_ms && conn->npaths > 1)
		m->caps |= HS_CAP_RESUME;
	if (m->kind == HS_REP && conn->resume) {
		m->caps |= HS_CAP_RESUME;
		memcpy(m->token, conn->resume->token, HS_TOKEN_LEN);
	}
}

static int token_zero(const uint8_t *t)
{
	uint8_t any = 0;

	for (int i = 0; i < HS_TOKEN_LEN; i++)
		any |= t[i];
	return !any;
}

int resume_grant(struct ez_conn *conn, const struct hs_msg *req, const struct auth_key *key,
		 struct session_routes *routes)
{
	struct conn_resume *rs;
	int ret;

	if (!(req->caps & HS_CAP_RESUME) || !conn->o.resume_ms || !conn->paths_exact)
		return 0;
	rs = resume_new(conn);
	if (!rs)
		return ezi_fail(-ENOMEM, "ez_accept: session resume: out of memory");
	rs->key = key;
	do {
		if (auth_random(rs->token, sizeof(rs->token)))
			return ezi_fail(-EIO, "ez_accept: session resume: no random token (getrandom)");
	} while (token_zero(rs->token));
	rs->ix.token = rs->token;
	if (session_index_add(&conn->ctx->sessions, &rs->ix))
		return ezi_fail(-ENOMEM, "ez_accept: session resume: out of memory (the context's session index)");
	rs->indexed = 1;
	if (!routes)
		return 0;
	/* Handed here by a listener on another context: its client's resume
	 * dial reaches that listener, which finds us by this route. */
	ret = session_route_add(routes, &rs->route, rs->token, conn->ctx);
	if (ret == -ENOMEM)
		return ezi_fail(-ENOMEM, "ez_accept: session resume: out of memory (the listener's routes)");
	if (ret)
		ezi_log_warn("ez_accept: session resume granted on a context that takes no more requests "
			     "(ez_ctx_take_requests stopped): the listener cannot hand it a resume");
	return 0;
}

int resume_take_reply(struct ez_conn *conn, const struct hs_msg *rep, const struct auth_key *key)
{
	struct conn_resume *rs;

	if (!(rep->caps & HS_CAP_RESUME) || !conn->o.resume_ms || !conn->paths_exact)
		return 0;
	if (token_zero(rep->token))
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -EPROTO,
				     "rdma_connect(%s): the reply grants session resume with an empty token",
				     conn->host);
	rs = resume_new(conn);
	if (!rs)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -ENOMEM,
				     "rdma_connect(%s): session resume: out of memory", conn->host);
	memcpy(rs->token, rep->token, HS_TOKEN_LEN);
	rs->key = key;
	return 0;
}

/* The exchange's id goes (to the reaper: an id that was connected waits
 * there for its DREQ's answer); its events are dropped from here. */
static void drop_id(struct conn_resume *rs)
{
	if (!rs->id)
		return;
	if (rs->conn->dev)
		device_reap_id(rs->conn->dev, rs->id);
	else if (rdma_destroy_id(rs->id))
		ezi_log_warn("rdma_destroy_id (session resume): %s", ez_strerror(errno));
	rs->id = NULL;
}

void resume_stop(struct ez_conn *conn)
{
	struct conn_resume *rs = conn->resume;

	if (!rs)
		return;
	ctx_timer_stop(conn->ctx, &rs->timer);
	ctx_timer_stop(conn->ctx, &rs->window);
	drop_id(rs);
	rs->step = RS_IDLE;
}

void resume_free(struct ez_conn *conn)
{
	if (!conn->resume)
		return;
	resume_stop(conn);
	if (conn->resume->indexed)
		session_index_del(&conn->ctx->sessions, &conn->resume->ix);
	session_route_del(&conn->resume->route);
	free(conn->resume);
	conn->resume = NULL;	/* owner: as above */
}

int resume_test_session(const struct ez_conn *conn, uint8_t token[HS_TOKEN_LEN], uint32_t *epoch)
{
	if (!conn->resume)
		return -ENOENT;
	memcpy(token, conn->resume->token, HS_TOKEN_LEN);
	*epoch = conn->resume->epoch;
	return 0;
}

/* ---- the loss ---------------------------------------------------------- */

static void schedule_dial(struct conn_resume *rs, uint32_t ms)
{
	rs->step = RS_IDLE;
	ctx_timer_start(rs->conn->ctx, &rs->timer, ms);
}

void resume_paths_lost(struct ez_conn *conn, int status)
{
	struct conn_resume *rs = conn->resume;
	uint32_t first;

	if (!rs)
		return;
	conn->stats.sessions_lost++;	/* owner: the session's counts are this file's */
	rs->lost_ns = now_ns();
	rs->lost_status = status;
	rs->attempt = 0;
	rs->last[0] = 0;
	ctx_timer_start(conn->ctx, &rs->window, conn->o.resume_ms);
	ezi_log_warn("connection %s: every path down (%s): the session waits up to %u ms to resume%s",
		     conn->host, ez_strerror(status), conn->o.resume_ms,
		     conn->active ? " (this side dials again)" : " (the peer dials again)");
	if (!conn->active)
		return;
	/* Not before path 0's count is final (its flush). */
	first = resume_backoff_ms(0, random24());
	schedule_dial(rs, first > PATH_LAST_WQE_WAIT_MS ? first : PATH_LAST_WQE_WAIT_MS);
}

static void on_window(struct loop_timer *t)
{
	struct conn_resume *rs = container_of(t, struct conn_resume, window);
	struct ez_conn *conn = rs->conn;

	if (conn_is_ended(conn) || conn->state != CS_RESUMING)
		return;
	if (conn->active)
		conn_fail(conn, -ETIMEDOUT,
			  "session not resumed within resume_ms %u: every path went down (%s); %u dial%s%s%s",
			  conn->o.resume_ms, ez_strerror(rs->lost_status), rs->attempt,
			  rs->attempt == 1 ? "" : "s", rs->last[0] ? ", the last: " : "", rs->last);
	else
		conn_fail(conn, -ETIMEDOUT,
			  "session not resumed within resume_ms %u: every path went down (%s) and the peer did not dial again",
			  conn->o.resume_ms, ez_strerror(rs->lost_status));
}

/* ---- the active side: dials ------------------------------------------- */

static void dial_failed(struct conn_resume *rs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* This dial failed: the next one after the backoff (the window bounds them). */
static void dial_failed(struct conn_resume *rs, const char *fmt, ...)
{
	struct ez_conn *conn = rs->conn;
	uint32_t ms = resume_backoff_ms(rs->attempt, random24()), left;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rs->last, sizeof(rs->last), fmt, ap);
	va_end(ap);
	drop_id(rs);
	/* A dial the window closes on first is not made: the window's timer
	 * ends the session with this one's reason. */
	if (!resume_window_left(rs->lost_ns, now_ns(), conn->o.resume_ms, &left) || left <= ms) {
		ezi_log_info("connection %s: session resume, dial %u: %s; the window closes in %u ms, "
			     "before another", conn->host, rs->attempt, rs->last, left);
		rs->step = RS_IDLE;
		return;
	}
	ezi_log_info("connection %s: session resume, dial %u: %s; the next in %u ms", conn->host,
		     rs->attempt, rs->last, ms);
	schedule_dial(rs, ms);
}

static void dial(struct conn_resume *rs)
{
	struct ez_conn *conn = rs->conn;
	struct sockaddr_storage src, dst;
	const struct sockaddr *la = rdma_get_local_addr(conn->id), *pa = rdma_get_peer_addr(conn->id);

	/* Receives path 0's old QP completed are in its count first. */
	poll_cqs(conn);
	if (conn_is_ended(conn) || conn->state != CS_RESUMING)
		return;
	if (!path_resume_ready(conn, now_ns())) {
		ctx_timer_start(conn->ctx, &rs->timer, 20);
		return;
	}
	/* No CM message while our port is down: a MAD sent then was seen to
	 * break Soft-RoCE's QP1 for good (tests/faults/linkdown-rping.sh).
	 * The dial waits for the port, looked at each RESUME_PORT_POLL_MS. */
	if (device_port_down(conn->dev, conn->port)) {
		snprintf(rs->last, sizeof(rs->last), "device %s port %u is down", conn->dev->name,
			 conn->port);
		ctx_timer_start(conn->ctx, &rs->timer, RESUME_PORT_POLL_MS);
		return;
	}
	drop_id(rs);	/* the last exchange's, kept until now */
	rs->attempt++;
	conn->stats.resume_dials++;	/* owner: as above */
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	memcpy(&src, la, la->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in));
	memcpy(&dst, pa, pa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in));
	/* Any local port: the session's own id still holds its port. */
	if (src.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	else
		((struct sockaddr_in *)&src)->sin_port = 0;
	if (rdma_create_id(conn->ctx->ch, &rs->id, &rs->cm, RDMA_PS_TCP)) {
		rs->id = NULL;
		dial_failed(rs, "rdma_create_id: %s", ez_strerror(errno));
		return;
	}
	rs->step = RS_RESOLVING;
	if (rdma_resolve_addr(rs->id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
			      RESUME_CM_TIMEOUT_MS))
		dial_failed(rs, "rdma_resolve_addr: %s", ez_strerror(errno));
}

/* Route resolved: path 0's new QP, and the request that names it. */
static void send_request(struct conn_resume *rs)
{
	struct ez_conn *conn = rs->conn;
	struct rdma_conn_param p = { 0 };
	struct resume_msg req = { .kind = RESUME_REQUEST };
	const struct auth_key *key = rs->key;
	uint8_t buf[HS_REQ_MAX];
	int n;

	/* The same device (rdma_cm's context for it may be another than the
	 * library's): its PD, CQs and SRQ serve the new QP. */
	if (strcmp(ibv_get_device_name(rs->id->verbs->device), conn->dev->name)) {
		dial_failed(rs, "the address resolved to device %s, the session is on %s",
			    ibv_get_device_name(rs->id->verbs->device), conn->dev->name);
		return;
	}
	if (path_resume_reopen(conn)) {
		dial_failed(rs, "%s", ez_errmsg());
		return;
	}
	rs->psn = random24();
	memcpy(req.token, rs->token, HS_TOKEN_LEN);
	req.epoch = rs->epoch;
	req.count = path_resume_count_of(conn);
	req.psn = rs->psn;
	if (key && resume_req_seal(key, &req, conn_qpn0(conn))) {
		dial_failed(rs, "resume request: no MAC");
		return;
	}
	n = resume_encode(&req, buf, sizeof(buf));
	if (n < 0) {
		dial_failed(rs, "resume request: %s", ez_strerror(n));
		return;
	}
	rs->req = req;
	conn_cm_param_asked(conn, &p, buf, n);
	rs->step = RS_DIALED;
	if (rdma_connect(rs->id, &p))
		dial_failed(rs, "rdma_connect: %s", ez_strerror(errno));
}

/* Both sides: the session is back on a new path 0 (its QP in RTS here,
 * and at the peer: the active side has its reply, the passive side the
 * RTU). The held ops settle on it, the other paths' counts go, and the
 * application may submit again. */
static void resumed(struct conn_resume *rs, uint32_t epoch)
{
	struct ez_conn *conn = rs->conn;
	uint64_t ms = (now_ns() - rs->lost_ns) / 1000000u;

	rs->epoch = epoch;
	rs->step = RS_IDLE;
	ctx_timer_stop(conn->ctx, &rs->timer);
	ctx_timer_stop(conn->ctx, &rs->window);
	path_resume_up(conn);
	/* Already back when a message overtook the RTU (CA_RESUMED). */
	if (conn->state == CS_RESUMING)
		conn_fire(conn, CE_RESUMED, 0);
	conn->stats.resumes++;	/* owner: as above */
	ezi_log_warn("connection %s: session resumed %llu ms after its last path went down (epoch %u%s)",
		     conn->host, (unsigned long long)ms, epoch,
		     conn->active ? ", this side's dials: see resume_dials" : "");
	conn_settle_resumed(conn);
	if (conn_is_ended(conn))
		return;
	/* The other paths' counts, then their rebuild, as after any failure. */
	loop_defer(&conn->ctx->loop, &conn->tell_defer);
	conn_live_start(conn);
	if (conn->cbs.on_send_ready && conn->state == CS_CONNECTED)
		conn->cbs.on_send_ready(conn, conn->arg);
}

static void on_reply(struct conn_resume *rs, const struct cm_event *ev)
{
	struct ez_conn *conn = rs->conn;
	const struct auth_key *key = rs->key;
	struct resume_msg rep;
	char why[EZ_ERRMSG_MAX];
	int ret;

	if (resume_decode(ev->pdata, ev->pdata_len, RESUME_REPLY, &rep, why, sizeof(why))) {
		conn_fail(conn, -EPROTO, "session resume: the listener's reply: %s", why);
		return;
	}
	if (!resume_rep_fits(&rs->req, &rep)) {
		conn_fail(conn, -EPROTO, "session resume: the listener's reply gives epoch %u to a request of epoch %u",
			  rep.epoch, rs->req.epoch);
		return;
	}
	if (resume_rep_check(key, &rs->req, &rep, ev->qp_num)) {
		conn_fail(conn, -EACCES, "session resume: the listener's reply %s",
			  key ? "does not carry a MAC made with the shared secret" :
				"carries a MAC, and this side has no shared secret");
		return;
	}
	ret = path_reconnect(conn, &conn->paths[0], ev->qp_num, rep.psn, rs->psn);
	if (ret) {
		conn_fail(conn, ret, "session resume: %s", ez_errmsg());
		return;
	}
	if (path_resume_count(conn, rep.count)) {
		snprintf(why, sizeof(why), "%s", conn->errmsg);
		conn_fail(conn, -EPROTO, "session resume: %s", why);
		return;
	}
	if (rdma_establish(rs->id)) {
		conn_fail(conn, -errno, "session resume: rdma_establish: %s", ez_strerror(errno));
		return;
	}
	resumed(rs, rep.epoch);
}

static void on_rejected(struct conn_resume *rs, const struct cm_event *ev)
{
	struct ez_conn *conn = rs->conn;
	struct resume_msg m;
	char why[EZ_ERRMSG_MAX];

	if (ev->status == IB_REJ_CONSUMER_DEFINED && resume_is(ev->pdata, ev->pdata_len) &&
	    resume_decode(ev->pdata, ev->pdata_len, RESUME_REJECT, &m, why, sizeof(why)) == 0) {
		if (resume_reason_retry(m.reason)) {
			dial_failed(rs, "the listener: %s (%s)", resume_reason_str(m.reason), m.text);
			return;
		}
		conn_fail(conn, m.reason == RESUME_R_DENIED ? -EACCES : -ECONNRESET,
			  "session resume refused by the listener: %s (%s)", resume_reason_str(m.reason),
			  m.text);
		return;
	}
	if (ev->status == IB_REJ_INVALID_SERVICE_ID)
		dial_failed(rs, "no listener at the address and port");
	else
		dial_failed(rs, "rejected (IB CM reason %d)", ev->status);
}

/* ---- the passive side: a request --------------------------------------- */

void resume_reject(struct rdma_cm_id *id, uint8_t reason, const char *text)
{
	struct resume_msg m = { .kind = RESUME_REJECT, .reason = reason };
	uint8_t buf[RESUME_MAX_LEN];
	size_t len = strlen(text);
	int n;

	if (len > RESUME_TEXT_MAX)
		len = RESUME_TEXT_MAX;
	memcpy(m.text, text, len);
	m.text_len = (uint8_t)len;
	n = resume_encode(&m, buf, sizeof(buf));
	ezi_log_info("listener: refusing a session resume: %s (%s)", resume_reason_str(reason), text);
	if (rdma_reject(id, buf, n > 0 ? (uint8_t)n : 0))
		ezi_log_warn("rdma_reject (session resume): %s", ez_strerror(errno));
	if (rdma_destroy_id(id))
		ezi_log_warn("rdma_destroy_id (session resume): %s", ez_strerror(errno));
}

static int same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

/* The session with this token among the context's passive connections:
 * one short chain of the context's index (session_index.h), not a walk of
 * every connection: a forged token costs what a genuine one does. */
static struct ez_conn *find_session(struct ez_ctx *ctx, const uint8_t *token)
{
	struct session_node *n = session_index_find(&ctx->sessions, token);
	struct ez_conn *c;

	if (!n)
		return NULL;
	c = container_of(n, struct conn_resume, ix)->conn;
	if (c->active || !conn_resumable(c) || conn_is_ended(c) || !c->id)
		return NULL;
	return c;
}

/* The reply, once path 0's old QP is done: our count, a new QP in RTS
 * towards the client's, and path 0's counts the new QP's from here (the
 * client may send on it before our RTU comes). */
static void answer(struct conn_resume *rs)
{
	struct ez_conn *conn = rs->conn;
	const struct auth_key *key = rs->key;
	struct rdma_conn_param p = { 0 };
	struct resume_msg rep = { .kind = RESUME_REPLY };
	uint8_t buf[HS_REP_MAX];
	char why[EZ_ERRMSG_MAX];
	int n, ret;

	poll_cqs(conn);
	if (conn_is_ended(conn) || rs->step != RS_FLUSHING)
		return;
	if (!path_resume_ready(conn, now_ns())) {
		if (now_ns() - rs->step_ns > (uint64_t)RESUME_ANSWER_MAX_MS * 1000000u) {
			struct rdma_cm_id *id = rs->id;

			rs->id = NULL;
			rs->step = RS_IDLE;
			resume_reject(id, RESUME_R_NOT_READY, "this side's old path 0 has not flushed");
			return;
		}
		ctx_timer_start(conn->ctx, &rs->timer, 20);
		return;
	}
	ret = path_resume_reopen(conn);
	rs->psn = random24();
	if (!ret)
		ret = path_reconnect(conn, &conn->paths[0], rs->peer_qpn, rs->req.psn, rs->psn);
	if (ret) {
		struct rdma_cm_id *id = rs->id;

		rs->id = NULL;
		rs->step = RS_IDLE;
		snprintf(why, sizeof(why), "%s", ez_errmsg());
		resume_reject(id, RESUME_R_NOT_READY, why);
		return;
	}
	rep.epoch = rs->req.epoch + 1;
	rep.count = path_resume_count_of(conn);
	rep.psn = rs->psn;
	if (key && resume_rep_seal(key, &rs->req, &rep, conn_qpn0(conn))) {
		conn_fail(conn, -EIO, "session resume: the reply's MAC could not be made");
		return;
	}
	n = resume_encode(&rep, buf, sizeof(buf));
	if (n < 0) {
		conn_fail(conn, n, "session resume: the reply: %s", ez_strerror(n));
		return;
	}
	/* The client's count of our old QP; a false one ends it here. */
	if (path_resume_count(conn, rs->req.count)) {
		snprintf(why, sizeof(why), "%s", conn->errmsg);
		conn_fail(conn, -EPROTO, "session resume: %s", why);
		return;
	}
	rs->rep = rep;
	conn_cm_param(conn, &p, buf, n, conn->acc_rd_dest, conn->acc_rd_init);
	rs->step = RS_ANSWERED;
	rs->step_ns = now_ns();
	if (rdma_accept(rs->id, &p)) {
		conn_fail(conn, -errno, "session resume: rdma_accept: %s", ez_strerror(errno));
		return;
	}
	ctx_timer_start(conn->ctx, &rs->timer, RESUME_RTU_MAX_MS);
}

/* The session's own context (where the listener is, or the worker the
 * listener handed the request to): the request checked against the
 * session, then answered once its old path 0 has flushed. */
static void take_request(struct ez_conn *conn, const struct cm_event *ev,
			 const struct resume_msg *req)
{
	struct conn_resume *rs = conn->resume;
	const struct auth_key *key;
	char why[EZ_ERRMSG_MAX];

	if (req->epoch != rs->epoch) {
		snprintf(why, sizeof(why), "epoch %u, the session's is %u", req->epoch, rs->epoch);
		resume_reject(ev->id, RESUME_R_STALE, why);
		return;
	}
	key = rs->key;
	if (resume_req_check(key, req, ev->qp_num)) {
		resume_reject(ev->id, RESUME_R_DENIED,
			      key ? "no MAC made with the listener's shared secret" :
				    "a MAC, and the session has no shared secret");
		return;
	}
	/* Without a key the token is all there is: only from the session's
	 * own peer address. */
	if (!key && !same_addr(rdma_get_peer_addr(ev->id), rdma_get_peer_addr(conn->id))) {
		resume_reject(ev->id, RESUME_R_DENIED, "from another address than the session's, without a shared secret");
		return;
	}
	if (strcmp(ibv_get_device_name(ev->id->verbs->device), conn->dev->name)) {
		resume_reject(ev->id, RESUME_R_UNKNOWN, "on another device than the session's");
		return;
	}
	/* A newer request supersedes one under way (its client gave up on it). */
	if (rs->step == RS_ANSWERED) {
		resume_reject(ev->id, RESUME_R_NOT_READY, "the session's previous resume is still awaiting its RTU");
		return;
	}
	if (rs->step == RS_FLUSHING) {
		ctx_timer_stop(conn->ctx, &rs->timer);
		resume_reject(rs->id, RESUME_R_NOT_READY, "superseded by a newer request");
		rs->id = NULL;
	}
	/* This side had not seen the loss (it sent nothing that could fail). */
	if (conn->state == CS_CONNECTED)
		path_take_all_down(conn, -ECONNRESET);
	if (conn_is_ended(conn) || conn->state != CS_RESUMING) {
		resume_reject(ev->id, RESUME_R_UNKNOWN, "the session ended");
		return;
	}
	ev->id->context = &rs->cm;
	rs->id = ev->id;
	rs->req = *req;
	rs->peer_qpn = ev->qp_num;
	rs->step = RS_FLUSHING;
	rs->step_ns = now_ns();
	answer(rs);
}

int resume_on_request(struct ez_ctx *ctx, const struct cm_event *ev, const char *busy,
		      uint8_t token[HS_TOKEN_LEN])
{
	struct resume_msg req;
	struct ez_conn *conn;
	char why[EZ_ERRMSG_MAX];

	if (resume_decode(ev->pdata, ev->pdata_len, RESUME_REQUEST, &req, why, sizeof(why))) {
		resume_reject(ev->id, RESUME_R_DENIED, why);
		return 0;
	}
	if (busy) {
		resume_reject(ev->id, RESUME_R_BUSY, busy);
		return 0;
	}
	conn = find_session(ctx, req.token);
	if (!conn && token) {
		memcpy(token, req.token, HS_TOKEN_LEN);
		return -ENOENT;
	}
	if (!conn) {
		resume_reject(ev->id, RESUME_R_UNKNOWN, RESUME_UNKNOWN_TEXT);
		return 0;
	}
	take_request(conn, ev, &req);
	return 0;
}

/* CA_RESUMED: the passive side's new path 0 delivered the client's first
 * message before the RTU (the table is CS_CONNECTED already). */
void resume_on_first_msg(struct ez_conn *conn)
{
	struct conn_resume *rs = conn->resume;

	if (!rs || rs->step != RS_ANSWERED)
		return;
	drop_id(rs);
	resumed(rs, rs->rep.epoch);
}

static void on_established(struct conn_resume *rs)
{
	if (rs->step != RS_ANSWERED)
		return;
	/* The client's id goes at the client's next resume or end; ours now. */
	drop_id(rs);
	resumed(rs, rs->rep.epoch);
}

/* ---- events -------------------------------------------------------------- */

static void on_timer(struct loop_timer *t)
{
	struct conn_resume *rs = container_of(t, struct conn_resume, timer);
	struct ez_conn *conn = rs->conn;

	if (conn_is_ended(conn))
		return;
	if (conn->active && rs->step == RS_IDLE && conn->state == CS_RESUMING)
		dial(rs);
	else if (!conn->active && rs->step == RS_FLUSHING)
		answer(rs);
	else if (!conn->active && rs->step == RS_ANSWERED)
		conn_fail(conn, -ETIMEDOUT, "session resume: the client's RTU did not come within %u ms of the reply",
			  RESUME_RTU_MAX_MS);
}

static void on_cm(struct cm_handler *h, const struct cm_event *ev)
{
	struct conn_resume *rs = container_of(h, struct conn_resume, cm);
	struct ez_conn *conn = rs->conn;

	if (ev->id != rs->id || conn_is_ended(conn))
		return;
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(rs->id, RESUME_CM_TIMEOUT_MS))
			dial_failed(rs, "rdma_resolve_route: %s", ez_strerror(errno));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		send_request(rs);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		if (rs->step == RS_DIALED)
			on_reply(rs, ev);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(rs);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (conn->active)
			on_rejected(rs, ev);
		else if (rs->step == RS_ANSWERED)
			conn_fail(conn, -ECONNRESET, "session resume: the client refused this side's reply");
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (conn->active && conn->state == CS_RESUMING)
			dial_failed(rs, "%s: %s", rdma_event_str(ev->type), ez_strerror(ev->status));
		else if (!conn->active && rs->step == RS_ANSWERED)
			conn_fail(conn, -ECONNRESET, "session resume: %s after this side's reply",
				  rdma_event_str(ev->type));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* The exchange's connection is done with (the peer reaped its id). */
		drop_id(rs);
		break;
	default:
		ezi_log_debug("connection %s: session resume: %s", conn->host, rdma_event_str(ev->type));
		break;
	}
}
