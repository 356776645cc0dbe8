/* rndv.c: the rendezvous header and acknowledgement on the wire (pure; rx_check.c judges them). */
#include "config.h"

#include "rndv.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void rndv_hdr_encode(const struct rndv_hdr *h, uint8_t out[RNDV_HDR_LEN])
{
	put32(out, (uint32_t)(h->addr >> 32));
	put32(out + 4, (uint32_t)h->addr);
	put32(out + 8, h->rkey);
	put32(out + 12, h->len);
	put32(out + 16, h->id);
	put32(out + 20, h->flags);
}

void rndv_hdr_decode(const uint8_t in[RNDV_HDR_LEN], struct rndv_hdr *h)
{
	h->addr = (uint64_t)get32(in) << 32 | get32(in + 4);
	h->rkey = get32(in + 8);
	h->len = get32(in + 12);
	h->id = get32(in + 16);
	h->flags = get32(in + 20);
}

void rndv_ack_encode(uint32_t id, uint8_t out[RNDV_ACK_LEN])
{
	put32(out, id);
}

uint32_t rndv_ack_decode(const uint8_t in[RNDV_ACK_LEN])
{
	return get32(in);
}
