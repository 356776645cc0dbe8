/* handshake.h: the private-data codec of the connection handshake (pure functions). */
#ifndef EZ_CONN_HANDSHAKE_H
#define EZ_CONN_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Wire layout, big-endian, 16 bytes then the application's bytes:
 *   0  u32 magic "EZRD"     4 u8 version   5 u8 kind   6 u8 user_len   7 u8 reserved (0)
 *   8  u16 capabilities    10 u16 receive credits     12 u32 max message size
 * rdma_cm on IB/RoCE carries 56 bytes in a REQ, 196 in a REP and 148 in a
 * REJ, and hands the receiver the full (zero-padded) size, hence user_len.
 */
#define HS_MAGIC 0x455a5244u
#define HS_VERSION 1
#define HS_HDR_LEN 16
#define HS_REQ_MAX 56
#define HS_REP_MAX 196
#define HS_REJ_MAX 148

enum hs_kind {
	HS_REQ = 1,		/* connect request: the active side's credits and data */
	HS_REP = 2,		/* accept reply: the passive side's */
	HS_REJ = 3,		/* reject: only user bytes (the reason) */
};

/* Capabilities; unknown bits from a peer are ignored. */
enum {
	HS_CAP_CREDITS = 1u << 0, /* credits returned in immediate data */
};

struct hs_msg {
	uint8_t version;
	uint8_t kind;
	uint16_t caps;
	uint16_t credits;
	uint32_t max_msg;
	uint8_t user_len;
	uint8_t user[HS_REP_MAX - HS_HDR_LEN];
};

/* Largest user_len for a kind (0 for an unknown kind). */
size_t hs_user_max(enum hs_kind kind);

/* Writes m into buf; returns the bytes written or -EMSGSIZE/-EINVAL. */
int hs_encode(const struct hs_msg *m, void *buf, size_t buflen);

/* Parses untrusted bytes expecting kind. Returns 0, or -EPROTO with a reason
 * in why (suitable for a reject the peer will read). */
int hs_decode(const void *buf, size_t len, enum hs_kind kind, struct hs_msg *m,
	      char *why, size_t whylen);

/* Copies untrusted reason bytes into text as printable ASCII. */
void hs_printable(const void *bytes, size_t len, char *text, size_t textlen);

#endif
