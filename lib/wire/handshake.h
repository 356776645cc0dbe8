/* handshake.h: the private-data codec of the connection handshake (pure functions). */
#ifndef EZ_WIRE_HANDSHAKE_H
#define EZ_WIRE_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Wire layout, big-endian, 16 bytes then the application's bytes:
 *   0  u32 magic "EZRD"     4 u8 version   5 u8 kind   6 u8 user_len   7 u8 reserved (0)
 *   8  u16 capabilities    10 u16 receive credits     12 u32 max message size
 * rdma_cm on IB/RoCE carries 56 bytes in a REQ, 196 in a REP and 148 in a
 * REJ, and hands the receiver the full (zero-padded) size, hence user_len.
 * In order, each only with its capability:
 *   header (16) | auth block | user bytes | path block | resume block (REP)
 * and all of it within the kind's size (a REP: 16 + 48 + user + paths + 16 <= 196).
 *
 * With HS_CAP_AUTH a request or reply carries an auth block of
 * hs_auth_len(kind) bytes between the header and the user bytes (auth.h);
 * in a reject the bit says the refusal is about the shared secret.
 *
 * With HS_CAP_PATHS (REQ and REP only) a path block follows the user bytes:
 *   u8 paths (1..HS_MAX_PATHS), then one u24 QP number per extra path 1..paths-1.
 * A peer that predates it ignores the unknown capability and never reads past
 * user_len, so it sees a single-path request; without the bit a message means
 * one path. The extra paths' PSNs are not carried: both sides derive them
 * from QP 0's, which rdma_cm exchanges (hs_path_psn()).
 *
 * With HS_CAP_RESUME in a REP a resume block of HS_TOKEN_LEN bytes, the
 * session token the listener chose, follows the path block (the user bytes
 * when there is none); in a REQ the bit adds no bytes, and a REJ never
 * carries the block. An older client never reads past the path block, so
 * the token costs it nothing (resume.h: what the token is for).
 *
 * HS_CAP_KEEPALIVE (REQ and REP) adds no bytes: the sender answers probes.
 *
 * HS_CAP_RNDV (REQ and REP): the sender takes messages larger than its
 * receive buffers by rendezvous (imm.h IMM_RNDV), up to 2^rndv_shift bytes,
 * carried in the header's byte 7 (reserved before: an older peer sends 0
 * there and ignores it; a shift outside 1..31 decodes as 0: no rendezvous).
 * The max message size field keeps its meaning,
 * the largest message sent eagerly into a receive buffer.
 */
#define HS_MAGIC 0x455a5244u
#define HS_VERSION 1
#define HS_HDR_LEN 16
#define HS_REQ_MAX 56
#define HS_REP_MAX 196
#define HS_REJ_MAX 148
#define HS_MAX_PATHS 8
#define HS_AUTH_REQ_LEN 32	/* client nonce, request MAC */
#define HS_AUTH_REP_LEN 48	/* server nonce, reply MAC */
#define HS_TOKEN_LEN 16		/* a REP's session token, with HS_CAP_RESUME */

enum hs_kind {
	HS_REQ = 1,		/* connect request: the active side's credits and data */
	HS_REP = 2,		/* accept reply: the passive side's */
	HS_REJ = 3,		/* reject: only user bytes (the reason) */
};

/* Capabilities; unknown bits from a peer are ignored. */
enum {
	HS_CAP_CREDITS = 1u << 0, /* credits returned in immediate data */
	HS_CAP_AUTH = 1u << 1,	/* shared-secret check (auth block; reject: its reason) */
	HS_CAP_PATHS = 1u << 2,	/* a path block follows the user bytes */
	/* The sender answers keepalive probes (imm.h IMM_KA_PROBE), whether
	 * or not it sends any itself: a side probes only a peer that set it,
	 * as an older peer refuses the probe's immediate bits. No bytes. */
	HS_CAP_KEEPALIVE = 1u << 3,
	/* Large messages by rendezvous, up to 2^rndv_shift bytes. No bytes. */
	HS_CAP_RNDV = 1u << 4,
	/* Exact failover (REQ and REP, with HS_CAP_PATHS): a path-down
	 * notice carries the sender's count of receives on the failed path
	 * (wire/settle.h), and each side settles the failed path's ops by
	 * the other's count. No bytes here. */
	HS_CAP_FAILOVER = 1u << 5,
	/* The sender takes an exports message (imm.h IMM_EXPORTS, exports.h):
	 * a side sends one only to a peer that set it. No bytes. */
	HS_CAP_EXPORTS = 1u << 6,
	/* The sender gives regions with the connection: its exports message
	 * comes before anything else of its own, and the receiver reports the
	 * connection up only once it came. No bytes. */
	HS_CAP_EXPORTS_SENT = 1u << 7,
	/* The sender takes a goodbye that says why (wire/bye.h: 8 bytes, a
	 * keepalive's end). No bytes here. */
	HS_CAP_BYE_REASON = 1u << 8,
	/* Session resume (wire/resume.h). REQ: no bytes, the client asks for
	 * a session it may resume. REP: the listener grants one, and the
	 * session token (HS_TOKEN_LEN bytes) follows the path block. */
	HS_CAP_RESUME = 1u << 9,
};

/* The largest shift a rendezvous peer may announce: 2 GiB, a RoCE message's most. */
#define HS_RNDV_SHIFT_MAX 31

/* Whether a peer's handshake (its caps) says it answers keepalive probes. */
static inline int hs_peer_keepalive(uint16_t caps)
{
	return !!(caps & HS_CAP_KEEPALIVE);
}

struct hs_msg {
	uint8_t version;
	uint8_t kind;
	uint16_t caps;
	uint16_t credits;
	uint32_t max_msg;
	uint8_t rndv_shift;	/* with HS_CAP_RNDV: large messages up to 2^rndv_shift bytes */
	uint8_t user_len;
	uint8_t user[HS_REP_MAX - HS_HDR_LEN];
	uint8_t auth[HS_AUTH_REP_LEN];	/* with HS_CAP_AUTH: hs_auth_len(kind) bytes */
	/* With HS_CAP_PATHS: paths offered (REQ) or granted (REP), and the QP
	 * numbers of paths 1..paths-1 (path_qpn[0] is unused: QP 0's number
	 * travels in the CM message itself). */
	uint8_t paths;
	uint32_t path_qpn[HS_MAX_PATHS];
	/* REP with HS_CAP_RESUME: the session token the listener chose, by
	 * which a resume request names the session (zero otherwise). */
	uint8_t token[HS_TOKEN_LEN];
};

/* Bytes of the path block for a number of paths (a connect request sends
 * none for a single path). */
size_t hs_paths_len(unsigned int paths);
/* The user bytes m's kind holds beside what its caps and paths add (the
 * auth block, the path block, a reply's session token); 0 when they fill it. */
size_t hs_user_room(const struct hs_msg *m);
/* Of those, the session token's bytes (a reply granting HS_CAP_RESUME). */
size_t hs_token_len(const struct hs_msg *m);

/* The starting PSN of extra path i from QP 0's (24 bits). */
uint32_t hs_path_psn(uint32_t psn0, unsigned int path);

/* Largest user_len for a kind (0 for an unknown kind), without an auth block. */
size_t hs_user_max(enum hs_kind kind);
/* Bytes of the auth block a kind carries with HS_CAP_AUTH (0: none). */
size_t hs_auth_len(enum hs_kind kind, uint16_t caps);

/* Writes m into buf; returns the bytes written or -EMSGSIZE/-EINVAL. */
int hs_encode(const struct hs_msg *m, void *buf, size_t buflen);

/* Parses untrusted bytes expecting kind. Returns 0, or -EPROTO with a reason
 * in why (suitable for a reject the peer will read). */
int hs_decode(const void *buf, size_t len, enum hs_kind kind, struct hs_msg *m,
	      char *why, size_t whylen);

/* Copies untrusted reason bytes into text as printable ASCII. */
void hs_printable(const void *bytes, size_t len, char *text, size_t textlen);

#endif
