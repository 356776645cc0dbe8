/* abi.h: public structs across library versions: the caller's size against the library's (doc/abi.md). */
#ifndef EZ_BASE_ABI_H
#define EZ_BASE_ABI_H

#include <stddef.h>

#include "easyrdma.h"

/* Where a member ends: a layout's size without its trailing padding. */
#define EZI_END(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/* The layouts of EASYRDMA_0 (include/easyrdma.h as of 56bca74), up to their
 * last member: the trailing padding of an old binary's struct is never read
 * (a later field may live there) nor written. Frozen: never change them. */
#define EZ_V0_CONN_OPTS_SIZE EZI_END(struct ez_conn_opts, auth_key_len)
#define EZ_V0_LISTEN_OPTS_SIZE EZI_END(struct ez_listen_opts, auth_key_len)
#define EZ_V0_SRQPOOL_OPTS_SIZE EZI_END(struct ez_srqpool_opts, expected_conns)
#define EZ_V0_CONN_CBS_SIZE EZI_END(struct ez_conn_cbs, on_path_down)
#define EZ_V0_CONN_INFO_SIZE EZI_END(struct ez_conn_info, path_status)
#define EZ_V0_CONN_STATS_SIZE EZI_END(struct ez_conn_stats, paths_down)
#define EZ_V0_SRQPOOL_STATS_SIZE EZI_END(struct ez_srqpool_stats, rebalances)

/* An input struct of src_size bytes (src NULL: none, all zero) into the
 * library's dst_size: a shorter one is zero-filled, a longer one is taken if
 * the bytes beyond dst_size are zero; else -EINVAL with a message naming fn
 * and the struct (what), dst is then zeroed. */
int ezi_struct_in(void *dst, size_t dst_size, const void *src, size_t src_size,
		  const char *fn, const char *what);

/* An output struct: the first min(dst_size, src_size) bytes of src into the
 * caller's dst, zeros in the rest of dst_size (fields this library does not
 * have); never a byte past dst_size. */
void ezi_struct_out(void *dst, size_t dst_size, const void *src, size_t src_size);

#endif
