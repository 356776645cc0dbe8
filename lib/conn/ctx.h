/* ctx.h: the context: one epoll set over the channel fds, timers, the CM event dispatch. */
#ifndef EZ_CONN_CTX_H
#define EZ_CONN_CTX_H

#include <stdint.h>
#include <ev.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* An fd in the context's epoll set; fn runs when it is readable. */
struct ctx_watch {
	int fd;
	void (*fn)(struct ctx_watch *w);
};

/* A one-shot timer driven by the context's timerfd. */
struct ctx_timer {
	uint64_t due_ns;
	void (*fn)(struct ctx_timer *t);
	struct ctx_timer *next;
	int armed;
};

/* What a cm_id's context points at: the first member of each owner. */
enum cm_owner_kind { CM_LISTENER = 1, CM_REQ, CM_CONN };

struct device;
struct lookup;
struct lookup_notifier;

struct ez_ctx {
	struct ev_loop *loop;	/* NULL with EZ_CTX_NO_LOOP */
	ev_io io;
	ev_idle idle;		/* EZ_CTX_BUSY_POLL on a libev loop */
	unsigned int flags;
	int epfd;
	struct ctx_watch cm_watch;
	struct ctx_watch timer_watch;
	struct rdma_event_channel *ch;
	struct ctx_timer *timers;	/* sorted by due_ns */
	uint64_t timerfd_due;
	struct device *devices;
	struct ez_conn *conns;		/* every live connection */
	int nlisteners, nconns, npools, nmrs;
	int nconnecting;		/* ez_connect()s not yet reported to on_connect */
	uint32_t sport_rr;		/* EZ_SPORT_RANGE cursor of the context's connections */
	unsigned int busy_passes;	/* EZ_CTX_BUSY_POLL passes since the fds were checked */
	struct lookup *lookups;		/* host names being resolved (lookup.c) */
	struct lookup_notifier *notifier;
	struct ctx_watch lookup_watch;
};

int ctx_watch_add(struct ez_ctx *ctx, struct ctx_watch *w);
void ctx_watch_del(struct ez_ctx *ctx, struct ctx_watch *w);

void ctx_timer_start(struct ez_ctx *ctx, struct ctx_timer *t, uint32_t ms);
void ctx_timer_stop(struct ez_ctx *ctx, struct ctx_timer *t);

uint64_t ctx_now_ns(void);

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
