/* compat_v0.c: the EASYRDMA_0 entry points, for binaries built before the structs carried their size: the sized calls at the v0 layouts. */
#include "config.h"

#include "base/abi.h"

/* The header now defines these names as inline wrappers, so the old
 * exported functions are defined here under internal names and bound to
 * the old symbols with symbol versioning (a default version, @@, so that an
 * object compiled against the old header still links). */
#define EZ_V0(name) __attribute__((visibility("default"), symver(#name "@@EASYRDMA_0")))

/* The v0 layouts as a 64-bit build saw them (include/easyrdma.h at
 * 56bca74): a field inserted before the end of a v0 member moves these. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(EZ_V0_CONN_OPTS_SIZE == 92, "struct ez_conn_opts: v0 fields moved");
_Static_assert(EZ_V0_LISTEN_OPTS_SIZE == 20, "struct ez_listen_opts: v0 fields moved");
_Static_assert(EZ_V0_SRQPOOL_OPTS_SIZE == 28, "struct ez_srqpool_opts: v0 fields moved");
_Static_assert(EZ_V0_CONN_CBS_SIZE == 40, "struct ez_conn_cbs: v0 fields moved");
_Static_assert(EZ_V0_CONN_INFO_SIZE == 488, "struct ez_conn_info: v0 fields moved");
_Static_assert(EZ_V0_CONN_STATS_SIZE == 304, "struct ez_conn_stats: v0 fields moved");
_Static_assert(EZ_V0_SRQPOOL_STATS_SIZE == 160, "struct ez_srqpool_stats: v0 fields moved");
#endif

int ezi_connect_v0(struct ez_ctx *ctx, const char *host, const char *service,
		   const struct ez_conn_opts *opts, const struct ez_conn_cbs *cbs, void *arg,
		   struct ez_conn **conn);
int ezi_accept_v0(struct ez_conn_req *req, const struct ez_conn_opts *opts,
		  const struct ez_conn_cbs *cbs, void *arg, struct ez_conn **conn);
int ezi_listen_v0(struct ez_ctx *ctx, const char *address, const char *service,
		  const struct ez_listen_opts *opts, ez_request_cb on_request, void *arg,
		  struct ez_listener **listener);
int ezi_srqpool_new_v0(struct ez_ctx *ctx, const char *device,
		       const struct ez_srqpool_opts *opts, struct ez_srqpool **pool);
int ezi_srqpool_stats_v0(const struct ez_srqpool *pool, struct ez_srqpool_stats *stats);
int ezi_conn_info_v0(const struct ez_conn *conn, struct ez_conn_info *info);
int ezi_conn_stats_v0(const struct ez_conn *conn, struct ez_conn_stats *stats);

EZ_V0(ez_connect) int ezi_connect_v0(struct ez_ctx *ctx, const char *host, const char *service,
				     const struct ez_conn_opts *opts,
				     const struct ez_conn_cbs *cbs, void *arg,
				     struct ez_conn **conn)
{
	return ez_connect_sz(ctx, host, service, opts, EZ_V0_CONN_OPTS_SIZE, cbs,
			     EZ_V0_CONN_CBS_SIZE, arg, conn);
}

EZ_V0(ez_accept) int ezi_accept_v0(struct ez_conn_req *req, const struct ez_conn_opts *opts,
				   const struct ez_conn_cbs *cbs, void *arg,
				   struct ez_conn **conn)
{
	return ez_accept_sz(req, opts, EZ_V0_CONN_OPTS_SIZE, cbs, EZ_V0_CONN_CBS_SIZE, arg, conn);
}

EZ_V0(ez_listen) int ezi_listen_v0(struct ez_ctx *ctx, const char *address, const char *service,
				   const struct ez_listen_opts *opts, ez_request_cb on_request,
				   void *arg, struct ez_listener **listener)
{
	return ez_listen_sz(ctx, address, service, opts, EZ_V0_LISTEN_OPTS_SIZE, on_request, arg,
			    listener);
}

EZ_V0(ez_srqpool_new) int ezi_srqpool_new_v0(struct ez_ctx *ctx, const char *device,
					     const struct ez_srqpool_opts *opts,
					     struct ez_srqpool **pool)
{
	return ez_srqpool_new_sz(ctx, device, opts, EZ_V0_SRQPOOL_OPTS_SIZE, pool);
}

EZ_V0(ez_srqpool_stats) int ezi_srqpool_stats_v0(const struct ez_srqpool *pool,
						 struct ez_srqpool_stats *stats)
{
	return ez_srqpool_stats_sz(pool, stats, EZ_V0_SRQPOOL_STATS_SIZE);
}

EZ_V0(ez_conn_info) int ezi_conn_info_v0(const struct ez_conn *conn, struct ez_conn_info *info)
{
	return ez_conn_info_sz(conn, info, EZ_V0_CONN_INFO_SIZE);
}

EZ_V0(ez_conn_stats) int ezi_conn_stats_v0(const struct ez_conn *conn,
					   struct ez_conn_stats *stats)
{
	return ez_conn_stats_sz(conn, stats, EZ_V0_CONN_STATS_SIZE);
}
