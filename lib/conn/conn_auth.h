/* conn_auth.h: a connection's shared-secret step: sealing its handshake, the proof on the QP, the verdict. */
#ifndef EZ_CONN_CONN_AUTH_H
#define EZ_CONN_CONN_AUTH_H

#include <infiniband/verbs.h>

#include "wire/auth.h"
#include "wire/imm.h"

struct ez_conn;
struct ez_buf;


struct conn_auth {
	struct auth_key key;
	struct hs_msg req;		/* the request: ours (client) or the peer's (server) */
	uint8_t proof[AUTH_PROOF_LEN];	/* the client's proof: to send, or to expect */
};

/* The connection's key (NULL: none), for the resume messages' MACs. */
const struct auth_key *conn_auth_key(const struct ez_conn *conn);
/* Gives conn a copy of the key (conn->auth). */
int conn_auth_new(struct ez_conn *conn, const void *key, uint32_t len);
/* Wipes and frees conn->auth. */
void conn_auth_free(struct ez_conn *conn);
/* Client: seals the request about to be sent and keeps it. */
int conn_auth_seal_req(struct ez_conn *conn, struct hs_msg *req);
/* Server: seals the reply to conn->auth->req and computes the proof to expect. */
int conn_auth_seal_rep(struct ez_conn *conn, struct hs_msg *rep);
/* Client: checks the reply; 0, or -EACCES with the connection failed. */
int conn_auth_check_rep(struct ez_conn *conn, const struct hs_msg *rep);
/* Client, once in RTS: posts the proof; the connection waits for the verdict. */
int conn_auth_send_proof(struct ez_conn *conn);
/* A receive while the proof is pending (the buffer is consumed here). */
void conn_auth_on_recv(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc);
/* Server: sends the refusal, then ends the connection with -EACCES. */
void conn_auth_refuse(struct ez_conn *conn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
