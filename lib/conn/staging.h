/* staging.h: the context's budget of staged large messages (copies ez_send() made into registered buffers for the peer to fetch): taken before a copy, given back when its window goes; ez_ctx_set_limit(). */
#ifndef EZ_CONN_STAGING_H
#define EZ_CONN_STAGING_H

#include <stdint.h>

struct ez_ctx;
struct ez_conn;

/* bytes more for conn's next large message: 0, or -ENOBUFS with the
 * thread's message naming the limit (fn's), conn marked to be woken
 * (on_send_ready) when staged bytes come back. */
int staging_take(struct ez_conn *conn, uint64_t bytes, const char *fn);
void staging_give(struct ez_conn *conn, uint64_t bytes);
/* Each waiting connection (ctx->staged_waiters of them), unmarked, to ready() (its on_send_ready). */
void staging_wake(struct ez_ctx *ctx, void (*ready)(struct ez_conn *conn));
/* conn goes: it waits no more. */
void staging_leave(struct ez_conn *conn);

#endif
