/* opts.h: connection options with their defaults filled in and checked. */
#ifndef EZ_WIRE_OPTS_H
#define EZ_WIRE_OPTS_H

#include <stddef.h>

#include "easyrdma.h"

#define CONN_DEF_SEND_DEPTH 64
#define CONN_DEF_RECV_DEPTH 64
#define CONN_DEF_MAX_MSG 4096
#define CONN_DEF_INLINE 64
#define CONN_DEF_CONNECT_TIMEOUT_MS 5000
#define CONN_DEF_QP_TIMEOUT 14
/* Not 7: Soft-RoCE retries for ever at 7 (rxe_comp.c never counts it down),
 * where the IB spec and mlx5 give 7 retries; 6 ends on both. */
#define CONN_DEF_RETRY 6
#define CONN_DEF_RNR_RETRY 7
#define CONN_DEF_MIN_RNR_TIMER 12
#define CONN_DEF_RD_ATOMIC 16
#define CONN_DEF_KA_PROBES 3
#define CONN_MIN_KA_INTERVAL_MS 100
#define CONN_MIN_OP_TIMEOUT_MS 10
/* The most ops a connection's op queue may hold (ez_conn_opts.queue_depth):
 * each queued call keeps ~150 bytes and a send its bytes' copy. */
#define CONN_MAX_QUEUE_DEPTH 65536
#define CONN_MAX_DEPTH 16384
#define CONN_MAX_MSG (1u << 30)
/* A private pool's receive buffers are at most this large; larger
 * messages come by rendezvous (lib/conn/rndv.c). */
#define CONN_EAGER_MAX (64u << 10)
/* Large messages are fetched in RDMA READs of this many bytes at most
 * (ez_conn_opts.fetch_chunk): small enough that one READ's packets rarely
 * meet a loss (0.26 of one at 0.1 % and a 1024-byte MTU; its retry count
 * starts afresh with each completed READ) and that the others go on while
 * one retries, large enough that a READ per chunk costs nothing next to
 * its bytes. */
#define CONN_DEF_FETCH_CHUNK (256u << 10)
#define CONN_MIN_FETCH_CHUNK 4096u
#define CONN_MAX_FETCH_CHUNK (1u << 30)
/* Every EZ_CONN_* flag this library knows. */
#define CONN_FLAGS_KNOWN (EZ_CONN_SMALL_FIRST)
/* Every EZ_CONN_OPTS_* bit this library knows. */
#define CONN_OPTS_KNOWN (EZ_CONN_OPTS_INLINE_THRESHOLD | EZ_CONN_OPTS_QP_TIMEOUT | \
			 EZ_CONN_OPTS_RETRY_COUNT | EZ_CONN_OPTS_RNR_RETRY | \
			 EZ_CONN_OPTS_MIN_RNR_TIMER | EZ_CONN_OPTS_RESPONDER_RESOURCES | \
			 EZ_CONN_OPTS_INITIATOR_DEPTH)

/* Copies in (NULL: all defaults) into out with every zero field defaulted
 * (but those comp_mask marks as meant).
 * accept selects the private-data limit. -EINVAL with a message naming the
 * field when a value is out of range. */
int conn_opts_resolve(const struct ez_conn_opts *in, int accept, struct ez_conn_opts *out);

#endif
