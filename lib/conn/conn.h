/* conn.h: a connection: its QP, ops, credits, state machine and teardown. */
#ifndef EZ_CONN_CONN_H
#define EZ_CONN_CONN_H

#include <sys/socket.h>
#include <infiniband/verbs.h>

#include "ctx.h"
#include "base/error.h"
#include "conn_fsm.h"
#include "wire/handshake.h"
#include "wire/imm.h"
#include "qpfsm/qpfsm.h"
#include "device/device.h"
#include "device/sendslab.h"
#include "srqpool/srqpool.h"


enum op_kind { OP_SEND, OP_SEND_MR, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CREDIT, OP_BYE,
	       OP_PATH_DOWN, OP_AUTH };

/* One send-queue operation; preallocated per connection (send_depth of them
 * plus one for credit messages), so the data path never allocates. */
struct conn_path;

struct op {
	struct device_wr dwr;	/* what its wr_id points at (conn_op_bind) */
	struct op *next;
	struct ez_conn *conn;
	struct conn_path *path;	/* the QP it was posted on */
	ez_op_cb cb;
	void *arg;
	enum op_kind kind;
	struct slab_slot *slot;	/* a copied send's bytes, until its completion */
	struct ibv_sge sge;
	struct ibv_send_wr wr;
};


struct device;
struct conn_auth;

struct ez_conn {
	struct cm_handler cm;	/* first: the cm_id's context points here */
	struct ez_ctx *ctx;
	struct device *dev;
	struct rdma_cm_id *id;
	struct ez_conn_opts o;
	struct ez_conn_cbs cbs;
	void *arg;
	enum conn_state state;	/* written by conn_fire() alone (conn.c) */
	enum conn_state ended_from;	/* the live state it ended from */
	int active;
	const char *step;	/* the step under way, for error messages */
	struct lookup *lookup;	/* the host name being resolved */
	char host[128];

	int end_status;
	int app_closed;		/* ez_conn_close ran: the handle, not the connection */
	int reached_rtr;
	int srq_drained;	/* the SRQ is done with the QPs (last WQE, or its timer) */

	struct ibv_qp *qp;
	struct qpfsm_qp_view qpv;	/* the QP's state as the library moved it */
	uint32_t qpn;
	uint8_t port;
	uint16_t sport;		/* chosen by the policy; 0: rdma_cm's label */
	enum ez_sport_policy sport_policy;
	enum ez_sport_mech sport_mech;
	struct device_qp dqp;	/* QP 0 in the device's registry */
	struct ez_conn *next, *prev;	/* ctx list */

	struct ez_srqpool *pool;
	int own_pool;
	int pool_attached;
	int cq_reserved;

	struct op *ops;
	struct op *free_ops;
	struct op *pend_head, *pend_tail;
	struct op credit_op;
	int credit_inflight;
	struct op bye_op;
	int peer_bye;
	int posted;		/* WRs on the send queue */
	struct loop_defer kick_after;	/* a kick waiting for the device's batch to end */
	uint32_t max_inline;

	uint32_t my_credits;	/* advertised to the peer */
	uint32_t send_credits;	/* messages we may send now */
	/* Our receive credits: what the peer holds and what it has earned
	 * back, as a share of the pool (lib/srqpool/share.c). */
	struct srqpool_acct acct;
	uint32_t peer_credits;
	uint32_t peer_max_msg;
	uint32_t my_max_msg;

	struct loop_timer connect_timer;
	struct loop_timer drain_timer;
	struct loop_defer finish_defer;	/* conn_finish(), outside any call or CQ poll */
	struct loop_timer bye_timer;

	/* Multi-path (path.c): paths[0] is conn->qp. */
	struct conn_path *paths;
	uint32_t npaths;	/* in use (negotiated once the reply is in) */
	uint32_t paths_live;
	uint32_t path_rr;
	int byes_left;

	uint8_t pdata[EZ_ACCEPT_DATA_MAX];
	struct conn_auth *auth;	/* shared-secret check (conn_auth.c); NULL: none */
	struct ez_conn_stats stats;
	char errmsg[EZ_ERRMSG_MAX];
};

void conn_on_last_wqe(struct ez_conn *conn, uint32_t qpn);
void conn_on_comm_est(struct ez_conn *conn);
/* Records the error in the connection and ends it (no-op once ended). */
void conn_fail(struct ez_conn *conn, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, for an end whose goodbye-like message (a shared-secret
 * refusal) the caller has posted: the teardown waits for it. */
void conn_fail_after_bye(struct ez_conn *conn, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The one way a connection changes state: (state, event) through the
 * table of conn_fsm.c, then the row's actions. status goes with CE_END. */
void conn_fire(struct ez_conn *conn, enum conn_event ev, int status);
/* Ended: saying goodbye, draining, finishing or dead. */
static inline int conn_is_ended(const struct ez_conn *conn)
{
	return !conn_state_live(conn->state);
}

/* Passive side, called by ez_accept() with the request's data. */
struct ez_conn_req;
int conn_accept(struct ez_conn_req *req, const struct ez_conn_opts *opts,
		const struct ez_conn_cbs *cbs, void *arg, struct ez_conn **out);

/* The device's registry (conn_qp.c): the ops of the connection's first QP
 * (its dqp) and of each extra path's (conn_path's dqp). Receives and QP
 * events go to the connection; port and device events come through its
 * first QP only. */
extern const struct device_qp_ops conn_qp_ops;
extern const struct device_qp_ops path_qp_ops;
/* Points op's wr_id at its device_wr, whose completion is conn_on_send_wc(). */
void conn_op_bind(struct op *op);

/* Data path (msg.c). */
void conn_on_send_wc(struct op *op, const struct ibv_wc *wc);
void conn_on_recv_wc(struct ez_conn *conn, const struct ibv_wc *wc);
int conn_ops_init(struct ez_conn *conn);
void conn_ops_fini(struct ez_conn *conn);
/* A copied send's registered slot of len bytes (sendslab.c), set in op's
 * SGE; and its return, when the op completes or is given up. */
int conn_op_copy_slot(struct ez_conn *conn, struct op *op, size_t len);
void conn_op_release_copy(struct ez_conn *conn, struct op *op);
void conn_kick(struct ez_conn *conn);
/* The pool has credits for this connection again (srqpool_acct.kick). */
void conn_credit_kick(struct srqpool_acct *a);
void conn_unqueue_kick(struct ez_conn *conn);
/* Posts a deferred kick now (a close posts its goodbye behind it). */
void conn_flush_kick(struct ez_conn *conn);
int conn_post_bye(struct ez_conn *conn);
void conn_cancel_pending(struct ez_conn *conn);
/* Called whenever posted work drops: fires CE_DRAINED once a draining
 * connection has nothing posted left. */
void conn_drain_check(struct ez_conn *conn);
/* The control messages (credits, goodbyes, path notices, auth): op is a
 * dedicated one, or NULL for a free send op (returned at its completion);
 * data (len bytes) is copied. 0, or -errno with nothing posted. */
int conn_post_ctrl(struct ez_conn *conn, struct op *op, enum op_kind kind,
		   struct conn_path *path, uint32_t imm, const void *data, uint32_t len);

#endif
