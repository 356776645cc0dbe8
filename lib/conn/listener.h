/* listener.h: a passive endpoint and the connection requests it holds. */
#ifndef EZ_CONN_LISTENER_H
#define EZ_CONN_LISTENER_H

#include <sys/socket.h>

#include "ctx.h"
#include "wire/handshake.h"
#include "peer_penalty.h"

struct auth_key;
struct replay_window;

struct ez_conn_req {
	struct cm_handler cm;	/* first: the id's context */
	struct ez_listener *listener;
	struct rdma_cm_id *id;
	struct sockaddr_storage peer;
	struct hs_msg hs;	/* the peer's handshake, checked */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	struct ez_conn_req *next, *prev;
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
};

/* Takes req off its listener's list (ez_accept and ez_reject). */
void listener_req_unlink(struct ez_conn_req *req);
/* Rejects id with a reason (and HS_CAP_AUTH for a shared-secret refusal)
 * that the peer's easyrdma shows in its error message. */
void listener_reject_id(struct rdma_cm_id *id, uint16_t caps, const void *reason, size_t len);


#endif
