/* conn_types.h: the connection's structs (ez_conn, its ops and paths), shared by the files of lib/conn; functions are in each file's own header. */
#ifndef EZ_CONN_CONN_TYPES_H
#define EZ_CONN_CONN_TYPES_H

#include <string.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "ctx.h"
#include "wire/rate.h"
#include "listener_hs.h"
#include "base/error.h"
#include "conn_fsm.h"
#include "wire/penalty.h"
#include "wire/handshake.h"
#include "wire/imm.h"
#include "wire/rx_check.h"
#include "qpfsm/qpfsm.h"
#include "device/device.h"
#include "device/sendslab.h"
#include "device/mr.h"
#include "srqpool/srqpool.h"
#include "op_queue.h"

enum op_kind { OP_SEND, OP_SEND_MR, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CREDIT, OP_BYE,
	       OP_PATH_DOWN, OP_AUTH, OP_BIND, OP_KA_PROBE, OP_KA_ANSWER,
	       OP_ATOMIC_CAS, OP_ATOMIC_FADD,
	       /* Rendezvous (rndv.c): a large send's header (its op completes
	        * at the peer's acknowledgement), the receiver's fetch and its
	        * acknowledgement. */
	       OP_SEND_RNDV, OP_RNDV_READ, OP_RNDV_ACK,
	       /* A step of a failed path's rebuild (rebuild.c). */
	       OP_PATH_UP,
	       /* The regions given with the connection (conn_export.c). */
	       OP_EXPORTS,
	       /* The send queue's last WR after the QP entered ERR, when the
	        * one before it went unsignalled (msg.c's conn_seal()). */
	       OP_SEAL };

/* Sets of kinds as bit masks, so that the per-op tests of the data path are
 * one shift and test each, not a compare per kind. */
#define OP_KIND_BIT(k) (1u << (k))
/* Land in one of the peer's receive buffers: take one of its credits. */
#define OP_CREDIT_KINDS (OP_KIND_BIT(OP_SEND) | OP_KIND_BIT(OP_SEND_MR) | \
			 OP_KIND_BIT(OP_WRITE_IMM) | OP_KIND_BIT(OP_SEND_RNDV))
/* Their immediate carries the credits we owe (op_charge). */
#define OP_IMM_CREDIT_KINDS (OP_KIND_BIT(OP_SEND) | OP_KIND_BIT(OP_SEND_MR) | \
			     OP_KIND_BIT(OP_SEND_RNDV))
/* The library's own messages whose bytes are not a path's payload. */
#define OP_CTRL_KINDS (OP_KIND_BIT(OP_CREDIT) | OP_KIND_BIT(OP_BYE) | OP_KIND_BIT(OP_PATH_DOWN))
#define OP_KIND_IN(kinds, k) (((kinds) >> (k)) & 1u)
/* Land in the peer's receive queue: counted per path for exact failover
 * (path.c; a SEND of any kind, a WRITE with immediate). */
#define OP_RECV_KINDS (OP_KIND_BIT(OP_SEND) | OP_KIND_BIT(OP_SEND_MR) | OP_KIND_BIT(OP_WRITE_IMM) | \
		       OP_KIND_BIT(OP_CREDIT) | OP_KIND_BIT(OP_BYE) | OP_KIND_BIT(OP_PATH_DOWN) | \
		       OP_KIND_BIT(OP_AUTH) | OP_KIND_BIT(OP_KA_PROBE) | OP_KIND_BIT(OP_KA_ANSWER) | \
		       OP_KIND_BIT(OP_SEND_RNDV) | OP_KIND_BIT(OP_RNDV_ACK) | OP_KIND_BIT(OP_PATH_UP) | \
		       OP_KIND_BIT(OP_EXPORTS) | OP_KIND_BIT(OP_SEAL))
_Static_assert(OP_SEAL < 32, "op kinds fit a 32-bit mask");

/* One send-queue operation; preallocated per connection (send_depth of them
 * plus the dedicated ones of the control messages), so the data path never
 * allocates. */
struct conn_path;
struct conn_pd;
struct bigbuf;
struct rndv_rx;
struct rndv_read;

/* WRs beyond send_depth: callback-less small sends posted unsignalled
 * with no op of their own, at most SIG_EVERY - 1 waiting on a path (msg.c):
 * a connection's send queue and CQ room count them too. */
#define CONN_UNSIG_SPARES 15

/* Bytes of a small send kept in its op (struct op's inl). */
#define OP_INLINE_BYTES 64

struct op {
	struct device_wr dwr;	/* what its wr_id points at (conn_op_bind) */
	struct op *next;
	struct ez_conn *conn;
	struct conn_path *path;	/* the QP it was posted on */
	ez_op_cb cb;
	void *arg;
	enum op_kind kind;
	struct slab_slot *slot;	/* a copied send's bytes, until its completion */
	struct ez_mr *mr;	/* the MR it uses, counted in mr->inflight until conn_op_put */
	uint8_t pin;		/* 1 + the path it must take (a window bound there), 0: any */
	uint8_t aged;		/* deadline ticks seen outstanding (keepalive.c; OP_EXPIRED) */
	/* Op-less sends posted on its path just before it (msg.c's silent
	 * sends): done when it is, retired with it. */
	uint8_t silent_before;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	/* A send the device takes inline (IBV_SEND_INLINE copies the bytes
	 * when it is posted) is copied here, not into a registered slot:
	 * no slot to take and give back per small message. */
	char inl[OP_INLINE_BYTES];
	ez_atomic_cb acb;	/* an atomic's callback, with the old value (atomic.c) */
	/* OP_SEND_RNDV (rndv.c): the window that offers the bytes, the staging
	 * copy of an ez_send (NULL for ez_send_mr from a window-capable MR),
	 * what is offered, the transfer's id (from its post on), the
	 * connection's list of transfers awaiting the acknowledgement. */
	struct mw rndv_w;
	struct bigbuf *rndv_stage;
	uint64_t rndv_addr;
	uint32_t rndv_len;
	uint32_t rndv_id;
	uint8_t rndv_flags;	/* RNDV_TX_* */
	uint8_t rndv_age;	/* deadline ticks seen unacknowledged (rndv.c) */
	struct op *rndv_next;
	/* Held on a failed path until the peer's count settles it (path.c,
	 * exact failover): the status its completion had. */
	int park_status;
};

/* Exact failover (path.c, wire/settle.h): what a path sent and received
 * that lands in a receive queue, and a failed path's ops until the peer's
 * count settles them. */
struct path_failover {
	uint32_t tx;		/* receive-taking WRs posted on the path */
	uint32_t rx;		/* receives completed on it */
	uint32_t peer_count;	/* the peer's rx for the path, once told */
	uint8_t told;		/* our count went to the peer: later receives here are dropped */
	uint8_t peer_told;	/* peer_count is known */
	/* A new QP was made for the path (rebuild.c) and it is not back yet:
	 * its failure is settled, its counts are the new QP's, and it may be
	 * made again at the next try. */
	uint8_t reopened;
	uint64_t told_ns;	/* when our count went (loop_now_ns()) */
	uint64_t down_ns;	/* when the path went down (the count waits for its flush) */
	uint32_t dropped;	/* receives dropped after told (the peer sends them again) */
	struct op *park_head, *park_tail;	/* in the order they were posted */
	uint32_t parked;	/* ops held */
	uint32_t settle_seq;	/* the receive-taking position of the next one settled */
	/* How its ops settled: arrived by the count, posted again, outcome
	 * unknown (atomics). */
	uint32_t settled_done, reposted, unknown;
};

/* Path 0 is QP 0, whose number rdma_cm's handshake carries, or the QP that
 * replaced it when path 0 was made again (conn_qp0()); paths 1..npaths-1 are
 * created by the library on the same PD, CQ and SRQ and laddered with QP 0's
 * attributes, each with its own remote QP, PSNs and UDP source port. */
struct conn_path {
	struct ez_conn *conn;
	struct ibv_qp *qp;
	struct qpfsm_qp_view qpv;	/* the QP's state as the library moved it */
	uint32_t qpn, remote_qpn;
	uint16_t sport;		/* chosen by the policy (0: rdma_cm's label, path 0 only) */
	uint8_t idx;
	uint8_t live;		/* takes new work */
	uint8_t last_wqe;	/* IBV_EVENT_QP_LAST_WQE_REACHED seen */
	int posted;		/* WRs on this path's send queue */
	uint64_t posted_bytes;	/* and their payload */
	/* Its counters, kept here for any number of paths (ez_conn_stats'
	 * arrays show the first EZ_INFO_PATHS; ez_conn_path_info() any):
	 * ops posted, their payload bytes, messages received. Written by the
	 * data path (msg.c, rndv.c), which posts and receives on the path. */
	uint64_t ops, bytes, msgs_recv;
	/* Its address vector as RTR set it (path_modify()): the local GID's
	 * index in the port's table and the peer's GID (is_global: RoCE). */
	union ibv_gid dgid;
	uint8_t sgid_index;
	uint8_t is_global;
	int down_status;	/* why it was taken out (0: live) */
	struct op bye_op;	/* the goodbye sent down this path at close */
	struct op down_op;	/* tells the peer this path is out (sent on another) */
	struct op *sq_head, *sq_tail;	/* WRs posted on this QP, in order (op->next) */
	/* Silent sends (msg.c): posted with no op, unsignalled, from this
	 * template (the device copies a WR and its inline bytes at the
	 * post); their wr_id is silent_dwr, which only an error or a flush
	 * completion reaches. silent_tail: those posted behind sq_tail, which
	 * the next op posted here carries (silent_before). */
	struct ibv_send_wr silent_wr;
	struct ibv_sge silent_sge;
	struct device_wr silent_dwr;
	int silent_tail;
	struct device_qp dqp;	/* the QP in the device's registry */
	int qp_access;		/* IBV_ACCESS_REMOTE_* the QP has now (conn_export.c) */
	struct path_failover fo;
};

/* The attributes paths 1.. were created and laddered with (path.c): QP
 * 0's, as path_modify() received them, for a path made again. */
struct path_ladder {
	struct ibv_qp_init_attr ia;
	const struct device_qp_ops *ops;
	const struct device_qp_ops *ops0;	/* path 0's, as QP 0's entry (conn_qp_ops) */
	struct ibv_qp_attr step[3];	/* INIT, RTR, RTS */
	int mask[3];
};

struct device;
struct conn_auth;
struct conn_rebuild;
struct conn_resume;
struct conn_export;
struct rx_parked;

/* The send queue (sendq.c; msg.c writes it too as it posts and completes,
 * the owner baseline's lines): send_depth ops and their free list,
 * the queue of ops waiting for a credit or a batch's end, the peer's
 * credits we hold, and what the posts need to know. */
struct conn_sendq {
	struct op *ops;
	struct op *free_ops;
	/* send_depth. A callback-less small send may go out unsignalled with
	 * no op (msg.c's silent sends), so it does not count against it;
	 * sends_silent 0 when every send keeps its op and completion. */
	uint32_t nops;
	uint8_t sends_silent;
	/* Room is awaited: an op was refused for lack of room since the last
	 * on_send_ready, or the op queue holds ops to post (msg.c). */
	uint8_t send_refused;
	/* The application was refused (-ENOBUFS) since the last on_send_ready:
	 * with an op queue, send_refused alone may be the queue's wait. */
	uint8_t app_refused;
	struct op *pend_head, *pend_tail;
	uint32_t send_credits;	/* messages we may send now */
	struct op credit_op;
	int credit_inflight;
	struct op seal_op;	/* conn_seal()'s, posted into the QP in ERR */
	struct loop_defer kick_after;	/* a kick waiting for the device's batch to end */
	uint32_t max_inline;
	/* ez_send()'s bound for a send posted from the caller's bytes:
	 * min(max_inline, OP_INLINE_BYTES, peer_max_msg, max_msg_size), set
	 * as the connection comes up (0 before), so the per-message check is
	 * one compare, not four. */
	uint32_t small_send_max;
};

/* Large messages by rendezvous (rndv.c, the only writer but for the
 * handshake's verdict, conn.c): both sides set HS_CAP_RNDV; the most the
 * peer takes that way; our transfers awaiting its acknowledgement (posted,
 * in id order); the receive side's queue of messages in arrival order
 * (small ones held behind a fetch, so that delivery keeps the send order,
 * unless EZ_CONN_SMALL_FIRST) and its fetches (slots: a READ of a chunk or
 * an acknowledgement on the send queue; reads: the RNDV_SLOTS READ ops,
 * made at the first fetch). */
struct conn_rndv {
	uint8_t ok;
	uint8_t delivering;
	uint8_t peer_shift;	/* its handshake's (0: no HS_CAP_RNDV) */
	uint32_t peer_max;
	struct op *tx;
	struct rndv_queue {
		uintptr_t *item;	/* an ez_buf handle, or a struct rndv_rx | 1 */
		uint32_t head, n, cap;
	} rq;
	struct rndv_rx *all;	/* every fetch not yet freed */
	uint32_t slots;		/* READs and acknowledgements on the send queue */
	struct rndv_read *reads;	/* RNDV_SLOTS of them (NULL before the first fetch) */
	struct loop_timer timer;	/* the transfers' deadline ticks while any is unacknowledged */
	/* Several paths: transfer ids count per path (path << 24 | its
	 * count), sent and received. */
	uint32_t tx_seq[EZ_MAX_PATHS], rx_seq[EZ_MAX_PATHS];
};

/* Messages for the application that came before the peer's exports
 * message, in arrival order (recv.c, the only writer). */
struct rx_park {
	struct rx_parked *head;
	struct rx_parked **tail;
};

/* Remote access (conn_export.c, the only writer): the regions exported to
 * this connection, and the EZ_MR_REMOTE_* its QPs admit for them. */
struct conn_exports {
	struct conn_export *list;
	uint32_t n;
	unsigned int access;
	/* Regions given with the connection (ez_conn_opts.exports): copied at
	 * the call, their MRs held until bound (ngive, held); the keys made
	 * of them (own); the peer's, from its exports message (peer). */
	struct ez_export *give;
	struct ez_rkey *own;
	struct ez_rkey *peer;
	uint8_t ngive;
	uint8_t npeer;
	uint8_t held;		/* give's MRs are held (mr_hold) */
	uint8_t sent;		/* ours went out (or failed: the connection ended) */
	uint8_t peer_takes;	/* the peer set HS_CAP_EXPORTS */
	uint8_t peer_due;	/* the peer set HS_CAP_EXPORTS_SENT; its message has not come */
};

/* RDMA atomics (atomic.c, the only writer): one 8-byte result word per
 * op, registered for local write at the first atomic. */
struct conn_atomic {
	struct ibv_mr *mr;
	uint64_t *res;
};

/* Liveness (keepalive.c, the only writer): probes when nothing came for
 * an interval, the deadline of outstanding ops. */
struct conn_keepalive {
	struct loop_timer timer;	/* every keepalive_interval_ms while connected */
	struct loop_timer deadline_timer; /* every op_timeout_ms / 2 while connected */
	uint64_t seen;		/* rxt.rx_msgs at the last tick */
	uint64_t ok_seen;	/* conn->sq_ok at the last tick */
	uint32_t missed;	/* ticks in a row that saw nothing */
	uint32_t sent;		/* probes posted since something came */
	uint8_t peer;		/* the peer answers probes (HS_CAP_KEEPALIVE) */
	uint8_t peer_why;	/* the peer takes a goodbye that says why (HS_CAP_BYE_REASON) */
	uint8_t probe_busy;	/* our probe is posted, not complete */
	uint8_t answer_busy;	/* our answer is posted, not complete */
	struct rate rate;	/* the peer's probes against their rate */
	struct op probe_op, answer_op;
};

struct ez_conn {
	struct cm_handler cm;	/* first: the cm_id's context points here */
	struct ez_ctx *ctx;
	struct device *dev;
	struct rdma_cm_id *id;
	struct ez_conn_opts o;
	struct ez_conn_cbs cbs;
	void *arg;
	enum conn_state state;	/* written by take_transition() alone (conn.c) */
	/* The actions of a transition, registered by conn.c (the one caller of
	 * the application's on_connect and on_disconnect). */
	void (*fsm_run)(struct ez_conn *conn, const struct conn_fsm_row *row, int status);
	enum conn_state ended_from;	/* the live state it ended from */
	int active;
	const char *step;	/* the step under way, for error messages */
	struct lookup *lookup;	/* the host name being resolved */
	char host[128];

	int end_status;
	int app_closed;		/* ez_conn_close ran: the handle, not the connection */
	/* CONN_VOID once freed: the struct waits in the quarantine and every
	 * entry point refuses the handle (conn_handle.h). */
	uint32_t void_mark;
	int reached_rtr;
	int srq_drained;	/* the SRQ is done with the QPs (last WQE, or its timer) */

	uint8_t port;
	uint16_t sport;		/* chosen by the policy; 0: rdma_cm's label */
	enum ez_sport_policy sport_policy;
	enum ez_sport_mech sport_mech;
	struct ez_conn *next, *prev;	/* ctx list */

	struct ez_srqpool *pool;
	int own_pool;
	struct conn_pd *own_pd;	/* EZ_EXPORT_PD: its PD (conn_pd.c); NULL: the device's */
	int pool_attached;
	struct device_cq_room cqr;	/* its sends' room, on its QPs' send CQ */
	struct device_cq *rcq;		/* its QPs' recv CQ: the pool's */

	struct conn_sendq sq;	/* the send side's queue (msg.c's) */
	struct op_queue oq;	/* ops accepted past a full window (op_queue.c's) */
	struct op bye_op;
	int peer_bye;
	/* Why, when the goodbye said (wire/bye.h; recv.c writes them). */
	uint8_t peer_bye_reason;
	uint32_t peer_bye_ms;

	uint32_t my_credits;	/* advertised to the peer */
	/* Our receive credits: what the peer holds and what it has earned
	 * back, as a share of the pool (lib/srqpool/share.c). */
	struct srqpool_acct acct;
	uint32_t peer_credits;
	uint32_t peer_max_msg;
	uint32_t my_max_msg;	/* advertised: min(max_msg_size, the pool's buffers) */
	/* What the peer was granted and used, sent and returned: the receive
	 * path's checks (lib/wire/rx_check.c). */
	struct rx_track rxt;
	struct conn_rndv rndv;	/* large messages (rndv.c's) */
	void (*op_bind)(struct op *op);	/* msg.c's conn_op_bind, for rndv.c's ops */

	struct loop_timer connect_timer;
	uint32_t connect_grace_ms; /* the deadline waited this long for our own CM backlog */
	uint64_t connect_start_ns; /* ez_connect(): what is left of connect_timeout_ms */
	uint32_t resolve_attempts; /* rdma_resolve_addr() calls made (conn.c's resolve_addr()): one a second with a long connect_timeout_ms, so not 8 bits */
	uint8_t resolve_short;     /* the last one had the short deadline: an -ETIMEDOUT is retried */
	struct loop_timer drain_timer;
	struct loop_defer finish_defer;	/* conn_finish(), outside any call or CQ poll */
	/* A passive connection's accept steps (CS_ACCEPT_*), one a loop pass,
	 * and the RDMA read depths the request allowed, for its RTR/RTS. */
	struct loop_defer step_defer;
	uint8_t acc_rd_dest, acc_rd_init;
	struct loop_timer bye_timer;

	/* Multi-path (path.c): paths[0] is QP 0, the only one of a single path. */
	struct conn_path *paths;
	/* What paths 1.. were created and laddered with (path.c), for a
	 * failed one made again (rebuild.c): several paths only. */
	struct path_ladder *ladder;
	struct conn_rebuild *rebuild;
	uint32_t npaths;	/* in use (negotiated once the reply is in) */
	uint32_t paths_live;
	uint32_t path_rr;
	/* Both sides announced HS_CAP_FAILOVER on a connection of several
	 * paths: a failed path's ops are settled by the peer's count (path.c). */
	uint8_t paths_exact;
	uint8_t fo_mute;	/* test hook: our counts are never told (path_test_count_wait()) */
	struct loop_defer tell_defer;	/* our counts of the paths taken down go to the peer */
	struct loop_timer count_timer;	/* the peer's counts must come (PATH_COUNT_WAIT_MS) */
	int byes_left;

	uint8_t pdata[EZ_ACCEPT_DATA_MAX];
	struct conn_auth *auth;	/* shared-secret check (conn_auth.c); NULL: none */
	/* Remote access closed until the proof: a keyed listener's connection
	 * makes its QPs with no IBV_ACCESS_REMOTE_* (conn_access_flags(), conn_export.c);
	 * conn_auth.c opens them, on every path, once the client's proof is
	 * verified and before the verdict is posted. */
	uint8_t remote_closed;
	/* Passive side: the handshake counted by its listener (max_pending,
	 * max_pending_per_peer) until established or ended, with the
	 * listener's deadline (listener.h). */
	struct listener_hs pend;
	/* Passive side: what conn_setup() held back until the connection is
	 * established (keyed: proved): the private pool's full size (0: none
	 * held) and the CQ room of the data path's sends. */
	uint32_t held_recv;
	int held_cq;
	struct ez_conn_stats stats;
	char errmsg[EZ_ERRMSG_MAX];

	struct conn_exports ex;	/* remote access (conn_export.c's) */
	struct rx_park park;	/* messages before the peer's exports (recv.c's) */
	/* The listener's penalty options copied at accept (0: no refusals). */
	struct peer_penalty_opts pen;

	/* Our ops the peer's device completed successfully (not keepalive's
	 * own): a READ's data came back, a WRITE or send was acknowledged.
	 * Keepalive counts them as life (keepalive.c), so that a connection
	 * busy with one-sided traffic is not found dead for want of messages. */
	uint64_t sq_ok;
	struct conn_keepalive ka;	/* keepalive.c's */

	/* Refused for the context's staging budget (staging.c): woken when
	 * staged bytes come back, whichever connection gave them. */
	uint8_t staged_wait;
	uint64_t staged;	/* bytes of its large messages staged now */
	/* Accepted with a pool of its own: the bytes of its receive buffers
	 * counted against the context's budget (staging.c's recvbufs_take). */
	uint64_t recvbufs;
	/* Large messages being fetched from the peer now (rendezvous), its
	 * share of ctx->bigrecv, and whether its next fetch waits for room
	 * there (staging.c's bigrecv_*). */
	uint64_t bigrecv;
	uint8_t bigrecv_wait;
	/* The peer's address, kept at the first charge to either budget: the
	 * per-address sums must count a connection whose CM id is gone (ended,
	 * not yet closed) as its peer's (staging.c). Family 0: none kept. */
	union {
		struct sockaddr sa;
		struct sockaddr_in6 in6;
	} charged_peer;
	/* Active side: the application bytes of the listener's reply
	 * (ez_conn_accept_data()), kept once the reply passed its checks
	 * (keyed: its MAC). */
	uint8_t accept_data_set;
	uint8_t accept_data_len;
	uint8_t accept_data[EZ_ACCEPT_DATA_MAX];
	struct conn_atomic atomic;	/* atomic.c's */
	/* Session resume (resume.c's), made when the handshake granted it. */
	struct conn_resume *resume;
};

/* QP 0, path 0's (path.c makes and destroys it), or NULL: before the setup
 * made it, after the release, or between a failed try of path 0 made again
 * and the next. */
static inline struct ibv_qp *conn_qp0(const struct ez_conn *conn)
{
	return conn->paths ? conn->paths[0].qp : NULL;
}

static inline uint32_t conn_qpn0(const struct ez_conn *conn)
{
	return conn->paths ? conn->paths[0].qpn : 0;
}

/* Session resume was granted (resume.c made its state at the handshake)
 * and the window is on: the last path may fail without ending it. */
static inline int conn_resumable(const struct ez_conn *conn)
{
	return conn->resume && conn->o.resume_ms;
}

/* The CM parameters of every connect and accept that brings up path 0 (the
 * first handshake, conn.c; a session's resume, resume.c): private data, the
 * RDMA READ depths, the QP's retry counts, an SRQ, path 0's QP. The active
 * side asks for its options' depths within the device's (conn_cm_param_asked);
 * the passive side answers with what it settled (acc_rd_*, conn.c). */
static inline void conn_cm_param(const struct ez_conn *conn, struct rdma_conn_param *p,
				 const void *pdata, int len, uint8_t rd_dest, uint8_t rd_init)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = (uint8_t)len;
	p->responder_resources = rd_dest;
	p->initiator_depth = rd_init;
	p->flow_control = 1;
	p->retry_count = conn->o.retry_count;
	p->rnr_retry_count = conn->o.rnr_retry;
	p->srq = 1;
	p->qp_num = conn_qpn0(conn);
}

static inline uint8_t conn_rd_within(unsigned int want, int device_max)
{
	unsigned int m = device_max < 0 ? 0 : (unsigned int)device_max;

	m = want < m ? want : m;
	return (uint8_t)(m < 255 ? m : 255);
}

/* The active side's: its options' depths within the device's. */
static inline void conn_cm_param_asked(const struct ez_conn *conn, struct rdma_conn_param *p,
				       const void *pdata, int len)
{
	conn_cm_param(conn, p, pdata, len,
		      conn_rd_within(conn->o.responder_resources, conn->dev->attr.max_qp_rd_atom),
		      conn_rd_within(conn->o.initiator_depth, conn->dev->attr.max_qp_init_rd_atom));
}

/* Ended: saying goodbye, draining, finishing or dead. */
static inline int conn_is_ended(const struct ez_conn *conn)
{
	return !conn_state_live(conn->state);
}

#endif
