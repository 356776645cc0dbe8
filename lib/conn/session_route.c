/* session_route.c: a listener's routes to the sessions it handed to other contexts (struct session_routes): a session_index under a mutex, shared by the listener's thread and its workers'. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "ctx.h"
#include "handoff.h"
#include "session_route.h"

struct session_routes {
	pthread_mutex_t mu;		/* ix, and every route's membership in it */
	struct session_index ix;
	unsigned int refs;		/* atomic */
};

struct session_routes *session_routes_new(void)
{
	struct session_routes *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (pthread_mutex_init(&r->mu, NULL)) {
		free(r);
		return NULL;
	}
	r->refs = 1;
	return r;
}

void session_routes_get(struct session_routes *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void session_routes_put(struct session_routes *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL))
		return;
	/* Empty: every session removed its route before its reference went. */
	session_index_fini(&r->ix);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

int session_route_add(struct session_routes *r, struct session_route *rt, const uint8_t *token,
		      struct ez_ctx *ctx)
{
	int ret;

	if (!ctx->handoff)
		return -ESHUTDOWN;
	rt->ix.token = token;
	rt->owner = ctx->handoff;
	handoff_get(rt->owner);
	pthread_mutex_lock(&r->mu);
	ret = session_index_add(&r->ix, &rt->ix);
	pthread_mutex_unlock(&r->mu);
	if (ret) {
		handoff_put(rt->owner);
		rt->owner = NULL;
		return ret;
	}
	session_routes_get(r);
	rt->routes = r;
	return 0;
}

void session_route_del(struct session_route *rt)
{
	struct session_routes *r = rt->routes;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	session_index_del(&r->ix, &rt->ix);
	pthread_mutex_unlock(&r->mu);
	handoff_put(rt->owner);
	rt->owner = NULL;
	rt->routes = NULL;
	session_routes_put(r);
}

struct handoff *session_routes_find(struct session_routes *r, const uint8_t *token)
{
	struct session_node *n;
	struct handoff *h = NULL;

	pthread_mutex_lock(&r->mu);
	n = session_index_find(&r->ix, token);
	/* The reference is taken under the lock: the session's thread may
	 * remove the route (and put its own) the moment it is released. */
	if (n) {
		h = container_of(n, struct session_route, ix)->owner;
		handoff_get(h);
	}
	pthread_mutex_unlock(&r->mu);
	return h;
}

uint64_t session_routes_compares(struct session_routes *r)
{
	uint64_t n;

	pthread_mutex_lock(&r->mu);
	n = r->ix.compares;
	pthread_mutex_unlock(&r->mu);
	return n;
}
