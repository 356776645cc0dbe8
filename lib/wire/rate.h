/* rate.h: a pure token bucket (a burst, then one token per period), for what a peer may send that costs this side work without a credit: keepalive probes (lib/conn/keepalive.c). */
#ifndef EZ_WIRE_RATE_H
#define EZ_WIRE_RATE_H

#include <stdint.h>

struct rate {
	uint32_t tokens;	/* what may come now */
	uint64_t at_ms;		/* when tokens was last brought up to date */
};

/* A full bucket at now_ms. */
static inline void rate_init(struct rate *r, uint32_t burst, uint64_t now_ms)
{
	r->tokens = burst;
	r->at_ms = now_ms;
}

/* One more at now_ms: 1 when it fits (a token taken), 0 when the bucket is
 * empty. A token comes back every period_ms, up to burst; time that runs
 * backwards adds nothing. */
static inline int rate_take(struct rate *r, uint32_t burst, uint32_t period_ms, uint64_t now_ms)
{
	if (now_ms > r->at_ms) {
		uint64_t back = (now_ms - r->at_ms) / period_ms;

		if (back >= burst - r->tokens) {
			r->tokens = burst;
			r->at_ms = now_ms;
		} else {
			r->tokens += (uint32_t)back;
			r->at_ms += back * period_ms;
		}
	}
	if (!r->tokens)
		return 0;
	r->tokens--;
	return 1;
}

#endif
