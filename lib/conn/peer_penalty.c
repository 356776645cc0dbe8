/* peer_penalty.c: a peer that keeps failing remote access is refused for a while: the failures are noted by address in the context, and a listener with ez_listen_opts.access_fail_limit refuses such an address with a reason. */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include "peer_penalty.h"
#include "conn_types.h"
#include "listener.h"
#include "wire/penalty.h"

void peer_penalty_opts(struct ez_listener *l, const struct ez_listen_opts *o)
{
	l->pen_limit = o->access_fail_limit;
	l->pen_window_ms = o->access_fail_window_ms ? o->access_fail_window_ms : PENALTY_WINDOW_MS;
	l->pen_ban_ms = o->access_ban_ms ? o->access_ban_ms : PENALTY_BAN_MS;
}

void peer_penalty_inherit(struct ez_conn *conn, const struct ez_listener *l)
{
	conn->pen_limit = l->pen_limit;
	conn->pen_window_ms = l->pen_window_ms;
	conn->pen_ban_ms = l->pen_ban_ms;
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
			      conn->pen_window_ms ? conn->pen_window_ms : PENALTY_WINDOW_MS);
}

const char *peer_penalty_gate(const struct ez_listener *l, const struct sockaddr *peer,
			      char *why, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	uint32_t fails;
	uint64_t left;

	if (!l->pen_limit || !l->ctx->penalty)
		return NULL;
	left = penalty_refused_ms(l->ctx->penalty, peer, loop_now_ns() / 1000000, l->pen_limit,
				  l->pen_ban_ms, &fails);
	if (!left)
		return NULL;
	if (peer->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, ip, sizeof(ip));
	else if (peer->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, ip, sizeof(ip));
	snprintf(why, len, "refused: %u remote-access failures from %s; try again in %llu ms",
		 fails, ip, (unsigned long long)left);
	return why;
}
