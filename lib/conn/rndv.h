/* rndv.h: large messages by rendezvous (rndv.c): the sender offers its bytes through a memory window, the receiver fetches them with RDMA READ and acknowledges. */
#ifndef EZ_CONN_RNDV_H
#define EZ_CONN_RNDV_H

#include <sys/uio.h>

#include "conn_types.h"
#include "wire/rndv.h"

/* The receiver's WRs on one connection's send queue at once: READs of
 * chunks (ez_conn_opts.fetch_chunk) and acknowledgements; the QP and the
 * CQ are sized for them. Four READs of 256 KiB in flight keep a 100 Gb/s
 * link busy over a 40 us round trip. */
#define RNDV_SLOTS 4

/* op->rndv_flags */
#define RNDV_TX_POSTED 1u	/* the header went out: rndv_id is its transfer's */
#define RNDV_TX_SENT 2u		/* the header's SEND completed */
#define RNDV_TX_ACKED 4u	/* the peer acknowledged the fetch */

/* Without op_timeout_ms: how long a transfer may wait for the peer's
 * acknowledgement before the connection ends (ez_send(3)). */
#define RNDV_TIMEOUT_DEFAULT_MS 60000u

/* Whether this side announces HS_CAP_RNDV: a PD of the device's (the
 * windows and buffers are there), type-2 windows, RDMA READ both ways. On
 * several paths each transfer keeps to one: its window is bound to that
 * path's QP, its header goes there behind the bind, the peer reads there. */
int conn_rndv_can(const struct ez_conn *conn);
/* The handshake's shift for our large maximum: max_msg_size rounded down
 * to a power of two (the peer sends at most that). */
uint8_t conn_rndv_shift(const struct ez_conn *conn);
/* The peer's handshake (its caps and shift), kept; conn_rndv_settle(),
 * once the connection has its device: rendezvous is on when both
 * announced it. */
void conn_rndv_peer(struct ez_conn *conn, uint16_t caps, uint8_t shift);
void conn_rndv_settle(struct ez_conn *conn);

/* Sender. Makes op (a free op of the connection) the header of a large
 * send of iov (copied into a registered staging buffer) or of mr's
 * [off, +len) (offered in place when the MR can bind a window): the
 * window is bound (a WR of its own, before the header on the same QP) and
 * the header's bytes are in op's buffer, its id filled at the post
 * (conn_rndv_posted). 0, or -errno with the thread's message; nothing is
 * left behind then. */
int conn_rndv_prepare(struct ez_conn *conn, struct op *op, const struct iovec *iov, int iovcnt,
		      struct ez_mr *mr, size_t off, size_t len);
/* A header op that will not be posted (the connection ended while it
 * waited for credits, or its post failed): its window and copy go. */
void conn_rndv_release(struct ez_conn *conn, struct op *op);
/* The header is posted (op_charge) or taken back (op_uncharge). */
void conn_rndv_posted(struct ez_conn *conn, struct op *op);
void conn_rndv_unposted(struct ez_conn *conn, struct op *op);
/* The header's SEND completed: 1 when the op is done (acknowledged, or
 * failed) and its callback may run, with its window and copy released. */
int conn_rndv_sent(struct ez_conn *conn, struct op *op, int status);
/* A header's contents (rx_check_rndv(); on several paths against the
 * count of the path it came on, which advances when it passes) and an
 * ack's id against what we offered: the fault, or RX_OK. */
enum rx_fault conn_rndv_check(struct ez_conn *conn, const struct rndv_hdr *h,
			      const struct rx_view *v, unsigned int path);
enum rx_fault conn_rndv_check_ack(const struct ez_conn *conn, const struct rx_view *v, uint32_t id,
				  int outstanding);
/* The bound on an unacknowledged transfer: op_timeout_ms, else
 * RNDV_TIMEOUT_DEFAULT_MS. */
uint32_t conn_rndv_timeout_ms(const struct ez_conn *conn);
/* The peer acknowledged transfer id: the op whose callback may run now
 * (NULL: later, at its SEND's completion), or the fault (RX_F_RNDV_ACK_*)
 * in *fault. */
struct op *conn_rndv_on_ack(struct ez_conn *conn, uint32_t id, enum rx_fault *fault);
/* Teardown: transfers awaiting an acknowledgement release their windows
 * (before the QP goes) and the acknowledged-or-sent ones are returned one
 * by one for their callbacks (-ECANCELED); NULL when none is left. */
struct op *conn_rndv_cancel_next(struct ez_conn *conn);

/* Receiver. A checked header: queued behind what arrived before it, and
 * fetched (on the path it came on) when a slot and the pool's bound allow. */
void conn_rndv_on_header(struct ez_conn *conn, const struct rndv_hdr *h, unsigned int path);
/* A small message: delivered now, or queued when fetches are ahead of it. */
void conn_rndv_on_small(struct ez_conn *conn, struct ez_buf *buf, uint32_t len);
/* A READ or an acknowledgement of ours completed. */
void conn_rndv_op_done(struct ez_conn *conn, struct op *op, int status);
/* Teardown, once every op completed: queued messages back to the pool,
 * fetched memory released. */
void conn_rndv_fini(struct ez_conn *conn);
/* Path idx was made again (rebuild.c): its transfer ids count from 0 on
 * both sides. */
void conn_rndv_path_reset(struct ez_conn *conn, unsigned int idx);
/* The pool's large-message bound has room again (srqpool_acct.big_kick). */
void conn_rndv_kick(struct srqpool_acct *a);

#endif
