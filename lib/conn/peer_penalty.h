/* peer_penalty.h: peers whose RDMA requests our responder refused: counted by address (wire/penalty.c), refused by the listeners that ask for it. */
#ifndef EZ_CONN_PEER_PENALTY_H
#define EZ_CONN_PEER_PENALTY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "wire/penalty.h"

struct ez_ctx;
struct ez_conn;
struct ez_listen_opts;


void peer_penalty_opts(struct peer_penalty_opts *p, const struct ez_listen_opts *o);
/* conn's peer failed a remote access: one more against its address (in
 * the context); the failures counted. */
uint32_t peer_penalty_note(struct ez_conn *conn);
/* NULL, or the reason (in why) a listener with options p refuses peer now. */
const char *peer_penalty_gate(const struct ez_ctx *ctx, const struct peer_penalty_opts *p,
			      const struct sockaddr *peer, char *why, size_t len);

#endif
