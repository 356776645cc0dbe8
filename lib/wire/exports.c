/* exports.c: the exports message a side sends with the connection: encode, and decode as untrusted input (exports.h; pure). */
#include "config.h"

#include <string.h>

#include "exports.h"
#include "be.h"





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

		be_put64(r, keys[i].addr);
		be_put64(r + 8, keys[i].len);
		be_put32(r + 16, keys[i].rkey);
		be_put32(r + 20, keys[i].path_binding);
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
		k.addr = be_get64(r);
		k.len = be_get64(r + 8);
		k.rkey = be_get32(r + 16);
		k.path_binding = be_get32(r + 20);
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
