/* ctx.h: the context: its loop (lib/loop), the CM event channel and dispatch, its devices and object lists. */
#ifndef EZ_CONN_CTX_H
#define EZ_CONN_CTX_H

#include <stdint.h>
#include <ev.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "loop/loop.h"
#include "loop/lookup.h"
#include "device/device.h"
#include "base/owner.h"
#include "wire/budget.h"
#include "conn/session_index.h"

struct cm_event;
struct handoff;

/* What a context tells its inbox for requests from other threads
 * (handoff.c, registered there). */
enum ctx_hook {
	CTX_HOOK_CM_EVENT,	/* a CM event was read, before it is looked at */
	CTX_HOOK_PASS,		/* a pass of ez_ctx_process() ended */
	CTX_HOOK_FREE,		/* ez_ctx_free() is freeing the context */
};

/* What a cm_id's context points at: the first member of its owner
 * (listener, request, connection), which registered where its events go.
 * The context reaches them only through it. */
struct cm_handler {
	void (*on_event)(struct cm_handler *h, const struct cm_event *ev);
};

/* The costly steps of a loop pass, by kind: how many and the longest
 * (read by tests/faults/liveness_pair.c and test_liveness; reset by
 * zeroing), and the longest ez_ctx_process() pass. They say where a long
 * loop gap went: a pass holds at most one costly step once 10 ms are
 * spent on its kind (lib/loop/loop.h, ctx.c), so its longest step bounds
 * it. */
enum ctx_step {
	CTX_STEP_POOL,		/* an accept's pool (conn.c's on_accept_step) */
	CTX_STEP_QP,		/* an accept's QP, to RTS */
	CTX_STEP_REPLY,		/* an accept's rdma_accept */
	CTX_STEP_FINISH,	/* a connection's finish: QPs, pool, CM id */
	CTX_STEP_EVENT,		/* a CM event of an existing id */
	CTX_STEP_REQUEST,	/* a request handed to its listener (on_request, ez_accept) */
	CTX_STEP_COUNT
};

struct ctx_pass_stats {
	uint64_t n[CTX_STEP_COUNT], max_ns[CTX_STEP_COUNT];
	uint64_t passes, max_pass_ns;
};

struct ez_ctx {
	struct loop loop;	/* epoll set, timers, deferred work */
	struct ev_loop *ev_loop;	/* NULL with EZ_CTX_NO_LOOP */
	ev_io io;
	ev_idle idle;		/* EZ_CTX_BUSY_POLL on a libev loop */
	unsigned int flags;
	struct loop_watch cm_watch;
	struct rdma_event_channel *ch;
	/* Connect requests read and not yet handed to their listener (a
	 * ring; ctx.c's bounded pass), and the work that keeps the loop
	 * awake for them. */
	struct cm_held *cm_held;
	int cm_head, cm_nheld, cm_cap;
	uint64_t cm_pass;		/* the loop pass the CM channel was last handled in */
	struct loop_defer cm_more;
	struct ctx_pass_stats stats;
	int naccepting;			/* accepts in their steps (CS_ACCEPT_*, conn.c) */
	struct device_set devices;	/* opened on first use */
	struct ez_conn *conns;		/* every live connection */
	struct session_index sessions;	/* accepted resumable sessions by token (resume.c adds, removes) */
	int nlisteners, nconns, npools, nmrs;
	int nconnecting;		/* ez_connect()s not yet reported to on_connect */
	uint32_t sport_rr;		/* EZ_SPORT_RANGE cursor of the context's connections */
	unsigned int busy_passes;	/* EZ_CTX_BUSY_POLL passes since the fds were checked */
	struct lookup_set lookups;	/* host names being resolved */
	struct ezi_owner owner;		/* the thread that may use it (ez_ctx_new's) */
	int processing;			/* inside ez_ctx_process(): a nested call is refused */
	int busy_fast;			/* EZ_CTX_BUSY_POLL without a libev loop: ez_ctx_process()'s short pass */
	/* EZ_MR_REMOTE_* of the EZ_MR_SHARED MRs ever registered: every QP of
	 * the context admits it (conn_export.c). */
	unsigned int shared_access;
	struct ez_mr *dead_mrs;		/* deregistered handles, freed by ez_ctx_free */
	struct penalty_table *penalty;	/* peers' refused RDMA requests and protocol violations (wire/penalty.c) */
	/* Large messages ez_send() copied into registered buffers that the
	 * peers have not fetched yet: bytes pinned against the context's and
	 * each peer address's limits (staging.c, ez_ctx_set_limit()), and the
	 * connections told -ENOBUFS for it, woken when bytes come back. */
	struct budget staged;
	uint32_t staged_waiters;
	/* Receive buffers of the connections it accepted that have pools of
	 * their own: bytes counted at ez_accept() against the context's and
	 * each peer address's limits (staging.c, ez_ctx_set_limit()). */
	struct budget recvbufs;
	/* Large messages fetched by rendezvous into registered buffers: in
	 * progress (each connection's share: conn->bigrecv) or delivered and
	 * held by the application (the total only), against the context's and
	 * each peer address's limits (staging.c); the connections whose next
	 * fetch waits for room, woken when bytes come back. */
	struct budget bigrecv;
	uint32_t bigrecv_waiters;
	/* Taking connection requests from other threads (ez_ctx_take_requests):
	 * the inbox and its hook; NULL when not. */
	struct handoff *handoff;
	void (*handoff_hook)(struct ez_ctx *ctx, enum ctx_hook what);
};

/* The staging budget's defaults (easyrdma(7), "Memory a peer can make a
 * server pin"): a 2 GiB server keeps 1/8 of its memory for large messages
 * its peers are slow to fetch, one address a quarter of that (four 16 MiB
 * messages). */
#define STAGED_DEF_MAX (256ull << 20)
#define STAGED_DEF_PEER_MAX (64ull << 20)
/* The accepted connections' receive buffers: the connection caps'
 * defaults (ez_listen: 1024 per address, 4096 in all) at the default
 * options (64 x 4 KiB, 256 KiB each), so only larger buffers meet them:
 * at 64 KiB messages (4 MiB each) one address gets 64 connections, not
 * the 1,024 (4 GiB) that would take a 2 GiB server down. */
#define RECVBUFS_DEF_MAX (1ull << 30)
#define RECVBUFS_DEF_PEER_MAX (256ull << 20)
/* Large messages fetched and held: what this side fetches, the staging
 * defaults of what it sends (a 2 GiB server: 1/8 for large messages in
 * each direction, a quarter of that for one address). Each pool bounds its
 * own too (ez_srqpool_opts.large_max_bytes, 64 MiB). */
#define BIGRECV_DEF_MAX (256ull << 20)
#define BIGRECV_DEF_PEER_MAX (64ull << 20)

/* The one check of every entry point: 0 when the calling thread owns ctx,
 * else -EPERM with the thread's ez_errmsg() naming fn and both threads.
 * A NULL ctx passes (the caller's argument check reports it). Objects of
 * the context check their ctx, so moving a context's (or, later, an
 * object's) owner changes what this accepts. */
static inline int ctx_check_thread(const struct ez_ctx *ctx, const char *fn)
{
	return ctx ? ezi_owner_check(&ctx->owner, fn, "the context") : 0;
}

/* For calls that return nothing or a pointer: 1 (and the refusal logged as
 * an error) when the calling thread does not own ctx; the caller returns. */
int ctx_wrong_thread(const struct ez_ctx *ctx, const char *fn);

/* The context's devices, timers and name lookups, as the connection layer
 * calls them: the device set's and the loop's. */
static inline int device_get(struct ez_ctx *ctx, struct ibv_context *verbs, struct device **out)
{
	return device_set_get(&ctx->devices, verbs, out);
}

static inline int device_by_name(struct ez_ctx *ctx, const char *name, struct device **out)
{
	return device_set_by_name(&ctx->devices, name, out);
}

static inline int lookup_start(struct ez_ctx *ctx, const char *host, const char *service,
			       void *arg, lookup_done_fn done, struct lookup **out)
{
	return lookup_set_start(&ctx->lookups, host, service, arg, done, out);
}

static inline void ctx_timer_start(struct ez_ctx *ctx, struct loop_timer *t, uint32_t ms)
{
	loop_timer_start(&ctx->loop, t, ms);
}

static inline void ctx_timer_stop(struct ez_ctx *ctx, struct loop_timer *t)
{
	loop_timer_stop(&ctx->loop, t);
}

/* A costly step of kind k took ns (from start_ns to now); now. */
static inline uint64_t ctx_note_step(struct ez_ctx *ctx, enum ctx_step k, uint64_t start_ns)
{
	uint64_t now = loop_now_ns(), ns = now - start_ns;

	ctx->stats.n[k]++;
	if (ns > ctx->stats.max_ns[k])
		ctx->stats.max_ns[k] = ns;
	return now;
}

/* A listener's id is about to be destroyed: its requests still held by the
 * context are refused (and their ids destroyed) when their turn comes. */
void ctx_listener_gone(struct ez_ctx *ctx, struct rdma_cm_id *listen_id);
/* 1 while CM events wait for this context's loop: requests held for a later
 * pass, or events still unread in the channel. */
int ctx_cm_behind(const struct ez_ctx *ctx);

/* A CM event copied out of rdma_cm (so it can be acked before it is handled). */
/* IB CM reject reasons rdma_cm passes through as the REJECTED status. */
#define IB_REJ_INVALID_SERVICE_ID 8
#define IB_REJ_CONSUMER_DEFINED 28

struct cm_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	uint8_t pdata[256];
	uint8_t pdata_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint32_t qp_num;	/* REQ, REP, RTU: the peer's QP number */
};

#endif
