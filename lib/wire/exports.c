/* exports.c: the exports message a side sends with the connection: encode, and decode as untrusted input (exports.h; pure). */
#include "config.h"

#include <string.h>

#include "exports.h"

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)(v >> 32));
	put_u32(p + 4, (uint32_t)v);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

size_t exports_encode(const struct ez_rkey *keys, unsigned int n, uint8_t *out, size_t room)
{
	if (n == 0 || n > EZ_CONN_EXPORTS_MAX || room < EXPORTS_LEN(n))
		return 0;
	out[0] = EXPORTS_VERSION;
	out[1] = (uint8_t)n;
	out[2] = 0;
	out[3] = 0;
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *r = out + EXPORTS_LEN(i);

		put_u64(r, keys[i].addr);
		put_u64(r + 8, keys[i].len);
		put_u32(r + 16, keys[i].rkey);
		put_u32(r + 20, keys[i].path_binding);
	}
	return EXPORTS_LEN(n);
}

/* 0 (any path) or EZ_RKEY_PATH_BOUND with a path the connection has. */
static int binding_ok(uint32_t b, unsigned int npaths)
{
	return b == 0 || ((b & ~(uint32_t)0xff) == EZ_RKEY_PATH_BOUND && (b & 0xff) < npaths);
}

enum exports_fault exports_decode(const uint8_t *in, size_t len, unsigned int npaths,
				  struct ez_rkey *keys, unsigned int *n)
{
	unsigned int count;

	*n = 0;
	if (len < EXPORTS_HDR_LEN)
		return EXPORTS_F_SHORT;
	if (in[0] != EXPORTS_VERSION)
		return EXPORTS_F_VERSION;
	count = in[1];
	if (count == 0 || count > EZ_CONN_EXPORTS_MAX)
		return EXPORTS_F_COUNT;
	if (len != EXPORTS_LEN(count))
		return EXPORTS_F_LEN;
	if (in[2] || in[3])
		return EXPORTS_F_RESERVED;
	for (unsigned int i = 0; i < count; i++) {
		const uint8_t *r = in + EXPORTS_LEN(i);
		struct ez_rkey k;

		memset(&k, 0, sizeof(k));
		k.addr = get_u64(r);
		k.len = get_u64(r + 8);
		k.rkey = get_u32(r + 16);
		k.path_binding = get_u32(r + 20);
		if (k.len == 0)
			return EXPORTS_F_EMPTY;
		if (k.addr + k.len < k.addr)
			return EXPORTS_F_WRAP;
		if (!binding_ok(k.path_binding, npaths))
			return EXPORTS_F_PATH;
		keys[i] = k;
	}
	*n = count;
	return EXPORTS_OK;
}

const char *exports_fault_str(enum exports_fault f)
{
	switch (f) {
	case EXPORTS_OK:
		return "well formed";
	case EXPORTS_F_SHORT:
		return "shorter than its 4-byte header";
	case EXPORTS_F_VERSION:
		return "a version this library does not know";
	case EXPORTS_F_COUNT:
		return "no region, or more than EZ_CONN_EXPORTS_MAX";
	case EXPORTS_F_LEN:
		return "a length that does not match its count of regions";
	case EXPORTS_F_RESERVED:
		return "a reserved field that is not 0";
	case EXPORTS_F_EMPTY:
		return "a region of 0 bytes";
	case EXPORTS_F_WRAP:
		return "a region that wraps the address space";
	case EXPORTS_F_PATH:
		return "a key bound to a path the connection does not have";
	}
	return "?";
}
