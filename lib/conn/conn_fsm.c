/* conn_fsm.c: the connection state machine: its transition table (pure data) and conn_fire(), which applies it and runs the actions conn.c registered. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "conn_fsm.h"
#include "conn_types.h"
#include "base/log.h"

#define ROW(next_, actions_) { 1, (next_), (actions_) }
/* Every live state takes the same two ends and the close. */
#define LIVE(s) \
	[s][CE_CLOSE] = ROW(s, CA_CLOSE), \
	[s][CE_END] = ROW(CS_DRAINING, CA_END | CA_TEARDOWN)
/* An ended state: the close only marks the handle (the finish frees it). */
#define ENDED(s) [s][CE_CLOSE] = ROW(s, 0)

static const struct conn_fsm_row table[CS_COUNT][CE_COUNT] = {
	/* Active side: name, address, route, request, reply (and proof). */
	[CS_NEW][CE_LOOKUP] = ROW(CS_RESOLVING_NAME, 0),
	[CS_NEW][CE_RESOLVE_ADDR] = ROW(CS_RESOLVING_ADDR, 0),
	[CS_RESOLVING_NAME][CE_RESOLVE_ADDR] = ROW(CS_RESOLVING_ADDR, 0),
	[CS_RESOLVING_ADDR][CE_RESOLVE_ROUTE] = ROW(CS_RESOLVING_ROUTE, 0),
	[CS_RESOLVING_ROUTE][CE_REQ_SENT] = ROW(CS_CONNECTING, 0),
	[CS_CONNECTING][CE_REPLY_OK] = ROW(CS_CONNECTED, CA_REPORT_UP),
	[CS_CONNECTING][CE_PROOF_SENT] = ROW(CS_AUTHENTICATING, 0),
	/* Only the listener's verdict establishes a keyed client. */
	[CS_AUTHENTICATING][CE_PROOF_OK] = ROW(CS_CONNECTED, CA_REPORT_UP),

	/* Passive side: the accept's steps a pass each (pool; QP to RTS;
	 * reply), then the RTU, or with a shared secret the client's proof
	 * (an RTU or a message does not establish it). */
	[CS_NEW][CE_ACCEPT_TAKEN] = ROW(CS_ACCEPT_POOL, CA_DEFER_STEP),
	[CS_ACCEPT_POOL][CE_POOL_MADE] = ROW(CS_ACCEPT_QP, CA_DEFER_STEP),
	[CS_ACCEPT_QP][CE_QP_READY] = ROW(CS_ACCEPT_REPLY, CA_DEFER_STEP),
	[CS_ACCEPT_REPLY][CE_REP_SENT] = ROW(CS_ACCEPTING, 0),
	[CS_ACCEPT_REPLY][CE_REP_SENT_KEYED] = ROW(CS_AWAITING_PROOF, 0),
	[CS_ACCEPTING][CE_RTU] = ROW(CS_CONNECTED, CA_REPORT_UP),
	[CS_AWAITING_PROOF][CE_PROOF_OK] = ROW(CS_CONNECTED, CA_REPORT_UP),
	/* The refusal of a wrong proof goes out like a goodbye. */
	[CS_AWAITING_PROOF][CE_END_BYE] = ROW(CS_SAYING_BYE, CA_END | CA_BYE_TIMER),

	/* Regions given with the connection: a side whose peer announced
	 * them comes up once they came (conn_export.c's conn_up_after_exports()
	 * fires CE_EXPORTS_DUE in place of the event that would bring it up). */
	[CS_CONNECTING][CE_EXPORTS_DUE] = ROW(CS_AWAITING_EXPORTS, 0),
	[CS_AUTHENTICATING][CE_EXPORTS_DUE] = ROW(CS_AWAITING_EXPORTS, 0),
	[CS_ACCEPTING][CE_EXPORTS_DUE] = ROW(CS_AWAITING_EXPORTS, 0),
	[CS_AWAITING_PROOF][CE_EXPORTS_DUE] = ROW(CS_AWAITING_EXPORTS, 0),
	[CS_AWAITING_EXPORTS][CE_EXPORTS_IN] = ROW(CS_CONNECTED, CA_REPORT_UP),

	[CS_CONNECTED][CE_END_BYE] = ROW(CS_SAYING_BYE, CA_END | CA_BYE_TIMER),
	/* Session resume (resume.c drives it; no action of the table's). */
	[CS_CONNECTED][CE_PATHS_LOST] = ROW(CS_RESUMING, CA_RESUME),
	[CS_RESUMING][CE_RESUMED] = ROW(CS_CONNECTED, 0),
	/* The passive side's new path 0 carried a message before the RTU. */
	[CS_RESUMING][CE_RTU] = ROW(CS_CONNECTED, CA_RESUMED),

	LIVE(CS_NEW), LIVE(CS_RESOLVING_NAME), LIVE(CS_RESOLVING_ADDR), LIVE(CS_RESOLVING_ROUTE),
	LIVE(CS_CONNECTING), LIVE(CS_AUTHENTICATING), LIVE(CS_ACCEPT_POOL), LIVE(CS_ACCEPT_QP),
	LIVE(CS_ACCEPT_REPLY), LIVE(CS_ACCEPTING), LIVE(CS_AWAITING_PROOF),
	LIVE(CS_AWAITING_EXPORTS), LIVE(CS_CONNECTED), LIVE(CS_RESUMING),

	/* The teardown, one way. */
	[CS_SAYING_BYE][CE_BYE_DONE] = ROW(CS_DRAINING, CA_TEARDOWN),
	[CS_DRAINING][CE_DRAINED] = ROW(CS_FINISHING, CA_DEFER_FINISH),
	[CS_FINISHING][CE_FINISH] = ROW(CS_REPORTING, CA_FINISH),
	[CS_REPORTING][CE_REPORTED] = ROW(CS_DEAD, CA_FREE_IF_CLOSED),
	ENDED(CS_SAYING_BYE), ENDED(CS_DRAINING), ENDED(CS_FINISHING), ENDED(CS_REPORTING),
	[CS_DEAD][CE_CLOSE] = ROW(CS_DEAD, CA_FREE),
};

const struct conn_fsm_row *conn_fsm_row(enum conn_state s, enum conn_event e)
{
	static const struct conn_fsm_row none = { 0, 0, 0 };

	if ((unsigned int)s >= CS_COUNT || (unsigned int)e >= CE_COUNT)
		return &none;
	return &table[s][e];
}

const char *conn_state_name(enum conn_state s)
{
	static const char *const names[CS_COUNT] = {
		[CS_NEW] = "NEW", [CS_RESOLVING_NAME] = "RESOLVING_NAME",
		[CS_RESOLVING_ADDR] = "RESOLVING_ADDR", [CS_RESOLVING_ROUTE] = "RESOLVING_ROUTE",
		[CS_CONNECTING] = "CONNECTING", [CS_AUTHENTICATING] = "AUTHENTICATING",
		[CS_ACCEPT_POOL] = "ACCEPT_POOL", [CS_ACCEPT_QP] = "ACCEPT_QP",
		[CS_ACCEPT_REPLY] = "ACCEPT_REPLY",
		[CS_ACCEPTING] = "ACCEPTING", [CS_AWAITING_PROOF] = "AWAITING_PROOF",
		[CS_AWAITING_EXPORTS] = "AWAITING_EXPORTS",
		[CS_CONNECTED] = "CONNECTED", [CS_RESUMING] = "RESUMING",
		[CS_SAYING_BYE] = "SAYING_BYE",
		[CS_DRAINING] = "DRAINING", [CS_FINISHING] = "FINISHING",
		[CS_REPORTING] = "REPORTING", [CS_DEAD] = "DEAD",
	};

	return (unsigned int)s < CS_COUNT ? names[s] : "?";
}

const char *conn_state_awaits(enum conn_state s)
{
	/* What the connection waits for in each setup state: a connect
	 * timeout names it. */
	static const char *const awaits[CS_CONNECTED] = {
		[CS_NEW] = "the connect to start",
		[CS_RESOLVING_NAME] = "the host name lookup",
		[CS_RESOLVING_ADDR] = "address resolution (no ARP/ND reply, or no RDMA device on the route)",
		[CS_RESOLVING_ROUTE] = "route resolution",
		[CS_CONNECTING] = "the peer's CM reply (no listener answered the request)",
		[CS_AUTHENTICATING] = "the listener's verdict on our shared-secret proof",
		[CS_ACCEPT_POOL] = "this side's accept: its receive pool (a step a loop pass)",
		[CS_ACCEPT_QP] = "this side's accept: its QP (a step a loop pass)",
		[CS_ACCEPT_REPLY] = "this side's accept: its reply (a step a loop pass)",
		[CS_ACCEPTING] = "the peer's RTU (the CM's ready-to-use)",
		[CS_AWAITING_PROOF] = "the peer's shared-secret proof",
		[CS_AWAITING_EXPORTS] = "the regions the peer gives with the connection (its exports message)",
	};

	return (unsigned int)s < CS_CONNECTED ? awaits[s] : "nothing (established or ended)";
}

const char *conn_event_name(enum conn_event e)
{
	static const char *const names[CE_COUNT] = {
		[CE_LOOKUP] = "LOOKUP", [CE_RESOLVE_ADDR] = "RESOLVE_ADDR",
		[CE_RESOLVE_ROUTE] = "RESOLVE_ROUTE", [CE_REQ_SENT] = "REQ_SENT",
		[CE_REPLY_OK] = "REPLY_OK", [CE_PROOF_SENT] = "PROOF_SENT",
		[CE_ACCEPT_TAKEN] = "ACCEPT_TAKEN", [CE_POOL_MADE] = "POOL_MADE",
		[CE_QP_READY] = "QP_READY", [CE_REP_SENT] = "REP_SENT", [CE_REP_SENT_KEYED] = "REP_SENT_KEYED",
		[CE_RTU] = "RTU", [CE_PROOF_OK] = "PROOF_OK", [CE_EXPORTS_DUE] = "EXPORTS_DUE",
		[CE_EXPORTS_IN] = "EXPORTS_IN", [CE_PATHS_LOST] = "PATHS_LOST",
		[CE_RESUMED] = "RESUMED", [CE_CLOSE] = "CLOSE",
		[CE_END] = "END", [CE_END_BYE] = "END_BYE", [CE_BYE_DONE] = "BYE_DONE",
		[CE_DRAINED] = "DRAINED", [CE_FINISH] = "FINISH", [CE_REPORTED] = "REPORTED",
	};

	return (unsigned int)e < CE_COUNT ? names[e] : "?";
}

/* Records the message, then ends through the table with ev. */
static void end_with(struct ez_conn *conn, enum conn_event ev, int status, const char *fmt,
		     va_list ap)
{
	vsnprintf(conn->errmsg, sizeof(conn->errmsg), fmt, ap);
	ezi_log_debug("conn %p: %s (%s)", (void *)conn, conn->errmsg, ez_strerror(status));
	conn_fire(conn, conn_fsm_row(conn->state, ev)->valid ? ev : CE_END, status);
}

void conn_fail(struct ez_conn *conn, int status, const char *fmt, ...)
{
	va_list ap;

	if (!conn || conn_is_ended(conn))
		return;
	va_start(ap, fmt);
	end_with(conn, CE_END, status, fmt, ap);
	va_end(ap);
}

void conn_fail_after_bye(struct ez_conn *conn, int status, const char *fmt, ...)
{
	va_list ap;

	if (!conn || conn_is_ended(conn))
		return;
	va_start(ap, fmt);
	end_with(conn, CE_END_BYE, status, fmt, ap);
	va_end(ap);
}

void conn_fire(struct ez_conn *conn, enum conn_event ev, int status)
{
	const struct conn_fsm_row *row = conn_fsm_row(conn->state, ev);
	if (!row->valid) {
		ezi_log_debug("conn %p: %s ignored in %s", (void *)conn, conn_event_name(ev),
			      conn_state_name(conn->state));
		return;
	}
	conn->fsm_run(conn, row, status);
}
