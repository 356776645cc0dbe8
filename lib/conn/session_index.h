/* session_index.h: the passive side's resumable sessions by their token, so a resume request (forged ones included) costs one short chain, not a walk of every connection. */
#ifndef EZ_SESSION_INDEX_H
#define EZ_SESSION_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "wire/handshake.h"	/* HS_TOKEN_LEN */

/*
 * A resume request names its session only by the token the listener's side
 * drew for it (getrandom, 16 bytes). Found by walking every connection of
 * the context, each request, forged or not, cost one constant-time compare
 * per connection: 10,000 connections made every forged request 10,000
 * compares on the loop, a flood an amplifier. Here the token's own first
 * bytes pick a bucket (the tokens are uniformly random and only this side
 * draws them; a request's token chooses which chain is read, never what is
 * in it), the table doubles when its chains average two, and each entry is
 * compared in constant time.
 *
 * The node is embedded in its owner's struct (resume.c's struct conn_resume);
 * the token it points at must stay put while it is in the index.
 */
struct session_node {
	struct session_node *next;
	const uint8_t *token;		/* HS_TOKEN_LEN bytes, the owner's */
};

struct session_index {
	struct session_node **bucket;	/* nbuckets chains (NULL until the first add) */
	uint32_t nbuckets;		/* a power of two, or 0 */
	uint32_t count;
	uint64_t compares;		/* tokens compared by every find (a figure for tests) */
};

#define SESSION_INDEX_FIRST 64u	/* buckets at the first add */

/* Adds n (its token set). 0, or -ENOMEM when even the first table could
 * not be had (a failed growth keeps the old table: longer chains, no loss). */
int session_index_add(struct session_index *ix, struct session_node *n);
/* Removes n if it is in the index (a node never added is left alone). */
void session_index_del(struct session_index *ix, struct session_node *n);
/* The node whose token is token's, or NULL. */
struct session_node *session_index_find(struct session_index *ix, const uint8_t *token);
/* Frees the table (the nodes are their owners'). */
void session_index_fini(struct session_index *ix);

#endif
