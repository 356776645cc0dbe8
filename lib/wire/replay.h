/* replay.h: the window of request nonces a keyed listener has let through, so a replayed request is refused before the application sees it. */
#ifndef EZ_WIRE_REPLAY_H
#define EZ_WIRE_REPLAY_H

#include <stdint.h>

#define REPLAY_NONCE_LEN 16	/* AUTH_NONCE_LEN */
#define REPLAY_WINDOW 1024	/* a listener's window: 16 KiB of nonces, 24 KiB in all */

struct replay_window;

/* A window of the last cap nonces (cap >= 1); NULL when out of memory. */
struct replay_window *replay_window_new(uint32_t cap);
void replay_window_free(struct replay_window *w);
/* 1 when nonce is among the last cap nonces recorded; else records it,
 * evicting the oldest when full, and returns 0. */
int replay_window_seen(struct replay_window *w, const uint8_t nonce[REPLAY_NONCE_LEN]);

#endif
