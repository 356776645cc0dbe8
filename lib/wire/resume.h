/* resume.h: session resume's messages (request, reply, reject), their MACs and the client's redial schedule (pure functions). */
#ifndef EZ_WIRE_RESUME_H
#define EZ_WIRE_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "handshake.h"

/*
 * Session resume (issue 41 item 4; lib/conn/resume.c runs it). A
 * listener that granted HS_CAP_RESUME gave the client a session token in
 * its reply (handshake.h). When every path of the connection is gone, the
 * active side dials the same listener again with a fresh rdma_cm
 * connection whose private data is a RESUME REQUEST; the listener finds
 * the session by its token and answers with a RESUME REPLY (accept) or a
 * RESUME REJECT (reject). Both sides then settle path 0's old ops by the
 * other's count (exact failover, settle.h) and the new QP is path 0: its
 * number travels in the CM message itself, its first PSN here.
 *
 * Wire layout, big-endian; the magic differs from the handshake's in its
 * last byte, so a listener tells the two apart by the first 4 bytes:
 *   0 u32 magic "EZRS"   4 u8 version (1)   5 u8 kind   6 u8 flags
 *   7 u8 reason (a REJECT's; 0 otherwise)
 * REQUEST (kind 1), 36 bytes, 52 with RESUME_F_MAC (a CM REQ carries 56):
 *   8 token[16]   24 u32 epoch   28 u32 count   32 u32 psn   [36 mac[16]]
 * REPLY (kind 2), 20 bytes, 52 with RESUME_F_MAC (a CM REP carries 196):
 *   8 u32 epoch   12 u32 count   16 u32 psn   [20 mac[32]]
 * REJECT (kind 3), 9 bytes and its text (a CM REJ carries 148):
 *   8 u8 text_len (at most RESUME_TEXT_MAX)   9 text, printable
 * epoch: the session's as the client knows it (REQUEST), the new one, the
 * request's + 1 (REPLY), so an old request replayed finds a stale epoch;
 * count: the receives the sender completed on path 0's failed QP;
 * psn: the first PSN of the sender's new path-0 QP (24 bits).
 * rdma_cm zero-pads private data: a message may be longer, never shorter.
 *
 * With a shared secret both MACs are HMAC-SHA256 (auth.h) over the
 * canonical encoding of the decoded fields, bound to the new QP numbers
 * the CM carries (not in these bytes), so a captured request cannot steer
 * the session to another QP:
 *   request MAC = HMAC(k, "easyrdma-resume-req" || request without its MAC
 *                 || u32 client's new QPN)[0..16)
 *   reply MAC   = HMAC(k, "easyrdma-resume-rep" || request with its MAC
 *                 || reply without its MAC || u32 server's new QPN)
 */
#define RESUME_MAGIC 0x455a5253u	/* "EZRS" */
#define RESUME_VERSION 1
#define RESUME_HDR_LEN 8
#define RESUME_REQ_LEN 36	/* without the MAC */
#define RESUME_REP_LEN 20	/* without the MAC */
#define RESUME_REJ_LEN 9	/* without the text */
#define RESUME_REQ_MAC_LEN 16
#define RESUME_REP_MAC_LEN 32
#define RESUME_TEXT_MAX 100
#define RESUME_MAX_LEN 109	/* the longest: a reject with all its text */

/* Flags; a bit this version does not know is refused, not ignored: it
 * would change what the message means. */
#define RESUME_F_MAC 0x01	/* a MAC follows (REQUEST, REPLY) */

enum resume_kind {
	RESUME_REQUEST = 1,	/* client -> listener: the session, its epoch, count and PSN */
	RESUME_REPLY = 2,	/* listener -> client: the new epoch, its count and PSN */
	RESUME_REJECT = 3,	/* listener -> client: a reason and a text */
};

/* Why a listener refused; the client gives up or tries again
 * (resume_reason_retry()). */
enum resume_reason {
	RESUME_R_UNKNOWN = 1,	/* no such session: the peer restarted or its window lapsed */
	RESUME_R_STALE = 2,	/* not the session's epoch: a replay or an older attempt */
	RESUME_R_DENIED = 3,	/* MAC wrong or missing on a keyed listener, or another address without the key */
	RESUME_R_BUSY = 4,	/* the listener's handshake caps are full: later */
	RESUME_R_NOT_READY = 5,	/* the session still settles its previous attempt: again */
};

struct resume_msg {
	uint8_t kind;		/* enum resume_kind */
	uint8_t flags;		/* RESUME_F_* */
	uint8_t reason;		/* REJECT: enum resume_reason (a newer peer's may be unknown here) */
	uint8_t token[HS_TOKEN_LEN];	/* REQUEST: the session's, never all zero */
	uint32_t epoch;		/* REQUEST, REPLY */
	uint32_t count;		/* REQUEST, REPLY: receives completed on path 0's failed QP */
	uint32_t psn;		/* REQUEST, REPLY: first PSN of the new path-0 QP, 24 bits */
	uint8_t mac[RESUME_REP_MAC_LEN];	/* with RESUME_F_MAC: 16 (REQUEST) or 32 (REPLY) bytes */
	uint8_t text_len;	/* REJECT: bytes of text */
	char text[RESUME_TEXT_MAX + 1];	/* REJECT: printable, terminated after decoding */
};

/* Writes m into buf: the bytes written, -EINVAL for a message no easyrdma
 * sends (an unknown kind or flag, a PSN above 24 bits, a REQUEST's zero
 * token, a REJECT without a reason or with a MAC), -EMSGSIZE when it does
 * not fit in len or its text is too long. The MAC is copied from m->mac. */
int resume_encode(const struct resume_msg *m, void *buf, size_t len);

/* Parses untrusted bytes expecting kind: 0, or -EPROTO with a reason in why
 * (bad magic, version, kind, flags or reason byte, too short for the kind,
 * a PSN above 24 bits, a REQUEST's zero token, a text too long or past the
 * bytes). Reads nothing past len. */
int resume_decode(const void *buf, size_t len, enum resume_kind kind, struct resume_msg *m,
		  char *why, size_t whylen);

/* 1 when the bytes start with the resume magic: a listener's switch
 * between a resume request and a handshake. */
int resume_is(const void *buf, size_t len);

/* 1 when rep's epoch follows req's (req + 1, wrapping), else 0. */
int resume_rep_fits(const struct resume_msg *req, const struct resume_msg *rep);

/* What a reason means, for messages; an unknown one reads as such. */
const char *resume_reason_str(uint8_t reason);
/* 1 when the client dials again after this reason (BUSY, NOT_READY), 0
 * when it gives up (every other, unknown ones too). */
int resume_reason_retry(uint8_t reason);

/* Sets RESUME_F_MAC and the request MAC for the client's new QP number
 * qpn; 0, -EINVAL (not an encodable request) or -EIO. */
int resume_req_seal(const struct auth_key *k, struct resume_msg *req, uint32_t qpn);
/* A listener's check of a request that came with the client's new QP
 * number qpn: with a key, 0 only for a request MAC made with it for that
 * QP (-EACCES otherwise, a request without the MAC too); without one
 * (k NULL), 0 only for a request without a MAC. */
int resume_req_check(const struct auth_key *k, const struct resume_msg *req, uint32_t qpn);
/* Sets RESUME_F_MAC and the reply MAC for req (as received) and the
 * listener's new QP number qpn; 0, -EINVAL or -EIO. */
int resume_rep_seal(const struct auth_key *k, const struct resume_msg *req,
		    struct resume_msg *rep, uint32_t qpn);
/* The client's check of a reply to its req, that came with the listener's
 * new QP number qpn: as resume_req_check(). */
int resume_rep_check(const struct auth_key *k, const struct resume_msg *req,
		     const struct resume_msg *rep, uint32_t qpn);

/* The client's wait before redial number attempt (0 first): 100 ms doubling
 * to at most 2000 ms, d, then jitter so that clients cut off together do
 * not dial together: a value in [d * 3/4, d * 5/4] chosen by rnd (any
 * 32-bit number). Never 0. */
uint32_t resume_backoff_ms(uint32_t attempt, uint32_t rnd);

/* Whether a session that lost its last path at start_ns (a monotonic
 * clock) may still resume at now_ns, within window_ms (0: never): 1 and
 * the ms left in *left_ms (rounded up, at least 1), or 0 and *left_ms 0
 * once lapsed. The clock's difference is taken modulo 2^64, so a wrap
 * between the two reads does not matter. left_ms may be NULL. */
int resume_window_left(uint64_t start_ns, uint64_t now_ns, uint32_t window_ms,
		       uint32_t *left_ms);

#endif
