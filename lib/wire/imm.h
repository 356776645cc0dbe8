/* imm.h: every bit of the 32-bit immediate data easyrdma puts on its SENDs, in one place. */
#ifndef EZ_WIRE_IMM_H
#define EZ_WIRE_IMM_H

#include <stdint.h>

/*
 * A SEND's immediate (network order on the wire) carries:
 *   bits  0..15  credits handed back to the receiver of this message
 *   bits 16..18  a path index (with IMM_PATH_DOWN)
 *   bit  23      IMM_EXPORTS: with IMM_CREDIT_ONLY, the regions the sender
 *                gives with the connection (exports.h; HS_CAP_EXPORTS peers
 *                only, once, from a side that set HS_CAP_EXPORTS_SENT)
 *   bit  24      IMM_PATH_UP: with IMM_CREDIT_ONLY and a path index, a step of
 *                that failed path's rebuild (HS_CAP_FAILOVER peers only; 8
 *                bytes, settle.h)
 *   bit  25      IMM_RNDV: a large message's rendezvous header (RNDV_HDR_LEN
 *                bytes, takes a credit like data), or with IMM_CREDIT_ONLY the
 *                receiver's acknowledgement of one (RNDV_ACK_LEN bytes)
 *   bit  26      IMM_KA_REPLY: with IMM_KEEPALIVE, the answer to a probe
 *   bit  27      IMM_KEEPALIVE: a keepalive probe (HS_CAP_KEEPALIVE peers only)
 *   bit  28      IMM_AUTH: a shared-secret message (proof, verdict)
 *   bit  29      IMM_PATH_DOWN: the sender took path (bits 16..18) out
 *   bit  30      IMM_BYE: the sender is closing on purpose (ez_conn_close)
 *   bit  31      IMM_CREDIT_ONLY: consumed by the library, never delivered
 * A goodbye is empty, or to a peer that set HS_CAP_BYE_REASON carries why
 * (BYE_REASON_LEN bytes, bye.h).
 * A path-down notice between peers that both set HS_CAP_FAILOVER carries
 * 4 bytes (the sender's count of receives on that path, settle.h); it is
 * empty otherwise.
 * IMM_AUTH, IMM_PATH_DOWN, IMM_BYE and IMM_KEEPALIVE are meaningful only
 * with IMM_CREDIT_ONLY. A peer older than HS_CAP_KEEPALIVE refuses bits
 * 26..27 (unknown bits), so nothing with them is sent to it; likewise bit 25
 * goes only to a peer that set HS_CAP_RNDV. An RDMA WRITE with immediate is told apart by its
 * completion's opcode: its 32 bits are the application's.
 */
#define IMM_CREDITS_MASK 0x0000ffffu
#define IMM_PATH_SHIFT 16
#define IMM_PATH_MASK 0x7u
#define IMM_PATH_FIELD (IMM_PATH_MASK << IMM_PATH_SHIFT)
#define IMM_EXPORTS 0x00800000u
#define IMM_PATH_UP 0x01000000u
#define IMM_RNDV 0x02000000u
#define IMM_KA_REPLY 0x04000000u
#define IMM_KEEPALIVE 0x08000000u
#define IMM_AUTH 0x10000000u
#define IMM_PATH_DOWN 0x20000000u
#define IMM_BYE 0x40000000u
#define IMM_CREDIT_ONLY 0x80000000u

/* The library's auth messages: the client's proof (AUTH_PROOF_LEN bytes),
 * the server's verdict (accepted, or refused and closing). */
#define IMM_AUTH_PROOF (IMM_CREDIT_ONLY | IMM_AUTH)
#define IMM_AUTH_OK (IMM_CREDIT_ONLY | IMM_AUTH)
#define IMM_AUTH_REFUSED (IMM_CREDIT_ONLY | IMM_AUTH | IMM_BYE)

/* Keepalive (lib/conn/keepalive.c): a probe, 0 bytes and no credits, that
 * the peer's library answers with the reply, likewise empty. */
#define IMM_KA_PROBE (IMM_CREDIT_ONLY | IMM_KEEPALIVE)
#define IMM_KA_ANSWER (IMM_CREDIT_ONLY | IMM_KEEPALIVE | IMM_KA_REPLY)

/* The regions given with the connection (lib/conn/conn_export.c). */
#define IMM_EXPORTS_MSG (IMM_CREDIT_ONLY | IMM_EXPORTS)

/* Rendezvous (lib/conn/rndv.c): the header a large send posts in place of
 * its bytes, and the acknowledgement that the receiver has fetched them. */
#define IMM_RNDV_ACK (IMM_CREDIT_ONLY | IMM_RNDV)

/* Each field its own bits: a flag that shares a bit with another is read
 * as that other (IMM_AUTH and IMM_PATH_DOWN once were both 0x20000000). */
_Static_assert((IMM_CREDITS_MASK & IMM_PATH_FIELD) == 0, "credits and path index overlap");
_Static_assert(((IMM_CREDITS_MASK | IMM_PATH_FIELD) & (IMM_KA_REPLY | IMM_KEEPALIVE | IMM_AUTH |
							IMM_PATH_DOWN | IMM_BYE | IMM_CREDIT_ONLY)) == 0,
	       "a flag overlaps the credits or the path index");
_Static_assert(((IMM_KA_REPLY | IMM_KEEPALIVE) & (IMM_AUTH | IMM_PATH_DOWN | IMM_BYE | IMM_CREDIT_ONLY)) == 0 &&
	       (IMM_KA_REPLY & IMM_KEEPALIVE) == 0,
	       "a keepalive flag shares a bit with another flag");
_Static_assert((IMM_AUTH & IMM_PATH_DOWN) == 0 && (IMM_AUTH & IMM_BYE) == 0 &&
	       (IMM_AUTH & IMM_CREDIT_ONLY) == 0 && (IMM_PATH_DOWN & IMM_BYE) == 0 &&
	       (IMM_PATH_DOWN & IMM_CREDIT_ONLY) == 0 && (IMM_BYE & IMM_CREDIT_ONLY) == 0,
	       "two immediate-data flags share a bit");
_Static_assert((IMM_RNDV & (IMM_CREDITS_MASK | IMM_PATH_FIELD | IMM_KA_REPLY | IMM_KEEPALIVE |
			   IMM_AUTH | IMM_PATH_DOWN | IMM_BYE | IMM_CREDIT_ONLY)) == 0,
	       "the rendezvous flag shares a bit with another field");
_Static_assert((IMM_PATH_UP & (IMM_CREDITS_MASK | IMM_PATH_FIELD | IMM_RNDV | IMM_KA_REPLY | IMM_KEEPALIVE |
			      IMM_AUTH | IMM_PATH_DOWN | IMM_BYE | IMM_CREDIT_ONLY)) == 0,
	       "the path-up flag shares a bit with another field");
_Static_assert((IMM_EXPORTS & (IMM_CREDITS_MASK | IMM_PATH_FIELD | IMM_PATH_UP | IMM_RNDV | IMM_KA_REPLY |
			      IMM_KEEPALIVE | IMM_AUTH | IMM_PATH_DOWN | IMM_BYE | IMM_CREDIT_ONLY)) == 0,
	       "the exports flag shares a bit with another field");
_Static_assert((IMM_PATH_MASK + 1) >= 8, "the path field cannot name EZ_MAX_PATHS paths");

/* The path a IMM_PATH_DOWN notice names. */
static inline unsigned int imm_path(uint32_t imm)
{
	return (imm >> IMM_PATH_SHIFT) & IMM_PATH_MASK;
}

/* A credit-only notice that the sender took path idx out. */
static inline int imm_is_path_down(uint32_t imm)
{
	return (imm & (IMM_CREDIT_ONLY | IMM_PATH_DOWN | IMM_AUTH)) == (IMM_CREDIT_ONLY | IMM_PATH_DOWN);
}

#endif
