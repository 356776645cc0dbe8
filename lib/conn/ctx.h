/* ctx.h: the context: its loop (lib/loop), the CM event channel and dispatch, its devices and object lists. */
#ifndef EZ_CONN_CTX_H
#define EZ_CONN_CTX_H

#include <stdint.h>
#include <ev.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "loop/loop.h"
#include "loop/lookup.h"

/* What a cm_id's context points at: the first member of each owner. */
enum cm_owner_kind { CM_LISTENER = 1, CM_REQ, CM_CONN };

struct device;

struct ez_ctx {
	struct loop loop;	/* epoll set, timers, deferred work */
	struct ev_loop *ev_loop;	/* NULL with EZ_CTX_NO_LOOP */
	ev_io io;
	ev_idle idle;		/* EZ_CTX_BUSY_POLL on a libev loop */
	unsigned int flags;
	struct loop_watch cm_watch;
	struct rdma_event_channel *ch;
	struct device *devices;
	struct ez_conn *conns;		/* every live connection */
	int nlisteners, nconns, npools, nmrs;
	int nconnecting;		/* ez_connect()s not yet reported to on_connect */
	uint32_t sport_rr;		/* EZ_SPORT_RANGE cursor of the context's connections */
	unsigned int busy_passes;	/* EZ_CTX_BUSY_POLL passes since the fds were checked */
	struct lookup_set lookups;	/* host names being resolved */
};

/* The context's timers (conn.c, listener.c): its loop's. */
static inline void ctx_timer_start(struct ez_ctx *ctx, struct loop_timer *t, uint32_t ms)
{
	loop_timer_start(&ctx->loop, t, ms);
}

static inline void ctx_timer_stop(struct ez_ctx *ctx, struct loop_timer *t)
{
	loop_timer_stop(&ctx->loop, t);
}

/* A CM event copied out of rdma_cm (so it can be acked before it is handled). */
struct cm_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	uint8_t pdata[256];
	uint8_t pdata_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
};

#endif
