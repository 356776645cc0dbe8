/* listener.h: a passive endpoint and the connection requests it holds. */
#ifndef EZ_CONN_LISTENER_H
#define EZ_CONN_LISTENER_H

#include <sys/socket.h>

#include "ctx.h"
#include "wire/handshake.h"
#include "peer_penalty.h"
#include "listener_hs.h"
#include "loop/mailbox.h"

struct auth_key;
struct replay_window;
struct ez_listener;
struct handoff;


struct ez_conn_req {
	struct cm_handler cm;	/* first: the id's context */
	struct ez_listener *listener;
	struct rdma_cm_id *id;
	struct sockaddr_storage peer;
	struct hs_msg hs;	/* the peer's handshake, checked */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	struct ez_conn_req *next, *prev;
	struct listener_hs pend;	/* counted until answered; at the deadline the id is rejected */
	int expired;		/* the deadline passed: id rejected and destroyed (NULL) */
	/* What ez_accept needs of the listener, kept by the request so that it
	 * can be answered on another context (ez_handoff): the shared secret
	 * (the listener's, or a copy of it once handed: auth_own), the
	 * penalty options and the limits its new context applies. */
	struct auth_key *auth;
	int auth_own;
	struct peer_penalty_opts pen;
	uint32_t max_pending, max_pending_per_peer;
	uint32_t max_conns, max_conns_per_peer, max_ctx_conns;
	struct loop_mail mail;	/* in the target's inbox while handed */
	uint64_t due_ns;	/* while handed: the handshake deadline */
	/* Handed from a listener: that listener's routes (a reference), where
	 * a session granted at ez_accept is registered so that its resume
	 * finds this context (session_route.h). NULL: not handed. */
	struct session_routes *routes;
	/* Not a connection request but a session's resume request, handed to
	 * the context that owns the session: the CM event as the listener
	 * read it (its id is the request's). NULL: a connection request. */
	struct cm_event *resume;
};

struct ez_listener {
	struct cm_handler cm;	/* first: the id's context */
	struct ez_ctx *ctx;
	struct rdma_cm_id *id;
	ez_request_cb on_request;
	void *arg;
	struct ez_conn_req *reqs;	/* not yet accepted or rejected */
	struct auth_key *auth;		/* shared secret requests must prove; NULL: none */
	struct replay_window *replay;	/* with auth: the request nonces let through lately */
	struct peer_penalty_opts pen;	/* ez_listen_opts.access_*: refusing peers that keep failing */
	struct listener_hs *hs;		/* handshakes in progress (listener_hs) */
	uint32_t npending;		/* on that list */
	uint32_t max_pending, max_pending_per_peer, handshake_timeout_ms;	/* resolved */
	uint64_t refused_pending, refused_per_peer, expired, graced;	/* counts, for tests and logs */
	struct listener_hs *up;		/* accepted connections established (listener_hs.up) */
	uint32_t nup;			/* on that list */
	uint32_t max_conns, max_conns_per_peer, max_ctx_conns;	/* resolved */
	uint64_t refused_conns, refused_conns_per_peer, refused_ctx_conns;
	/* ez_listen_opts.workers: each request is handed to one of them
	 * (references on their inboxes, handoff.c). */
	struct handoff **workers;
	uint32_t nworkers, placement, rr;
	ez_place_cb place;
	uint64_t handed, refused_workers;
	/* Tokens of the sessions handed to other contexts (workers,
	 * ez_handoff), a reference; NULL on a worker's listener. */
	struct session_routes *routes;
	uint64_t resumes_handed;	/* resume requests handed to their session's context */
	/* A worker context's listener (ez_ctx_take_requests): no CM id; the
	 * requests handed to the context are counted on it and reach
	 * on_request through it. */
	int worker;
};

/* Takes req off its listener's list (ez_accept and ez_reject). */
void listener_req_unlink(struct ez_conn_req *req);
/* Off its listener's list and counts, its copy of the shared secret wiped,
 * freed (an answered request). */
void listener_req_free(struct ez_conn_req *req);
/* Rejects id with a reason (and HS_CAP_AUTH for a shared-secret refusal)
 * that the peer's easyrdma shows in its error message. */
void listener_reject_id(struct rdma_cm_id *id, uint16_t caps, const void *reason, size_t len);

/* More than this many handshakes in progress on a listener, and the
 * connections it accepts are made small until they come up (conn.c). */
#define LISTENER_CROWDED 8

/* The listener of handshake h is crowded (a flood, or a burst). */
static inline int listener_hs_crowded(const struct listener_hs *h)
{
	return h->l && !h->up && h->l->npending > LISTENER_CROWDED;
}

/* ez_accept: the request's handshake goes on as the connection's: to
 * counts in from's place, with the time left of from's deadline, and calls
 * expired(to) when it passes. */
void listener_hs_move(struct listener_hs *from, struct listener_hs *to,
		      void (*expired)(struct listener_hs *h));
/* Our reply went out (rdma_accept): the peer's part of the handshake (its
 * RTU, its proof) starts now, with the whole deadline. What came before
 * (the application's answer, our own accept steps) had the deadline from
 * the request's arrival; a server slow to do its part (a loaded host, a
 * connect storm) does not count that against the peer. */
void listener_hs_restart(struct listener_hs *h);
/* The handshake is over (established, proved, failed or freed): no longer
 * counted as a handshake, its deadline stopped. An accepted connection
 * that is established (CS_CONNECTED) stays counted on the listener's
 * established list until the next call (its end, or its free). Safe to
 * call again. */
void listener_hs_leave(struct listener_hs *h);


#endif
