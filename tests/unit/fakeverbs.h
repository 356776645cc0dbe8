/* fakeverbs.h: a connection's data path without a device. libibverbs' data-path verbs are inline dispatches through qp->context->ops (librpma's unit tests fake them the same way): a test-owned ibv_context whose post_send, post_srq_recv and poll_cq are this file's, an ez_conn, device, context and pool good enough for msg.c and sendq.c, and completions fed through the device's own dispatch (device_set_dispatch). */
#ifndef EZ_TESTS_UNIT_FAKEVERBS_H
#define EZ_TESTS_UNIT_FAKEVERBS_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "conn/conn_types.h"
#include "device/device.h"
#include "srqpool/pool.h"

#define FV_MAX_WRS 256
#define FV_NBUFS 16		/* receive buffers of the fake pool */
#define FV_BUF_SIZE 4096u
#define FV_QPN 77u

/* One WR the fake device took, as it saw it at the post (an inline send's
 * bytes are copied then, as a device does). */
struct fv_wr {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;
	uint32_t imm;		/* host order */
	int num_sge;
	uint64_t addr;
	uint32_t length, lkey;
	char bytes[64];
	int call;		/* the post_send call that took it (1..) */
};

struct fv {
	/* post_send: what it took, and how it refuses. */
	struct fv_wr wrs[FV_MAX_WRS];
	int nwrs;
	int calls;		/* post_send calls, refused ones too */
	int accept;		/* WRs it takes before refusing one; -1: every one */
	int ret;		/* its return then: a positive errno, or -1 with errno = err_errno */
	int err_errno;
	/* The SRQ: posted receive wr_ids, first in first out. */
	uint64_t srq[4 * FV_NBUFS];
	int srq_head, srq_tail;
	/* The connection's state machine (conn.c's take_transition stands
	 * here): how often it ran, the last row and status. */
	int fsm_calls;
	int fsm_status;
	enum conn_state fsm_next;
	unsigned int fsm_actions;
	/* EZ_LOG_ERR lines. */
	int nlog;
	char log[512];

	struct ibv_context vctx;
	struct ibv_qp qp;
	struct ibv_srq srq_obj;
	struct ibv_cq cq;
	struct device dev;
	struct device_cq dcq;
	struct device_set set;
	struct ez_ctx *ctx;
	struct ez_srqpool *pool;
	struct ez_buf *bufs;
	char *mem;
	struct ez_conn *conn;
};
extern struct fv fv;

struct fv_opts {
	uint32_t send_depth;	/* 0: 32, the least that allows silent sends */
	uint32_t op_timeout_ms;
	uint32_t credits;	/* send credits the peer gave in its handshake */
	uint32_t max_inline;	/* 0: 64 */
	uint32_t queue_depth;	/* the op queue's bound (0: none) */
};

/* An established connection of one path on the fake device, its ops
 * bound (conn_ops_init), its pool attached. */
struct ez_conn *fv_conn_new(const struct fv_opts *o);
void fv_conn_free(void);

/* post_send takes n more WRs, then refuses with ret (-1: errno = e). */
void fv_refuse_after(int n, int ret, int e);
void fv_accept_all(void);

/* Completions through the device's dispatch (device_set_dispatch: a
 * batch of n opens around the first n - 1, as a poll's does). */
void fv_dispatch(struct ibv_wc *wc, int n);
/* A send-queue completion of WR i (fv.wrs[i]). */
struct ibv_wc fv_send_wc_of(int i, enum ibv_wc_status st);
void fv_send_done(int i, enum ibv_wc_status st);
/* The next posted receive completes: bytes (len) written into its buffer,
 * imm in host order (has_imm), opcode IBV_WC_RECV or _RDMA_WITH_IMM. */
struct ibv_wc fv_recv_wc(enum ibv_wc_status st, enum ibv_wc_opcode opcode, int has_imm,
			 uint32_t imm, const void *bytes, uint32_t len);
void fv_recv(enum ibv_wc_status st, int has_imm, uint32_t imm, const void *bytes, uint32_t len);

/* The connection's ops on the free list. */
int fv_free_ops(void);
/* The receive buffers the application or the library holds now. */
uint32_t fv_bufs_in_use(void);

#endif
