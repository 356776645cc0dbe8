/* opts.c: defaults and range checks of struct ez_conn_opts. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "flow.h"
#include "handshake.h"
#include "opts.h"

/* A zero field gets its default unless comp_mask says the 0 is meant. */
static void def_u8(uint8_t *v, uint32_t comp_mask, uint32_t bit, uint8_t def)
{
	if (!*v && !(comp_mask & bit))
		*v = def;
}

static uint32_t pow2_below(uint32_t v)
{
	return 1u << (31 - __builtin_clz(v));
}

/* The regions given with the connection, as far as options can tell (the
 * MRs' own ranges and access are the connection's to check): each bind
 * takes an op of the window (send_depth), the message one more, and a
 * keyed client's proof may still hold one. */
static int exports_check(const struct ez_conn_opts *o)
{
	static const unsigned int remote = EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE |
					   EZ_MR_REMOTE_ATOMIC;

	if (o->reserved3)
		return ezi_fail(-EINVAL, "ez_conn_opts.reserved3 is %u, must be 0", o->reserved3);
	if (!o->nexports)
		return 0;
	if (o->nexports > EZ_CONN_EXPORTS_MAX || !o->exports)
		return ezi_fail(-EINVAL, "ez_conn_opts.nexports %u with exports %s (0..%d regions)",
				o->nexports, o->exports ? "set" : "NULL", EZ_CONN_EXPORTS_MAX);
	if (o->send_depth < o->nexports + 2)
		return ezi_fail(-EINVAL, "ez_conn_opts.nexports %u needs send_depth %u or more (it is %u): each region's bind, the message that carries the keys and a shared-secret proof take an op",
				o->nexports, o->nexports + 2, o->send_depth);
	for (uint32_t i = 0; i < o->nexports; i++) {
		const struct ez_export *e = &o->exports[i];

		if (!e->mr || e->reserved)
			return ezi_fail(-EINVAL, "ez_conn_opts.exports[%u]: %s", i,
					e->mr ? "reserved must be 0" : "mr is NULL");
		if (!e->access || (e->access & ~remote))
			return ezi_fail(-EINVAL, "ez_conn_opts.exports[%u].access 0x%x (EZ_MR_REMOTE_READ, EZ_MR_REMOTE_WRITE, EZ_MR_REMOTE_ATOMIC)",
					i, e->access);
		if (!e->len || e->off + e->len < e->off)
			return ezi_fail(-EINVAL, "ez_conn_opts.exports[%u]: [%llu, +%llu) is empty or wraps",
					i, (unsigned long long)e->off, (unsigned long long)e->len);
	}
	return 0;
}

int conn_opts_resolve(const struct ez_conn_opts *in, int accept, struct ez_conn_opts *out)
{
	size_t pmax;
	uint32_t m;
	int ret;

	if (in)
		*out = *in;
	else
		memset(out, 0, sizeof(*out));
	m = out->comp_mask;
	/* A bit this library does not know is a field it does not have. */
	if (m & ~CONN_OPTS_KNOWN)
		return ezi_fail(-EINVAL, "ez_conn_opts.comp_mask 0x%x has bits this library does not know (0x%x)",
				m, m & ~CONN_OPTS_KNOWN);
	if (!out->send_depth)
		out->send_depth = CONN_DEF_SEND_DEPTH;
	if (!out->recv_depth)
		out->recv_depth = CONN_DEF_RECV_DEPTH;
	if (!out->max_msg_size)
		out->max_msg_size = CONN_DEF_MAX_MSG;
	if (!out->inline_threshold && !(m & EZ_CONN_OPTS_INLINE_THRESHOLD))
		out->inline_threshold = CONN_DEF_INLINE;
	if (!out->connect_timeout_ms)
		out->connect_timeout_ms = CONN_DEF_CONNECT_TIMEOUT_MS;
	def_u8(&out->qp_timeout, m, EZ_CONN_OPTS_QP_TIMEOUT, CONN_DEF_QP_TIMEOUT);
	def_u8(&out->retry_count, m, EZ_CONN_OPTS_RETRY_COUNT, CONN_DEF_RETRY);
	def_u8(&out->rnr_retry, m, EZ_CONN_OPTS_RNR_RETRY, CONN_DEF_RNR_RETRY);
	def_u8(&out->min_rnr_timer, m, EZ_CONN_OPTS_MIN_RNR_TIMER, CONN_DEF_MIN_RNR_TIMER);
	def_u8(&out->responder_resources, m, EZ_CONN_OPTS_RESPONDER_RESOURCES, CONN_DEF_RD_ATOMIC);
	def_u8(&out->initiator_depth, m, EZ_CONN_OPTS_INITIATOR_DEPTH, CONN_DEF_RD_ATOMIC);
	if (!out->paths)
		out->paths = 1;
	if (!out->keepalive_probes)
		out->keepalive_probes = CONN_DEF_KA_PROBES;

	if (out->send_depth > CONN_MAX_DEPTH)
		return ezi_fail(-EINVAL, "ez_conn_opts.send_depth %u exceeds %u",
				out->send_depth, CONN_MAX_DEPTH);
	if (out->recv_depth < 2 || out->recv_depth > CONN_MAX_DEPTH)
		return ezi_fail(-EINVAL, "ez_conn_opts.recv_depth %u not in 2..%u",
				out->recv_depth, CONN_MAX_DEPTH);
	if (out->max_msg_size > CONN_MAX_MSG)
		return ezi_fail(-EINVAL, "ez_conn_opts.max_msg_size %u exceeds %u",
				out->max_msg_size, CONN_MAX_MSG);
	/* Above the receive buffers a limit travels as its log2 (the
	 * handshake's rendezvous shift): another value would be rounded down
	 * behind the application's back, and a send it allowed refused. */
	if (out->max_msg_size > CONN_EAGER_MAX && (out->max_msg_size & (out->max_msg_size - 1)))
		return ezi_fail(-EINVAL, "ez_conn_opts.max_msg_size %u: above %u it must be a power of two (%u or %u)",
				out->max_msg_size, CONN_EAGER_MAX, pow2_below(out->max_msg_size),
				2 * pow2_below(out->max_msg_size));
	if (out->inline_threshold > out->max_msg_size)
		out->inline_threshold = out->max_msg_size;
	if (out->qp_timeout > 31)
		return ezi_fail(-EINVAL, "ez_conn_opts.qp_timeout %u exceeds 31", out->qp_timeout);
	if (out->retry_count > 7)
		return ezi_fail(-EINVAL, "ez_conn_opts.retry_count %u exceeds 7", out->retry_count);
	if (out->rnr_retry > 7)
		return ezi_fail(-EINVAL, "ez_conn_opts.rnr_retry %u exceeds 7", out->rnr_retry);
	if (out->min_rnr_timer > 31)
		return ezi_fail(-EINVAL, "ez_conn_opts.min_rnr_timer %u exceeds 31",
				out->min_rnr_timer);
	if (out->path_mtu && (out->path_mtu < IBV_MTU_256 || out->path_mtu > IBV_MTU_4096))
		return ezi_fail(-EINVAL, "ez_conn_opts.path_mtu %d is not an enum ibv_mtu value",
				(int)out->path_mtu);
	if (out->udp_sport && out->udp_sport < 0xC000)
		return ezi_fail(-EINVAL, "ez_conn_opts.udp_sport %u below the RoCEv2 range 0xC000..0xFFFF",
				out->udp_sport);
	if (out->keepalive_interval_ms && out->keepalive_interval_ms < CONN_MIN_KA_INTERVAL_MS)
		return ezi_fail(-EINVAL, "ez_conn_opts.keepalive_interval_ms %u below %d (0: no keepalive)",
				out->keepalive_interval_ms, CONN_MIN_KA_INTERVAL_MS);
	if (out->keepalive_probes > 255)
		return ezi_fail(-EINVAL, "ez_conn_opts.keepalive_probes %u not in 1..255",
				out->keepalive_probes);
	if ((uint64_t)out->keepalive_interval_ms * (out->keepalive_probes + 2) > UINT32_MAX)
		return ezi_fail(-EINVAL, "ez_conn_opts.keepalive_interval_ms %u x keepalive_probes %u exceeds 2^32 ms",
				out->keepalive_interval_ms, out->keepalive_probes);
	if (out->op_timeout_ms && out->op_timeout_ms < CONN_MIN_OP_TIMEOUT_MS)
		return ezi_fail(-EINVAL, "ez_conn_opts.op_timeout_ms %u below %d (0: no deadline)",
				out->op_timeout_ms, CONN_MIN_OP_TIMEOUT_MS);
	if (out->reserved)
		return ezi_fail(-EINVAL, "ez_conn_opts.reserved is %u, must be 0", out->reserved);
	if (out->reserved2)
		return ezi_fail(-EINVAL, "ez_conn_opts.reserved2 is %u, must be 0", out->reserved2);
	if (out->reserved4)
		return ezi_fail(-EINVAL, "ez_conn_opts.reserved4 is %u, must be 0", out->reserved4);
	if (out->resume_ms > EZ_RESUME_MAX_MS)
		return ezi_fail(-EINVAL, "ez_conn_opts.resume_ms %u exceeds %u (EZ_RESUME_MAX_MS)",
				out->resume_ms, EZ_RESUME_MAX_MS);
	/* The ops the failed paths held settle by the peer's counts, which
	 * only exact failover keeps (several paths). */
	if (out->resume_ms && out->paths < 2)
		return ezi_fail(-EINVAL, "ez_conn_opts.resume_ms %u needs paths >= 2 (exact failover settles what the failed paths held; paths is %u)",
				out->resume_ms, out->paths);
	if (!out->fetch_chunk)
		out->fetch_chunk = CONN_DEF_FETCH_CHUNK;
	if (out->fetch_chunk < CONN_MIN_FETCH_CHUNK || out->fetch_chunk > CONN_MAX_FETCH_CHUNK)
		return ezi_fail(-EINVAL, "ez_conn_opts.fetch_chunk %u not in %u..%u (0: %u)",
				out->fetch_chunk, CONN_MIN_FETCH_CHUNK, CONN_MAX_FETCH_CHUNK,
				CONN_DEF_FETCH_CHUNK);
	if (out->flags & ~CONN_FLAGS_KNOWN)
		return ezi_fail(-EINVAL, "ez_conn_opts.flags 0x%x has bits this library does not know (0x%x)",
				out->flags, out->flags & ~CONN_FLAGS_KNOWN);
	ret = exports_check(out);
	if (ret)
		return ret;
	if (out->queue_depth > CONN_MAX_QUEUE_DEPTH)
		return ezi_fail(-EINVAL, "ez_conn_opts.queue_depth %u above %d", out->queue_depth,
				CONN_MAX_QUEUE_DEPTH);
	if (out->paths > EZ_MAX_PATHS)
		return ezi_fail(-EINVAL, "ez_conn_opts.paths %u not in 1..%d", out->paths,
				EZ_MAX_PATHS);
	if (out->auth_key_len) {
		if (accept)
			return ezi_fail(-EINVAL, "ez_conn_opts.auth_key: ez_accept takes the shared secret from the listener (ez_listen_opts.auth_key)");
		if (!out->auth_key || out->auth_key_len < 16 || out->auth_key_len > EZ_AUTH_KEY_MAX)
			return ezi_fail(-EINVAL, "ez_conn_opts.auth_key: %s (auth_key_len %u; 16..%d bytes)",
					out->auth_key ? "bad length" : "NULL", out->auth_key_len,
					EZ_AUTH_KEY_MAX);
		/* The proof travels as one message. */
		if (out->max_msg_size < 32)
			return ezi_fail(-EINVAL, "ez_conn_opts.max_msg_size %u below 32, the size of the shared-secret proof",
					out->max_msg_size);
	}
	pmax = accept ? EZ_ACCEPT_DATA_MAX : out->auth_key_len ? EZ_CONNECT_DATA_MAX_AUTH :
		EZ_CONNECT_DATA_MAX;
	/* A multi-path handshake carries the extra QP numbers in the same
	 * private data (56 bytes for a request, less the auth block). */
	if (out->paths > 1) {
		if (hs_paths_len(out->paths) > pmax)
			return ezi_fail(-EINVAL, "ez_conn_opts.paths %u: %zu bytes of QP numbers do not fit the %zu a connect request has left%s",
					out->paths, hs_paths_len(out->paths), pmax,
					out->auth_key_len ? " with a shared secret (at most 3 paths then)" : "");
		pmax -= hs_paths_len(out->paths);
	}
	/* A reply that grants resume carries the session's token. */
	if (accept && out->resume_ms)
		pmax -= HS_TOKEN_LEN;
	if (out->private_data_len > pmax && out->paths > 1)
		return ezi_fail(-EINVAL, "ez_conn_opts.private_data_len %u exceeds %zu for %s with %u paths%s",
				out->private_data_len, pmax, accept ? "an accept" : "a connect",
				out->paths, out->auth_key_len ? " and a shared secret" : "");
	if (out->private_data_len > pmax)
		return ezi_fail(-EINVAL, "ez_conn_opts.private_data_len %u exceeds %zu for %s%s",
				out->private_data_len, pmax, accept ? "an accept" : "a connect",
				out->auth_key_len ? " with a shared secret" : "");
	if (out->private_data_len && !out->private_data)
		return ezi_fail(-EINVAL, "ez_conn_opts.private_data is NULL with private_data_len %u",
				out->private_data_len);
	return flow_opts_check(out);
}
