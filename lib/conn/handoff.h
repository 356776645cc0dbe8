/* handoff.h: a context's inbox for connection requests handed from other threads (rdma_migrate_id to its CM channel), and the registry that finds it. */
#ifndef EZ_CONN_HANDOFF_H
#define EZ_CONN_HANDOFF_H

#include <rdma/rdma_cma.h>

#include "ctx.h"
#include "loop/mailbox.h"

struct handoff;

/* What the owner of the letters (listener.c) does with them, on the
 * target context's thread: deliver one, or dispose of one still queued
 * when the inbox closes (the context is freed or stops taking requests);
 * closed runs once after the last disposal. */
struct handoff_ops {
	void (*deliver)(struct handoff *h, struct loop_mail *m);
	void (*dispose)(struct handoff *h, struct loop_mail *m, const char *why);
	void (*closed)(struct handoff *h);
};

/* On ctx's thread: ctx takes letters from now on (registered, found by
 * handoff_find()); arg is the owner's (handoff_arg()). -EEXIST if it does
 * already. */
int handoff_open(struct ez_ctx *ctx, const struct handoff_ops *ops, void *arg);
/* On ctx's thread: no more letters; those queued are disposed of with why. */
void handoff_close(struct ez_ctx *ctx, const char *why);

/* Any thread: target's inbox with a reference held (handoff_put() it), or
 * NULL when target takes no requests (never did, stopped, or was freed).
 * target is only compared, never read: it may be a freed context. */
struct handoff *handoff_find(const struct ez_ctx *target);
void handoff_get(struct handoff *h);
void handoff_put(struct handoff *h);

/* Any thread, holding a reference: moves id to the target context's CM
 * channel (rdma_migrate_id) and posts m, as one step against the target's
 * close. Every event of id this thread read must have been acked (else
 * rdma_migrate_id waits for the ack). -ESHUTDOWN: the target stopped
 * taking requests (nothing done); another negative errno: the migration
 * failed (id still on the caller's channel; ez_errmsg() says why). */
int handoff_post(struct handoff *h, struct loop_mail *m, struct rdma_cm_id *id);

/* Any thread: the target's load for placement (connections it had at its
 * last pass, plus letters queued), and whether it still takes letters. */
unsigned int handoff_load(const struct handoff *h);
int handoff_closed(const struct handoff *h);

/* On the target's thread. */
void *handoff_arg(const struct handoff *h);
struct ez_ctx *handoff_ctx(const struct handoff *h);

#endif
