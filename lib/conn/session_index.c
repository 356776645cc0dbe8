/* session_index.c: the passive side's resumable sessions by their token (struct session_index): a chained table, doubled at an average chain of two. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session_index.h"
#include "wire/auth.h"

static uint32_t token_bucket(const uint8_t *token, uint32_t nbuckets)
{
	uint32_t h;

	memcpy(&h, token, sizeof(h));	/* random bytes this side drew */
	return h & (nbuckets - 1);
}

static void rehash(struct session_index *ix, uint32_t nbuckets)
{
	struct session_node **b = calloc(nbuckets, sizeof(*b));

	if (!b)
		return;		/* the old table stays: longer chains */
	for (uint32_t i = 0; i < ix->nbuckets; i++) {
		struct session_node *n = ix->bucket[i], *next;

		for (; n; n = next) {
			uint32_t k = token_bucket(n->token, nbuckets);

			next = n->next;
			n->next = b[k];
			b[k] = n;
		}
	}
	free(ix->bucket);
	ix->bucket = b;
	ix->nbuckets = nbuckets;
}

int session_index_add(struct session_index *ix, struct session_node *n)
{
	uint32_t k;

	if (!ix->nbuckets) {
		rehash(ix, SESSION_INDEX_FIRST);
		if (!ix->nbuckets)
			return -ENOMEM;
	} else if (ix->count >= 2 * ix->nbuckets && ix->nbuckets < (1u << 30)) {
		rehash(ix, 2 * ix->nbuckets);
	}
	k = token_bucket(n->token, ix->nbuckets);
	n->next = ix->bucket[k];
	ix->bucket[k] = n;
	ix->count++;
	return 0;
}

void session_index_del(struct session_index *ix, struct session_node *n)
{
	struct session_node **p;

	if (!ix->nbuckets)
		return;
	for (p = &ix->bucket[token_bucket(n->token, ix->nbuckets)]; *p; p = &(*p)->next)
		if (*p == n) {
			*p = n->next;
			n->next = NULL;
			ix->count--;
			return;
		}
}

struct session_node *session_index_find(struct session_index *ix, const uint8_t *token)
{
	struct session_node *n;

	if (!ix->nbuckets)
		return NULL;
	for (n = ix->bucket[token_bucket(token, ix->nbuckets)]; n; n = n->next) {
		ix->compares++;
		if (!auth_memcmp(n->token, token, HS_TOKEN_LEN))
			return n;
	}
	return NULL;
}

void session_index_fini(struct session_index *ix)
{
	free(ix->bucket);
	memset(ix, 0, sizeof(*ix));
}
