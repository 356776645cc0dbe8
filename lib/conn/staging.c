/* staging.c: what a context's peers can make it pin: staged large messages, accepted connections' own receive buffers and large messages fetched, each a context's budget with each peer address's share (wire/budget.c decides); ez_ctx_set_limit(). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "staging.h"
#include "sendq.h"
#include "conn_types.h"
#include "base/error.h"
#include "wire/addr.h"
#include "pool.h"

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

/* The address a charge is counted under: the one kept at conn's first
 * charge (the CM id goes when the connection ends, its charges may stay
 * until the application closes it), else the id's. */
static const struct sockaddr *peer_of(const struct ez_conn *conn)
{
	if (conn->charged_peer.sa.sa_family)
		return &conn->charged_peer.sa;
	return conn->id ? rdma_get_peer_addr(conn->id) : NULL;
}

/* Keeps conn's peer address before its first charge. */
static void keep_peer(struct ez_conn *conn)
{
	const struct sockaddr *sa = peer_of(conn);
	size_t len = !sa ? 0 : sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
		     sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;

	if (len && !conn->charged_peer.sa.sa_family)
		/* owner: staging.c's copy of the peer address its charges are counted under */
		memcpy(&conn->charged_peer, sa, len);
}

static uint64_t staged_of(const struct ez_conn *c)
{
	return c->staged;
}

static uint64_t recvbufs_of(const struct ez_conn *c)
{
	return c->recvbufs;
}

/* What conn's peer address holds of a budget (held_of: one connection's
 * share): a walk over the context's connections, taken only near the
 * peer's limit (budget_peer_matters()). */
static uint64_t peer_held(const struct ez_conn *conn, uint64_t (*held_of)(const struct ez_conn *))
{
	const struct sockaddr *peer = peer_of(conn);
	uint64_t n = 0, v;

	for (const struct ez_conn *c = conn->ctx->conns; c; c = c->next) {
		v = held_of(c);
		if (v && (c == conn || ezaddr_same_host(peer_of(c), peer)))
			n += v;
	}
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
	uint64_t mine = budget_peer_matters(b, bytes) ?
			peer_held(conn, staged_of) : 0;
	enum budget_verdict v = budget_check(b, mine, bytes);
	char why[320];

	if (v != BUDGET_OK) {
		/* Counted as a refusal by the send (send_calls.c), which may queue it. */
		wait_for_room(conn);
		budget_reason(b, v, mine, bytes, fn, why, sizeof(why));
		return ezi_fail(-ENOBUFS, "%s", why);
	}
	keep_peer(conn);
	budget_hold(b, bytes);
	conn->staged += bytes;
	return 0;
}

void staging_give(struct ez_conn *conn, uint64_t bytes)
{
	struct budget *b = &conn->ctx->staged;

	/* Never below zero: a miscount must not wrap into "full forever". */
	budget_release(b, bytes);
	conn->staged -= bytes <= conn->staged ? bytes : conn->staged;
}

/* Each marked connection of ctx (waiters of them), unmarked by unmark()
 * (which says whether it was), to ready(). ready() may mark again: the
 * walk takes each connection once, next read first (a callback may close). */
static void wake_marked(struct ez_ctx *ctx, const uint32_t *waiters,
			int (*unmark)(struct ez_conn *c), void (*ready)(struct ez_conn *c))
{
	struct ez_conn *c, *next;

	for (c = ctx->conns; c && *waiters; c = next) {
		next = c->next;
		if (unmark(c))
			ready(c);
	}
}

static int staged_unmark(struct ez_conn *conn)
{
	if (!conn->staged_wait)
		return 0;
	conn->staged_wait = 0;
	conn->ctx->staged_waiters--;
	return 1;
}

void staging_wake(struct ez_ctx *ctx, void (*ready)(struct ez_conn *conn))
{
	wake_marked(ctx, &ctx->staged_waiters, staged_unmark, ready);
}

void staging_leave(struct ez_conn *conn)
{
	staged_unmark(conn);
}

/*
 * An accepted connection without a shared pool registers recv_depth
 * buffers of min(max_msg_size, 64 KiB) in a pool of its own: 256 KiB at
 * the default options, 4 MiB at 64 KiB messages. The connection caps
 * (ez_listen) bound how many connections a peer holds, not what each
 * pins: at 4 MiB the 1,024 one address may hold would pin 4 GiB, and a
 * 2 GiB server locked up at 242 of 16 MiB-message connections (issue 39).
 * This budget bounds the sum per context and per peer address; the accept
 * beyond is refused, and the peer reads why (the reject carries 132 bytes
 * with "accept failed: ": the reason is short). Shared pools are the
 * application's memory, sized by it, and not counted. Connections this
 * side opened are not counted either: the application chose them.
 */
int recvbufs_take(struct ez_conn *conn, uint32_t nbufs, uint32_t buf_size)
{
	struct budget *b = &conn->ctx->recvbufs;
	uint64_t bytes = (uint64_t)nbufs * buf_size;
	uint64_t mine = budget_peer_matters(b, bytes) ?
			peer_held(conn, recvbufs_of) : 0;
	const double mib = 1024.0 * 1024.0;

	switch (budget_check(b, mine, bytes)) {
	case BUDGET_OK:
		break;
	case BUDGET_FULL:
		return ezi_fail(-ENOBUFS, "accepted receive buffers hold %.1f MiB, +%.1f > %.1f MiB (EZ_LIMIT_RECV_BUFS)",
				(double)b->held / mib, (double)bytes / mib, (double)b->max / mib);
	case BUDGET_PEER_FULL:
		return ezi_fail(-ENOBUFS, "receive buffers accepted from this address hold %.1f MiB, +%.1f > %.1f MiB (EZ_LIMIT_RECV_BUFS_PER_PEER)",
				(double)mine / mib, (double)bytes / mib, (double)b->peer_max / mib);
	}
	keep_peer(conn);
	budget_hold(b, bytes);
	/* owner: the connection's share of ctx->recvbufs, kept by the budget's file */
	conn->recvbufs = bytes;
	return 0;
}

void recvbufs_orphan(struct ez_conn *conn, struct ez_srqpool *pool)
{
	/* The buffers stay registered while the application holds any: the
	 * charge stays too, with the pool, given back when it is destroyed
	 * (pool_reap). It counts in the context's total only: the connection,
	 * and so its peer's share, is gone. */
	pool_orphan(pool, &conn->ctx->recvbufs, conn->recvbufs);
	/* owner: the connection's share of ctx->recvbufs, kept by the budget's file */
	conn->recvbufs = 0;
}

void recvbufs_give(struct ez_conn *conn)
{
	struct budget *b = &conn->ctx->recvbufs;

	budget_release(b, conn->recvbufs);
	/* owner: the connection's share of ctx->recvbufs, kept by the budget's file */
	conn->recvbufs = 0;
}

/*
 * A large message is fetched by rendezvous: a registered buffer of its
 * size is taken at its first READ, and pinned until the application
 * releases the message. Each pool bounds its own (srqpool_big_reserve,
 * 64 MiB), but a context with a pool per connection had no bound at all:
 * 1,000 connections could pin 64 GiB. The context's budget bounds the sum;
 * each peer address's share bounds the fetches in progress from it (a
 * delivered message is the application's to release: it counts in the
 * total only). Beyond, the fetch waits, not fails: the peer's send stays
 * unacknowledged, and its next ones wait on credits, until bytes come
 * back (bigrecv_release). A message larger than a limit still goes alone.
 */
static uint64_t bigrecv_of(const struct ez_conn *c)
{
	return c->bigrecv;
}

int bigrecv_take(struct ez_conn *conn, uint32_t len)
{
	struct budget *b = &conn->ctx->bigrecv;
	uint64_t mine = budget_peer_matters(b, len) ? peer_held(conn, bigrecv_of) : 0;

	if (budget_check(b, mine, len) != BUDGET_OK) {
		if (!conn->bigrecv_wait) {
			/* owner: the budget's file keeps shares and wait marks */
			conn->bigrecv_wait = 1;
			conn->ctx->bigrecv_waiters++;	/* owner: as above */
			conn->stats.large_recv_waits++;	/* owner: the wait is counted where it is decided */
		}
		return -EAGAIN;
	}
	keep_peer(conn);
	budget_hold(b, len);
	/* owner: the budget's file keeps shares and wait marks */
	conn->bigrecv += len;
	return 0;
}

void bigrecv_untake(struct ez_conn *conn, uint32_t len)
{
	bigrecv_delivered(conn, len);
	budget_release(&conn->ctx->bigrecv, len);
}

void bigrecv_delivered(struct ez_conn *conn, uint32_t len)
{
	/* owner: the budget's file keeps shares and wait marks */
	conn->bigrecv -= len <= conn->bigrecv ? len : conn->bigrecv;
}

static int bigrecv_unmark(struct ez_conn *conn)
{
	if (!conn->bigrecv_wait)
		return 0;
	/* owner: the budget's file keeps shares and wait marks */
	conn->bigrecv_wait = 0;
	conn->ctx->bigrecv_waiters--;	/* owner: as above */
	return 1;
}

void bigrecv_release(struct ez_ctx *ctx, uint32_t len, void (*resume)(struct ez_conn *conn))
{
	budget_release(&ctx->bigrecv, len);
	wake_marked(ctx, &ctx->bigrecv_waiters, bigrecv_unmark, resume);
}

void bigrecv_leave(struct ez_conn *conn)
{
	bigrecv_unmark(conn);
}

/* ez_ctx_set_limit()'s value as a budget's limit: 0 its default, EZ_LIMIT_NONE none (0). */
static uint64_t limit_of(uint64_t value, uint64_t def)
{
	return !value ? def : value == EZ_LIMIT_NONE ? 0 : value;
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
		budget_set_max(&ctx->staged, limit_of(value, STAGED_DEF_MAX));
		return 0;
	case EZ_LIMIT_STAGED_PER_PEER:
		budget_set_peer_max(&ctx->staged, limit_of(value, STAGED_DEF_PEER_MAX));
		return 0;
	case EZ_LIMIT_RECV_BUFS:
		budget_set_max(&ctx->recvbufs, limit_of(value, RECVBUFS_DEF_MAX));
		return 0;
	case EZ_LIMIT_RECV_BUFS_PER_PEER:
		budget_set_peer_max(&ctx->recvbufs, limit_of(value, RECVBUFS_DEF_PEER_MAX));
		return 0;
	case EZ_LIMIT_LARGE_RECV:
		budget_set_max(&ctx->bigrecv, limit_of(value, BIGRECV_DEF_MAX));
		return 0;
	case EZ_LIMIT_LARGE_RECV_PER_PEER:
		budget_set_peer_max(&ctx->bigrecv, limit_of(value, BIGRECV_DEF_PEER_MAX));
		return 0;
	}
	return ezi_fail(-EINVAL, "ez_ctx_set_limit: unknown limit %d (EZ_LIMIT_STAGED %d, EZ_LIMIT_STAGED_PER_PEER %d, EZ_LIMIT_RECV_BUFS %d, EZ_LIMIT_RECV_BUFS_PER_PEER %d, EZ_LIMIT_LARGE_RECV %d, EZ_LIMIT_LARGE_RECV_PER_PEER %d)",
			(int)limit, (int)EZ_LIMIT_STAGED, (int)EZ_LIMIT_STAGED_PER_PEER,
			(int)EZ_LIMIT_RECV_BUFS, (int)EZ_LIMIT_RECV_BUFS_PER_PEER,
			(int)EZ_LIMIT_LARGE_RECV, (int)EZ_LIMIT_LARGE_RECV_PER_PEER);
}
