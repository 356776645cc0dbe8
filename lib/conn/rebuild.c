/* rebuild.c: a failed path of an exact-failover connection made again in the background: a new QP pair exchanged on a live path, laddered, and back in the rotation. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "conn_export.h"
#include "conn_fsm.h"
#include "ctx.h"
#include "device/cq.h"
#include "path.h"
#include "rebuild.h"
#include "rndv.h"
#include "sendq.h"
#include "wire/auth.h"
#include "wire/imm.h"

/*
 * The active side drives (wire/settle.h has the messages): once a path is
 * down and its ops settled, a timer makes a new QP for it and sends a
 * REQUEST (the QP and its first PSN) on a live path; the passive side makes
 * its own, brings it to RTS towards ours and answers with a REPLY; the
 * active side brings its QP to RTS and sends READY on the path itself,
 * whose arrival puts the path back on the passive side. A try that fails
 * (no reply, a device error) is tried again later, each wait twice the
 * last. Path 0 is made again as the others are: its new QP takes QP 0's
 * place (path.c), and rdma_cm's id, which never owned a QP, stays the
 * connection's identity (its DREQ still ends the connection).
 *
 * A side that exported regions on the path (ez_conn_export() binds a
 * window to one QP, and the peer's key names the path) keeps it down while
 * any of them stays: the peer's ops with those keys would reach a new QP
 * the window is not bound to, and the responder would refuse them as an
 * access violation. Its ops with them fail with -ENETDOWN instead. The
 * active side does not ask; the passive side answers HELD. Once the last
 * such region is revoked (or its MR deregistered), the next try succeeds.
 */
enum rebuild_step { RB_IDLE, RB_ASKED, RB_OFFERED };

struct rebuild_path {
	uint8_t step;
	uint32_t psn;		/* our new QP's first send PSN */
	uint64_t next_ms;	/* the active side's next try */
	uint64_t asked_ms;	/* its request went out (RB_ASKED), or the peer's came */
	uint32_t wait_ms;	/* the wait before the next try */
	/* The peer's request, handled outside the receive poll. */
	uint8_t req_pending;
	struct path_up req;
	uint32_t rebuilds;	/* times made again */
	uint32_t held;		/* tries held by windows bound to the old QP */
};

struct conn_rebuild {
	struct ez_conn *conn;
	struct loop_timer timer;
	struct loop_defer defer;
	struct rebuild_path p[EZ_MAX_PATHS];
};

static uint64_t now_ms(void)
{
	return loop_now_ns() / 1000000u;
}

static void on_timer(struct loop_timer *t);
static void on_defer(struct loop_defer *d);

static struct conn_rebuild *rebuild_of(struct ez_conn *conn)
{
	struct conn_rebuild *rb = conn->rebuild;

	if (rb)
		return rb;
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	rb->conn = conn;
	rb->timer.fn = on_timer;
	rb->defer.fn = on_defer;
	conn->rebuild = rb;	/* owner: the rebuild state is this file's, made on first use */
	return rb;
}

void rebuild_free(struct ez_conn *conn)
{
	struct conn_rebuild *rb = conn->rebuild;

	if (!rb)
		return;
	ctx_timer_stop(conn->ctx, &rb->timer);
	loop_defer_cancel(&conn->ctx->loop, &rb->defer);
	free(rb);
	conn->rebuild = NULL;	/* owner: as above */
}

uint32_t rebuild_path_count(const struct ez_conn *conn, uint32_t idx)
{
	return conn->rebuild && idx < EZ_MAX_PATHS ? conn->rebuild->p[idx].rebuilds : 0;
}

uint32_t rebuild_path_held(const struct ez_conn *conn, uint32_t idx)
{
	return conn->rebuild && idx < EZ_MAX_PATHS ? conn->rebuild->p[idx].held : 0;
}

static uint32_t random_psn(void)
{
	uint32_t v = 0;

	if (auth_random(&v, sizeof(v)))
		v = (uint32_t)loop_now_ns();
	return v & 0xffffffu;
}

static int send_step(struct ez_conn *conn, struct conn_path *via, unsigned int idx,
		     const struct path_up *u)
{
	uint8_t b[PATH_UP_LEN];

	path_up_encode(u, b);
	return conn_post_ctrl(conn, NULL, OP_PATH_UP, via,
			      IMM_CREDIT_ONLY | IMM_PATH_UP | (uint32_t)idx << IMM_PATH_SHIFT, b,
			      sizeof(b));
}

static void try_failed(struct ez_conn *conn, struct rebuild_path *r, unsigned int idx,
		       const char *why)
{
	r->step = RB_IDLE;
	r->wait_ms = r->wait_ms ? r->wait_ms * 2 : REBUILD_FIRST_MS;
	if (r->wait_ms > REBUILD_MAX_MS)
		r->wait_ms = REBUILD_MAX_MS;
	r->next_ms = now_ms() + r->wait_ms;
	ezi_log_warn("connection %s: path %u not made again: %s; next try in %u ms", conn->host, idx,
		     why, r->wait_ms);
}

/* The active side's try for path p: a new QP and a request for the peer's. */
static void ask(struct ez_conn *conn, struct conn_rebuild *rb, struct conn_path *p)
{
	struct rebuild_path *r = &rb->p[p->idx];
	struct path_up u = { .step = PATH_UP_REQUEST };
	uint32_t held;
	int ret;

	/* Receives the old QP completed are counted (and dropped) before it goes. */
	if (conn->rcq)
		cq_poll(conn->rcq);
	if (conn_is_ended(conn) || !path_can_reopen(conn, p))
		return;
	held = conn_exports_on_path(conn, p->idx);
	if (held) {
		char why[160];

		r->held++;
		snprintf(why, sizeof(why),
			 "%u region(s) this side exported are bound to its old QP (ez_conn_revoke() them to let it come back)",
			 held);
		try_failed(conn, r, p->idx, why);
		return;
	}
	if (path_reopen(conn, p)) {
		try_failed(conn, r, p->idx, ez_errmsg());
		return;
	}
	r->psn = random_psn();
	u.qpn = p->qpn;
	u.psn = r->psn;
	ret = send_step(conn, path_pick(conn), p->idx, &u);
	if (ret) {
		try_failed(conn, r, p->idx, ez_strerror(ret));
		return;
	}
	r->step = RB_ASKED;
	r->asked_ms = now_ms();
}

static int any_down(const struct ez_conn *conn)
{
	for (uint32_t i = 0; i < conn->npaths; i++)
		if (!conn->paths[i].live)
			return 1;
	return 0;
}

static void on_timer(struct loop_timer *t)
{
	struct conn_rebuild *rb = container_of(t, struct conn_rebuild, timer);
	struct ez_conn *conn = rb->conn;
	uint64_t now = now_ms();

	if (conn_is_ended(conn) || conn->state != CS_CONNECTED)
		return;
	for (uint32_t i = 0; i < conn->npaths && !conn_is_ended(conn); i++) {
		struct conn_path *p = &conn->paths[i];
		struct rebuild_path *r = &rb->p[i];

		if (p->live)
			continue;
		if (r->step == RB_ASKED && now - r->asked_ms >= REBUILD_REPLY_MS)
			try_failed(conn, r, i, "the peer did not answer the request");
		if (r->step == RB_IDLE && now >= r->next_ms && path_can_reopen(conn, p))
			ask(conn, rb, p);
	}
	if (!conn_is_ended(conn) && any_down(conn))
		ctx_timer_start(conn->ctx, &rb->timer, REBUILD_FIRST_MS);
}

void rebuild_arm(struct ez_conn *conn)
{
	struct conn_rebuild *rb;

	if (!conn->paths_exact || !conn->active || !conn->ladder || conn_is_ended(conn))
		return;
	rb = rebuild_of(conn);
	if (!rb) {
		ezi_log_warn("connection %s: failed paths will not be made again: out of memory",
			     conn->host);
		return;
	}
	for (uint32_t i = 0; i < conn->npaths; i++)
		if (!conn->paths[i].live && rb->p[i].step == RB_IDLE && !rb->p[i].next_ms) {
			rb->p[i].wait_ms = REBUILD_FIRST_MS;
			rb->p[i].next_ms = now_ms() + REBUILD_FIRST_MS;
		}
	if (!loop_timer_armed(&rb->timer))
		ctx_timer_start(conn->ctx, &rb->timer, REBUILD_FIRST_MS);
}

/* The path carries traffic again, on either side. */
static void came_back(struct ez_conn *conn, struct conn_rebuild *rb, struct conn_path *p)
{
	struct rebuild_path *r = &rb->p[p->idx];

	conn_rndv_path_reset(conn, p->idx);
	path_up(conn, p);
	r->step = RB_IDLE;
	r->wait_ms = 0;
	r->next_ms = 0;
	r->rebuilds++;
	/* Remote access as the other paths have it now (exports since). */
	if (conn_access_apply(conn))
		conn_fail(conn, -EIO, "path %u made again: %s", p->idx, ez_errmsg());
}

/* The passive side cannot make path idx again while windows it exported
 * are bound to the old QP: it says so, and the peer asks again later. */
static void answer_held(struct ez_conn *conn, struct rebuild_path *r, unsigned int idx,
			uint32_t held)
{
	struct path_up u = { .step = PATH_UP_HELD, .psn = held > 0xffffffu ? 0xffffffu : held };
	int ret;

	r->held++;
	ezi_log_warn("connection %s: path %u stays down: %u region(s) this side exported are bound to its old QP (ez_conn_revoke() them to let it come back)",
		     conn->host, idx, held);
	ret = send_step(conn, path_pick(conn), idx, &u);
	if (ret)
		ezi_log_warn("connection %s: path %u: answer not sent: %s", conn->host, idx,
			     ez_strerror(ret));
}

/* The passive side: the peer's request, outside the receive poll (the old
 * QP goes, and its receives are polled first). */
static void answer(struct ez_conn *conn, struct conn_rebuild *rb, unsigned int idx)
{
	struct conn_path *p = &conn->paths[idx];
	struct rebuild_path *r = &rb->p[idx];
	struct path_up u = { .step = PATH_UP_REPLY };
	uint32_t held;
	int ret;

	r->req_pending = 0;
	if (conn->rcq)
		cq_poll(conn->rcq);
	if (conn_is_ended(conn))
		return;
	/* Not ready yet (its ops still settling): the peer asks again later. */
	if (!path_can_reopen(conn, p))
		return;
	held = conn_exports_on_path(conn, idx);
	if (held) {
		answer_held(conn, r, idx, held);
		return;
	}
	r->psn = random_psn();
	ret = path_reopen(conn, p);
	if (!ret)
		ret = path_reconnect(conn, p, r->req.qpn, r->req.psn, r->psn);
	if (ret) {
		ezi_log_warn("connection %s: path %u not made again: %s", conn->host, idx, ez_errmsg());
		return;
	}
	u.qpn = p->qpn;
	u.psn = r->psn;
	ret = send_step(conn, path_pick(conn), idx, &u);
	if (ret) {
		ezi_log_warn("connection %s: path %u: reply not sent: %s", conn->host, idx,
			     ez_strerror(ret));
		return;
	}
	r->step = RB_OFFERED;
}

static void on_defer(struct loop_defer *d)
{
	struct conn_rebuild *rb = container_of(d, struct conn_rebuild, defer);
	struct ez_conn *conn = rb->conn;

	for (uint32_t i = 0; i < conn->npaths && !conn_is_ended(conn); i++)
		if (rb->p[i].req_pending)
			answer(conn, rb, i);
}

void rebuild_on_msg(struct ez_conn *conn, unsigned int idx, const uint8_t bytes[PATH_UP_LEN],
		    uint32_t qpn)
{
	struct conn_rebuild *rb = rebuild_of(conn);
	struct conn_path *p = &conn->paths[idx];
	struct rebuild_path *r;
	struct path_up u;
	uint64_t now = now_ms();

	if (!rb) {
		conn_fail(conn, -ENOMEM, "path %u rebuild: out of memory", idx);
		return;
	}
	r = &rb->p[idx];
	if (path_up_decode(bytes, &u)) {
		conn_fail(conn, -EPROTO, "peer's path rebuild message for path %u: step %u, QP %u, PSN %u: not one easyrdma sends",
			  idx, u.step, u.qpn, u.psn);
		return;
	}
	switch (u.step) {
	case PATH_UP_REQUEST:
		if (conn->active || p->live) {
			conn_fail(conn, -EPROTO, "peer asked to make path %u again, which %s",
				  idx, conn->active ? "only this side asks" : "is live");
			return;
		}
		if (r->asked_ms && now - r->asked_ms < REBUILD_MIN_GAP_MS) {
			conn_fail(conn, -EPROTO, "peer asked to make path %u again %llu ms after its last request (at least %u ms apart)",
				  idx, (unsigned long long)(now - r->asked_ms), REBUILD_MIN_GAP_MS);
			return;
		}
		r->asked_ms = now;
		r->req = u;
		r->req_pending = 1;
		loop_defer(&conn->ctx->loop, &rb->defer);
		return;
	case PATH_UP_REPLY:
		if (!conn->active || r->step != RB_ASKED || p->live) {
			conn_fail(conn, -EPROTO, "peer answered a rebuild of path %u this side did not ask for",
				  idx);
			return;
		}
		if (path_reconnect(conn, p, u.qpn, u.psn, r->psn)) {
			try_failed(conn, r, idx, ez_errmsg());
			return;
		}
		came_back(conn, rb, p);
		/* The path's first message proves it to the peer. */
		u = (struct path_up){ .step = PATH_UP_READY };
		if (send_step(conn, p, idx, &u))
			conn_fail(conn, -EIO, "path %u made again: its first message not sent", idx);
		return;
	case PATH_UP_HELD:
		if (!conn->active || r->step != RB_ASKED || p->live) {
			conn_fail(conn, -EPROTO, "peer held a rebuild of path %u this side did not ask for",
				  idx);
			return;
		}
		{
			char why[128];

			r->held++;
			snprintf(why, sizeof(why),
				 "the peer holds it: %u region(s) it exported are bound to its old QP",
				 u.psn);
			try_failed(conn, r, idx, why);
		}
		return;
	case PATH_UP_READY:
		if (conn->active || r->step != RB_OFFERED || qpn != p->qpn) {
			conn_fail(conn, -EPROTO, "peer said path %u is ready, which this side did not offer",
				  idx);
			return;
		}
		came_back(conn, rb, p);
		return;
	}
}
