/* listener.c: ez_listen, the connection requests it receives, ez_reject. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/addr.h"
#include "wire/auth.h"
#include "device/device.h"
#include "base/abi.h"
#include "base/error.h"
#include "listener.h"
#include "resume.h"
#include "session_route.h"
#include "wire/resume.h"
#include "base/log.h"
#include "wire/replay.h"
#include "handoff.h"
#include "conn_types.h"

_Static_assert(REPLAY_NONCE_LEN == AUTH_NONCE_LEN, "the window keeps request nonces");

/* Listener limits: handshakes in progress and their deadline. A flood of
 * requests that never complete holds at most max_pending of them (each a
 * small QP and pool, lib/conn/conn.c), at most max_pending_per_peer from
 * one address, each for at most handshake_timeout_ms. */
#define LISTENER_DEF_MAX_PENDING 256
#define LISTENER_DEF_MAX_PENDING_PER_PEER 64
#define LISTENER_DEF_HANDSHAKE_TIMEOUT_MS 2000

/* Connections, established and in progress (issue 39): one accepted
 * connection pins ~256 KiB at the default ez_conn_opts (its share of the
 * pool, QP and CQ rings; measured 768 MB for 3,000), so one address holds
 * at most ~256 MiB and a listener or a context ~1 GiB of a 2 GiB server.
 * easyrdma.h says the same; a server that wants more sets them. */
#define LISTENER_DEF_MAX_CONNS 4096
#define LISTENER_DEF_MAX_CONNS_PER_PEER 1024
#define LISTENER_DEF_MAX_CTX_CONNS 4096

/* The CM id goes whatever the outcome; a failure (an event not acked, a
 * kernel error) is logged, as the id and its kernel state may be leaked. */
static void destroy_id(struct rdma_cm_id *id)
{
	if (rdma_destroy_id(id))
		ezi_log_warn("listener: rdma_destroy_id: %s", ez_strerror(errno));
}

void listener_req_free(struct ez_conn_req *req)
{
	listener_hs_leave(&req->pend);
	listener_req_unlink(req);
	if (req->auth_own) {
		auth_key_wipe(req->auth);
		free(req->auth);
	}
	session_routes_put(req->routes);
	free(req->resume);
	free(req);
}

/* ---- handshakes in progress ------------------------------------------- */

/* The same peer: address family and address, whatever the port. */
static int same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	return ezaddr_same_host((const struct sockaddr *)a, (const struct sockaddr *)b);
}

static uint32_t pending_from(const struct ez_listener *l, const struct sockaddr_storage *peer)
{
	const struct listener_hs *h;
	uint32_t n = 0;

	for (h = l->hs; h; h = h->next)
		n += (uint32_t)same_host(&h->peer, peer);
	return n;
}

/* Established connections from peer's address. */
static uint32_t up_from(const struct ez_listener *l, const struct sockaddr_storage *peer)
{
	const struct listener_hs *h;
	uint32_t n = 0;

	for (h = l->up; h; h = h->next)
		n += (uint32_t)same_host(&h->peer, peer);
	return n;
}

/* A deadline is judged on what the loop has read, as a connect deadline
 * is (conn.c, connect_deadline_waits()): a host too busy to run this
 * process for a while leaves the peer's answer (the RTU's establishment,
 * the proof) unread behind the timer, and a pass reads a bounded batch of
 * events, so a storm can too. While the loop has events waiting, the
 * verdict waits for them a step at a time, at most once more the deadline:
 * a peer that keeps the loop busy holds its place at most that long. */
#define LISTENER_HS_GRACE_STEP_MS 20

static void on_hs_timer(struct loop_timer *t)
{
	struct listener_hs *h = container_of(t, struct listener_hs, timer);

	if (h->grace_ms < h->timeout_ms && loop_events_waiting(&h->l->ctx->loop)) {
		if (!h->grace_ms) {
			h->l->graced++;
			ezi_log_debug("listener: a handshake's deadline of %u ms passed with events unread: judged once they are read (at most %u ms more)",
				      h->timeout_ms, h->timeout_ms);
		}
		h->grace_ms += LISTENER_HS_GRACE_STEP_MS;
		ctx_timer_start(h->l->ctx, &h->timer, LISTENER_HS_GRACE_STEP_MS);
		return;
	}
	h->expired(h);
}

static void hs_join(struct ez_listener *l, struct listener_hs *h, uint32_t ms,
		    void (*expired)(struct listener_hs *h))
{
	h->l = l;
	h->up = 0;
	h->prev = NULL;
	h->next = l->hs;
	if (l->hs)
		l->hs->prev = h;
	l->hs = h;
	l->npending++;
	h->timeout_ms = l->handshake_timeout_ms;
	h->grace_ms = 0;
	h->expired = expired;
	h->timer.fn = on_hs_timer;
	ctx_timer_start(l->ctx, &h->timer, ms);
}

static void req_expired(struct listener_hs *h);

/* Off whichever of l's lists h is on. */
static void hs_unlink(struct listener_hs **head, struct listener_hs *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		*head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	h->next = h->prev = NULL;
}

void listener_hs_leave(struct listener_hs *h)
{
	struct ez_listener *l = h->l;

	if (!l)
		return;
	if (h->up) {	/* an established connection ended */
		hs_unlink(&l->up, h);
		h->up = 0;
		h->l = NULL;
		l->nup--;
		return;
	}
	ctx_timer_stop(l->ctx, &h->timer);
	hs_unlink(&l->hs, h);
	l->npending--;
	/* An accepted connection that came up keeps its place (max_conns). */
	if (h->expired != req_expired &&
	    container_of(h, struct ez_conn, pend)->state == CS_CONNECTED) {
		h->up = 1;
		h->next = l->up;
		if (l->up)
			l->up->prev = h;
		l->up = h;
		l->nup++;
		return;
	}
	h->l = NULL;
}

void listener_hs_move(struct listener_hs *from, struct listener_hs *to,
		      void (*expired)(struct listener_hs *h))
{
	struct ez_listener *l = from->l;
	uint64_t now = loop_now_ns(), due = from->timer.due_ns;
	uint32_t left;

	to->peer = from->peer;
	if (!l)
		return;
	left = due > now ? (uint32_t)((due - now + 999999) / 1000000) : 0;
	listener_hs_leave(from);
	hs_join(l, to, left, expired);
	to->timeout_ms = from->timeout_ms;
}

void listener_hs_restart(struct listener_hs *h)
{
	if (!h->l || h->up)
		return;
	h->grace_ms = 0;
	ctx_timer_start(h->l->ctx, &h->timer, h->timeout_ms);
}

/* The application has not answered within the deadline: the peer hears
 * why; the request stays the application's (ez_accept then refuses it). */
static void req_expired(struct listener_hs *h)
{
	struct ez_conn_req *req = container_of(h, struct ez_conn_req, pend);
	char why[96];
	int n = snprintf(why, sizeof(why), "handshake not completed within %u ms (handshake_timeout_ms)",
			 h->timeout_ms);

	h->l->expired++;
	ezi_log_info("listener: rejecting an unanswered request: %s", why);
	listener_hs_leave(h);
	listener_reject_id(req->id, 0, why, (size_t)n);
	destroy_id(req->id);
	req->id = NULL;
	req->expired = 1;
}

/* The limits, before the request costs anything: NULL when it may go on,
 * else the reason the peer reads (in why). */
static const char *limit_gate(struct ez_listener *l, const struct sockaddr_storage *peer,
			      char *why, size_t len)
{
	uint32_t n, total = l->npending + l->nup;

	if (l->npending >= l->max_pending) {
		l->refused_pending++;
		snprintf(why, len, "listener busy: %u handshakes in progress (max_pending %u)",
			 l->npending, l->max_pending);
		return why;
	}
	n = pending_from(l, peer);
	if (n >= l->max_pending_per_peer) {
		l->refused_per_peer++;
		snprintf(why, len, "listener busy: %u handshakes in progress from this address (max_pending_per_peer %u)",
			 n, l->max_pending_per_peer);
		return why;
	}
	/* Connections, established and in progress (the request counts as
	 * one from here). The peer's are counted only when the total could
	 * reach its cap. */
	if ((uint32_t)l->ctx->nconns >= l->max_ctx_conns) {
		l->refused_ctx_conns++;
		snprintf(why, len, "context full: %d connections (max_ctx_conns %u)",
			 l->ctx->nconns, l->max_ctx_conns);
		return why;
	}
	if (total >= l->max_conns) {
		l->refused_conns++;
		snprintf(why, len, "listener full: %u connections (max_conns %u)", total,
			 l->max_conns);
		return why;
	}
	if (total >= l->max_conns_per_peer) {
		n += up_from(l, peer);
		if (n >= l->max_conns_per_peer) {
			l->refused_conns_per_peer++;
			snprintf(why, len, "listener full: %u connections from this address (max_conns_per_peer %u)",
				 n, l->max_conns_per_peer);
			return why;
		}
	}
	return NULL;
}

void listener_req_unlink(struct ez_conn_req *req)
{
	if (!req->listener)
		return;
	if (req->prev)
		req->prev->next = req->next;
	else
		req->listener->reqs = req->next;
	if (req->next)
		req->next->prev = req->prev;
	req->listener = NULL;
}


void listener_reject_id(struct rdma_cm_id *id, uint16_t caps, const void *reason, size_t len)
{
	struct hs_msg m = { .kind = HS_REJ, .caps = caps };
	uint8_t buf[HS_REJ_MAX];
	int n;

	if (len > hs_user_max(HS_REJ))
		len = hs_user_max(HS_REJ);
	m.user_len = (uint8_t)len;
	memcpy(m.user, reason, len);
	n = hs_encode(&m, buf, sizeof(buf));
	if (rdma_reject(id, buf, n > 0 ? (uint8_t)n : 0))
		ezi_log_warn("rdma_reject: %s", ez_strerror(errno));
}

/* Rejects id with a reason the peer's easyrdma shows in its error message. */
static void reject_id(struct rdma_cm_id *id, const void *reason, size_t len)
{
	listener_reject_id(id, 0, reason, len);
}

/* The shared-secret gate, before the application sees the request: NULL
 * when it passes, else the reason the peer reads. */
static const char *auth_gate(const struct ez_listener *l, const struct hs_msg *hs)
{
	if (l->auth) {
		if (!(hs->caps & HS_CAP_AUTH))
			return "listener requires a shared secret";
		if (auth_req_check(l->auth, hs))
			return "listener refused the shared-secret proof";
	} else if (hs->caps & HS_CAP_AUTH) {
		return "listener has no shared secret";
	}
	return NULL;
}

/* A request nobody answered yet can only lose its peer. */
static void req_on_cm(struct cm_handler *h, const struct cm_event *ev)
{
	ezi_log_debug("listener: pending request got %s", rdma_event_str(ev->type));
}

static void req_link(struct ez_listener *l, struct ez_conn_req *req)
{
	req->listener = l;
	req->prev = NULL;
	req->next = l->reqs;
	if (l->reqs)
		l->reqs->prev = req;
	l->reqs = req;
}

/* ---- handing requests to other contexts (ez_handoff, workers) --------- */

/* Milliseconds left until due (0: passed). */
static uint32_t ms_left(uint64_t due)
{
	uint64_t now = loop_now_ns();

	return due > now ? (uint32_t)((due - now + 999999) / 1000000) : 0;
}

/* Posts req to h's context: before the post it leaves its listener (whose
 * lists and timers are this thread's; after the post the target may touch
 * the request at once), and comes back to it when the post is refused.
 * The shared secret goes with it as a copy (the listener may close). */
static int req_hand(struct ez_conn_req *req, struct handoff *h)
{
	struct ez_listener *l = req->listener;
	uint32_t timeout_ms = req->pend.timeout_ms;
	int ret;

	if (req->auth && !req->auth_own) {
		struct auth_key *k = malloc(sizeof(*k));

		if (!k)
			return ezi_fail(-ENOMEM, "ez_handoff: out of memory");
		*k = *req->auth;
		req->auth = k;
		req->auth_own = 1;
	}
	/* The first listener's routes, kept across further hands: its
	 * address is the one the client dials again to resume. */
	if (!req->routes && l->routes) {
		session_routes_get(l->routes);
		req->routes = l->routes;
	}
	req->due_ns = req->pend.timer.due_ns;
	listener_hs_leave(&req->pend);
	listener_req_unlink(req);
	req->pend.timeout_ms = timeout_ms;
	ret = handoff_post(h, &req->mail, req->id);
	if (ret) {
		req_link(l, req);
		hs_join(l, &req->pend, ms_left(req->due_ns), req_expired);
		req->pend.timeout_ms = timeout_ms;
	}
	return ret;
}

/* Refuses a request that could not be handed (the peer reads why). */
static void req_refuse(struct ez_conn_req *req, const char *why)
{
	ezi_log_info("listener: rejecting a request: %s", why);
	reject_id(req->id, why, strlen(why));
	destroy_id(req->id);
	listener_req_free(req);
}

/* The worker a request goes to first: an index, or -1 for the listener. */
static int pick(struct ez_listener *l, struct ez_conn_req *req)
{
	uint32_t i, best = l->rr % l->nworkers, start = best;
	unsigned int load, least = UINT32_MAX;

	switch (l->placement) {
	case EZ_PLACE_CALLBACK: {
		int c = l->place(l, req, l->nworkers, l->arg);

		return c < 0 ? -1 : (int)((uint32_t)c % l->nworkers);
	}
	case EZ_PLACE_LEAST_CONNS:
		/* Ties in turn from the cursor, so a burst spreads before any
		 * worker has published its count. */
		for (i = 0; i < l->nworkers; i++) {
			uint32_t k = (start + i) % l->nworkers;

			if (handoff_closed(l->workers[k]))
				continue;
			load = handoff_load(l->workers[k]);
			if (load < least) {
				least = load;
				best = k;
			}
		}
		l->rr++;
		return (int)best;
	default:
		return (int)(l->rr++ % l->nworkers);
	}
}

/* A listener with workers: the request goes to the chosen one, or the
 * next that takes it; rejected when none does. */
static void place(struct ez_listener *l, struct ez_conn_req *req)
{
	int first = pick(l, req);
	uint32_t k;
	char why[96];

	if (first < 0) {
		if (l->on_request)
			l->on_request(l, req, l->arg);
		else
			req_refuse(req, "no worker chosen for the request");
		return;
	}
	for (k = 0; k < l->nworkers; k++) {
		struct handoff *h = l->workers[((uint32_t)first + k) % l->nworkers];
		int ret;

		if (handoff_closed(h))
			continue;
		ret = req_hand(req, h);
		if (!ret) {
			l->handed++;
			return;
		}
		if (ret != -ESHUTDOWN)
			break;
	}
	l->refused_workers++;
	snprintf(why, sizeof(why), "no worker context is taking requests (%u workers)",
		 l->nworkers);
	req_refuse(req, why);
}

/* A session's resume request whose session this context does not have:
 * handed, as a letter, to the context the session was handed to (its
 * route, registered at its grant), where resume.c answers it against that
 * context's own sessions. The route is one lookup under the routes' lock,
 * a forged token's as cheap as a genuine one's; the hand is the same
 * non-blocking post as a connection request's. */
static void resume_hand(struct ez_listener *l, const struct cm_event *ev, const uint8_t *token)
{
	struct handoff *h = l->routes ? session_routes_find(l->routes, token) : NULL;
	struct ez_conn_req *req;
	char why[EZ_ERRMSG_MAX];
	int ret;

	if (!h) {
		resume_reject(ev->id, RESUME_R_UNKNOWN, RESUME_UNKNOWN_TEXT);
		return;
	}
	req = calloc(1, sizeof(*req));
	if (req)
		req->resume = malloc(sizeof(*req->resume));
	if (!req || !req->resume) {
		handoff_put(h);
		if (req)
			listener_req_free(req);
		resume_reject(ev->id, RESUME_R_BUSY, "out of memory handing the request to the session's context");
		return;
	}
	*req->resume = *ev;
	req->id = ev->id;
	/* Its events on the target before the letter: logged, not lost. */
	req->cm.on_event = req_on_cm;
	ev->id->context = req;
	ret = handoff_post(h, &req->mail, ev->id);
	handoff_put(h);
	if (!ret) {
		l->resumes_handed++;
		return;
	}
	/* The session's context is freed or takes no requests: the session
	 * cannot be answered there (a freed context's sessions ended). */
	if (ret == -ESHUTDOWN)
		snprintf(why, sizeof(why), "the session's context takes no more requests (freed, or ez_ctx_take_requests stopped)");
	else
		snprintf(why, sizeof(why), "handing the request to the session's context: %s", ez_errmsg());
	ev->id->context = l;
	req->id = NULL;
	listener_req_free(req);
	resume_reject(ev->id, ret == -ESHUTDOWN ? RESUME_R_UNKNOWN : RESUME_R_BUSY, why);
}

/* A session's resume: its own exchange (resume.c), with this context's
 * sessions first, then the contexts this listener handed sessions to. */
static void resume_take(struct ez_listener *l, const struct cm_event *ev, const char *busy)
{
	uint8_t token[HS_TOKEN_LEN];

	if (resume_on_request(l->ctx, ev, busy, token) == -ENOENT)
		resume_hand(l, ev, token);
}

static void listener_on_request(struct ez_listener *l, const struct cm_event *ev)
{
	struct ez_conn_req *req;
	char why[160];
	const char *denied;
	struct sockaddr *peer;

	if (!l) {
		rdma_reject(ev->id, NULL, 0);
		destroy_id(ev->id);
		return;
	}
	req = calloc(1, sizeof(*req));
	if (!req) {
		reject_id(ev->id, "out of memory", 13);
		destroy_id(ev->id);
		return;
	}
	req->cm.on_event = req_on_cm;
	req->id = ev->id;
	req->responder_resources = ev->responder_resources;
	req->initiator_depth = ev->initiator_depth;
	peer = rdma_get_peer_addr(ev->id);
	memcpy(&req->peer, peer, peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in));
	/* A peer that keeps failing remote access is refused for a while. */
	denied = peer_penalty_gate(l->ctx, &l->pen, peer, why, sizeof(why));
	if (denied) {
		ezi_log_info("listener: rejecting a request: %s", denied);
		reject_id(ev->id, denied, strlen(denied));
		destroy_id(ev->id);
		free(req);
		return;
	}
	/* A session's resume: its own exchange (resume.c), under the same
	 * caps on handshakes in progress. */
	if (resume_is(ev->pdata, ev->pdata_len)) {
		denied = limit_gate(l, &req->peer, why, sizeof(why));
		free(req);
		resume_take(l, ev, denied);
		return;
	}
	if (hs_decode(ev->pdata, ev->pdata_len, HS_REQ, &req->hs, why, sizeof(why))) {
		ezi_log_info("listener: rejecting a request: %s", why);
		reject_id(ev->id, why, strlen(why));
		destroy_id(ev->id);
		free(req);
		return;
	}
	denied = limit_gate(l, &req->peer, why, sizeof(why));
	if (denied) {
		ezi_log_info("listener: rejecting a request: %s", denied);
		reject_id(ev->id, denied, strlen(denied));
		destroy_id(ev->id);
		free(req);
		return;
	}
	denied = auth_gate(l, &req->hs);
	/* The MAC is genuine, so the nonce is the client's; seen before, the
	 * request is a recording played again. */
	if (!denied && l->replay && replay_window_seen(l->replay, req->hs.auth))
		denied = "listener has seen this request before (a replay)";
	if (denied) {
		ezi_log_info("listener: rejecting a request: %s", denied);
		listener_reject_id(ev->id, HS_CAP_AUTH, denied, strlen(denied));
		destroy_id(ev->id);
		free(req);
		return;
	}
	ev->id->context = req;
	req->auth = l->auth;
	req->pen = l->pen;
	req->max_pending = l->max_pending;
	req->max_pending_per_peer = l->max_pending_per_peer;
	req->max_conns = l->max_conns;
	req->max_conns_per_peer = l->max_conns_per_peer;
	req->max_ctx_conns = l->max_ctx_conns;
	req_link(l, req);
	req->pend.peer = req->peer;
	hs_join(l, &req->pend, l->handshake_timeout_ms, req_expired);
	if (l->nworkers)
		place(l, req);
	else
		l->on_request(l, req, l->arg);
}

static void listener_on_cm(struct cm_handler *h, const struct cm_event *ev)
{
	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST)
		listener_on_request(container_of(h, struct ez_listener, cm), ev);
	else
		ezi_log_debug("listener: %s", rdma_event_str(ev->type));
}

static void listener_free(struct ez_listener *l)
{
	/* Accepted connections still in their handshake go on uncounted. */
	while (l->hs)
		listener_hs_leave(l->hs);
	while (l->up) {
		struct listener_hs *h = l->up;

		hs_unlink(&l->up, h);
		h->up = 0;
		h->l = NULL;
	}
	for (uint32_t i = 0; i < l->nworkers; i++)
		handoff_put(l->workers[i]);
	/* Sessions handed on keep the routes until they end (session_route.h). */
	session_routes_put(l->routes);
	free(l->workers);
	if (l->auth) {
		auth_key_wipe(l->auth);
		free(l->auth);
	}
	replay_window_free(l->replay);
	free(l);
}

static int workers_check(const struct ez_listen_opts *o)
{
	if (!o->nworkers)
		return 0;
	if (!o->workers)
		return ezi_fail(-EINVAL, "ez_listen_opts.workers is NULL (nworkers %u)", o->nworkers);
	if (o->placement > EZ_PLACE_CALLBACK)
		return ezi_fail(-EINVAL, "ez_listen_opts.placement %u unknown (0..%d)", o->placement,
				EZ_PLACE_CALLBACK);
	if (o->placement == EZ_PLACE_CALLBACK && !o->place)
		return ezi_fail(-EINVAL, "ez_listen_opts.place is NULL with EZ_PLACE_CALLBACK");
	return 0;
}

/* A reference on each worker's inbox: a worker freed later only closes it. */
static int workers_take(struct ez_listener *l, const struct ez_listen_opts *o)
{
	uint32_t i;

	if (!o->nworkers)
		return 0;
	l->workers = calloc(o->nworkers, sizeof(*l->workers));
	if (!l->workers)
		return ezi_fail(-ENOMEM, "ez_listen: out of memory");
	for (i = 0; i < o->nworkers; i++) {
		l->workers[i] = handoff_find(o->workers[i]);
		if (!l->workers[i]) {
			l->nworkers = i;
			return ezi_fail(-EINVAL, "ez_listen_opts.workers[%u] (%p) takes no requests: "
					"call ez_ctx_take_requests() on its thread first",
					i, (void *)o->workers[i]);
		}
	}
	l->nworkers = o->nworkers;
	l->placement = o->placement;
	l->place = o->place;
	return 0;
}

int ez_listen_sz(struct ez_ctx *ctx, const char *address, const char *service,
		 const struct ez_listen_opts *opts_in, size_t opts_size, ez_request_cb on_request,
		 void *arg, struct ez_listener **out)
{
	struct sockaddr_storage ss;
	struct ez_listen_opts lo, *opts = &lo;
	struct ez_listener *l;
	char err[EZ_ERRMSG_MAX];
	int ret, backlog;

	if (ctx_check_thread(ctx, "ez_listen"))
		return -EPERM;
	if (!ctx || !out)
		return ezi_fail(-EINVAL, "ez_listen: ctx %p, listener pointer %p",
				(void *)ctx, (void *)out);
	/* At this library's layout (doc/abi.md); NULL reads as all zero. */
	ret = ezi_struct_in(&lo, sizeof(lo), opts_in, opts_size, "ez_listen", "ez_listen_opts");
	if (ret)
		return ret;
	if (!on_request && !opts->nworkers)
		return ezi_fail(-EINVAL, "ez_listen: on_request NULL and no ez_listen_opts.workers");
	ret = workers_check(opts);
	if (ret)
		return ret;
	if (opts->reserved)
		return ezi_fail(-EINVAL, "ez_listen_opts.reserved is %u (must be 0)", opts->reserved);
	backlog = opts->backlog > 0 ? opts->backlog : 128;
	if (!address) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		ret = ezaddr_resolve("::", service ? service : "0", EZADDR_PASSIVE, &ss, err, sizeof(err));
		if (!ret)
			s6->sin6_addr = in6addr_any;
	} else {
		ret = ezaddr_resolve(address, service ? service : "0", EZADDR_PASSIVE, &ss, err, sizeof(err));
	}
	if (ret)
		return ezi_fail(ret, "ez_listen: %s", err);
	if (opts && opts->auth_key_len && (!opts->auth_key || opts->auth_key_len < AUTH_KEY_MIN ||
					   opts->auth_key_len > EZ_AUTH_KEY_MAX))
		return ezi_fail(-EINVAL, "ez_listen_opts.auth_key: %s (auth_key_len %u; %d..%d bytes)",
				opts->auth_key ? "bad length" : "NULL", opts->auth_key_len,
				AUTH_KEY_MIN, EZ_AUTH_KEY_MAX);
	l = calloc(1, sizeof(*l));
	if (!l)
		return ezi_fail(-ENOMEM, "ez_listen: out of memory");
	if (opts && opts->auth_key_len) {
		l->auth = malloc(sizeof(*l->auth));
		l->replay = replay_window_new(REPLAY_WINDOW);
		if (!l->auth || !l->replay) {
			free(l->auth);
			l->auth = NULL;
			listener_free(l);
			return ezi_fail(-ENOMEM, "ez_listen: out of memory");
		}
		auth_key_set(l->auth, opts->auth_key, opts->auth_key_len);
	}
	l->max_pending = opts->max_pending ? opts->max_pending : LISTENER_DEF_MAX_PENDING;
	l->max_pending_per_peer = opts->max_pending_per_peer ? opts->max_pending_per_peer :
		LISTENER_DEF_MAX_PENDING_PER_PEER;
	l->handshake_timeout_ms = opts->handshake_timeout_ms ? opts->handshake_timeout_ms :
		LISTENER_DEF_HANDSHAKE_TIMEOUT_MS;
	l->max_conns = opts->max_conns ? opts->max_conns : LISTENER_DEF_MAX_CONNS;
	l->max_conns_per_peer = opts->max_conns_per_peer ? opts->max_conns_per_peer :
		LISTENER_DEF_MAX_CONNS_PER_PEER;
	l->max_ctx_conns = opts->max_ctx_conns ? opts->max_ctx_conns : LISTENER_DEF_MAX_CTX_CONNS;
	l->cm.on_event = listener_on_cm;
	l->ctx = ctx;
	l->routes = session_routes_new();
	if (!l->routes) {
		listener_free(l);
		return ezi_fail(-ENOMEM, "ez_listen: out of memory");
	}
	peer_penalty_opts(&l->pen, opts);
	l->on_request = on_request;
	l->arg = arg;
	ret = workers_take(l, opts);
	if (ret) {
		listener_free(l);
		return ret;
	}
	if (rdma_create_id(ctx->ch, &l->id, l, RDMA_PS_TCP)) {
		ret = ezi_fail(-errno, "rdma_create_id: %s", ez_strerror(errno));
		listener_free(l);
		return ret;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)&ss)) {
		ret = ezi_fail(-errno, "rdma_bind_addr(%s, %s): %s", address ? address : "::",
			       service ? service : "0", ez_strerror(errno));
		goto err;
	}
	if (rdma_listen(l->id, backlog)) {
		ret = ezi_fail(-errno, "rdma_listen(%s, %s, backlog %d): %s",
			       address ? address : "::", service ? service : "0", backlog,
			       ez_strerror(errno));
		goto err;
	}
	/* Bound to one device's address: open the device now, so the first
	 * request does not pay for it (ibv_open_device, PD, CQ: ~9 ms of a
	 * first connection's 56-100 ms on Soft-RoCE under TCG). */
	if (l->id->verbs) {
		struct device *dev;

		ret = device_get(ctx, l->id->verbs, &dev);
		if (ret)
			goto err;
	}
	ctx->nlisteners++;
	*out = l;
	return 0;
err:
	destroy_id(l->id);
	listener_free(l);
	return ret;
}

uint16_t ez_listener_port(const struct ez_listener *l)
{
	if (l && ctx_wrong_thread(l->ctx, "ez_listener_port"))
		return 0;
	return l && l->id ? ntohs(rdma_get_src_port(l->id)) : 0;
}

void ez_listener_close(struct ez_listener *l)
{
	static const char why[] = "listener closed";

	if (!l || ctx_wrong_thread(l->ctx, "ez_listener_close"))
		return;
	if (l->worker) {
		ezi_log_err("ez_listener_close: %p is a worker context's listener (ez_ctx_take_requests); "
			    "it goes with the context", (void *)l);
		return;
	}
	while (l->reqs) {
		struct ez_conn_req *req = l->reqs;

		if (req->id) {
			reject_id(req->id, why, sizeof(why) - 1);
			destroy_id(req->id);
		}
		listener_req_free(req);
	}
	ctx_listener_gone(l->ctx, l->id);
	destroy_id(l->id);
	l->ctx->nlisteners--;
	listener_free(l);
}

const struct sockaddr *ez_conn_req_peer(const struct ez_conn_req *req)
{
	if (req && ctx_wrong_thread(req->listener->ctx, "ez_conn_req_peer"))
		return NULL;
	return req ? (const struct sockaddr *)&req->peer : NULL;
}

const void *ez_conn_req_data(const struct ez_conn_req *req, size_t *len)
{
	if (!req || ctx_wrong_thread(req->listener->ctx, "ez_conn_req_data")) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = req->hs.user_len;
	return req->hs.user;
}

int ez_reject(struct ez_conn_req *req, const void *reason, size_t len)
{
	if (req && ctx_check_thread(req->listener->ctx, "ez_reject"))
		return -EPERM;
	if (!req)
		return ezi_fail(-EINVAL, "ez_reject: req is NULL");
	if (req->expired) {	/* rejected at the deadline already */
		listener_req_free(req);
		return 0;
	}
	if (len > EZ_REJECT_DATA_MAX || (len && !reason)) {
		int ret = ezi_fail(-EINVAL, "ez_reject: reason of %zu bytes (max %d)", len,
				   EZ_REJECT_DATA_MAX);

		len = 0;
		reject_id(req->id, "", 0);
		destroy_id(req->id);
		listener_req_free(req);
		return ret;
	}
	reject_id(req->id, reason, len);
	destroy_id(req->id);
	listener_req_free(req);
	return 0;
}


/* ---- a worker context: requests handed to it ---------------------------- */

/* The request arrived on this thread: it counts on the worker's listener
 * (the limits it came with), with the deadline it had. */
static void worker_deliver(struct handoff *h, struct loop_mail *m)
{
	struct ez_conn_req *req = container_of(m, struct ez_conn_req, mail);
	struct ez_listener *w = handoff_arg(h);
	uint32_t timeout_ms = req->pend.timeout_ms;
	char why[160];
	const char *denied;

	/* A resume of one of this context's sessions: the listener's caps
	 * let it through; the session decides (or it ended meanwhile:
	 * RESUME_R_UNKNOWN). */
	if (req->resume) {
		resume_on_request(w->ctx, req->resume, NULL, NULL);
		listener_req_free(req);
		return;
	}

	w->max_pending = req->max_pending;
	w->max_pending_per_peer = req->max_pending_per_peer;
	w->max_conns = req->max_conns;
	w->max_conns_per_peer = req->max_conns_per_peer;
	w->max_ctx_conns = req->max_ctx_conns;
	denied = limit_gate(w, &req->peer, why, sizeof(why));
	if (denied) {
		req_refuse(req, denied);
		return;
	}
	req_link(w, req);
	hs_join(w, &req->pend, ms_left(req->due_ns), req_expired);
	req->pend.timeout_ms = timeout_ms;
	w->handed++;
	w->on_request(w, req, w->arg);
}

static void worker_dispose(struct handoff *h, struct loop_mail *m, const char *why)
{
	struct ez_conn_req *req = container_of(m, struct ez_conn_req, mail);
	char text[96];

	if (req->resume) {
		snprintf(text, sizeof(text), "the session's context: %s", why);
		resume_reject(req->id, RESUME_R_UNKNOWN, text);
		req->id = NULL;
		listener_req_free(req);
		return;
	}
	req_refuse(req, why);
}

/* The inbox closed: the requests the worker has not answered go too. */
static void worker_closed(struct handoff *h)
{
	struct ez_listener *w = handoff_arg(h);

	while (w->reqs) {
		struct ez_conn_req *req = w->reqs;

		if (req->id) {
			reject_id(req->id, "worker context freed", 20);
			destroy_id(req->id);
		}
		listener_req_free(req);
	}
	listener_free(w);
}

static const struct handoff_ops worker_ops = {
	.deliver = worker_deliver,
	.dispose = worker_dispose,
	.closed = worker_closed,
};

int ez_ctx_take_requests(struct ez_ctx *ctx, ez_request_cb on_request, void *arg)
{
	struct ez_listener *w;
	int ret;

	if (ctx_check_thread(ctx, "ez_ctx_take_requests"))
		return -EPERM;
	if (!ctx)
		return ezi_fail(-EINVAL, "ez_ctx_take_requests: ctx is NULL");
	if (!on_request) {
		handoff_close(ctx, "worker stopped taking requests");
		return 0;
	}
	if (ctx->handoff) {
		w = handoff_arg(ctx->handoff);
		w->on_request = on_request;
		w->arg = arg;
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return ezi_fail(-ENOMEM, "ez_ctx_take_requests: out of memory");
	w->worker = 1;
	w->ctx = ctx;
	w->on_request = on_request;
	w->arg = arg;
	w->cm.on_event = listener_on_cm;
	w->max_pending = LISTENER_DEF_MAX_PENDING;
	w->max_pending_per_peer = LISTENER_DEF_MAX_PENDING_PER_PEER;
	w->handshake_timeout_ms = LISTENER_DEF_HANDSHAKE_TIMEOUT_MS;
	w->max_conns = LISTENER_DEF_MAX_CONNS;
	w->max_conns_per_peer = LISTENER_DEF_MAX_CONNS_PER_PEER;
	w->max_ctx_conns = LISTENER_DEF_MAX_CTX_CONNS;
	ret = handoff_open(ctx, &worker_ops, w);
	if (ret) {
		free(w);
		return ret;
	}
	return 0;
}

int ez_handoff(struct ez_conn_req *req, struct ez_ctx *target)
{
	struct handoff *h;
	char why[EZ_REJECT_DATA_MAX];
	int ret;

	if (req && req->listener && ctx_check_thread(req->listener->ctx, "ez_handoff"))
		return -EPERM;
	if (!req || !target)
		return ezi_fail(-EINVAL, "ez_handoff: req %p, target %p", (void *)req, (void *)target);
	if (!req->listener)
		return ezi_fail(-EINVAL, "ez_handoff: request already answered");
	if (req->expired) {
		ret = ezi_fail(-ETIMEDOUT, "ez_handoff: the request waited beyond the listener's handshake_timeout_ms of %u ms and was rejected",
			       req->pend.timeout_ms);
		listener_req_free(req);
		return ret;
	}
	h = handoff_find(target);
	ret = h ? req_hand(req, h) : -ESHUTDOWN;
	if (h)
		handoff_put(h);
	if (!ret)
		return 0;
	if (ret == -ESHUTDOWN)
		ret = ezi_fail(-ESHUTDOWN, "ez_handoff: context %p takes no requests (never called "
			       "ez_ctx_take_requests, stopped, or freed); request rejected",
			       (void *)target);
	snprintf(why, sizeof(why), "%s", ez_errmsg());
	req_refuse(req, why);
	return ret;
}
