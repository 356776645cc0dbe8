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
#include "base/log.h"
#include "wire/replay.h"

_Static_assert(REPLAY_NONCE_LEN == AUTH_NONCE_LEN, "the window keeps request nonces");

static void req_free(struct ez_conn_req *req)
{
	listener_req_unlink(req);
	free(req);
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

/* The CM id goes whatever the outcome; a failure (an event not acked, a
 * kernel error) is logged, as the id and its kernel state may be leaked. */
static void destroy_id(struct rdma_cm_id *id)
{
	if (rdma_destroy_id(id))
		ezi_log_warn("listener: rdma_destroy_id: %s", ez_strerror(errno));
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
	if (hs_decode(ev->pdata, ev->pdata_len, HS_REQ, &req->hs, why, sizeof(why))) {
		ezi_log_info("listener: rejecting a request: %s", why);
		reject_id(ev->id, why, strlen(why));
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
	req->listener = l;
	req->next = l->reqs;
	if (l->reqs)
		l->reqs->prev = req;
	l->reqs = req;
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
	if (l->auth) {
		auth_key_wipe(l->auth);
		free(l->auth);
	}
	replay_window_free(l->replay);
	free(l);
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
	if (!ctx || !on_request || !out)
		return ezi_fail(-EINVAL, "ez_listen: ctx %p, on_request %s, listener pointer %p",
				(void *)ctx, on_request ? "set" : "NULL", (void *)out);
	/* At this library's layout (doc/abi.md); NULL reads as all zero. */
	ret = ezi_struct_in(&lo, sizeof(lo), opts_in, opts_size, "ez_listen", "ez_listen_opts");
	if (ret)
		return ret;
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
	l->cm.on_event = listener_on_cm;
	l->ctx = ctx;
	peer_penalty_opts(&l->pen, opts);
	l->on_request = on_request;
	l->arg = arg;
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
	return l ? ntohs(rdma_get_src_port(l->id)) : 0;
}

void ez_listener_close(struct ez_listener *l)
{
	static const char why[] = "listener closed";

	if (!l || ctx_wrong_thread(l->ctx, "ez_listener_close"))
		return;
	while (l->reqs) {
		struct ez_conn_req *req = l->reqs;

		reject_id(req->id, why, sizeof(why) - 1);
		destroy_id(req->id);
		req_free(req);
	}
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
	if (len > EZ_REJECT_DATA_MAX || (len && !reason)) {
		int ret = ezi_fail(-EINVAL, "ez_reject: reason of %zu bytes (max %d)", len,
				   EZ_REJECT_DATA_MAX);

		len = 0;
		reject_id(req->id, "", 0);
		destroy_id(req->id);
		req_free(req);
		return ret;
	}
	reject_id(req->id, reason, len);
	destroy_id(req->id);
	req_free(req);
	return 0;
}

