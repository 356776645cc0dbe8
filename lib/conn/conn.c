/* conn.c: ez_connect/ez_accept, the QP the library creates and ladders, the CM state machine, close and teardown. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn_types.h"
#include "conn_handle.h"
#include "conn_qp.h"
#include "msg.h"
#include "conn_auth.h"
#include "conn_export.h"
#include "staging.h"
#include "conn_pd.h"
#include "keepalive.h"
#include "peer_penalty.h"
#include "device/cq.h"
#include "device/device.h"
#include "device/mr.h"
#include "wire/flow.h"
#include "wire/addr.h"
#include "wire/bye.h"
#include "listener.h"
#include "base/abi.h"
#include "base/log.h"
#include "loop/lookup.h"
#include "wire/opts.h"
#include "path.h"
#include "rebuild.h"
#include "resume.h"
#include "rndv.h"
#include "pool.h"
#include "sendq.h"
#include "srqpool/srqpool.h"

/* Where the device does not send IBV_EVENT_QP_LAST_WQE_REACHED (Soft-RoCE),
 * a QP on a shared SRQ is destroyed this long after it entered ERR. */
#define DRAIN_FALLBACK_MS 100
/* How long a closing side waits for its goodbye message to be acked. */
#define BYE_WAIT_MS 100

/* A passive connection's private pool until it is established (keyed:
 * proved): enough for the proof and a first few messages (3 credits). */
#define CONN_PENDING_RECV 4


static void conn_end(struct ez_conn *conn, int status);
static void conn_on_cm(struct cm_handler *h, const struct cm_event *ev);
static void on_accept_step(struct loop_defer *d);
static int ended_in_accept(const struct ez_conn *conn);




static void conn_free(struct ez_conn *conn)
{
	struct ez_ctx *ctx = conn->ctx;

	ctx_timer_stop(ctx, &conn->connect_timer);
	ctx_timer_stop(ctx, &conn->drain_timer);
	loop_defer_cancel(&ctx->loop, &conn->finish_defer);
	loop_defer_cancel(&ctx->loop, &conn->step_defer);
	ctx_timer_stop(ctx, &conn->bye_timer);
	conn_live_stop(conn);
	rebuild_free(conn);
	resume_free(conn);
	conn_auth_free(conn);
	conn_exports_free(conn);
	conn_recv_unpark(conn);
	listener_hs_leave(&conn->pend);
	staging_leave(conn);
	bigrecv_leave(conn);
	if (conn->dev)
		conn_unqueue_kick(conn);
	/* Its registrations on its own PD go before the pool that holds it. */
	conn_exports_drop(conn);
	conn_pd_close(conn);
	/* A private pool lives as long as the handle; buffers the application
	 * still holds keep it as an orphan of the context, destroyed once they
	 * are back (pool_reap: here, at the next close, or by ez_ctx_free). */
	if (conn->own_pool && conn->pool && pool_destroy(conn->pool))
		recvbufs_orphan(conn, conn->pool);
	recvbufs_give(conn);
	pool_reap(ctx);
	if (conn->prev)
		conn->prev->next = conn->next;
	else
		ctx->conns = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	ctx->nconns--;
	path_free(conn);
	/* Not free(): the application may call with the handle again. */
	conn_retire(conn);
}

/* An ez_connect() is no longer in flight once on_connect runs. */
static void connect_reported(struct ez_conn *conn)
{
	if (conn->active)
		conn->ctx->nconnecting--;
}

/* CA_REPORT_UP: the connection is established. */
static void report_up(struct ez_conn *conn)
{
	ctx_timer_stop(conn->ctx, &conn->connect_timer);
	listener_hs_leave(&conn->pend);
	connect_reported(conn);
	conn->errmsg[0] = '\0';
	/* Shared MRs registered while it was being set up. */
	if (conn_access_apply(conn))
		ezi_log_err("connection %s: %s", conn->host, ez_errmsg());
	conn_live_start(conn);
	if (conn->cbs.on_connect)
		conn->cbs.on_connect(conn, 0, conn->arg);
	if (conn->state == CS_CONNECTED)
		conn_kick(conn);
}

/* CA_END: what every end does first, from whichever live state. */
static void mark_end(struct ez_conn *conn, enum conn_state from, int status)
{
	conn->ended_from = from;
	conn->end_status = status;
	if (ended_in_accept(conn))
		conn->ctx->naccepting--;
	lookup_abandon(conn->lookup);
	conn->lookup = NULL;
	ctx_timer_stop(conn->ctx, &conn->connect_timer);
	loop_defer_cancel(&conn->ctx->loop, &conn->step_defer);
	listener_hs_leave(&conn->pend);
	conn_live_stop(conn);
	conn_exports_end(conn);
	conn_recv_unpark(conn);
}

static int was_connected(const struct ez_conn *conn)
{
	return conn_state_cm_connected(conn->ended_from);
}

/* An id that was CM-connected may wait in rdma_destroy_id() for the DREP
 * of its DREQ (ours from the teardown, or the one the destroy sends), which
 * a vanished peer never sends: ~50 s on Soft-RoCE. It goes to the context's
 * reaper thread. One that never connected sends at most a REJ and waits on
 * nothing: destroyed here, so its resources go at once. */
static void conn_destroy_id(struct ez_conn *conn)
{
	if (was_connected(conn) && conn->dev)
		device_reap_id(conn->dev, conn->id);
	else if (rdma_destroy_id(conn->id))
		ezi_log_warn("rdma_destroy_id: %s", ez_strerror(errno));
}

/* Its QPs' CQs: the sends' and the pool's (the same CQ, often). */
static void conn_poll_cqs(struct ez_conn *conn)
{
	cq_poll(conn->cqr.cq);
	if (conn->rcq != conn->cqr.cq)
		cq_poll(conn->rcq);
}

/* CA_FINISH, from the deferred work: never inside the application's call
 * or a CQ poll. Destroys what the connection holds, then the final callback. */
static void release_and_report(struct ez_conn *conn)
{
	/* Completions of this QP still in its CQs point at its ops and
	 * buffers: dispatch them while everything is alive. */
	conn_poll_cqs(conn);
	conn_cancel_pending(conn);
	/* A bound type-2 window holds its QP: freed before the QPs. */
	conn_exports_drop(conn);
	/* A receive flushed between that poll and the destroy (Soft-RoCE
	 * leaves it in the CQ) goes back to the pool while it is attached. */
	if (path_destroy(conn))
		conn_poll_cqs(conn);
	if (conn->pool_attached) {
		srqpool_detach(conn->pool, &conn->acct);
		conn->pool_attached = 0;
	}
	conn_ops_fini(conn);
	/* Its QPs are gone and polled: nothing of it can complete now. */
	if (conn->cqr.cq)
		device_cq_unclaim(conn->dev, &conn->cqr);
	conn->rcq = NULL;
	if (conn->id) {
		/* The port is asked again, not remembered from the teardown: it
		 * can go down after the teardown sent its DREQ (rxe fails the
		 * sends before it marks the port down), and rdma_destroy_id()
		 * would then block the loop until the CM gives up on that DREQ
		 * (50 s each, seen in tests/faults/linkdown). */
		if (was_connected(conn) && conn->dev && device_port_down(conn->dev, conn->port))
			device_park_id(conn->dev, conn->port, conn->id);
		else
			conn_destroy_id(conn);
		conn->id = NULL;
	}
	/* Exactly one final callback: on_connect for a connection that never
	 * came up (the table reports up only from CS_CONNECTED's entry), else
	 * on_disconnect (a session that was resuming came up before). */
	if (conn->ended_from != CS_CONNECTED && conn->ended_from != CS_RESUMING) {
		connect_reported(conn);
		if (conn->cbs.on_connect)
			conn->cbs.on_connect(conn, conn->end_status ? conn->end_status : -ECANCELED,
					     conn->arg);
	} else if (conn->cbs.on_disconnect) {
		conn->cbs.on_disconnect(conn, conn->end_status, conn->arg);
	}
	conn_fire(conn, CE_REPORTED, 0);
}

static void on_defer(struct loop_defer *d)
{
	struct ez_conn *conn = container_of(d, struct ez_conn, finish_defer);
	struct ez_ctx *ctx = conn->ctx;	/* conn may be freed by the finish */
	uint64_t t = loop_now_ns();

	conn_fire(conn, CE_FINISH, 0);
	ctx_note_step(ctx, CTX_STEP_FINISH, t);
}


static void on_drain_timer(struct loop_timer *t)
{
	struct ez_conn *conn = container_of(t, struct ez_conn, drain_timer);

	conn->srq_drained = 1;
	ezi_log_debug("QP %u: no IBV_EVENT_QP_LAST_WQE_REACHED after %d ms; %d sends not flushed yet",
		      conn_qpn0(conn), DRAIN_FALLBACK_MS, conn_sq_posted(conn));
	conn_drain_check(conn);
}



/* A request this side took but never answered is refused with why (the
 * peer's on_connect reads "rejected by peer: accept failed: ..."). */
static void accept_refuse(struct ez_conn *conn)
{
	char why[EZ_ERRMSG_MAX + 16];
	struct hs_msg m = { .kind = HS_REJ };
	uint8_t rej[HS_REJ_MAX];
	int n;

	snprintf(why, sizeof(why), "accept failed: %s",
		 conn->errmsg[0] ? conn->errmsg : "the connection was closed before its reply");
	m.user_len = (uint8_t)(strlen(why) < hs_user_max(HS_REJ) ? strlen(why) :
			       hs_user_max(HS_REJ));
	memcpy(m.user, why, m.user_len);
	n = hs_encode(&m, rej, sizeof(rej));
	/* Fails when the peer gave up first (nothing to answer). */
	if (rdma_reject(conn->id, rej, n > 0 ? (uint8_t)n : 0))
		ezi_log_debug("rdma_reject: %s", ez_strerror(errno));
}

static int ended_in_accept(const struct ez_conn *conn)
{
	return conn->ended_from == CS_ACCEPT_POOL || conn->ended_from == CS_ACCEPT_QP ||
	       conn->ended_from == CS_ACCEPT_REPLY;
}

/* CA_TEARDOWN. The QP enters ERR here: rdma_disconnect() only does that
 * for a QP that rdma_cm created. The flushed completions drain before the
 * finish. */
static void teardown(struct ez_conn *conn)
{
	ctx_timer_stop(conn->ctx, &conn->bye_timer);
	/* A resume under way goes with it. */
	resume_stop(conn);
	/* The regions exported to it are unreachable from here on. */
	conn_exports_drop(conn);
	/* Only into ERR: on a live QP the seal would reach the peer. */
	if (path_first_to_err(conn) == 0)
		conn_seal(conn);
	path_teardown(conn);
	/* An accept that ended between its steps has not answered the peer. */
	if (conn->id && ended_in_accept(conn))
		accept_refuse(conn);
	/* No DREQ while the port is down: the finish parks the id. */
	if (conn->id && was_connected(conn) && conn->dev &&
	    !device_port_down(conn->dev, conn->port))
		rdma_disconnect(conn->id);
	/* A private pool's SRQ serves this QP alone and is freed with the
	 * handle: a receive the QP took from it and never completed goes with
	 * it, so only the flushed sends are waited for. */
	if (conn_qp0(conn) && conn->reached_rtr && !conn->own_pool && !conn->srq_drained)
		ctx_timer_start(conn->ctx, &conn->drain_timer, DRAIN_FALLBACK_MS);
	else
		conn->srq_drained = 1;
	conn_drain_check(conn);
}

static void on_bye_timer(struct loop_timer *t)
{
	conn_fire(container_of(t, struct ez_conn, bye_timer), CE_BYE_DONE, 0);
}

/* Ends a live connection. A close by the application first sends a goodbye
 * (so the peer can tell it from a process that died: both reach it as a CM
 * disconnect), posted behind the work already on the send queue; the
 * teardown follows its completion. */
static void conn_end(struct ez_conn *conn, int status)
{
	if (conn_is_ended(conn))
		return;
	if (conn->state == CS_CONNECTED && conn->app_closed && !status && conn_qp0(conn)) {
		/* What the application submitted before closing goes out
		 * before the goodbye, even when a completion batch had held it
		 * back. */
		conn_flush_kick(conn);
		if (conn_is_ended(conn))	/* a refused post ended it */
			return;
		if (conn_post_bye(conn) == 0) {
			conn_fire(conn, CE_END_BYE, 0);
			return;
		}
	}
	conn_fire(conn, CE_END, status);
}

/* The resources conn_setup() held back, taken as the connection comes up. */
static int take_full(struct ez_conn *conn)
{
	int ret;

	if (conn->held_cq) {
		/* Promised at setup on the QP's CQ: it cannot move. */
		ret = device_cq_take(conn->dev, &conn->cqr, conn->held_cq);
		if (ret)
			return ret;
		conn->held_cq = 0;
	}
	if (conn->held_recv) {
		ret = pool_grow_to(conn->pool, conn->held_recv);
		if (ret)
			return ret;
		conn->held_recv = 0;
	}
	return 0;
}

/* The application's WRs on a send queue (and their completions): its
 * window of send_depth ops, and the silent sends that hold none (msg.c). */
static uint32_t send_wrs(const struct ez_conn *conn)
{
	return conn->sq.nops + (conn->sq.sends_silent ? CONN_UNSIG_SPARES : 0);
}

/* What ez_send() posts straight from the caller's bytes: inline on this
 * QP, within the op's inline copy, and a message both sides take. Both
 * sides' limits are known by the time the connection comes up. */
/* conn_fire()'s row, carried out: the one place a connection's state is
 * written, and (through report_up and release_and_report) the one way to
 * the application's on_connect and on_disconnect. */
static void take_transition(struct ez_conn *conn, const struct conn_fsm_row *row, int status)
{
	enum conn_state from = conn->state;
	unsigned int actions = row->actions;

	/* A connection comes up only with its full resources: failing to get
	 * them ends it from the state it is in (on_connect gets the error). */
	if ((actions & CA_REPORT_UP) && (conn->held_cq || conn->held_recv)) {
		int ret = take_full(conn);

		if (ret) {
			conn_fail(conn, ret, "%s(%s): the established connection's resources: %s",
				  conn->step, conn->host, ez_errmsg());
			return;
		}
	}
	if (actions & CA_REPORT_UP)
		conn_sq_up(conn);
	conn->state = row->next;
	if (actions & CA_END)
		mark_end(conn, from, status);
	if (actions & CA_REPORT_UP)
		report_up(conn);
	if (actions & CA_CLOSE)
		conn_end(conn, 0);
	if (actions & CA_BYE_TIMER)
		ctx_timer_start(conn->ctx, &conn->bye_timer, BYE_WAIT_MS);
	if (actions & CA_TEARDOWN)
		teardown(conn);
	if (actions & CA_DEFER_STEP)
		loop_defer(&conn->ctx->loop, &conn->step_defer);
	if (actions & CA_RESUME)
		resume_paths_lost(conn, status);
	if (actions & CA_RESUMED)
		resume_on_first_msg(conn);
	if (actions & CA_DEFER_FINISH)
		loop_defer(&conn->ctx->loop, &conn->finish_defer);
	if (actions & CA_FINISH)
		release_and_report(conn);
	if ((actions & CA_FREE_IF_CLOSED) && conn->app_closed)
		conn_free(conn);
	if (actions & CA_FREE)
		conn_free(conn);
}

static int conn_fail_ret(struct ez_conn *conn, int err)
{
	/* ezi_fail() put the message in the thread; the connection keeps it. */
	snprintf(conn->errmsg, sizeof(conn->errmsg), "%s", ez_errmsg());
	return err;
}

/* A connect deadline is the peer's and the network's, not our loop's: while
 * CM events wait for this context (a burst of connections handled a bounded
 * batch per pass), the answer may be among them, so the deadline waits for
 * them a step at a time, at most once more the timeout. */
#define CONNECT_GRACE_STEP_MS 20

static int connect_deadline_waits(struct ez_conn *conn)
{
	if (conn->connect_grace_ms >= conn->o.connect_timeout_ms || !ctx_cm_behind(conn->ctx))
		return 0;
	conn->connect_grace_ms += CONNECT_GRACE_STEP_MS;
	ctx_timer_start(conn->ctx, &conn->connect_timer, CONNECT_GRACE_STEP_MS);
	return 1;
}

static void on_connect_timeout(struct loop_timer *t)
{
	struct ez_conn *conn = container_of(t, struct ez_conn, connect_timer);

	if (connect_deadline_waits(conn))
		return;
	if (conn->state == CS_AWAITING_PROOF) {
		conn_auth_refuse(conn, "ez_accept(%s): no shared-secret proof from the peer within %u ms",
				 conn->host, conn->o.connect_timeout_ms);
		return;
	}
	if (conn->state == CS_AUTHENTICATING) {
		conn_fail(conn, -ETIMEDOUT, "rdma_connect(%s): no shared-secret verdict from the listener within %u ms",
			  conn->host, conn->o.connect_timeout_ms);
		return;
	}
	conn_fail(conn, -ETIMEDOUT, "%s(%s): connection not established after %u ms: waiting for %s",
		  conn->step, conn->host, conn->o.connect_timeout_ms + conn->connect_grace_ms,
		  conn_state_awaits(conn->state));
}

/* The listener's handshake deadline passed before this accepted
 * connection was established (keyed: proved). */
static void on_handshake_deadline(struct listener_hs *h)
{
	struct ez_conn *conn = container_of(h, struct ez_conn, pend);

	listener_hs_leave(h);
	if (conn->state == CS_AWAITING_PROOF) {
		conn_auth_refuse(conn, "ez_accept(%s): no shared-secret proof from the peer within %u ms (the listener's handshake_timeout_ms)",
				 conn->host, h->timeout_ms);
		return;
	}
	conn_fail(conn, -ETIMEDOUT, "ez_accept(%s): handshake not completed within %u ms (the listener's handshake_timeout_ms): waiting for %s",
		  conn->host, h->timeout_ms, conn_state_awaits(conn->state));
}

static struct ez_conn *conn_alloc(struct ez_ctx *ctx, const struct ez_conn_opts *opts, int accept,
				  const struct ez_conn_cbs *cbs, void *arg, int *err)
{
	struct ez_conn *conn = calloc(1, sizeof(*conn));

	if (!conn) {
		*err = ezi_fail(-ENOMEM, "connection: out of memory");
		return NULL;
	}
	*err = conn_opts_resolve(opts, accept, &conn->o);
	if (!*err)
		*err = path_alloc(conn);
	if (*err) {
		free(conn);
		return NULL;
	}
	if (conn->o.private_data_len)
		memcpy(conn->pdata, conn->o.private_data, conn->o.private_data_len);
	conn->o.private_data = NULL;	/* the caller's buffer may go away */
	if (conn->o.auth_key_len && conn_auth_new(conn, conn->o.auth_key, conn->o.auth_key_len)) {
		*err = ezi_fail(-ENOMEM, "connection: out of memory");
		path_free(conn);
		free(conn);
		return NULL;
	}
	conn->o.auth_key = NULL;	/* kept in conn->auth, wiped when done */
	conn->ctx = ctx;
	*err = conn_exports_take(conn, &conn->o);
	if (*err) {
		conn_auth_free(conn);
		path_free(conn);
		free(conn);
		return NULL;
	}
	conn->o.exports = NULL;		/* copied: the caller's array may go away */
	conn->cm.on_event = conn_on_cm;
	conn->fsm_run = take_transition;
	conn->arg = arg;
	if (cbs)
		conn->cbs = *cbs;
	conn->step = "ez_connect";
	conn->connect_timer.fn = on_connect_timeout;
	conn->drain_timer.fn = on_drain_timer;
	conn->finish_defer.fn = on_defer;
	conn->step_defer.fn = on_accept_step;
	conn->bye_timer.fn = on_bye_timer;
	conn->next = ctx->conns;
	if (ctx->conns)
		ctx->conns->prev = conn;
	ctx->conns = conn;
	ctx->nconns++;
	return conn;
}

/* Pool, send ops and buffers and CQ room, on conn->dev. */
static int conn_setup_pool(struct ez_conn *conn)
{
	struct device *dev = conn->dev;
	int ret, n;
	/* Set by the calls below on success; initialized because LTO inlines
	 * them and GCC then cannot see that (-Wmaybe-uninitialized). */
	uint32_t buf_size = 0, credits = 0;
	struct device *pdev = NULL;

	if (conn->o.srqpool) {
		ret = conn_pd_choose(conn, dev);
		if (ret < 0)
			return conn_fail_ret(conn, ret);
		ret = pool_lookup(conn->o.srqpool, &pdev, &buf_size, &conn->rcq);
		if (ret)
			return conn_fail_ret(conn, ret);
		if (pdev != dev)
			return conn_fail_ret(conn, ezi_fail(-EINVAL,
				"srqpool is on device %s, the connection resolved to %s",
				pdev->name, dev->name));
		conn->pool = conn->o.srqpool;
	} else {
		/* Messages above CONN_EAGER_MAX come by rendezvous into the
		 * pool's large memory, not into recv_depth buffers of their size. */
		struct ez_srqpool_opts po = {
			.buf_size = conn->o.max_msg_size < CONN_EAGER_MAX ? conn->o.max_msg_size :
				    CONN_EAGER_MAX,
			.nbufs = conn->o.recv_depth,
		};

		/* On a crowded listener (a flood of half-open requests, or a
		 * burst), until the peer has completed the handshake the pool
		 * is a few buffers (16 KiB pinned, not recv_depth of them; the
		 * peer's first grant 3 credits); it grows as the connection
		 * comes up, where the SRQ can grow. */
		if (!conn->active && listener_hs_crowded(&conn->pend) &&
		    conn->o.recv_depth > CONN_PENDING_RECV &&
		    (dev->attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
			po.nbufs = CONN_PENDING_RECV;
			conn->held_recv = conn->o.recv_depth;
		}
		ret = conn_pd_choose(conn, dev);
		if (ret > 0)
			ret = conn_pd_open(conn, dev);
		if (ret)
			return conn_fail_ret(conn, ret);
		/* The growth's CQ room is promised now: on the pool's CQ, which
		 * its QP cannot leave. */
		ret = pool_create(conn->ctx, &conn->ctx->owner, dev, conn_pd_of(conn), &po,
				  conn->held_recv, &conn->pool);
		if (ret)
			return conn_fail_ret(conn, ret);
		if (conn->own_pd) {
			srqpool_adopt_pd(conn->pool);
			conn_pd_handed_to_pool(conn);
		}
		conn->own_pool = 1;
		ret = pool_lookup(conn->pool, &pdev, &buf_size, &conn->rcq);
		if (ret)
			return conn_fail_ret(conn, ret);
	}
	/* The pool decides the first grant (its share of the pool, within the
	 * buffers posted) and keeps receives back for credit messages. */
	conn->acct.kick = conn_credit_kick;
	conn->acct.big_kick = conn_rndv_kick;
	ret = srqpool_attach(conn->pool, &conn->acct, conn->own_pool, &credits);
	if (ret)
		return conn_fail_ret(conn, ezi_fail(ret, "%s", srqpool_errmsg(conn->pool)));
	conn->pool_attached = 1;
	conn->my_credits = credits;
	rx_note_granted(&conn->rxt, credits);
	/* The largest message this side takes: the option, within the pool's
	 * buffers (a shared pool's may be larger, and are not the peer's to
	 * fill). Advertised in the handshake and enforced on receive. */
	conn->my_max_msg = buf_size < conn->o.max_msg_size ? buf_size : conn->o.max_msg_size;

	ret = conn_ops_init(conn);
	if (ret)
		return ret;
	/* send_depth ops and the silent sends (send_wrs()), a credit
	 * message, a goodbye per path and, with several paths, a notice per
	 * path that fails but the last; a keepalive probe and answer
	 * (keepalive.h). */
	n = (int)send_wrs(conn) + 2 * (int)conn->npaths + CONN_LIVE_WRS + RNDV_SLOTS;
	/* Not yet established, the passive side sends only its verdict or
	 * refusal and its goodbyes; the data path's room is promised on the
	 * same CQ and taken as it comes up (take_full). */
	if (!conn->active)
		conn->held_cq = (int)conn->o.send_depth - 1;
	ret = device_cq_claim(dev, &conn->cqr, n - conn->held_cq, conn->held_cq);
	if (ret)
		return conn_fail_ret(conn, ret);
	return 0;
}

/* The QP (in INIT) on the pool and CQ room conn_setup_pool() made. */
static int conn_setup_qp(struct ez_conn *conn)
{
	struct device *dev = conn->dev;
	struct conn_path *p0;
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a;
	int mask, ret;

	ia.qp_context = conn;
	ia.send_cq = conn->cqr.cq->cq;
	/* The pool's CQ, whatever CQ the sends use (pool.c says why). */
	ia.recv_cq = conn->rcq->cq;
	ia.srq = srqpool_srq(conn->pool);
	ia.qp_type = IBV_QPT_RC;
	/* Sends and writes are signalled selectively (msg.c). */
	ia.sq_sig_all = 0;
	/* send_depth ops and the silent sends (send_wrs()), a credit message
	 * and a goodbye; with several paths one QP may also carry the notices
	 * of the others' failures. */
	ia.cap.max_send_wr = send_wrs(conn) + 1 + conn->npaths + CONN_LIVE_WRS + RNDV_SLOTS;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = conn->o.inline_threshold;
	ret = path_create_first(conn, &ia, &conn_qp_ops);
	if (ret)
		return conn_fail_ret(conn, ret);
	p0 = &conn->paths[0];
	conn_sq_set_inline(conn, ia.cap.max_inline_data < conn->o.inline_threshold ?
			   ia.cap.max_inline_data : conn->o.inline_threshold);
	ret = path_create(conn, &ia, &path_qp_ops, &conn_qp_ops);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(conn->id, &a, &mask))
		return conn_fail_ret(conn, ezi_fail(-errno, "rdma_init_qp_attr(INIT): %s",
						    ez_strerror(errno)));
	/* The QP admits only the remote access its connection was given
	 * (nothing yet; the context's shared MRs aside; nothing at all on a
	 * keyed listener's connection before the proof): ez_conn_export()
	 * widens it (conn_export.c). */
	a.qp_access_flags = (unsigned int)conn_access_flags(conn);
	mask |= IBV_QP_ACCESS_FLAGS;
	conn->port = a.port_num;
	ret = qpfsm_modify(p0->qp, &dev->lim, &p0->qpv, &a, mask);
	if (ret)
		return conn_fail_ret(conn, ret);
	conn_access_set_init(conn, (int)a.qp_access_flags);
	return path_modify(conn, &a, mask);
}

/* Pool, send ops and buffers, CQ room and the QP (in INIT): the active
 * side's, in one go (the passive side's go a step a pass: accept_step). */
static int conn_setup(struct ez_conn *conn)
{
	int ret = conn_setup_pool(conn);

	return ret ? ret : conn_setup_qp(conn);
}

/* RTR and RTS with rdma_cm's attributes and the library's choices on top. */
static int conn_rtr_rts(struct ez_conn *conn, int rd_dest, int rd_init)
{
	struct conn_path *p0 = &conn->paths[0];
	struct ibv_qp_attr a;
	int mask, ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(conn->id, &a, &mask))
		return conn_fail_ret(conn, ezi_fail(-errno, "rdma_init_qp_attr(RTR): %s",
						    ez_strerror(errno)));
	if (conn->o.path_mtu && conn->o.path_mtu < a.path_mtu)
		a.path_mtu = conn->o.path_mtu;
	/* Each side's label sets its own direction's port: the passive side
	 * applies its own policy here just as the active side does. */
	conn->sport_policy = flow_policy(&conn->o);
	ret = device_sport_mech(conn->dev, conn->port, a.ah_attr.is_global,
				a.ah_attr.grh.sgid_index, &conn->sport_mech);
	if (ret)
		return conn_fail_ret(conn, ret);
	if (conn->sport_mech != EZ_SPORT_MECH_NONE)
		conn->sport = flow_pick_sport(&conn->o, p0->qpn, &conn->ctx->sport_rr);
	else if (conn->sport_policy != EZ_SPORT_DEFAULT)
		ezi_log_debug("QP %u: %s port %u: no UDP (InfiniBand or RoCEv1), sport policy %s ignored",
			      p0->qpn, conn->dev->name, conn->port, flow_policy_str(conn->sport_policy));
	if (conn->sport && conn->sport_mech == EZ_SPORT_MECH_FLOW_LABEL)
		a.ah_attr.grh.flow_label = ez_udp_sport_to_flow_label(conn->sport);
	if (rd_dest >= 0)
		a.max_dest_rd_atomic = (uint8_t)rd_dest;
	a.min_rnr_timer = conn->o.min_rnr_timer;
	mask |= IBV_QP_MIN_RNR_TIMER;
	ret = qpfsm_modify(p0->qp, &conn->dev->lim, &p0->qpv, &a, mask);
	if (ret)
		return conn_fail_ret(conn, ret);
	conn->reached_rtr = 1;
	ret = path_modify(conn, &a, mask);
	if (ret)
		return ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(conn->id, &a, &mask))
		return conn_fail_ret(conn, ezi_fail(-errno, "rdma_init_qp_attr(RTS): %s",
						    ez_strerror(errno)));
	a.timeout = conn->o.qp_timeout;
	a.retry_cnt = conn->o.retry_count;
	a.rnr_retry = conn->o.rnr_retry;
	mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
	if (rd_init >= 0)
		a.max_rd_atomic = (uint8_t)rd_init;
	ret = qpfsm_modify(p0->qp, &conn->dev->lim, &p0->qpv, &a, mask);
	if (ret)
		return conn_fail_ret(conn, ret);
	ret = path_modify(conn, &a, mask);
	if (ret)
		return ret;
	if (conn->sport && conn->sport_mech == EZ_SPORT_MECH_MLX5DV) {
		ret = flowdev_set_mlx5_sport(p0->qp, conn->sport);
		if (ret)
			return conn_fail_ret(conn, ret);
	}
	return path_after_rts(conn);
}

/* What a handshake of m's blocks holds, named part by part, for m.user_len
 * bytes that do not fit. */
static void hs_room_text(const struct hs_msg *m, char *buf, size_t len)
{
	snprintf(buf, len, "%u bytes of private data do not fit: the %s holds %zu beside the "
		 "shared secret's %zu bytes, the path block's %zu and the session token's %zu "
		 "(ez_conn_opts(3))", m->user_len, m->kind == HS_REQ ? "request" : "reply",
		 hs_user_room(m), hs_auth_len(m->kind, m->caps),
		 (m->caps & HS_CAP_PATHS) ? hs_paths_len(m->paths) : 0, hs_token_len(m));
}

/* The request or reply, sealed when the connection has a shared secret. */
static int encode_hs(struct ez_conn *conn, enum hs_kind kind, uint8_t *buf, size_t len)
{
	char why[EZ_ERRMSG_MAX];
	struct hs_msg m = {
		.kind = kind,
		/* We answer probes and take a goodbye that says why, always. */
		.caps = HS_CAP_CREDITS | HS_CAP_KEEPALIVE | HS_CAP_BYE_REASON,
		.credits = (uint16_t)conn->my_credits,
		.max_msg = conn->my_max_msg,
		.user_len = (uint8_t)conn->o.private_data_len,
	};
	int ret;

	/* Large messages by rendezvous: announced where this side can fetch
	 * and offer them (rndv.c); a reply settles it with the request's. */
	if (conn_rndv_can(conn)) {
		m.caps |= HS_CAP_RNDV;
		m.rndv_shift = conn_rndv_shift(conn);
	}
	if (kind == HS_REP)
		conn_rndv_settle(conn);
	conn_exports_hs_caps(conn, &m.caps);

	memcpy(m.user, conn->pdata, conn->o.private_data_len);
	/* The path block is filled first: the shared-secret MAC covers it. */
	path_hs_fill(conn, &m);
	resume_hs_fill(conn, &m);
	if (conn->auth)
		m.caps |= HS_CAP_AUTH;	/* the seal sets it too; the room counts it now */
	/* Checked before the seal, which would refuse it with less to say. */
	ret = m.user_len > hs_user_room(&m) ? -EMSGSIZE : 0;
	if (!ret && conn->auth) {
		ret = kind == HS_REQ ? conn_auth_seal_req(conn, &m) : conn_auth_seal_rep(conn, &m);
		if (ret)
			return ret;	/* its message is set */
	}
	if (!ret)
		ret = hs_encode(&m, buf, len);
	if (ret < 0) {
		hs_room_text(&m, why, sizeof(why));
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), ret, "handshake: %s", why);
	}
	return ret;
}

/* The blocks of this side's reply beside the user's bytes (the shared
 * secret's, the granted paths', a resume token), as encode_hs() will make
 * them: ez_accept() knows them once the paths and resume are granted, and
 * refuses data they leave no room for itself, not at the reply a loop pass
 * later. */
static size_t reply_room(struct ez_conn *conn, struct hs_msg *m)
{
	*m = (struct hs_msg){ .kind = HS_REP, .user_len = (uint8_t)conn->o.private_data_len };
	path_hs_fill(conn, m);
	resume_hs_fill(conn, m);
	if (conn->auth)
		m->caps |= HS_CAP_AUTH;
	return hs_user_room(m);
}

static uint8_t min3(unsigned int a, unsigned int b, unsigned int c)
{
	unsigned int m = a < b ? a : b;

	return (uint8_t)(m < c ? m : c);
}

static void on_route_resolved(struct ez_conn *conn)
{
	struct rdma_conn_param p = { 0 };
	uint8_t hs[HS_REQ_MAX];
	int n, ret;

	if (!conn_qp0(conn)) {
		ret = conn_setup(conn);
		if (ret) {
			conn_end(conn, ret);
			return;
		}
	}
	n = encode_hs(conn, HS_REQ, hs, sizeof(hs));
	if (n < 0) {
		conn_end(conn, n);
		return;
	}
	conn_cm_param_asked(conn, &p, hs, n);
	conn->step = "rdma_connect";
	conn_fire(conn, CE_REQ_SENT, 0);
	if (rdma_connect(conn->id, &p))
		conn_fail(conn, -errno, "rdma_connect(%s): %s", conn->host, ez_strerror(errno));
}

/* The listener's bytes for ez_conn_accept_data(); hs_decode() bounded
 * user_len by the reply's size. */
static void keep_accept_data(struct ez_conn *conn, const struct hs_msg *m)
{
	size_t n = m->user_len < sizeof(conn->accept_data) ? m->user_len :
		sizeof(conn->accept_data);

	memcpy(conn->accept_data, m->user, n);
	conn->accept_data_len = (uint8_t)n;
	conn->accept_data_set = 1;
}

static void on_connect_response(struct ez_conn *conn, const struct cm_event *ev)
{
	struct hs_msg m;
	char why[160];
	int ret;

	if (hs_decode(ev->pdata, ev->pdata_len, HS_REP, &m, why, sizeof(why))) {
		rdma_reject(conn->id, why, (uint8_t)strlen(why));
		conn_fail(conn, -EPROTO, "rdma_connect(%s): bad reply: %s", conn->host, why);
		return;
	}
	conn->peer_credits = m.credits;
	conn_sq_credits_add(conn, m.credits);
	conn->peer_max_msg = m.max_msg;
	conn_live_peer_caps(conn, m.caps);
	conn_rndv_peer(conn, m.caps, m.rndv_shift);
	conn_rndv_settle(conn);
	/* Nothing in an unproven reply is acted on, its path block included. */
	if (conn->auth && conn_auth_check_rep(conn, &m))
		return;
	if (conn_exports_peer_caps(conn, m.caps)) {
		static const char old[] = "the listener's easyrdma cannot take regions given with the connection";

		rdma_reject(conn->id, old, sizeof(old) - 1);
		conn_fail(conn, -EPROTONOSUPPORT, "%s", conn->errmsg);
		return;
	}
	keep_accept_data(conn, &m);
	ret = path_take_reply(conn, &m);
	if (!ret)
		ret = resume_take_reply(conn, &m, conn_auth_key(conn));
	if (ret) {
		conn_end(conn, ret);
		return;
	}
	ret = conn_rtr_rts(conn, -1, -1);
	if (ret) {
		conn_end(conn, ret);
		return;
	}
	if (rdma_establish(conn->id)) {
		conn_fail(conn, -errno, "rdma_establish(%s): %s", conn->host, ez_strerror(errno));
		return;
	}
	/* A keyed connection is reported once the listener accepts our proof. */
	if (conn->auth)
		conn_auth_send_proof(conn);
	else
		conn_up_after_exports(conn, CE_REPLY_OK);
}

static void on_rejected(struct ez_conn *conn, const struct cm_event *ev)
{
	struct hs_msg m;
	char why[160], text[EZ_REJECT_DATA_MAX + 1];

	if (ev->status == IB_REJ_INVALID_SERVICE_ID) {
		conn_fail(conn, -ECONNREFUSED, "rdma_connect(%s): no listener at the address and port",
			  conn->host);
		return;
	}
	if (ev->status == IB_REJ_CONSUMER_DEFINED &&
	    hs_decode(ev->pdata, ev->pdata_len, HS_REJ, &m, why, sizeof(why)) == 0) {
		hs_printable(m.user, m.user_len, text, sizeof(text));
		if (m.caps & HS_CAP_AUTH)
			conn_fail(conn, -EACCES, "%s(%s): %s", conn->step, conn->host, text);
		else
			conn_fail(conn, -ECONNREFUSED, "rdma_connect(%s): rejected by peer: %s",
				  conn->host, text);
		return;
	}
	conn_fail(conn, -ECONNREFUSED, "rdma_connect(%s): rejected (IB CM reason %d)", conn->host,
		  ev->status);
}

static int addr_errno(int status)
{
	if (status == -ENODEV)
		return -EADDRNOTAVAIL;	/* no RDMA device serves the route */
	return status < 0 ? status : -EHOSTUNREACH;
}

/* The kernel's own deadline for address and route resolution: a second
 * beyond the connect timeout, so that the connect timer ends a stuck
 * resolution first and names the step it waited for. */
static int cm_timeout_ms(const struct ez_conn *conn)
{
	uint32_t ms = conn->o.connect_timeout_ms;

	return ms > INT32_MAX - 1000 ? INT32_MAX : (int)ms + 1000;
}

/* The peer's DREQ (or the kernel's, for a process that died): a goodbye
 * first is a clean close; otherwise the cause is found before it is named. */
static void on_disconnected(struct ez_conn *conn)
{
	struct conn_path *refused;

	/* The QPs' states are read before the CQs are drained. A device
	 * posts a requester error's completion (retries exceeded: a
	 * peer that died mid-transfer) before it moves the QP to ERR,
	 * so the drain below ends the connection with that cause; a QP
	 * found in ERR that the drain does not explain was put there by
	 * its responder. Read after the drain, a retry error posted in
	 * between was taken for a refused request (test_kill, loaded). A
	 * peer that said goodbye already closed cleanly: no query. */
	refused = conn->peer_bye ? NULL : conn_access_suspect(conn);
	/* Messages (and the goodbye) that arrived before the disconnect
	 * are delivered first. */
	conn_poll_cqs(conn);
	if (conn_is_ended(conn))
		return;
	if (conn->state == CS_CONNECTED && conn->peer_bye &&
	    conn->peer_bye_reason == BYE_KEEPALIVE) {
		conn_fail(conn, -ETIMEDOUT, "peer %s ended the connection: its keepalive heard nothing from this side in %u ms (this side's loop or the link stalled; the peer is alive)",
			  conn->host, conn->peer_bye_ms);
	} else if (conn->state == CS_CONNECTED && conn->peer_bye) {
		snprintf(conn->errmsg, sizeof(conn->errmsg), "peer %s closed the connection",
			 conn->host);
		conn_end(conn, 0);
	} else if (conn->state == CS_CONNECTED && refused) {
		conn_access_report(conn, refused);
	} else if (conn->state == CS_CONNECTED) {
		conn_fail(conn, -ECONNRESET, "peer %s disconnected without closing (process ended or reset)",
			  conn->host);
	} else if (conn->state == CS_RESUMING) {
		/* The peer's kernel ended the old path 0 while this side
		 * resumed: its process ended (or closed); what a resume would
		 * reach has lost the session, so it ends now, not at the
		 * window's end (test_kill peer_killed_mid_resume). */
		conn_fail(conn, -ECONNRESET, "peer %s disconnected while the session was resuming (its process ended or it closed the session): there is nothing to resume",
			  conn->host);
	} else {
		conn_fail(conn, -ECONNRESET, "%s(%s): peer disconnected before the connection was established",
			  conn->step, conn->host);
	}
}

static int resolve_addr_again(struct ez_conn *conn, int status);

static void conn_on_cm(struct cm_handler *h, const struct cm_event *ev)
{
	struct ez_conn *conn = container_of(h, struct ez_conn, cm);
	int ret;

	if (conn_is_ended(conn))
		return;
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = device_get(conn->ctx, conn->id->verbs, &conn->dev);
		if (ret) {
			conn_fail(conn, ret, "%s", ez_errmsg());
			break;
		}
		if (conn->o.tos && rdma_set_option(conn->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
						   &conn->o.tos, sizeof(conn->o.tos)))
			ezi_log_warn("rdma_set_option(TOS %u): %s", conn->o.tos, ez_strerror(errno));
		conn->step = "rdma_resolve_route";
		conn_fire(conn, CE_RESOLVE_ROUTE, 0);
		if (rdma_resolve_route(conn->id, cm_timeout_ms(conn))) {
			conn_fail(conn, addr_errno(-errno), "rdma_resolve_route(%s): %s", conn->host,
				  ez_strerror(errno));
			break;
		}
		/* The QP needs the device, not the route. A connect made alone
		 * makes it (to INIT) while the kernel resolves the route: that
		 * hides the route query (an SA round trip on InfiniBand; on
		 * RoCE a local lookup of ~0.2 ms under Soft-RoCE). In a burst
		 * the loop is the bottleneck: each connection's request goes
		 * out first (QP made at ROUTE_RESOLVED, then the connect), so
		 * the peer works on the first ones while the rest follow. */
		if (conn->ctx->nconnecting == 1) {
			ret = conn_setup(conn);
			if (ret)
				conn_end(conn, ret);
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		if (resolve_addr_again(conn, ev->status))
			break;
		conn_fail(conn, addr_errno(ev->status), "rdma_resolve_addr(%s): %s", conn->host,
			  ez_strerror(ev->status));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		on_route_resolved(conn);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		conn_fail(conn, addr_errno(ev->status), "rdma_resolve_route(%s): %s", conn->host,
			  ez_strerror(ev->status));
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		on_connect_response(conn, ev);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		/* A keyed peer's proof, not the RTU, establishes the passive
		 * side: the table ignores the RTU in CS_AWAITING_PROOF. */
		conn_up_after_exports(conn, CE_RTU);
		break;
	case RDMA_CM_EVENT_REJECTED:
		on_rejected(conn, ev);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		conn_fail(conn, ev->status == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH,
			  "%s(%s): peer unreachable: %s", conn->step, conn->host,
			  ez_strerror(ev->status));
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		conn_fail(conn, ev->status < 0 ? ev->status : -ECONNABORTED,
			  "%s(%s): connection error: %s", conn->step, conn->host,
			  ez_strerror(ev->status ? ev->status : ECONNABORTED));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		on_disconnected(conn);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		conn_fail(conn, -ENODEV, "device %s removed", conn->dev ? conn->dev->name : "?");
		break;
	default:
		ezi_log_debug("conn %u: %s", conn_qpn0(conn), rdma_event_str(ev->type));
		break;
	}
}

static void fmt_addr(const struct sockaddr *sa, const char *fallback, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "";

	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof(ip));
	snprintf(out, len, "%s", ip[0] ? ip : fallback);
}

/* Address resolution in attempts of RESOLVE_ATTEMPT_MS while more than
 * twice that is left of connect_timeout_ms, the last one with the kernel's
 * usual deadline (cm_timeout_ms(): ours always comes first and names the
 * step). Why: the kernel's request that found no neighbour entry is taken
 * up again when a neighbour update arrives or at its own timeout; one whose
 * ARP reply came in before it was queued waits for that timeout (seen
 * between two VMs: 4 connects to a peer not yet in the ARP table at once,
 * 3 resolved at once, the first waited its 31 s and its connect failed at
 * 30 s). A short attempt is looked at again within a second. */
#define RESOLVE_ATTEMPT_MS 1000

static void resolve_addr(struct ez_conn *conn, const struct sockaddr *dst)
{
	uint64_t spent = (loop_now_ns() - conn->connect_start_ns) / 1000000;
	uint64_t left = spent < conn->o.connect_timeout_ms ? conn->o.connect_timeout_ms - spent : 0;
	int ms = left > 2 * RESOLVE_ATTEMPT_MS ? RESOLVE_ATTEMPT_MS : cm_timeout_ms(conn);

	conn->resolve_attempts++;
	conn->resolve_short = ms == RESOLVE_ATTEMPT_MS;
	if (rdma_resolve_addr(conn->id, NULL, (struct sockaddr *)dst, ms))
		conn_fail(conn, addr_errno(-errno), "rdma_resolve_addr(%s): %s", conn->host,
			  ez_strerror(errno));
}

/* A short attempt ran out (-ETIMEDOUT, no neighbour yet): another, short
 * or the last (resolve_addr() chooses); 0 when this was the last. */
static int resolve_addr_again(struct ez_conn *conn, int status)
{
	struct sockaddr_storage dst;

	if (status != -ETIMEDOUT || !conn->resolve_short)
		return 0;
	memcpy(&dst, &conn->id->route.addr.dst_addr, sizeof(dst));
	resolve_addr(conn, (struct sockaddr *)&dst);
	return 1;
}

/* The address is known: rdma_cm takes over (its events drive the rest). */
static void connect_to(struct ez_conn *conn, const struct sockaddr_storage *ss)
{
	if (rdma_create_id(conn->ctx->ch, &conn->id, conn, RDMA_PS_TCP)) {
		conn_fail(conn, -errno, "rdma_create_id: %s", ez_strerror(errno));
		return;
	}
	conn->step = "rdma_resolve_addr";
	conn_fire(conn, CE_RESOLVE_ADDR, 0);
	resolve_addr(conn, (const struct sockaddr *)ss);
}

static void on_lookup_done(void *arg, int rc, const struct sockaddr_storage *ss,
			   const char *err)
{
	struct ez_conn *conn = arg;

	conn->lookup = NULL;
	if (rc)
		conn_fail(conn, rc, "%s", err);
	else
		connect_to(conn, ss);
}

/* The caller's options and callbacks at this library's layout (doc/abi.md). */
static int conn_args_in(const char *fn, const struct ez_conn_opts *opts, size_t opts_size,
			const struct ez_conn_cbs *cbs, size_t cbs_size, struct ez_conn_opts *o,
			struct ez_conn_cbs *c)
{
	int ret = ezi_struct_in(o, sizeof(*o), opts, opts_size, fn, "ez_conn_opts");

	return ret ? ret : ezi_struct_in(c, sizeof(*c), cbs, cbs_size, fn, "ez_conn_cbs");
}

int ez_connect_sz(struct ez_ctx *ctx, const char *host, const char *service,
		  const struct ez_conn_opts *opts, size_t opts_size,
		  const struct ez_conn_cbs *cbs, size_t cbs_size, void *arg,
		  struct ez_conn **out)
{
	struct sockaddr_storage ss;
	struct ez_conn_opts o;
	struct ez_conn_cbs c;
	struct ez_conn *conn;
	char err[EZ_ERRMSG_MAX];
	int ret;

	if (ctx_check_thread(ctx, "ez_connect"))
		return -EPERM;
	if (!ctx || !host || !service || !out)
		return ezi_fail(-EINVAL, "ez_connect: ctx %p, host %s, service %s, conn pointer %p",
				(void *)ctx, host ? host : "NULL", service ? service : "NULL",
				(void *)out);
	ret = conn_args_in("ez_connect", opts, opts_size, cbs, cbs_size, &o, &c);
	if (ret)
		return ret;
	conn = conn_alloc(ctx, &o, 0, &c, arg, &ret);
	if (!conn)
		return ret;
	conn->active = 1;
	ctx->nconnecting++;
	snprintf(conn->host, sizeof(conn->host), "%s:%s", host, service);
	*out = conn;
	conn->connect_start_ns = loop_now_ns();
	ctx_timer_start(ctx, &conn->connect_timer, conn->o.connect_timeout_ms);

	/* From here every failure reaches on_connect, later, from the loop.
	 * Numeric addresses resolve here; a name goes to a resolver thread
	 * (the connect timeout covers it), so the loop never waits on DNS. */
	conn->step = "getaddrinfo";
	ret = ezaddr_resolve(host, service, EZADDR_NUMERIC_ONLY, &ss, err, sizeof(err));
	if (ret == -EAGAIN) {
		ret = lookup_start(ctx, host, service, conn, on_lookup_done, &conn->lookup);
		if (ret)
			conn_fail(conn, ret, "%s", ez_errmsg());
		else
			conn_fire(conn, CE_LOOKUP, 0);
		return 0;
	}
	if (ret) {
		conn_fail(conn, ret, "%s", err);
		return 0;
	}
	connect_to(conn, &ss);
	return 0;
}

/* What ez_accept() refuses itself, before the steps: a shared pool of
 * another device; a keyed listener's connection whose buffers cannot take
 * the client's proof. */
static int accept_checks(struct ez_conn *conn)
{
	uint32_t buf_size, max;
	struct device *pdev;
	struct device_cq *rcq;
	int ret;

	if (conn->o.srqpool) {
		ret = pool_lookup(conn->o.srqpool, &pdev, &buf_size, &rcq);
		if (ret)
			return conn_fail_ret(conn, ret);
		if (pdev != conn->dev)
			return conn_fail_ret(conn, ezi_fail(-EINVAL,
				"srqpool is on device %s, the connection resolved to %s",
				pdev->name, conn->dev->name));
	} else {
		buf_size = conn->o.max_msg_size < CONN_EAGER_MAX ? conn->o.max_msg_size :
			   CONN_EAGER_MAX;
		/* Its whole recv_depth, though a crowded listener's pool
		 * starts with a few (conn_setup_pool): it grows to them. */
		ret = recvbufs_take(conn, conn->o.recv_depth, buf_size);
		if (ret)
			return conn_fail_ret(conn, ret);
	}
	max = buf_size < conn->o.max_msg_size ? buf_size : conn->o.max_msg_size;
	if (conn->auth && max < AUTH_PROOF_LEN)
		return conn_fail_ret(conn, ezi_fail(-EINVAL,
			"ez_accept: receive buffers of %u bytes cannot take the %d-byte shared-secret proof",
			max, AUTH_PROOF_LEN));
	ret = conn_exports_check_device(conn);
	if (ret)
		return conn_fail_ret(conn, ezi_fail(ret, "ez_accept: %s", ez_errmsg()));
	return 0;
}

/* CS_ACCEPT_REPLY's step: the reply, with the handshake. */
static int accept_reply(struct ez_conn *conn)
{
	struct rdma_conn_param p = { 0 };
	uint8_t hs[HS_REP_MAX];
	int n = encode_hs(conn, HS_REP, hs, sizeof(hs));

	if (n < 0)
		return n;
	conn_cm_param(conn, &p, hs, n, conn->acc_rd_dest, conn->acc_rd_init);
	conn->step = "rdma_accept";
	if (rdma_accept(conn->id, &p))
		return conn_fail_ret(conn, ezi_fail(-errno, "rdma_accept(%s): %s", conn->host,
						    ez_strerror(errno)));
	conn_fire(conn, conn->auth ? CE_REP_SENT_KEYED : CE_REP_SENT, 0);
	listener_hs_restart(&conn->pend);
	ctx_timer_start(conn->ctx, &conn->connect_timer, conn->o.connect_timeout_ms);
	return 0;
}

/* CA_DEFER_STEP's work, a pass after the step before: an accept's pool
 * (SRQ, registered buffers, receives posted: 2-116 ms in a loaded TCG
 * guest), its QP and the modifies to RTS (1-90 ms), its reply (0.5-17 ms)
 * each have a pass of their own, so a connect storm never puts two of
 * them, or one of them and a whole batch of events, in one pass. A step
 * that fails ends the connection: the teardown refuses the request with
 * the reason, and on_connect gets the error. */
static void on_accept_step(struct loop_defer *d)
{
	struct ez_conn *conn = container_of(d, struct ez_conn, step_defer);
	uint64_t t = loop_now_ns();
	enum ctx_step k;
	int ret;

	switch (conn->state) {
	case CS_ACCEPT_POOL:
		k = CTX_STEP_POOL;
		ret = conn_setup_pool(conn);
		if (!ret)
			conn_fire(conn, CE_POOL_MADE, 0);
		break;
	case CS_ACCEPT_QP:
		k = CTX_STEP_QP;
		ret = conn_setup_qp(conn);
		if (!ret)
			ret = conn_rtr_rts(conn, conn->acc_rd_dest, conn->acc_rd_init);
		if (!ret)
			conn_fire(conn, CE_QP_READY, 0);
		break;
	case CS_ACCEPT_REPLY:
		k = CTX_STEP_REPLY;
		ret = accept_reply(conn);
		if (!ret)
			conn->ctx->naccepting--;
		break;
	default:	/* ended meanwhile */
		return;
	}
	/* The end (teardown) is counted with its step: no finish yet. */
	if (ret)
		conn_end(conn, ret);
	ctx_note_step(conn->ctx, k, t);
}

int ez_accept_sz(struct ez_conn_req *req, const struct ez_conn_opts *opts, size_t opts_size,
		 const struct ez_conn_cbs *cbs, size_t cbs_size, void *arg,
		 struct ez_conn **out)
{
	struct ez_conn_opts o;
	struct ez_conn_cbs c;
	struct ez_conn *conn;
	struct ez_ctx *ctx;
	struct hs_msg shape;
	char why[EZ_ERRMSG_MAX];
	int ret;
	uint8_t req_resp, req_init;

	if (req && ctx_check_thread(req->listener->ctx, "ez_accept"))
		return -EPERM;
	if (!req || !out)
		return ezi_fail(-EINVAL, "ez_accept: req %p, conn pointer %p", (void *)req, (void *)out);
	if (!req->listener)
		return ezi_fail(-EINVAL, "ez_accept: request already answered");
	if (req->expired) {
		ret = ezi_fail(-ETIMEDOUT, "ez_accept: the request waited beyond the listener's handshake_timeout_ms of %u ms and was rejected",
			       req->pend.timeout_ms);
		ez_reject(req, NULL, 0);
		return ret;
	}
	ctx = req->listener->ctx;
	ret = conn_args_in("ez_accept", opts, opts_size, cbs, cbs_size, &o, &c);
	conn = ret ? NULL : conn_alloc(ctx, &o, 1, &c, arg, &ret);
	if (!conn) {
		ez_reject(req, "accept options invalid", 22);
		return ret;
	}
	if (req->auth) {
		if (conn_auth_new(conn, req->auth->key, req->auth->len))
			ret = ezi_fail(-ENOMEM, "ez_accept: out of memory");
		else
			conn->auth->req = req->hs;
		conn->remote_closed = 1;
	}
	conn->id = req->id;
	conn->id->context = conn;
	fmt_addr((struct sockaddr *)&req->peer, "peer", conn->host, sizeof(conn->host));
	conn->peer_credits = req->hs.credits;
	conn_sq_credits_add(conn, req->hs.credits);
	conn->peer_max_msg = req->hs.max_msg;
	conn->step = "ez_accept";
	req_resp = req->responder_resources;
	req_init = req->initiator_depth;
	path_grant(conn, &req->hs);
	if (!ret)
		ret = resume_grant(conn, &req->hs, conn_auth_key(conn), req->routes);
	if (!ret && conn->o.private_data_len > reply_room(conn, &shape)) {
		hs_room_text(&shape, why, sizeof(why));
		ret = ezi_fail(-EMSGSIZE, "ez_accept: %s", why);
	}
	conn_live_peer_caps(conn, req->hs.caps);
	conn_rndv_peer(conn, req->hs.caps, req->hs.rndv_shift);
	if (!ret && conn_exports_peer_caps(conn, req->hs.caps))
		ret = ezi_fail(-EPROTONOSUPPORT, "%s", conn->errmsg);
	conn->pen = req->pen;
	listener_hs_move(&req->pend, &conn->pend, on_handshake_deadline);
	listener_req_free(req);

	if (ret) {
		conn_fail_ret(conn, ret);
		goto fail;
	}
	ret = device_get(ctx, conn->id->verbs, &conn->dev);
	if (ret) {
		conn_fail_ret(conn, ret);
		goto fail;
	}
	ret = accept_checks(conn);
	if (ret)
		goto fail;
	/* The request event already speaks from our side (ib_cm swaps the
	 * fields); never offer more than it does. */
	conn->acc_rd_dest = min3(conn->o.responder_resources, conn->dev->attr.max_qp_rd_atom,
				 req_resp);
	conn->acc_rd_init = min3(conn->o.initiator_depth, conn->dev->attr.max_qp_init_rd_atom,
				 req_init);
	/* The pool, the QP and the reply follow, a loop pass each. */
	conn_fire(conn, CE_ACCEPT_TAKEN, 0);
	ctx->naccepting++;
	*out = conn;
	return 0;
fail:
	/* No callback ever runs for a connection ez_accept() did not return. */
	accept_refuse(conn);
	ret = ret ? ret : -EIO;
	ezi_fail(ret, "%s", conn->errmsg);
	conn->cbs = (struct ez_conn_cbs){ 0 };
	conn->app_closed = 1;
	conn_end(conn, ret);
	return ret;
}

void ez_conn_close(struct ez_conn *conn)
{
	if (!conn || conn_wrong_handle(conn, "ez_conn_close"))
		return;
	if (conn->app_closed) {
		ezi_log_warn("ez_conn_close: connection %p closed twice", (void *)conn);
		return;
	}
	conn->app_closed = 1;
	if (!conn_is_ended(conn))
		snprintf(conn->errmsg, sizeof(conn->errmsg), "closed by the application");
	/* Live: goodbye or teardown; ended: freed once finished; dead: now. */
	conn_fire(conn, CE_CLOSE, 0);
}
