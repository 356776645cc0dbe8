/* rndv.c: the rendezvous header and acknowledgement on the wire (pure; rx_check.c judges them). */
#include "config.h"

#include "rndv.h"
#include "be.h"



void rndv_hdr_encode(const struct rndv_hdr *h, uint8_t out[RNDV_HDR_LEN])
{
	be_put32(out, (uint32_t)(h->addr >> 32));
	be_put32(out + 4, (uint32_t)h->addr);
	be_put32(out + 8, h->rkey);
	be_put32(out + 12, h->len);
	be_put32(out + 16, h->id);
	be_put32(out + 20, h->flags);
}

void rndv_hdr_decode(const uint8_t in[RNDV_HDR_LEN], struct rndv_hdr *h)
{
	h->addr = (uint64_t)be_get32(in) << 32 | be_get32(in + 4);
	h->rkey = be_get32(in + 8);
	h->len = be_get32(in + 12);
	h->id = be_get32(in + 16);
	h->flags = be_get32(in + 20);
}

void rndv_ack_encode(uint32_t id, uint8_t out[RNDV_ACK_LEN])
{
	be_put32(out, id);
}

uint32_t rndv_ack_decode(const uint8_t in[RNDV_ACK_LEN])
{
	return be_get32(in);
}
