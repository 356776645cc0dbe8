/* staging.h: what a context's peers can make it pin: staged large messages (copies ez_send() made into registered buffers for the peer to fetch: taken before a copy, given back when its window goes), accepted connections' own receive buffers (taken at ez_accept, given back when the connection goes) and large messages fetched from peers (taken at the first READ, given back when the application releases them); ez_ctx_set_limit(). */
#ifndef EZ_CONN_STAGING_H
#define EZ_CONN_STAGING_H

#include <stdint.h>

struct ez_ctx;
struct ez_conn;
struct ez_srqpool;

/* bytes more for conn's next large message: 0, or -ENOBUFS with the
 * thread's message naming the limit (fn's), conn marked to be woken
 * (on_send_ready) when staged bytes come back. */
int staging_take(struct ez_conn *conn, uint64_t bytes, const char *fn);
void staging_give(struct ez_conn *conn, uint64_t bytes);
/* Each waiting connection (ctx->staged_waiters of them), unmarked, to ready() (its on_send_ready). */
void staging_wake(struct ez_ctx *ctx, void (*ready)(struct ez_conn *conn));
/* conn goes: it waits no more. */
void staging_leave(struct ez_conn *conn);

/* An accepted connection's own pool of nbufs x buf_size bytes: 0 (counted
 * in conn->recvbufs), or -ENOBUFS with the thread's message naming the
 * limit (ez_accept refuses the connection; the peer reads why). */
int recvbufs_take(struct ez_conn *conn, uint32_t nbufs, uint32_t buf_size);
/* conn goes: its count comes back. */
void recvbufs_give(struct ez_conn *conn);
/* conn goes but its own pool stays, an orphan (the application holds some
 * of its buffers): the count goes with the pool, back when it is destroyed. */
void recvbufs_orphan(struct ez_conn *conn, struct ez_srqpool *pool);

/* Large messages fetched (rndv.c's receiver). len more for conn's next
 * fetch: 0 (counted in conn->bigrecv and the context's total), or -EAGAIN
 * with conn marked to be resumed when bytes come back (bigrecv_release). */
int bigrecv_take(struct ez_conn *conn, uint32_t len);
/* A take undone at once (the fetch could not start): nobody is woken. */
void bigrecv_untake(struct ez_conn *conn, uint32_t len);
/* Delivered: the application's now; off conn's share, still in the total. */
void bigrecv_delivered(struct ez_conn *conn, uint32_t len);
/* len bytes back to ctx's total (the application released a delivered
 * message, or a fetched one was dropped); each waiting connection, unmarked,
 * to resume() (its fetches again). */
void bigrecv_release(struct ez_ctx *ctx, uint32_t len, void (*resume)(struct ez_conn *conn));
/* conn goes: it waits no more. */
void bigrecv_leave(struct ez_conn *conn);

#endif
