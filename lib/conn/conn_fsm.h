/* conn_fsm.h: the connection's life as data: its states, the events that move it, and what each transition does. */
#ifndef EZ_CONN_CONN_FSM_H
#define EZ_CONN_CONN_FSM_H

#include <stdint.h>

/*
 * A connection is in exactly one of these. The setup states come first and
 * CS_CONNECTED after all of them (msg.c tells "connecting" from "down" by
 * comparing with it); the ended ones follow, in the order a teardown takes.
 */
enum conn_state {
	CS_NEW,			/* allocated; nothing asked of rdma_cm yet */
	CS_RESOLVING_NAME,	/* active: the host name is at the resolver thread */
	CS_RESOLVING_ADDR,	/* active: rdma_resolve_addr() */
	CS_RESOLVING_ROUTE,	/* active: rdma_resolve_route() */
	CS_CONNECTING,		/* active: REQ sent, waiting for the reply */
	CS_AUTHENTICATING,	/* keyed active: proof sent, waiting for the verdict */
	/* Passive: ez_accept() took the request; the accept's costly steps
	 * (each up to ~0.1 s in a TCG guest) run one a loop pass, from the
	 * deferred work, so that no pass holds more than one of them. */
	CS_ACCEPT_POOL,		/* passive: its private pool (SRQ, MR, receives) is next */
	CS_ACCEPT_QP,		/* passive: pool made; its QP and INIT/RTR/RTS are next */
	CS_ACCEPT_REPLY,	/* passive: QP in RTS; the reply (rdma_accept) is next */
	CS_ACCEPTING,		/* passive: REP sent, waiting for the RTU */
	CS_AWAITING_PROOF,	/* keyed passive: REP sent, waiting for the client's proof */
	/* Either side, up on its side (ours posted, if any): waiting for the
	 * regions the peer gives with the connection (HS_CAP_EXPORTS_SENT). */
	CS_AWAITING_EXPORTS,
	CS_CONNECTED,
	/* Every path failed with session resume granted (resume.c): the
	 * active side dials again, the passive side waits, within the window. */
	CS_RESUMING,
	CS_SAYING_BYE,		/* ended; a goodbye (or a refusal) is on the send queue */
	CS_DRAINING,		/* QPs in ERR, CM disconnected: waiting for the flushes */
	CS_FINISHING,		/* drained; the teardown runs from the deferred work */
	CS_REPORTING,		/* the final callback is running */
	CS_DEAD,		/* torn down; the handle waits for ez_conn_close() */
	CS_COUNT
};

/* What happened to a connection. Each input (API call, CM event, work
 * completion, async event, timer) becomes one of these once its handler
 * has done the verbs or CM work it needs. */
enum conn_event {
	CE_LOOKUP,		/* a host name went to the resolver */
	CE_RESOLVE_ADDR,	/* rdma_resolve_addr() is under way */
	CE_RESOLVE_ROUTE,	/* the address resolved; rdma_resolve_route() under way */
	CE_REQ_SENT,		/* the QP is in INIT and rdma_connect() is under way */
	CE_REPLY_OK,		/* active: the reply was checked, QP in RTS, RTU sent */
	CE_PROOF_SENT,		/* keyed active: reply checked, QP in RTS, proof posted */
	CE_ACCEPT_TAKEN,	/* passive: ez_accept() took the request (its checks passed) */
	CE_POOL_MADE,		/* passive: the accept's pool step is done */
	CE_QP_READY,		/* passive: the accept's QP is in RTS */
	CE_REP_SENT,		/* passive: QP in RTS, rdma_accept() done */
	CE_REP_SENT_KEYED,	/* passive with a shared secret: the same */
	CE_RTU,			/* passive: the CM's ESTABLISHED, or a message that overtook it */
	CE_PROOF_OK,		/* the client's proof matched (passive) / the verdict is "accepted" (active) */
	CE_EXPORTS_DUE,		/* up on this side, but the peer's exports message has not come */
	CE_EXPORTS_IN,		/* the peer's exports message came and passed its checks */
	CE_PATHS_LOST,		/* the last path failed; the session may resume (resume.c) */
	CE_RESUMED,		/* a new path 0 is up and the old one's ops settled (resume.c) */
	CE_CLOSE,		/* ez_conn_close() */
	CE_END,			/* an error, or an end with nothing to send first: tear down now */
	CE_END_BYE,		/* an end with a goodbye (or refusal) posted: wait for it first */
	CE_BYE_DONE,		/* the goodbyes completed, or their wait ran out */
	CE_DRAINED,		/* nothing posted is left and the SRQ is done with the QPs */
	CE_FINISH,		/* the deferred teardown runs */
	CE_REPORTED,		/* the final callback returned */
	CE_COUNT
};

/* What a transition does, in this order (conn.c carries them out). */
enum conn_action {
	CA_END = 1u << 0,		/* remember the state ended from and the status; stop the connect timer */
	CA_REPORT_UP = 1u << 1,		/* stop the connect timer, on_connect(0), post what waits */
	CA_CLOSE = 1u << 2,		/* the application closes a live connection: goodbye or teardown */
	CA_BYE_TIMER = 1u << 3,		/* bound the wait for the goodbye */
	CA_TEARDOWN = 1u << 4,		/* QPs to ERR, CM disconnect, drain timer */
	CA_DEFER_FINISH = 1u << 5,	/* queue the finish (never inside the caller's call) */
	CA_FINISH = 1u << 6,		/* destroy QPs and id, then the final callback */
	CA_FREE_IF_CLOSED = 1u << 7,	/* free the handle if the application closed it */
	CA_FREE = 1u << 8,		/* free the handle */
	CA_DEFER_STEP = 1u << 9,	/* queue the accept's next step for the next pass */
	CA_RESUME = 1u << 10,		/* every path down: the session's window and the active side's dial (resume.c) */
	CA_RESUMED = 1u << 11,		/* the passive side's session back by a message before the RTU (resume.c) */
};

struct conn_fsm_row {
	uint8_t valid;
	uint8_t next;		/* enum conn_state */
	uint16_t actions;	/* enum conn_action bits */
};

/* The transition for (state, event); row->valid is 0 when the event means
 * nothing in that state (it is then ignored: e.g. a message that arrives
 * after the end, or a second goodbye). */
const struct conn_fsm_row *conn_fsm_row(enum conn_state s, enum conn_event e);

/* Live: set up or connected, not ended. */
static inline int conn_state_live(enum conn_state s)
{
	return s < CS_SAYING_BYE;
}

/* The CM connection existed (REP sent or received) when it ended, so a
 * disconnect (DREQ) is due. */
static inline int conn_state_cm_connected(enum conn_state s)
{
	return s == CS_AUTHENTICATING || s == CS_ACCEPTING || s == CS_AWAITING_PROOF ||
	       s == CS_AWAITING_EXPORTS || s == CS_CONNECTED || s == CS_RESUMING;
}

const char *conn_state_name(enum conn_state s);
const char *conn_event_name(enum conn_event e);
/* What a setup state waits for, in words ("the peer's CM reply ..."). */
const char *conn_state_awaits(enum conn_state s);

/*
 * The connection's side (conn_fsm.c, on struct ez_conn): every file of
 * lib/conn moves a connection only through these, and they through the
 * table. The actions are carried out by what conn.c registered
 * (ez_conn.fsm_run), so the files below conn.c need not know it.
 */
struct ez_conn;
/* The one way a connection changes state: (state, event) through the
 * table, then the row's actions. status goes with CE_END and CE_END_BYE. */
void conn_fire(struct ez_conn *conn, enum conn_event ev, int status);
/* Records the error in the connection and ends it (no-op once ended). */
void conn_fail(struct ez_conn *conn, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, for an end whose goodbye-like message (a shared-secret
 * refusal) the caller has posted: the teardown waits for it. */
void conn_fail_after_bye(struct ez_conn *conn, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#endif
