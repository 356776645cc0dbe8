/* peer_penalty.c: a peer that keeps failing remote access is refused for a while: the failures are noted by address in the context, and a listener with ez_listen_opts.access_fail_limit refuses such an address with a reason. */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include "peer_penalty.h"
#include "conn_types.h"
#include "wire/penalty.h"

void peer_penalty_opts(struct peer_penalty_opts *p, const struct ez_listen_opts *o)
{
	p->limit = o->access_fail_limit;
	p->window_ms = o->access_fail_window_ms ? o->access_fail_window_ms : PENALTY_WINDOW_MS;
	p->ban_ms = o->access_ban_ms ? o->access_ban_ms : PENALTY_BAN_MS;
}

uint32_t peer_penalty_note(struct ez_conn *conn)
{
	struct ez_ctx *ctx = conn->ctx;

	if (!conn->id || conn->active)
		return 0;
	if (!ctx->penalty)
		ctx->penalty = calloc(1, sizeof(*ctx->penalty));
	if (!ctx->penalty)
		return 0;
	return penalty_record(ctx->penalty, rdma_get_peer_addr(conn->id), loop_now_ns() / 1000000,
			      conn->pen.window_ms ? conn->pen.window_ms : PENALTY_WINDOW_MS);
}

const char *peer_penalty_gate(const struct ez_ctx *ctx, const struct peer_penalty_opts *p,
			      const struct sockaddr *peer, char *why, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?", prefix[16] = "";
	uint32_t fails;
	unsigned plen;
	uint64_t left;

	if (!p->limit || !ctx->penalty)
		return NULL;
	left = penalty_refused_ms(ctx->penalty, peer, loop_now_ns() / 1000000, p->limit, p->ban_ms,
				  &fails, &plen);
	if (!left)
		return NULL;
	if (peer->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, ip, sizeof(ip));
	else if (peer->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, ip, sizeof(ip));
	/* A prefix refuses a host that rotates its addresses: say so, with the
	 * prefix in the address's own notation (/24 of IPv4, not /120). */
	if (plen < 128)
		snprintf(prefix, sizeof(prefix), "'s /%u", peer->sa_family == AF_INET ? plen - 96 : plen);
	snprintf(why, len, "refused: %u failures (refused RDMA requests, protocol violations) from %s%s; try again in %llu ms",
		 fails, ip, prefix, (unsigned long long)left);
	return why;
}
