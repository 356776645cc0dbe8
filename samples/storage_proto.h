/* storage_proto.h: control messages between storage_client.c and storage_daemon.c. */
#ifndef STORAGE_PROTO_H
#define STORAGE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <easyrdma.h>

/*
 * Data never travels in these messages: the daemon moves blocks with RDMA
 * READ (client buffer -> store, for a write) and RDMA WRITE (store -> client
 * buffer, for a read) against the buffer the client exported in ST_HELLO.
 * The messages are only control: small SENDs. Fields are in the host's byte
 * order (both ends little-endian here); convert them for a mixed fleet.
 */
enum {
	ST_HELLO = 1, /* client -> daemon: rkey = the client's registered buffer */
	ST_WRITE,     /* client -> daemon: store [store_off, +len) := buffer [buf_off, +len) */
	ST_READ,      /* client -> daemon: buffer [buf_off, +len) := store [store_off, +len) */
	ST_DONE,      /* daemon -> client: request id finished with status (0 or -errno) */
};

struct st_msg {
	uint32_t type;
	uint32_t id;
	uint64_t store_off;
	uint64_t buf_off;
	uint32_t len;
	int32_t status;
	uint64_t csum;	/* ST_DONE of a write: checksum of the bytes now in the store */
	struct ez_rkey rkey; /* ST_HELLO */
};

#define ST_MIN_BLOCK 4096u
#define ST_MAX_BLOCK (1u << 20)

/* FNV-1a 64: a checksum both sides compute the same way. */
static inline uint64_t st_csum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

#endif /* STORAGE_PROTO_H */
