/* rndv.c: large messages by rendezvous: the sender's window over its bytes and the transfers awaiting acknowledgement; the receiver's fetches (RDMA READ into the pool's bounded large memory), acknowledgements and in-order delivery. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rndv.h"
#include "conn_export.h"
#include "conn_fsm.h"
#include "sendq.h"
#include "base/assert.h"
#include "base/log.h"
#include "device/bigbuf.h"
#include "keepalive.h"
#include "path.h"
#include "staging.h"

/* One fetch of the receiver: the header it answers, the memory it lands
 * in, how much of it is asked for and arrived (in READs of fetch_chunk
 * bytes at most, several in flight: each is retried by the transport on
 * its own, so a lossy link that defeats one READ of 16 MiB carries it),
 * and its op (the acknowledgement, once every byte arrived). */
struct rndv_rx {
	struct op op;
	struct rndv_hdr h;
	struct bigbuf *bb;	/* set while the pool's bound counts it (reserved) */
	uint32_t asked;		/* bytes [0, asked) have a READ posted or done */
	uint32_t fetched;	/* bytes whose READ completed */
	uint8_t reads;		/* its READs on the send queue */
	uint8_t state;		/* RX_WAIT, RX_READING, RX_FETCHED */
	uint8_t busy;		/* op (the acknowledgement) is on the send queue */
	uint8_t queued;		/* in the delivery queue */
	uint8_t path;		/* the header's path: the window is bound to its QP */
	struct rndv_rx *all_next;
};

/* One READ of a chunk of a fetch: conn->rndv.reads[RNDV_SLOTS], free
 * while e is NULL. */
struct rndv_read {
	struct op op;
	struct rndv_rx *e;
	uint32_t off;		/* of the chunk in the message */
};

enum { RX_WAIT, RX_READING, RX_FETCHED };

/* ---- the handshake ---- */

int conn_rndv_can(const struct ez_conn *conn)
{
	/* A connection with a PD of its own (conn_pd.c) binds no window (they
	 * are on the device's PD) and fetches into no device-wide buffer: it
	 * keeps the receive buffers' limit, both ways. */
	return conn->dev && !conn->own_pd && device_has_mw2(conn->dev) &&
	       conn->o.initiator_depth && conn->o.responder_resources;
}

uint8_t conn_rndv_shift(const struct ez_conn *conn)
{
	uint8_t k = 1;

	while (k < HS_RNDV_SHIFT_MAX && (2ull << k) <= conn->o.max_msg_size)
		k++;
	return k;
}

void conn_rndv_peer(struct ez_conn *conn, uint16_t caps, uint8_t shift)
{
	conn->rndv.peer_shift = (caps & HS_CAP_RNDV) ? shift : 0;
}

void conn_rndv_settle(struct ez_conn *conn)
{
	conn->rndv.ok = conn->rndv.peer_shift && conn_rndv_can(conn);
	conn->rndv.peer_max = conn->rndv.ok ? (uint32_t)(1ull << conn->rndv.peer_shift) : 0;
}

/* ---- transfer ids ---- */

/* One path: ids count the connection's headers (rxt.rndv_sent). Several:
 * headers on different paths overtake each other, so each path counts its
 * own, in the id's low 24 bits under the path's index; each path's arrive
 * in turn, and the ack names the path whose window it releases. */
#define RNDV_ID_PATH_SHIFT 24
#define RNDV_ID_SEQ_MASK 0xffffffu

static uint32_t path_id(unsigned int path, uint32_t n)
{
	return (uint32_t)path << RNDV_ID_PATH_SHIFT | (n & RNDV_ID_SEQ_MASK);
}

/* The path a header op goes on (pinned where its window is bound). */
static unsigned int tx_path(const struct op *op)
{
	return op->pin ? op->pin - 1u : 0;
}

enum rx_fault conn_rndv_check(struct ez_conn *conn, const struct rndv_hdr *h,
			      const struct rx_view *v, unsigned int path)
{
	struct rx_track t;
	struct rx_view pv;
	enum rx_fault f;

	if (conn->npaths == 1)
		return rx_check_rndv(h, v);
	t = *v->t;
	pv = *v;
	pv.t = &t;
	t.rndv_recv = path_id(path, conn->rndv.rx_seq[path]);
	f = rx_check_rndv(h, &pv);
	if (!f)
		conn->rndv.rx_seq[path]++;
	return f;
}

enum rx_fault conn_rndv_check_ack(const struct ez_conn *conn, const struct rx_view *v, uint32_t id,
				  int outstanding)
{
	unsigned int p = id >> RNDV_ID_PATH_SHIFT;
	uint32_t n;

	if (conn->npaths == 1)
		return rx_check_rndv_ack(v, id, outstanding);
	if (outstanding)
		return RX_OK;
	/* The path bits come from the wire: bound them before they index. */
	if (p >= conn->npaths)
		return RX_F_RNDV_ACK_UNKNOWN;
	n = conn->rndv.tx_seq[p];
	if (n <= RNDV_ID_SEQ_MASK && (id & RNDV_ID_SEQ_MASK) >= n)
		return RX_F_RNDV_ACK_UNKNOWN;
	return RX_F_RNDV_ACK_AGAIN;
}

/* ---- the deadline of an offer ---- */

/* Ticks (the bound / 2 apart) a transfer stays unacknowledged before the
 * connection ends: outstanding at least the bound, at most 1.5 times it. */
#define RNDV_DEADLINE_TICKS 3

uint32_t conn_rndv_timeout_ms(const struct ez_conn *conn)
{
	return conn->o.op_timeout_ms ? conn->o.op_timeout_ms : RNDV_TIMEOUT_DEFAULT_MS;
}

/* A receiver that never fetches (stuck, or hostile) would keep our window
 * and copy forever: the op is off every send queue, so op_timeout_ms's
 * pass (keepalive.c) does not see it. */
static void rndv_tick(struct loop_timer *t)
{
	struct ez_conn *conn = container_of(t, struct ez_conn, rndv.timer);
	uint32_t ms = conn_rndv_timeout_ms(conn);
	struct op *op;

	if (conn->state != CS_CONNECTED)
		return;
	for (op = conn->rndv.tx; op; op = op->rndv_next) {
		if ((op->rndv_flags & RNDV_TX_ACKED) || ++op->rndv_age < RNDV_DEADLINE_TICKS)
			continue;
		/* Its callback (at the teardown's flush or cancel) says
		 * -ETIMEDOUT, as an expired op's does. */
		op->aged = OP_EXPIRED;
		conn_fail(conn, -ETIMEDOUT,
			  "peer %s: rendezvous transfer %u (%u bytes, path %u) not fetched and acknowledged within %u ms (%s)",
			  conn->host, op->rndv_id, op->rndv_len, tx_path(op), ms,
			  conn->o.op_timeout_ms ? "op_timeout_ms" :
			  "the rendezvous default; op_timeout_ms is 0");
		return;
	}
	if (conn->rndv.tx)
		ctx_timer_start(conn->ctx, t, ms / 2);
}

static void deadline_arm(struct ez_conn *conn)
{
	if (loop_timer_armed(&conn->rndv.timer) || !conn->ctx)
		return;
	conn->rndv.timer.fn = rndv_tick;
	ctx_timer_start(conn->ctx, &conn->rndv.timer, conn_rndv_timeout_ms(conn) / 2);
}

static void deadline_stop(struct ez_conn *conn)
{
	if (conn->ctx)
		ctx_timer_stop(conn->ctx, &conn->rndv.timer);
}

/* ---- sender ---- */

static int can_bind(const struct ez_conn *conn, const struct ez_mr *mr)
{
	return mr && (mr_access_flags(conn->dev, mr->access) & IBV_ACCESS_MW_BIND);
}

/* The MR went while a window of ours was on it: cannot happen while the
 * op counts in mr->inflight (ez_mr_dereg refuses), kept safe anyway. */
static void rndv_mr_gone(struct mw *w)
{
	mw_free(w);
}

/* A staged copy goes back to the device's cache, its bytes to the budget. */
static void stage_put(struct ez_conn *conn, struct op *op)
{
	staging_give(conn, op->rndv_stage->size);
	bigbuf_put(op->rndv_stage);
	op->rndv_stage = NULL;
}

static void tx_release(struct ez_conn *conn, struct op *op)
{
	struct op **pp;

	for (pp = &conn->rndv.tx; *pp; pp = &(*pp)->rndv_next)
		if (*pp == op) {
			*pp = op->rndv_next;
			break;
		}
	op->rndv_next = NULL;
	/* Deallocating the window invalidates the key at once: the peer can
	 * read nothing more of these bytes. */
	mw_free(&op->rndv_w);
	if (op->rndv_stage)
		stage_put(conn, op);
	op->rndv_flags = 0;
}

void conn_rndv_release(struct ez_conn *conn, struct op *op)
{
	tx_release(conn, op);
}

/* The bind WR, as an op of its own on path p ahead of the header (which
 * is pinned there: the window is bound to p's QP, so the peer's READ goes
 * there too). */
static int post_bind(struct ez_conn *conn, struct op *op, struct conn_path *p, uint64_t addr,
		     uint32_t len)
{
	struct ibv_send_wr *bad;
	struct op *bop = conn_op_take(conn);
	int err;

	if (!bop)
		return ezi_fail(-ENOBUFS, "ez_send: a large message takes two operations (its window's bind and its header); %u already outstanding (send_depth)",
				conn->o.send_depth);
	conn_op_fill(bop, OP_BIND, NULL, NULL);
	bop->conn = conn;
	bop->path = p;
	bop->aged = 0;
	bop->wr.send_flags = IBV_SEND_SIGNALED;
	bop->wr.imm_data = 0;
	bop->sge.length = 0;
	mw_bind_wr(&op->rndv_w, addr, len, IBV_ACCESS_REMOTE_READ, &bop->wr);
	err = conn_sq_post(p, &bop->wr, &bad);
	if (err) {
		conn_op_put(conn, bop);
		return ezi_fail(err, "ibv_post_send(IBV_WR_BIND_MW for a large message, QP %u): %s",
				p->qpn, ez_strerror(-err));
	}
	conn_sq_append(conn, bop);
	return 0;
}

static void copy_in(uint8_t *dst, const struct iovec *iov, int iovcnt, const uint8_t *src,
		    size_t len)
{
	size_t off = 0;

	if (src) {
		memcpy(dst, src, len);
		return;
	}
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len)
			memcpy(dst + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
}

int conn_rndv_prepare(struct ez_conn *conn, struct op *op, const struct iovec *iov, int iovcnt,
		      struct ez_mr *mr, size_t off, size_t len)
{
	struct conn_path *p = path_pick(conn);
	struct ez_mr *src;
	uint64_t addr;
	int ret;

	op->rndv_stage = NULL;
	op->rndv_flags = 0;
	op->rndv_next = NULL;
	memset(&op->rndv_w, 0, sizeof(op->rndv_w));
	if (can_bind(conn, mr)) {
		src = mr;
		addr = (uintptr_t)mr->mr->addr + off;
	} else {
		/* ez_send's bytes (or an MR that cannot bind a window) are
		 * copied: the caller may reuse its buffer on return. */
		ret = staging_take(conn, bigbuf_size_for(len), "ez_send");
		if (ret)
			return ret;
		ret = bigbuf_get(conn->dev, len, &op->rndv_stage);
		if (ret) {
			staging_give(conn, bigbuf_size_for(len));
			return ret;
		}
		copy_in(op->rndv_stage->mem, iov, iovcnt,
			mr ? (const uint8_t *)mr->mr->addr + off : NULL, len);
		src = op->rndv_stage->mr;
		addr = (uintptr_t)op->rndv_stage->mem;
	}
	/* The QP admits remote reads: through windows bound to it only (the
	 * MRs' own keys grant nothing; shared MRs already had it). */
	ret = conn_access_grant(conn, EZ_MR_REMOTE_READ);
	if (ret)
		goto fail;
	/* The window over a registration of exactly the message (mw_alloc):
	 * neither the rest of the application's MR (ez_send_mr) nor what an
	 * earlier message left in the staging buffer beyond len is reachable,
	 * whatever range the device checks. */
	ret = mw_alloc(src, addr, len, IBV_ACCESS_REMOTE_READ, &op->rndv_w);
	if (ret)
		goto fail;
	op->rndv_w.on_mr_gone = rndv_mr_gone;
	ret = post_bind(conn, op, p, addr, (uint32_t)len);
	if (ret)
		goto fail;
	op->pin = (uint8_t)(p->idx + 1);
	op->rndv_addr = addr;
	op->rndv_len = (uint32_t)len;
	if (conn->sq.max_inline >= RNDV_HDR_LEN) {
		op->sge.addr = (uintptr_t)op->inl;
		op->sge.lkey = 0;
	} else if ((ret = conn_op_copy_slot(conn, op, RNDV_HDR_LEN))) {
		/* The window is bound; deallocating it undoes that. */
		goto fail;
	}
	return 0;
fail:
	mw_free(&op->rndv_w);
	if (op->rndv_stage)
		stage_put(conn, op);
	return ret;
}

void conn_rndv_posted(struct ez_conn *conn, struct op *op)
{
	unsigned int path = tx_path(op);
	struct rndv_hdr h = {
		.addr = op->rndv_addr,
		.rkey = op->rndv_w.rkey,
		.len = op->rndv_len,
		.id = conn->npaths == 1 ? conn->rxt.rndv_sent : path_id(path, conn->rndv.tx_seq[path]++),
	};
	struct op **pp;

	conn->rxt.rndv_sent++;
	op->rndv_age = 0;
	deadline_arm(conn);

	rndv_hdr_encode(&h, (uint8_t *)(uintptr_t)op->sge.addr);
	op->rndv_id = h.id;
	op->rndv_flags = RNDV_TX_POSTED;
	for (pp = &conn->rndv.tx; *pp; pp = &(*pp)->rndv_next)
		;
	*pp = op;
	op->rndv_next = NULL;
}

void conn_rndv_unposted(struct ez_conn *conn, struct op *op)
{
	struct op **pp;

	/* Taken back in reverse order of the posts (post_chain), so the id
	 * goes back with it. */
	if (conn->rxt.rndv_sent)
		conn->rxt.rndv_sent--;
	if (conn->npaths > 1 && conn->rndv.tx_seq[tx_path(op)])
		conn->rndv.tx_seq[tx_path(op)]--;
	for (pp = &conn->rndv.tx; *pp; pp = &(*pp)->rndv_next)
		if (*pp == op) {
			*pp = op->rndv_next;
			break;
		}
	op->rndv_next = NULL;
	op->rndv_flags = 0;
}

int conn_rndv_sent(struct ez_conn *conn, struct op *op, int status)
{
	/* A header lost with its path while the connection lives. Without
	 * exact failover, whether the peer has it (and will fetch it, or
	 * already did) is unknown, and its window died with the QP, so the
	 * message can neither be offered again (a duplicate) nor reported
	 * failed (it may arrive); with it, the peer's count showed it did not
	 * arrive, but its offer is a window bound to the failed QP and the
	 * transfer's ids are the path's. Either way the connection ends,
	 * naming it. */
	if (status && status != -ECANCELED && conn->npaths > 1 && !conn_is_ended(conn))
		conn_fail(conn, status,
			  "rendezvous transfer %u (%u bytes): its header failed with path %u (%s); %s, and a large message does not move to another path",
			  op->rndv_id, op->rndv_len, tx_path(op), ez_strerror(-status),
			  conn->paths_exact ? "the peer's count shows it did not arrive"
					    : "whether the peer has it is unknown");
	if (status || (op->rndv_flags & RNDV_TX_ACKED)) {
		tx_release(conn, op);
		return 1;
	}
	op->rndv_flags |= RNDV_TX_SENT;
	return 0;
}

struct op *conn_rndv_on_ack(struct ez_conn *conn, uint32_t id, enum rx_fault *fault)
{
	struct op *op;

	*fault = RX_OK;
	for (op = conn->rndv.tx; op && op->rndv_id != id; op = op->rndv_next)
		;
	if (!op || (op->rndv_flags & RNDV_TX_ACKED)) {
		*fault = conn_rndv_check_ack(conn, &(struct rx_view){ .t = &conn->rxt }, id, 0);
		return NULL;
	}
	op->rndv_flags |= RNDV_TX_ACKED;
	/* The ack may come before our CQ shows the header's completion. */
	if (!(op->rndv_flags & RNDV_TX_SENT))
		return NULL;
	tx_release(conn, op);
	return op;
}

struct op *conn_rndv_cancel_next(struct ez_conn *conn)
{
	struct op *op;

	deadline_stop(conn);
	/* Every window goes before the QP (a bound window holds it). */
	for (op = conn->rndv.tx; op; op = op->rndv_next)
		mw_free(&op->rndv_w);
	for (op = conn->rndv.tx; op; op = op->rndv_next)
		if (op->rndv_flags & RNDV_TX_SENT) {
			tx_release(conn, op);
			return op;
		}
	return NULL;
}

/* ---- receiver ---- */

static void pump(struct ez_conn *conn);

/* The application released a large message (its descriptor is void by now).
 * Its connection may be gone: the context is the one of its device. */
static void big_done(struct ez_srqpool *pool, void *arg, uint32_t len)
{
	struct bigbuf *bb = arg;
	struct ez_ctx *ctx = container_of(bb->dev->set, struct ez_ctx, devices);

	bigbuf_put(bb);
	srqpool_big_unreserve(pool, len);
	bigrecv_release(ctx, len, pump);
}

static void rx_free(struct ez_conn *conn, struct rndv_rx *e)
{
	struct rndv_rx **pp;

	for (pp = &conn->rndv.all; *pp; pp = &(*pp)->all_next)
		if (*pp == e) {
			*pp = e->all_next;
			break;
		}
	if (e->bb) {
		bigbuf_put(e->bb);
		srqpool_big_unreserve(conn->pool, e->h.len);
		bigrecv_delivered(conn, e->h.len);
		bigrecv_release(conn->ctx, e->h.len, pump);
	}
	conn_op_release_copy(conn, &e->op);
	free(e);
}

static int q_push(struct ez_conn *conn, uintptr_t item)
{
	struct rndv_queue *q = &conn->rndv.rq;

	if (q->n == q->cap) {
		uint32_t cap = q->cap ? 2 * q->cap : 16;
		uintptr_t *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (uint32_t i = 0; i < q->n; i++)
			n[i] = q->item[(q->head + i) % q->cap];
		free(q->item);
		q->item = n;
		q->head = 0;
		q->cap = cap;
	}
	q->item[(q->head + q->n) % q->cap] = item;
	q->n++;
	return 0;
}

static uintptr_t q_pop(struct ez_conn *conn)
{
	struct rndv_queue *q = &conn->rndv.rq;
	uintptr_t item = q->item[q->head];

	q->head = (q->head + 1) % q->cap;
	q->n--;
	return item;
}

static void deliver_one(struct ez_conn *conn, struct ez_buf *buf, uint32_t len, unsigned int path)
{
	conn->stats.msgs_recv++;
	conn->stats.bytes_recv += len;
	conn->paths[path].msgs_recv++;	/* owner: the receive path counts what came in on a path */
	if (conn->cbs.on_recv)
		conn->cbs.on_recv(conn, buf, conn->arg);
	else
		ez_buf_release(buf);
}

/* Hands the application what is ready at the head of the queue, in
 * arrival order (the sender's order). A callback that releases a buffer
 * may kick another fetch that completes nothing now; one that closes the
 * connection stops the loop. */
static void deliver_ready(struct ez_conn *conn)
{
	if (conn->rndv.delivering)
		return;
	conn->rndv.delivering = 1;
	while (conn->rndv.rq.n && conn->state == CS_CONNECTED && !conn->app_closed) {
		uintptr_t item = conn->rndv.rq.item[conn->rndv.rq.head];

		if (item & 1) {
			struct rndv_rx *e = (struct rndv_rx *)(item & ~(uintptr_t)1);
			struct bigbuf *bb = e->bb;
			uint32_t len = e->h.len;
			unsigned int path = e->path;
			struct ez_buf *h;

			if (e->state != RX_FETCHED)
				break;
			q_pop(conn);
			e->queued = 0;
			e->bb = NULL;	/* the application's now, still counted by the pool */
			bigrecv_delivered(conn, len);	/* and in the context's total */
			h = srqpool_big_deliver(conn->pool, bb->desc, bb->mem, len, big_done, bb);
			if (!e->busy)
				rx_free(conn, e);
			deliver_one(conn, h, len, path);
		} else {
			struct ez_buf *buf = (struct ez_buf *)item;

			q_pop(conn);
			deliver_one(conn, buf, (uint32_t)ez_buf_len(buf), 0);
		}
	}
	conn->rndv.delivering = 0;
}

/* The oldest fetch with bytes not yet asked for: fetches go in arrival
 * order, the next one's first chunks behind the last of the one before. */
static struct rndv_rx *next_to_read(struct ez_conn *conn)
{
	struct rndv_queue *q = &conn->rndv.rq;

	for (uint32_t i = 0; i < q->n; i++) {
		uintptr_t item = q->item[(q->head + i) % q->cap];
		struct rndv_rx *e = (struct rndv_rx *)(item & ~(uintptr_t)1);

		if ((item & 1) && e->state != RX_FETCHED && e->asked < e->h.len)
			return e;
	}
	return NULL;
}

/* A READ op of the connection's RNDV_SLOTS not on the send queue (there is
 * one while slots < RNDV_SLOTS: each READ holds a slot), made at the first
 * fetch. NULL: out of memory. */
static struct rndv_read *read_take(struct ez_conn *conn)
{
	struct rndv_read *r;

	if (!conn->rndv.reads) {
		conn->rndv.reads = calloc(RNDV_SLOTS, sizeof(*conn->rndv.reads));
		if (!conn->rndv.reads)
			return NULL;
		for (int i = 0; i < RNDV_SLOTS; i++) {
			conn->rndv.reads[i].op.conn = conn;
			conn->op_bind(&conn->rndv.reads[i].op);
		}
	}
	for (r = conn->rndv.reads; r < conn->rndv.reads + RNDV_SLOTS; r++)
		if (!r->e)
			return r;
	return NULL;
}

/* The READ of e's next chunk, [asked, +fetch_chunk) of the offer, into the
 * same offset of its buffer, on the header's path (its window is bound
 * to that QP). */
static int post_read(struct ez_conn *conn, struct rndv_rx *e, struct rndv_read *r)
{
	struct op *op = &r->op;
	struct conn_path *p = &conn->paths[e->path];
	uint32_t len = e->h.len - e->asked;
	struct ibv_send_wr *bad;
	int err;

	/* Resolved options always have a chunk; 0 (a connection made by
	 * hand, as the unit tests' fake one) reads the rest at once. */
	if (conn->o.fetch_chunk && len > conn->o.fetch_chunk)
		len = conn->o.fetch_chunk;
	conn_op_fill(op, OP_RNDV_READ, NULL, NULL);
	op->path = p;
	op->aged = 0;
	op->wr.sg_list = &op->sge;
	op->wr.num_sge = 1;
	op->wr.opcode = IBV_WR_RDMA_READ;
	op->wr.send_flags = IBV_SEND_SIGNALED;
	op->wr.imm_data = 0;
	op->wr.wr.rdma.remote_addr = e->h.addr + e->asked;
	op->wr.wr.rdma.rkey = e->h.rkey;
	op->sge.addr = (uintptr_t)e->bb->mem + e->asked;
	op->sge.length = len;
	op->sge.lkey = e->bb->mr->mr->lkey;
	err = conn_sq_post(p, &op->wr, &bad);
	if (err)
		return err;
	conn_sq_append(conn, op);
	r->e = e;
	r->off = e->asked;
	e->asked += len;
	e->reads++;
	conn->stats.fetch_reads++;	/* owner: the fetch counts its READs, as the receive path its messages */
	return 0;
}

/* A fetch whose path went down: the window it reads is bound to the
 * peer's QP of that path, which is in ERR now, and the sender cannot know
 * what we fetched, so the connection ends naming the transfer (the sender
 * gets the end, not a silent loss nor a second copy). */
static void path_lost(struct ez_conn *conn, struct rndv_rx *e)
{
	struct conn_path *p = &conn->paths[e->path];

	conn_fail(conn, p->down_status ? p->down_status : -ECONNRESET,
		  "rendezvous transfer %u (%u bytes) was offered on path %u, which went down (%s) before this side fetched it; a large message does not move to another path",
		  e->h.id, e->h.len, e->path, ez_strerror(p->down_status ? -p->down_status : ECONNRESET));
}

/* Starts the READs the slots and the pool's bound allow, oldest fetch
 * first, chunk by chunk. A fetch's memory is reserved whole at its first
 * chunk. At the bound the rest wait (the peer's sends wait on their
 * acknowledgements, and the receive buffers held behind them on credits)
 * until released memory kicks the connection (conn_rndv_kick). */
static void pump(struct ez_conn *conn)
{
	struct rndv_read *r;
	struct rndv_rx *e;
	int ret;

	while (conn->state == CS_CONNECTED && conn->rndv.slots < RNDV_SLOTS &&
	       (e = next_to_read(conn))) {
		if (!conn->paths[e->path].live) {
			path_lost(conn, e);
			return;
		}
		if (!e->bb) {
			/* The context's bound first: a wait there is resumed by
			 * bigrecv_release, one at the pool by its kick. */
			if (bigrecv_take(conn, e->h.len))
				return;
			if (srqpool_big_reserve(conn->pool, e->h.len)) {
				bigrecv_untake(conn, e->h.len);
				return;
			}
			ret = bigbuf_get(conn->dev, e->h.len, &e->bb);
			if (ret) {
				srqpool_big_unreserve(conn->pool, e->h.len);
				bigrecv_untake(conn, e->h.len);
				e->bb = NULL;
				conn_fail(conn, ret, "rendezvous fetch of transfer %u (%u bytes): %s",
					  e->h.id, e->h.len, ez_errmsg());
				return;
			}
		}
		r = read_take(conn);
		if (!r) {
			conn_fail(conn, -ENOMEM, "rendezvous fetch of transfer %u (%u bytes): out of memory for its READs",
				  e->h.id, e->h.len);
			return;
		}
		ret = post_read(conn, e, r);
		if (ret) {
			conn_fail(conn, ret, "ibv_post_send(RDMA READ of rendezvous transfer %u, %u bytes, at offset %u): %s",
				  e->h.id, e->h.len, e->asked, ez_strerror(-ret));
			return;
		}
		e->state = RX_READING;
		conn->rndv.slots++;
	}
}

void conn_rndv_on_header(struct ez_conn *conn, const struct rndv_hdr *h, unsigned int path)
{
	struct rndv_rx *e = calloc(1, sizeof(*e));

	if (!e || q_push(conn, (uintptr_t)e | 1)) {
		free(e);
		conn_fail(conn, -ENOMEM, "rendezvous transfer %u (%u bytes): out of memory", h->id,
			  h->len);
		return;
	}
	e->h = *h;
	e->path = (uint8_t)path;
	e->state = RX_WAIT;
	e->queued = 1;
	e->op.conn = conn;
	conn->op_bind(&e->op);
	e->all_next = conn->rndv.all;
	conn->rndv.all = e;
	pump(conn);
}

void conn_rndv_on_small(struct ez_conn *conn, struct ez_buf *buf, uint32_t len)
{
	if (!conn->rndv.rq.n) {
		deliver_one(conn, buf, len, 0);
		return;
	}
	/* Only large messages wait in the queue then: a small one passes. */
	if (conn->o.flags & EZ_CONN_SMALL_FIRST) {
		conn->stats.small_first++;	/* owner: delivery counts what it let pass */
		deliver_one(conn, buf, len, 0);
		return;
	}
	if (q_push(conn, (uintptr_t)buf)) {
		ez_buf_release(buf);
		conn_fail(conn, -ENOMEM, "a message queued behind a rendezvous fetch: out of memory");
	}
}

/* Whether a failed fetch is the peer's doing: its responder refused the
 * key or range it offered (remote access or invalid request) or failed
 * the request (remote operation error). Retries exceeded, a flush or a
 * local error are the transport's or ours, not a lie. */
static int read_refused_by_peer(int status)
{
	return status == -EACCES || status == -EMSGSIZE || status == -EREMOTEIO;
}

/* A READ failed: the connection ends, named by its cause. */
static void read_failed(struct ez_conn *conn, struct rndv_rx *e, uint32_t off, uint32_t len,
			int status)
{
	char why[200];
	struct rx_view v = { .t = &conn->rxt, .rndv_max = conn->o.max_msg_size };

	if (status == -ECANCELED || conn_is_ended(conn))
		return;
	/* The READ's own refusal (a key or range the peer's device rejects)
	 * is the peer's lie even when it took the path down; anything else
	 * on a dead path is the path. */
	if (!conn->paths[e->path].live && status != -EACCES && status != -EMSGSIZE) {
		path_lost(conn, e);
		return;
	}
	if (!read_refused_by_peer(status)) {
		/* The link, not the peer's offer: named as such, with the
		 * transport's own status (issue 42: a lossy link's timeout was
		 * reported as the peer's protocol error). */
		conn_fail(conn, status, "fetching the peer's large message (rendezvous transfer %u, %u bytes) on path %u: RDMA READ of bytes %u..%u failed on the transport: %s",
			  e->h.id, e->h.len, e->path, off, off + len,
			  status == -ETIMEDOUT ? "transport retry counter exceeded" :
			  ez_strerror(-status));
		return;
	}
	/* The peer's key or address does not hold what it offered. */
	rx_rndv_fault_format(RX_F_RNDV_READ, &e->h, &v, why, sizeof(why));
	conn_fail(conn, -EPROTO, "%s (%s)", why, ez_strerror(-status));
}

/* A READ of a chunk completed. The last one's slot goes to the fetch's
 * acknowledgement (the sender's window and copy are released by it), and
 * what is ready is delivered. */
static void read_done(struct ez_conn *conn, struct rndv_read *r, int status)
{
	struct rndv_rx *e = r->e;
	uint32_t len = r->op.sge.length;
	uint8_t id[RNDV_ACK_LEN];
	int ret;

	r->e = NULL;
	e->reads--;
	if (status) {
		conn->rndv.slots--;
		read_failed(conn, e, r->off, len, status);
		return;
	}
	e->fetched += len;
	if (e->fetched < e->h.len) {
		conn->rndv.slots--;
		pump(conn);
		return;
	}
	EZ_ASSERT(e->reads == 0 && e->asked == e->h.len);
	e->state = RX_FETCHED;
	e->busy = 1;
	rndv_ack_encode(e->h.id, id);
	/* Any live path: the ack names the transfer (and so its path). */
	ret = conn_post_ctrl(conn, &e->op, OP_RNDV_ACK, path_pick(conn), IMM_RNDV_ACK, id, sizeof(id));
	if (ret) {
		e->busy = 0;
		conn->rndv.slots--;
		conn_fail(conn, ret, "ibv_post_send(rendezvous acknowledgement of transfer %u): %s",
			  e->h.id, ez_strerror(-ret));
		return;
	}
	deliver_ready(conn);
}

void conn_rndv_op_done(struct ez_conn *conn, struct op *op, int status)
{
	struct rndv_rx *e;

	if (op->kind == OP_RNDV_READ) {
		read_done(conn, container_of(op, struct rndv_read, op), status);
		return;
	}
	e = container_of(op, struct rndv_rx, op);
	conn_op_release_copy(conn, op);
	e->busy = 0;
	conn->rndv.slots--;
	if (status && status != -ECANCELED && !conn_is_ended(conn))
		conn_fail(conn, status, "rendezvous acknowledgement of transfer %u: %s", e->h.id,
			  ez_strerror(-status));
	if (!e->queued)
		rx_free(conn, e);
	pump(conn);
}

void conn_rndv_kick(struct srqpool_acct *a)
{
	pump(container_of(a, struct ez_conn, acct));
}

void conn_rndv_fini(struct ez_conn *conn)
{
	deadline_stop(conn);
	while (conn->rndv.rq.n) {
		uintptr_t item = q_pop(conn);

		if (!(item & 1))
			ez_buf_release((struct ez_buf *)item);
	}
	free(conn->rndv.rq.item);
	conn->rndv.rq.item = NULL;
	conn->rndv.rq.cap = 0;
	while (conn->rndv.all)
		rx_free(conn, conn->rndv.all);
	free(conn->rndv.reads);
	conn->rndv.reads = NULL;
}

void conn_rndv_path_reset(struct ez_conn *conn, unsigned int idx)
{
	if (idx < EZ_MAX_PATHS)
		conn->rndv.tx_seq[idx] = conn->rndv.rx_seq[idx] = 0;
}
