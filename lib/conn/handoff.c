/* handoff.c: a context's inbox for connection requests handed from other threads (rdma_migrate_id to its CM channel), and the registry that finds it. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "handoff.h"
#include "base/error.h"
#include "base/log.h"

/*
 * The inbox outlives its context: the registry and every sender (a
 * listener's worker set, an ez_handoff() in progress) hold a reference, so
 * a context freed while requests are handed to it only closes the inbox;
 * the posts that come after are refused (-ESHUTDOWN) and the last
 * reference frees the memory. Only mb's locked fields, refs, conns and the
 * immutable ch are touched by other threads.
 */
struct handoff {
	struct loop_mailbox mb;
	struct rdma_event_channel *ch;	/* the target's CM channel, alive while mb is open */
	const struct ez_ctx *ctx;	/* registry key; dereferenced on the target's thread only */
	struct ez_ctx *self;		/* the same, for its own thread */
	const struct handoff_ops *ops;
	void *arg;
	unsigned int refs;		/* atomic */
	unsigned int conns;		/* atomic: the target's connections at its last pass */
	struct handoff *reg_next;	/* under reg_mu */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct handoff *reg_head;

void handoff_get(struct handoff *h)
{
	__atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
}

void handoff_put(struct handoff *h)
{
	if (__atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL))
		return;
	loop_mailbox_destroy(&h->mb);
	free(h);
}

struct handoff *handoff_find(const struct ez_ctx *target)
{
	struct handoff *h;

	pthread_mutex_lock(&reg_mu);
	for (h = reg_head; h; h = h->reg_next)
		if (h->ctx == target)
			break;
	if (h)
		handoff_get(h);
	pthread_mutex_unlock(&reg_mu);
	return h;
}

static void reg_remove(struct handoff *h)
{
	struct handoff **pp;

	pthread_mutex_lock(&reg_mu);
	for (pp = &reg_head; *pp; pp = &(*pp)->reg_next)
		if (*pp == h) {
			*pp = h->reg_next;
			break;
		}
	pthread_mutex_unlock(&reg_mu);
}

static void on_letter(struct loop_mailbox *mb, struct loop_mail *m)
{
	struct handoff *h = container_of(mb, struct handoff, mb);

	h->ops->deliver(h, m);
}

/* The context's hook (ctx.h): a CM event is about to be read, a pass
 * ended, or the context is being freed. */
static void ctx_hook(struct ez_ctx *ctx, enum ctx_hook what)
{
	struct handoff *h = ctx->handoff;

	switch (what) {
	case CTX_HOOK_CM_EVENT:
		/* An event of a migrated id can be read before its letter;
		 * the sender's writes (the request, id->context) must be seen
		 * first: the post migrated the id under this lock. */
		loop_mailbox_sync(&h->mb);
		break;
	case CTX_HOOK_PASS:
		__atomic_store_n(&h->conns, (unsigned int)ctx->nconns, __ATOMIC_RELAXED);
		break;
	case CTX_HOOK_FREE:
		handoff_close(ctx, "worker context freed");
		break;
	}
}

int handoff_open(struct ez_ctx *ctx, const struct handoff_ops *ops, void *arg)
{
	struct handoff *h;
	int ret;

	if (ctx->handoff)
		return -EEXIST;
	h = calloc(1, sizeof(*h));
	if (!h)
		return ezi_fail(-ENOMEM, "ez_ctx_take_requests: out of memory");
	ret = loop_mailbox_init(&ctx->loop, &h->mb, on_letter);
	if (ret) {
		free(h);
		return ret;
	}
	h->ch = ctx->ch;
	h->ctx = h->self = ctx;
	h->ops = ops;
	h->arg = arg;
	h->refs = 1;	/* the context's */
	ctx->handoff = h;
	ctx->handoff_hook = ctx_hook;
	pthread_mutex_lock(&reg_mu);
	h->reg_next = reg_head;
	reg_head = h;
	pthread_mutex_unlock(&reg_mu);
	return 0;
}

void handoff_close(struct ez_ctx *ctx, const char *why)
{
	struct handoff *h = ctx->handoff;
	struct loop_mail *m;

	if (!h)
		return;
	reg_remove(h);
	m = loop_mailbox_close(&h->mb);
	while (m) {
		struct loop_mail *next = m->next;

		m->next = NULL;
		h->ops->dispose(h, m, why);
		m = next;
	}
	h->ops->closed(h);
	loop_mailbox_fini(&h->mb);
	ctx->handoff = NULL;
	ctx->handoff_hook = NULL;
	handoff_put(h);
}

struct migrate_arg {
	struct handoff *h;
	struct rdma_cm_id *id;
};

/* Under the target's lock: its channel is alive (it closes only under it). */
static int migrate(struct loop_mail *m, void *arg)
{
	struct migrate_arg *a = arg;

	if (rdma_migrate_id(a->id, a->h->ch))
		return ezi_fail(-errno, "rdma_migrate_id: %s", ez_strerror(errno));
	return 0;
}

int handoff_post(struct handoff *h, struct loop_mail *m, struct rdma_cm_id *id)
{
	struct migrate_arg a = { h, id };

	return loop_mailbox_post(&h->mb, m, migrate, &a);
}

unsigned int handoff_load(const struct handoff *h)
{
	return __atomic_load_n(&h->conns, __ATOMIC_RELAXED) + loop_mailbox_queued(&h->mb);
}

int handoff_closed(const struct handoff *h)
{
	return loop_mailbox_is_closed(&h->mb);
}

void *handoff_arg(const struct handoff *h)
{
	return h->arg;
}

struct ez_ctx *handoff_ctx(const struct handoff *h)
{
	return h->self;
}
