/* exports.h: the codec of the exports message: the regions one side gives its peer with the connection (pure functions). */
#ifndef EZ_WIRE_EXPORTS_H
#define EZ_WIRE_EXPORTS_H

#include <stddef.h>
#include <stdint.h>

#include "easyrdma.h"

/*
 * A side that names regions in ez_conn_opts.exports sets HS_CAP_EXPORTS_SENT
 * in its handshake and, once the connection is up on its side (after the
 * shared-secret verdict when keyed), posts this message on path 0 before
 * anything else of its own: immediate IMM_EXPORTS (credit-only, no credit,
 * imm.h), big-endian:
 *   0 u8 version (1)   1 u8 count (1..EZ_CONN_EXPORTS_MAX)   2 u16 reserved (0)
 *   then count records of 24 bytes:
 *   0 u64 address   8 u64 length   16 u32 rkey   20 u32 path binding
 * in the order of the sender's ez_conn_opts.exports. The binding is 0 (any
 * path: a registration on the connection's own PD) or EZ_RKEY_PATH_BOUND |
 * the path a type-2 window is bound to. The receiver holds its on_connect
 * until the message came (conn_export.c) and keeps the keys for
 * ez_conn_peer_exports().
 */
#define EXPORTS_VERSION 1
#define EXPORTS_HDR_LEN 4
#define EXPORTS_REC_LEN 24
#define EXPORTS_LEN(n) (EXPORTS_HDR_LEN + EXPORTS_REC_LEN * (size_t)(n))
#define EXPORTS_MAX_LEN EXPORTS_LEN(EZ_CONN_EXPORTS_MAX)

/* What the message may be found guilty of (EXPORTS_OK: nothing). */
enum exports_fault {
	EXPORTS_OK = 0,
	EXPORTS_F_SHORT,	/* fewer bytes than the header */
	EXPORTS_F_VERSION,	/* a version this library does not know */
	EXPORTS_F_COUNT,	/* no region, or more than EZ_CONN_EXPORTS_MAX */
	EXPORTS_F_LEN,		/* bytes that do not match the count */
	EXPORTS_F_RESERVED,	/* the reserved field is not 0 */
	EXPORTS_F_EMPTY,	/* a region of 0 bytes */
	EXPORTS_F_WRAP,		/* a region that wraps the address space */
	EXPORTS_F_PATH,		/* a binding to a path the connection lacks, or bits no binding has */
};

/* Encodes n (1..EZ_CONN_EXPORTS_MAX) keys into out (EXPORTS_LEN(n) bytes
 * of room at least). Returns the bytes written, or 0 for a bad n or room. */
size_t exports_encode(const struct ez_rkey *keys, unsigned int n, uint8_t *out, size_t room);

/* Parses len untrusted bytes from a peer whose connection has npaths
 * paths into keys (room for EZ_CONN_EXPORTS_MAX) and *n. */
enum exports_fault exports_decode(const uint8_t *in, size_t len, unsigned int npaths,
				  struct ez_rkey *keys, unsigned int *n);

/* The fault's words ("a region of 0 bytes"). */
const char *exports_fault_str(enum exports_fault f);

#endif
