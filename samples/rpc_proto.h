/* rpc_proto.h: the wire format shared by rpc_server.c and rpc_client.c. */
#ifndef RPC_PROTO_H
#define RPC_PROTO_H

#include <stdint.h>

/*
 * Every message (request or reply) is one easyrdma message: this header and
 * `len` payload bytes right after it. Fields travel in network byte order so
 * the two ends may differ in endianness. A reply carries the id and method of
 * its request, so the client can match replies that come back in any order.
 */
struct rpc_hdr {
	uint32_t id;	 /* chosen by the client, echoed by the server */
	uint16_t method; /* RPC_ECHO, RPC_SUM */
	uint16_t status; /* reply only: 0 or RPC_E* */
	uint32_t len;	 /* payload bytes after the header */
};

enum {
	RPC_ECHO = 1, /* reply payload = request payload */
	RPC_SUM = 2,  /* payload: n x uint32 (network order); reply: their sum, uint64 big-endian */
};

enum {
	RPC_EOK = 0,
	RPC_EMETHOD = 1, /* unknown method */
	RPC_EBADLEN = 2, /* payload length does not fit the method or the message */
};

/* Largest message either side sends or receives (header included); both use
 * it as max_msg_size and the server's receive buffers are this big. */
#define RPC_MAX_MSG 4096
#define RPC_MAX_PAYLOAD (RPC_MAX_MSG - (int)sizeof(struct rpc_hdr))

#endif /* RPC_PROTO_H */
