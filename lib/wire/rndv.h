/* rndv.h: the codec of a large message's rendezvous header and acknowledgement (pure functions). */
#ifndef EZ_WIRE_RNDV_H
#define EZ_WIRE_RNDV_H

#include <stdint.h>

/*
 * A send larger than the peer's receive buffers (and within the large
 * maximum both sides announced with HS_CAP_RNDV) travels as a header
 * (immediate IMM_RNDV, a credit like any message), big-endian:
 *   0 u64 address   8 u32 rkey   12 u32 length   16 u32 transfer id   20 u32 flags (0)
 * The rkey is a type-2 memory window bound to the sender's QP for exactly
 * [address, +length), remote read only, deallocated when the receiver's
 * acknowledgement (IMM_RNDV_ACK, credit-only, 4 bytes: the transfer id)
 * arrives. Ids count the connection's headers from 0, so the receiver
 * expects each in turn; on a connection of several paths each path counts
 * its own (id = path << 24 | the path's count; the window is bound to that
 * path's QP and the header travels there).
 */
#define RNDV_HDR_LEN 24
#define RNDV_ACK_LEN 4

struct rndv_hdr {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint32_t id;
	uint32_t flags;
};

void rndv_hdr_encode(const struct rndv_hdr *h, uint8_t out[RNDV_HDR_LEN]);
void rndv_hdr_decode(const uint8_t in[RNDV_HDR_LEN], struct rndv_hdr *h);
void rndv_ack_encode(uint32_t id, uint8_t out[RNDV_ACK_LEN]);
uint32_t rndv_ack_decode(const uint8_t in[RNDV_ACK_LEN]);

#endif
