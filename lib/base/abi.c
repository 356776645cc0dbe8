/* abi.c: copies public structs between the caller's layout and the library's (doc/abi.md). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "abi.h"
#include "error.h"

/* The first nonzero byte of p[from, to), or to if there is none. */
static size_t first_set(const unsigned char *p, size_t from, size_t to)
{
	while (from < to && !p[from])
		from++;
	return from;
}

int ezi_struct_in(void *dst, size_t dst_size, const void *src, size_t src_size,
		  const char *fn, const char *what)
{
	size_t n = src_size < dst_size ? src_size : dst_size, bad;

	memset(dst, 0, dst_size);
	if (!src)
		return 0;
	/* A newer program asking for something this library lacks must hear
	 * so, not have it ignored (the kernel's copy_struct_from_user rule). */
	bad = first_set(src, dst_size, src_size);
	if (bad < src_size)
		return ezi_fail(-EINVAL, "%s: struct %s of %zu bytes has byte %zu set, beyond the %zu this library knows (a field of a newer easyrdma.h)",
				fn, what, src_size, bad, dst_size);
	memcpy(dst, src, n);
	return 0;
}

void ezi_struct_out(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	size_t n = src_size < dst_size ? src_size : dst_size;

	memcpy(dst, src, n);
	memset((unsigned char *)dst + n, 0, dst_size - n);
}
