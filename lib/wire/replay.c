/* replay.c: the window of request nonces a keyed listener has let through, so a replayed request is refused before the application sees it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "replay.h"

/*
 * A request MAC proves the key but not freshness: a recorded request passes
 * it again. The client's nonce is fresh in every genuine request (the
 * kernel's CSPRNG), so a nonce seen before is a replay. The last cap nonces
 * are kept in a ring (arrival order, for eviction) and chained by hash for
 * lookup; only nonces under a valid MAC are recorded, so a peer without the
 * key cannot flush the window. A replay older than the window still meets
 * the proof on the QP, which it cannot pass (auth.h).
 */
struct replay_window {
	uint32_t cap;		/* ring slots */
	uint32_t used;		/* slots filled so far (<= cap) */
	uint32_t oldest;	/* the slot to evict next once full */
	uint32_t mask;		/* buckets - 1 (a power of two >= cap) */
	uint32_t *bucket;	/* per bucket: first slot + 1, 0 when empty */
	uint32_t *next;		/* per slot: the next slot in its bucket + 1, 0 at the end */
	uint8_t (*nonce)[REPLAY_NONCE_LEN];
};

struct replay_window *replay_window_new(uint32_t cap)
{
	struct replay_window *w;
	uint32_t nb = 1;

	if (!cap || cap > (1u << 24))
		return NULL;
	while (nb < cap)
		nb <<= 1;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->cap = cap;
	w->mask = nb - 1;
	w->bucket = calloc(nb, sizeof(*w->bucket));
	w->next = calloc(cap, sizeof(*w->next));
	w->nonce = calloc(cap, sizeof(*w->nonce));
	if (!w->bucket || !w->next || !w->nonce) {
		replay_window_free(w);
		return NULL;
	}
	return w;
}

void replay_window_free(struct replay_window *w)
{
	if (!w)
		return;
	free(w->bucket);
	free(w->next);
	free(w->nonce);
	free(w);
}

/* The nonce is random: its first bytes are as good a hash as any. */
static uint32_t bucket_of(const struct replay_window *w, const uint8_t *nonce)
{
	uint32_t h;

	memcpy(&h, nonce, sizeof(h));
	return h & w->mask;
}

static void unlink_slot(struct replay_window *w, uint32_t slot)
{
	uint32_t *link = &w->bucket[bucket_of(w, w->nonce[slot])];

	while (*link && *link != slot + 1)
		link = &w->next[*link - 1];
	if (*link)
		*link = w->next[slot];
	w->next[slot] = 0;
}

int replay_window_seen(struct replay_window *w, const uint8_t nonce[REPLAY_NONCE_LEN])
{
	uint32_t b = bucket_of(w, nonce), i, slot;

	for (i = w->bucket[b]; i; i = w->next[i - 1]) {
		if (!memcmp(w->nonce[i - 1], nonce, REPLAY_NONCE_LEN))
			return 1;
	}
	if (w->used < w->cap) {
		slot = w->used++;
	} else {
		slot = w->oldest;
		w->oldest = (w->oldest + 1) % w->cap;
		unlink_slot(w, slot);
	}
	memcpy(w->nonce[slot], nonce, REPLAY_NONCE_LEN);
	w->next[slot] = w->bucket[b];
	w->bucket[b] = slot + 1;
	return 0;
}
