/* bye.h: why a goodbye was said: the reason a goodbye message may carry (pure functions). */
#ifndef EZ_WIRE_BYE_H
#define EZ_WIRE_BYE_H

#include <stdint.h>

#include "be.h"

/*
 * A goodbye (imm.h IMM_BYE) is empty: the sender closes on purpose. To a
 * peer that set HS_CAP_BYE_REASON it may carry BYE_REASON_LEN bytes, when
 * the sender ends the connection for a reason of its own the peer cannot
 * see otherwise, big-endian:
 *   0 u8 reason   1 u8[3] reserved (0)   4 u32 milliseconds
 * BYE_KEEPALIVE: the sender's keepalive heard nothing from the receiver
 * for that long (the receiver is alive, so its loop or its link stalled),
 * which the receiver would otherwise report as a peer that disconnected
 * without closing. A reason this library does not know reads as a plain
 * goodbye.
 */
#define BYE_REASON_LEN 8

enum bye_reason {
	BYE_CLOSED = 0,		/* a plain goodbye */
	BYE_KEEPALIVE = 1,	/* the sender's keepalive ended the connection */
};

static inline void bye_reason_encode(uint8_t reason, uint32_t ms, uint8_t out[BYE_REASON_LEN])
{
	out[0] = reason;
	out[1] = out[2] = out[3] = 0;
	be_put32(out + 4, ms);
}

/* The reason (BYE_CLOSED for one not known here) and its milliseconds. */
static inline uint8_t bye_reason_decode(const uint8_t in[BYE_REASON_LEN], uint32_t *ms)
{
	*ms = be_get32(in + 4);
	return in[0] == BYE_KEEPALIVE && !in[1] && !in[2] && !in[3] ? BYE_KEEPALIVE : BYE_CLOSED;
}

#endif
