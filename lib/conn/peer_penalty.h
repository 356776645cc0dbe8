/* peer_penalty.h: peers whose RDMA requests our responder refused: counted by address (wire/penalty.c), refused by the listeners that ask for it. */
#ifndef EZ_CONN_PEER_PENALTY_H
#define EZ_CONN_PEER_PENALTY_H

#include <stddef.h>
#include <sys/socket.h>

struct ez_conn;
struct ez_listener;
struct ez_listen_opts;

/* The listener's options (ez_listen_opts.access_*), defaults filled. */
void peer_penalty_opts(struct ez_listener *l, const struct ez_listen_opts *o);
/* An accepted connection takes its listener's options. */
void peer_penalty_inherit(struct ez_conn *conn, const struct ez_listener *l);
/* conn's peer failed a remote access: one more against its address. */
uint32_t peer_penalty_note(struct ez_conn *conn);
/* NULL, or the reason the listener refuses peer now (in why). */
const char *peer_penalty_gate(const struct ez_listener *l, const struct sockaddr *peer,
			      char *why, size_t len);

#endif
