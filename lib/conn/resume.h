/* resume.h: a session whose every path failed, resumed within a window (ez_conn_opts.resume_ms). */
#ifndef EZ_CONN_RESUME_H
#define EZ_CONN_RESUME_H

#include <stdint.h>

#include "conn_types.h"
#include "wire/handshake.h"

struct auth_key;
struct cm_event;
struct rdma_cm_id;
struct session_routes;

/*
 * Granted in the handshake (HS_CAP_RESUME, wire/resume.h) to a connection
 * of exact failover (paths >= 2) whose two sides both ask for it: the
 * listener's side chooses a session token and sends it in its reply.
 * When the last path fails (a transport error, a QP's fatal event, the
 * port going down, keepalive), the connection enters CS_RESUMING instead
 * of ending: the ops the paths held stay held. The active side dials the
 * listener again with a RESUME REQUEST (a fresh rdma_cm connection: the
 * token, the epoch, its count of receives on path 0's old QP, the first
 * PSN of a new path-0 QP; a MAC with a shared secret); the listener finds
 * the session, takes its own paths down if it had not noticed, and
 * answers with its count and PSN. Each side settles path 0's held ops by
 * the other's count on the new path 0 (exact failover's table), and the
 * other paths are told, settled and made again as after any failure. A
 * window that lapses ends the connection with -ETIMEDOUT.
 */
#define RESUME_ANSWER_MAX_MS 2000u	/* the listener waits this long for its old path 0 to flush */
#define RESUME_RTU_MAX_MS 10000u	/* and this long for the client's RTU after its reply */
#define RESUME_CM_TIMEOUT_MS 2000	/* each resolve step of a dial */
#define RESUME_PORT_POLL_MS 100u	/* a dial waits this long again while our port is down */

/* The request asks for resume (connect options); the reply grants it with
 * the session's token (resume_grant() made it). */
void resume_hs_fill(struct ez_conn *conn, struct hs_msg *m);
/* Passive, at ez_accept(): a request that asked, exact failover, and this
 * side's resume_ms: the session and its token. routes: the routes of the
 * listener that handed the request to this context (NULL: it came to a
 * listener of this context), where the session is registered so that its
 * resume finds it here. 0 or -ENOMEM/-EIO. */
int resume_grant(struct ez_conn *conn, const struct hs_msg *req, const struct auth_key *key,
		 struct session_routes *routes);
/* Active: the reply's grant and token, kept. key: the connection's shared
 * secret (it outlives the session's state), NULL: none; the resume
 * messages' MACs use it. */
int resume_take_reply(struct ez_conn *conn, const struct hs_msg *rep, const struct auth_key *key);
/* CA_RESUME: the last path went down (path.c fired CE_PATHS_LOST, now
 * CS_RESUMING): the window starts, the active side dials. */
void resume_paths_lost(struct ez_conn *conn, int status);

/* CA_RESUMED: the passive side's session is back by the client's first
 * message on the new path 0, ahead of the RTU. */
void resume_on_first_msg(struct ez_conn *conn);

/* The listener's side (its context's sessions): a request that starts
 * with the resume magic;
 * busy: why the listener's handshake caps refuse it (NULL: they take it).
 * The id is answered (accepted or rejected) or taken, and 0 returned;
 * except when token is not NULL and no session of ctx has the request's
 * token: -ENOENT, the token in token and the id untouched (the listener
 * then looks for the context it handed the session to). */
int resume_on_request(struct ez_ctx *ctx, const struct cm_event *ev, const char *busy,
		      uint8_t token[HS_TOKEN_LEN]);
/* Refuses a resume request (the peer reads reason and text) and destroys id. */
void resume_reject(struct rdma_cm_id *id, uint8_t reason, const char *text);
/* RESUME_R_UNKNOWN's text for a token no context here has. */
#define RESUME_UNKNOWN_TEXT "no session with this token here (the process restarted, or the session ended)"


/* The connection ends: the exchange under way goes (its id reaped). */
void resume_stop(struct ez_conn *conn);
void resume_free(struct ez_conn *conn);

/* Test hook: the session's token and epoch (the hostile tests forge what
 * only the two sides know); 0, or -ENOENT without a session. */
int resume_test_session(const struct ez_conn *conn, uint8_t token[HS_TOKEN_LEN], uint32_t *epoch);

#endif
