/* keepalive.c: a connection's liveness: a probe when nothing came for keepalive_interval_ms (the peer's library answers it), the end after keepalive_probes unanswered, and op_timeout_ms, the deadline of outstanding ops. */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "keepalive.h"
#include "conn_fsm.h"
#include "peer_penalty.h"
#include "wire/opts.h"
#include "wire/bye.h"
#include "wire/handshake.h"
#include "wire/rate.h"
#include "base/log.h"
#include "path.h"
#include "sendq.h"

/*
 * Why probes and answers, not the transport alone: an RC QP with nothing
 * posted never notices a dead peer, and a peer whose process hangs (or is
 * stopped) still has its HCA ACK everything, so only its library's answer
 * shows it is serving. Both are 0-byte SENDs with an immediate
 * (IMM_KA_PROBE, IMM_KA_ANSWER) that use a receive buffer of the pool's
 * reserve and carry no credit, like a credit message; rx_check.c bounds
 * them (answers by our probes, probes by our answers' completions).
 *
 * Life is any message received (answers included) and any of our ops
 * the peer's device completed (sq_ok: a READ's data came back, a WRITE or
 * a send was acknowledged), so that a connection busy with one-sided
 * traffic, whose peer's answers may wait behind its own bulk, is not found
 * dead (issue 42: "nothing received in 20000 ms" on a connection reading
 * all along). Probes and answers are not: a hung peer's device
 * acknowledges them. A hung peer stays found: our sends complete only
 * while its receive credits last, and its device serving our READs is
 * the connection serving what we ask of it.
 *
 * Cost while traffic flows: one add per signalled completion (the receive
 * path already counts accepted messages in rxt.rx_msgs); one timer per
 * interval, which compares those counts with the last tick's.
 */

/* Deadline ticks (op_timeout_ms / 2 apart) an op stays the oldest of its
 * queue before it is expired: it has been outstanding for at least
 * op_timeout_ms, and at most 1.5 times that. */
#define DEADLINE_TICKS 3

void conn_live_peer_caps(struct ez_conn *conn, uint16_t caps)
{
	conn->ka.peer = (uint8_t)hs_peer_keepalive(caps);
	conn->ka.peer_why = !!(caps & HS_CAP_BYE_REASON);
}

/* Nothing came for ms: the connection ends. A peer that is alive after
 * all (its loop or the link stalled) is told why in the goodbye, so it
 * does not report a peer that vanished. */
static void ka_end(struct ez_conn *conn, uint32_t ms)
{
	char msg[EZ_ERRMSG_MAX];
	uint8_t why[BYE_REASON_LEN];

	snprintf(msg, sizeof(msg),
		 "peer %s: nothing received in %u ms (%u keepalive probe%s sent, none answered; keepalive_interval_ms %u, keepalive_probes %u)",
		 conn->host, ms, conn->ka.sent, conn->ka.sent == 1 ? "" : "s",
		 conn->o.keepalive_interval_ms, conn->o.keepalive_probes);
	/* With session resume the peer may be alive behind a link that
	 * failed: the session waits for it (resume.c). */
	if (path_lose_all(conn, -ETIMEDOUT, msg))
		return;
	if (conn->ka.peer_why) {
		bye_reason_encode(BYE_KEEPALIVE, ms, why);
		if (conn_post_bye_why(conn, why, sizeof(why)) == 0) {
			conn_fail_after_bye(conn, -ETIMEDOUT, "%s", msg);
			return;
		}
	}
	conn_fail(conn, -ETIMEDOUT, "%s", msg);
}

static void ka_probe(struct ez_conn *conn)
{
	struct conn_path *path;
	int ret;

	/* A probe still unacknowledged: the transport is retrying it, and
	 * its failure will end the connection; this interval counts all the
	 * same. */
	if (conn->ka.probe_busy)
		return;
	path = path_pick(conn);
	if (!path)
		return;
	ret = conn_post_ctrl(conn, &conn->ka.probe_op, OP_KA_PROBE, path, IMM_KA_PROBE, NULL, 0);
	if (ret) {
		ezi_log_warn("connection %s: ibv_post_send(keepalive probe): %s", conn->host,
			     ez_strerror(ret));
		return;
	}
	rx_note_ka_probe(&conn->rxt);
	conn->ka.probe_busy = 1;
	conn->ka.sent++;
	conn->stats.keepalives_sent++;
}

static void ka_tick(struct loop_timer *t)
{
	struct ez_conn *conn = container_of(t, struct ez_conn, ka.timer);
	uint32_t iv = conn->o.keepalive_interval_ms;

	if (conn->state != CS_CONNECTED)
		return;
	if (conn->rxt.rx_msgs != conn->ka.seen || conn->sq_ok != conn->ka.ok_seen) {
		conn->ka.seen = conn->rxt.rx_msgs;
		conn->ka.ok_seen = conn->sq_ok;
		conn->ka.missed = 0;
		conn->ka.sent = 0;
	} else if (conn->ka.missed >= conn->o.keepalive_probes) {
		/* Nothing came since the tick that last saw traffic, missed + 1
		 * intervals ago. Fewer probes than intervals went out when one
		 * stayed unacknowledged (the transport was retrying it). */
		ka_end(conn, iv * (conn->ka.missed + 1u));
		return;
	} else {
		conn->ka.missed++;
		ka_probe(conn);
	}
	ctx_timer_start(conn->ctx, t, iv);
}

/* The oldest op of a queue ages a tick; 1 when it has aged out. */
static int age(struct ez_conn *conn, struct op *op, const char *where)
{
	if (!op || ++op->aged < DEADLINE_TICKS)
		return 0;
	op->aged = OP_EXPIRED;
	conn_fail(conn, -ETIMEDOUT,
		  "peer %s: %s of %u bytes %s not complete within op_timeout_ms %u", conn->host,
		  op_kind_name(op->kind), op->wr.num_sge ? op->sge.length : 0, where, conn->o.op_timeout_ms);
	return 1;
}

static void deadline_tick(struct loop_timer *t)
{
	struct ez_conn *conn = container_of(t, struct ez_conn, ka.deadline_timer);
	uint32_t i;

	if (conn->state != CS_CONNECTED)
		return;
	/* Each path's send queue completes in order, and the queue of ops
	 * waiting for credits is a FIFO: only the heads can be the oldest. */
	for (i = 0; i < conn->npaths; i++)
		if (age(conn, conn->paths[i].sq_head, "posted"))
			return;
	if (age(conn, conn->sq.pend_head, "waiting for the peer's credits"))
		return;
	ctx_timer_start(conn->ctx, t, conn->o.op_timeout_ms / 2);
}

void conn_live_start(struct ez_conn *conn)
{
	conn->ka.timer.fn = ka_tick;
	conn->ka.deadline_timer.fn = deadline_tick;
	conn->ka.seen = conn->rxt.rx_msgs;
	conn->ka.ok_seen = conn->sq_ok;
	if (conn->o.keepalive_interval_ms && conn->ka.peer)
		ctx_timer_start(conn->ctx, &conn->ka.timer, conn->o.keepalive_interval_ms);
	else if (conn->o.keepalive_interval_ms)
		ezi_log_info("connection %s: no keepalive: the peer does not answer probes (an easyrdma without HS_CAP_KEEPALIVE)",
			     conn->host);
	if (conn->o.op_timeout_ms)
		ctx_timer_start(conn->ctx, &conn->ka.deadline_timer, conn->o.op_timeout_ms / 2);
}

void conn_live_stop(struct ez_conn *conn)
{
	if (!conn->ctx)
		return;
	ctx_timer_stop(conn->ctx, &conn->ka.timer);
	ctx_timer_stop(conn->ctx, &conn->ka.deadline_timer);
}

/* Whether a probe comes within the rate an easyrdma peer keeps: it probes
 * only after keepalive_interval_ms (>= CONN_MIN_KA_INTERVAL_MS) of silence,
 * so one per KA_PROBE_PERIOD_MS (half that) with a burst of what a stalled
 * loop may find queued (RX_KA_MAX_UNANSWERED + 1) is never refused to it.
 * Probes need no credit and each costs a receive and an answer: beyond
 * that rate the peer is cut (-EPROTO) and counted against its address. */
#define KA_PROBE_PERIOD_MS (CONN_MIN_KA_INTERVAL_MS / 2)
#define KA_PROBE_BURST (RX_KA_MAX_UNANSWERED + 1)

static int probe_within_rate(struct ez_conn *conn)
{
	uint64_t now_ms = loop_now_ns() / 1000000;

	if (!conn->ka.rate.at_ms)
		rate_init(&conn->ka.rate, KA_PROBE_BURST, now_ms);
	if (rate_take(&conn->ka.rate, KA_PROBE_BURST, KA_PROBE_PERIOD_MS, now_ms))
		return 1;
	conn_fail(conn, -EPROTO, "peer sent keepalive probes faster than %u a second (%u at once, then one per %u ms; an easyrdma peer probes at most once per keepalive_interval_ms, >= %u ms)",
		  1000u / KA_PROBE_PERIOD_MS, KA_PROBE_BURST, KA_PROBE_PERIOD_MS,
		  CONN_MIN_KA_INTERVAL_MS);
	peer_penalty_note(conn);
	return 0;
}

void conn_live_on_probe(struct ez_conn *conn, int answer)
{
	struct conn_path *path;
	int ret;

	conn->stats.keepalives_recv++;
	if (!probe_within_rate(conn))
		return;
	if (!answer || conn->ka.answer_busy || conn->state != CS_CONNECTED)
		return;
	path = path_pick(conn);
	if (!path)
		return;
	ret = conn_post_ctrl(conn, &conn->ka.answer_op, OP_KA_ANSWER, path, IMM_KA_ANSWER, NULL, 0);
	if (ret) {
		ezi_log_warn("connection %s: ibv_post_send(keepalive answer): %s", conn->host,
			     ez_strerror(ret));
		return;
	}
	conn->ka.answer_busy = 1;
}

void conn_live_sent(struct ez_conn *conn, struct op *op, int status)
{
	int probe = op->kind == OP_KA_PROBE;
	double ack_ms;

	if (probe) {
		conn->ka.probe_busy = 0;
	} else {
		conn->ka.answer_busy = 0;
	}
	/* A flush is whoever moved the QP to ERR; a path of several that
	 * failed is path.c's. */
	if (!status || status == -ECANCELED || conn->npaths > 1 || conn_is_ended(conn))
		return;
	ack_ms = 4.096e-3 * (double)(1ull << conn->o.qp_timeout) * (conn->o.retry_count + 1);
	if (status == -ETIMEDOUT)
		conn_fail(conn, status,
			  "peer %s: keepalive %s not acknowledged: transport retry counter exceeded (%u retries, qp_timeout %u: about %.0f ms)",
			  conn->host, probe ? "probe" : "answer", conn->o.retry_count,
			  conn->o.qp_timeout, ack_ms);
	else
		conn_fail(conn, status, "peer %s: keepalive %s failed: %s", conn->host,
			  probe ? "probe" : "answer", ez_strerror(status));
}
