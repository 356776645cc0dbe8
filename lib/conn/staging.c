/* staging.c: the budget of staged large messages: a context's, and each peer address's share (wire/budget.c decides); ez_ctx_set_limit(). */
#include "config.h"

#include <errno.h>

#include "staging.h"
#include "sendq.h"
#include "conn_types.h"
#include "base/error.h"
#include "wire/addr.h"

/*
 * A large message sent with ez_send() is copied into a registered buffer
 * (device/bigbuf.c) that stays pinned until the peer has fetched it. A
 * peer that never fetches (a slow or hostile reader) would make a server
 * pin send_depth x max_msg_size per connection, and that times every
 * connection it opens. The budget bounds it per context and per peer
 * address; what does not fit is refused like a full send window
 * (-ENOBUFS, then on_send_ready), so other peers' messages go on.
 * ez_send_mr() of a region that can carry a window copies nothing and is
 * not counted: that memory is the application's, registered by it.
 */

static const struct sockaddr *peer_of(const struct ez_conn *conn)
{
	return conn->id ? rdma_get_peer_addr(conn->id) : NULL;
}

/* What conn's peer address holds: a walk over the context's connections,
 * taken only near the peer's limit (budget_peer_matters()). */
static uint64_t peer_held(const struct ez_conn *conn)
{
	const struct sockaddr *peer = peer_of(conn);
	uint64_t n = 0;

	for (const struct ez_conn *c = conn->ctx->conns; c; c = c->next)
		if (c->staged && (c == conn || ezaddr_same_host(peer_of(c), peer)))
			n += c->staged;
	return n;
}

static void wait_for_room(struct ez_conn *conn)
{
	conn_sq_wait_ready(conn);	/* on_send_ready when it is back */
	if (!conn->staged_wait) {
		conn->staged_wait = 1;
		conn->ctx->staged_waiters++;
	}
}

int staging_take(struct ez_conn *conn, uint64_t bytes, const char *fn)
{
	struct budget *b = &conn->ctx->staged;
	uint64_t mine = budget_peer_matters(b, bytes) ? peer_held(conn) : 0;
	enum budget_verdict v = budget_check(b, mine, bytes);
	char why[320];

	if (v != BUDGET_OK) {
		/* Counted as a refusal by the send (msg.c), which may queue it. */
		wait_for_room(conn);
		budget_reason(b, v, mine, bytes, fn, why, sizeof(why));
		return ezi_fail(-ENOBUFS, "%s", why);
	}
	b->held += bytes;
	conn->staged += bytes;
	return 0;
}

void staging_give(struct ez_conn *conn, uint64_t bytes)
{
	struct budget *b = &conn->ctx->staged;

	/* Never below zero: a miscount must not wrap into "full forever". */
	b->held -= bytes <= b->held ? bytes : b->held;
	conn->staged -= bytes <= conn->staged ? bytes : conn->staged;
}

void staging_wake(struct ez_ctx *ctx, void (*ready)(struct ez_conn *conn))
{
	struct ez_conn *c, *next;

	/* ready() may send, and so refuse and mark again: the walk takes
	 * each connection once, next read first (a callback may close). */
	for (c = ctx->conns; c && ctx->staged_waiters; c = next) {
		next = c->next;
		if (!c->staged_wait)
			continue;
		c->staged_wait = 0;
		ctx->staged_waiters--;
		ready(c);
	}
}

void staging_leave(struct ez_conn *conn)
{
	if (conn->staged_wait) {
		conn->staged_wait = 0;
		conn->ctx->staged_waiters--;
	}
}

int ez_ctx_set_limit(struct ez_ctx *ctx, enum ez_ctx_limit limit, uint64_t value)
{
	if (!ctx)
		return ezi_fail(-EINVAL, "ez_ctx_set_limit: ctx is NULL");
	if (ctx_check_thread(ctx, "ez_ctx_set_limit"))
		return -EPERM;
	/* 0 restores the default; the budget's own 0 means no limit. */
	switch (limit) {
	case EZ_LIMIT_STAGED:
		ctx->staged.max = !value ? STAGED_DEF_MAX : value == EZ_LIMIT_NONE ? 0 : value;
		return 0;
	case EZ_LIMIT_STAGED_PER_PEER:
		ctx->staged.peer_max = !value ? STAGED_DEF_PEER_MAX :
				       value == EZ_LIMIT_NONE ? 0 : value;
		return 0;
	}
	return ezi_fail(-EINVAL, "ez_ctx_set_limit: unknown limit %d (EZ_LIMIT_STAGED %d, EZ_LIMIT_STAGED_PER_PEER %d)",
			(int)limit, (int)EZ_LIMIT_STAGED, (int)EZ_LIMIT_STAGED_PER_PEER);
}
