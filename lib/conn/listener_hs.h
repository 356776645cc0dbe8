/* listener_hs.h: one handshake in progress on a listener (the struct alone, so that conn_types.h embeds it without listener.h; listener.c owns it). */
#ifndef EZ_CONN_LISTENER_HS_H
#define EZ_CONN_LISTENER_HS_H

#include <stdint.h>
#include <sys/socket.h>

#include "loop/loop.h"

struct ez_listener;

/*
 * One handshake in progress on a listener: a request on_request has not
 * answered yet, or an accepted connection not yet established (keyed: not
 * yet proved). While counted it is on its listener's list, which
 * max_pending and max_pending_per_peer bound, and its timer is the
 * listener's handshake deadline (handshake_timeout_ms from the request's
 * arrival, and again from our reply for the peer's part). Embedded in ez_conn_req and in ez_conn (ez_accept hands it on).
 */
struct listener_hs {
	struct ez_listener *l;		/* counted on l's list; NULL: not (done, or l closed) */
	struct listener_hs *next, *prev;
	struct sockaddr_storage peer;	/* the peer's address (its port ignored) */
	struct loop_timer timer;	/* the deadline */
	uint32_t timeout_ms;		/* the listener's handshake_timeout_ms, for messages */
	void (*expired)(struct listener_hs *h);	/* the owner's: the deadline passed */
	uint32_t grace_ms;		/* the deadline's wait for unread events (on_hs_timer) */
	/* An accepted connection that came up: on l's list of established
	 * connections (max_conns, max_conns_per_peer) until it ends. */
	int up;
};

#endif
