/* fuzz_exports.c: libFuzzer target: untrusted bytes through the exports message's decoder (the regions a peer gives with the connection). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/exports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte picks the connection's paths (1..8); the rest is the
 * message. What is accepted is well formed and encodes back to the same
 * bytes; what is refused yields no key. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ez_rkey keys[EZ_CONN_EXPORTS_MAX];
	uint8_t again[EXPORTS_MAX_LEN];
	unsigned int npaths, n = 99;
	enum exports_fault f;

	if (size < 1)
		return 0;
	npaths = 1 + data[0] % 8;
	f = exports_decode(data + 1, size - 1, npaths, keys, &n);
	if (f != EXPORTS_OK) {
		if (n != 0 || !strcmp(exports_fault_str(f), "?"))
			abort();
		return 0;
	}
	if (n == 0 || n > EZ_CONN_EXPORTS_MAX || size - 1 != EXPORTS_LEN(n))
		abort();
	for (unsigned int i = 0; i < n; i++) {
		if (!keys[i].len || keys[i].addr + keys[i].len < keys[i].addr)
			abort();
		if (keys[i].path_binding &&
		    (keys[i].path_binding & 0xffu) >= npaths)
			abort();
	}
	if (exports_encode(keys, n, again, sizeof(again)) != size - 1 ||
	    memcmp(again, data + 1, size - 1))
		abort();
	return 0;
}
