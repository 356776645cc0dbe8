/* session_route.h: a listener's routes to the sessions it handed to other contexts (workers, ez_handoff): a resume request's token → the inbox of the context that owns the session, under a lock. */
#ifndef EZ_SESSION_ROUTE_H
#define EZ_SESSION_ROUTE_H

#include <stdint.h>

#include "session_index.h"

struct ez_ctx;
struct handoff;
struct session_routes;

/*
 * A session accepted on a worker context lives in that context's own index
 * (ctx->sessions, one thread's), but its client dials the listener again to
 * resume it, on the listener's context and thread. The listener's routes
 * say which context to hand the request to: the worker registers the
 * session's token at the grant (its thread), the listener looks the token
 * up (its thread), each under the routes' mutex. The table is a
 * session_index (a forged token reads one short chain, as in a context's
 * own index), and an entry holds a reference on the owner's inbox
 * (handoff.c), so a context freed meanwhile only closes it: the hand is
 * then refused, never a use after free.
 *
 * Lifetimes: the listener, each request handed from it and each session
 * registered hold a reference. Entries are embedded in their sessions,
 * whose threads alone remove them (at the session's end); a listener that
 * closes does not empty the table, it only stops looking (no more
 * requests come to it), and the last session to end frees it.
 */
struct session_route {
	struct session_node ix;		/* in routes->ix, by the session's token */
	struct session_routes *routes;	/* NULL: not registered */
	struct handoff *owner;		/* the session's context's inbox, a reference */
};

/* A listener's empty routes (one reference, the caller's); NULL: no memory. */
struct session_routes *session_routes_new(void);
void session_routes_get(struct session_routes *r);
void session_routes_put(struct session_routes *r);

/* The session's thread, at its grant: token (HS_TOKEN_LEN bytes, the
 * session's, fixed while registered) routes to ctx's inbox. 0; -ESHUTDOWN
 * when ctx takes no requests (nothing to hand a resume to); -ENOMEM. */
int session_route_add(struct session_routes *r, struct session_route *rt, const uint8_t *token,
		      struct ez_ctx *ctx);
/* The session's thread, at its end: no longer routed (safe when never added). */
void session_route_del(struct session_route *rt);

/* The listener's thread: the inbox (a reference: handoff_put() it) of the
 * context that registered token, or NULL. */
struct handoff *session_routes_find(struct session_routes *r, const uint8_t *token);
/* Tokens compared by every find so far (a figure for tests: what a forged
 * token cost). */
uint64_t session_routes_compares(struct session_routes *r);

#endif
