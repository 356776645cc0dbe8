/* easyrdma.h: the one public header of easyrdma (RDMA connections in one call). */
#ifndef EASYRDMA_H
#define EASYRDMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions: functions return 0 or a negative errno. The message of the
 * last failure in the calling thread (naming the verb that failed and the
 * attribute or value at fault) is ez_errmsg(); objects that live longer keep
 * their own (ez_conn_errmsg()).
 */

/* ------------------------------------------------------------------ */
/* Library-wide: version, errors, logging                              */
/* ------------------------------------------------------------------ */

const char *ez_version(void);

/* strerror() for a negative (or positive) errno value; never NULL. */
const char *ez_strerror(int err);

/* The message of the last failed easyrdma call in this thread ("" if none). */
const char *ez_errmsg(void);

enum ez_log_level {
	EZ_LOG_ERR = 0,
	EZ_LOG_WARN = 1,
	EZ_LOG_INFO = 2,
	EZ_LOG_DEBUG = 3,
};

typedef void (*ez_log_fn)(enum ez_log_level level, const char *msg, void *arg);

/* Route the library's log lines to fn (NULL: stderr) up to max_level. */
void ez_set_log(ez_log_fn fn, void *arg, enum ez_log_level max_level);

/* ------------------------------------------------------------------ */
/* qpfsm: the QP state machine (lib/qpfsm)                             */
/* ------------------------------------------------------------------ */

/* Validate (type, current state, mask, values) against the verbs transition
 * rules and the device/port limits, then call ibv_modify_qp(). On -EINVAL
 * nothing was modified; ez_errmsg() names the transition and the attribute,
 * e.g. "RC INIT->RTR: IBV_QP_AV required". */
int ez_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);

/* The checks of ez_qp_modify() alone: 0 or -EINVAL (ez_errmsg() says why);
 * the QP is never modified. */
int ez_qp_validate(struct ibv_qp *qp, const struct ibv_qp_attr *attr, int attr_mask);

/* Walk qp from its current state to target (normally IBV_QPS_RTS) with the
 * attributes given in attr/attr_mask, filling defaults for the ones left out
 * (timeouts, retry counts, PSNs, rd_atomic from the device caps). On failure
 * ez_errmsg() names the step, e.g. "RC INIT->RTR: IBV_QP_AV required". */
int ez_qp_ladder(struct ibv_qp *qp, enum ibv_qp_state target,
		 const struct ibv_qp_attr *attr, int attr_mask);

/* ibv_query_qp() that re-reads the volatile attributes and clears the ones
 * not valid in the current state. */
int ez_qp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		struct ibv_qp_init_attr *init_attr);

/* SQ drain: RTS -> SQD with en_sqd_async_notify; fn (may be NULL) runs once,
 * from ez_qp_async_event(), when IBV_EVENT_SQ_DRAINED arrives for qp. */
typedef void (*ez_qp_drained_fn)(struct ibv_qp *qp, void *arg);
int ez_qp_drain_sq(struct ibv_qp *qp, ez_qp_drained_fn fn, void *arg);
/* Forget qp's drain hook (before destroying a QP whose drain never ended). */
void ez_qp_drain_cancel(struct ibv_qp *qp);
/* Feed every event from ibv_get_async_event() here: returns 1 when it was an
 * IBV_EVENT_SQ_DRAINED with a hook (the hook has run), else 0. The caller
 * still acks the event. */
int ez_qp_async_event(const struct ibv_async_event *event);

const char *ez_qp_state_str(enum ibv_qp_state state);
const char *ez_qp_type_str(enum ibv_qp_type type);
const char *ez_qp_attr_mask_str(int one_mask_bit);

/* RoCEv2 UDP source port <-> GRH flow label (as ibv_flow_label_to_udp_sport).
 * ez_udp_sport_to_flow_label() returns a nonzero label that gives sport, or 0
 * when sport is outside 0xC000..0xFFFF (no label gives it). */
uint16_t ez_flow_label_to_udp_sport(uint32_t flow_label);
uint32_t ez_udp_sport_to_flow_label(uint16_t sport);

/* ------------------------------------------------------------------ */
/* srqpool: shared receive queues that refill themselves (lib/srqpool)  */
/* ------------------------------------------------------------------ */

struct ez_ctx;
struct ez_srqpool;
struct ez_buf;

/* Zero in any field means its default. */
struct ez_srqpool_opts {
	uint32_t buf_size;	   /* bytes per receive buffer (default 4096) */
	uint32_t nbufs;		   /* buffers registered and posted at creation (default 256) */
	uint32_t low_watermark;	   /* srq_limit, absolute (default nbufs / 4) */
	uint32_t low_watermark_pct; /* or as a percentage of nbufs, when low_watermark is 0 */
	uint32_t refill_batch;	   /* receive WRs linked per ibv_post_srq_recv() (default 32) */
	uint32_t max_bufs;	   /* growth cap; 0 or <= nbufs: the pool never grows */
};

/* Level counters are the pool's own view: a buffer counts as posted until its
 * completion has been polled. The rnr_* counters are the device's (every QP
 * on every port of the device, not only this pool's), -1 where the device
 * does not report them. */
struct ez_srqpool_stats {
	uint64_t posted;	/* buffers on the SRQ now */
	uint64_t in_use;	/* received, held by the application */
	uint64_t free;		/* neither: waiting to be posted */
	uint64_t total;		/* buffers registered */
	uint64_t lowest_posted;	/* fewest buffers seen on the SRQ */
	uint64_t limit_events;	/* IBV_EVENT_SRQ_LIMIT_REACHED handled */
	uint64_t refills;	/* ibv_post_srq_recv() batches */
	uint64_t growths;	/* slabs added */
	uint64_t bytes_registered;
	uint32_t attached;	/* connections drawing from the pool */
	uint32_t low_watermark;	/* srq_limit armed again after every event */
	uint32_t srq_max_wr;	/* receive WRs the SRQ holds (device rounding included) */
	uint32_t max_bufs;	/* growth cap (== total when the pool cannot grow) */
	int64_t rnr_naks_sent;	   /* RNR NAKs the device sent: a receive found the SRQ empty */
	int64_t rnr_naks_received; /* RNR NAKs the device's senders got back */
};

/* One SRQ and its registered buffers on the device named (NULL: the first). */
int ez_srqpool_new(struct ez_ctx *ctx, const char *device,
		   const struct ez_srqpool_opts *opts, struct ez_srqpool **pool);
/* -EBUSY while connections are attached or buffers are held; nothing is freed then. */
int ez_srqpool_free(struct ez_srqpool *pool);
int ez_srqpool_stats(const struct ez_srqpool *pool, struct ez_srqpool_stats *stats);
/* The pool's last failure (refills run from events, so no call returns it); "" if none. */
const char *ez_srqpool_errmsg(const struct ez_srqpool *pool);

/* A received message: valid until released; released buffers go back to the pool. */
void *ez_buf_data(const struct ez_buf *buf);
size_t ez_buf_len(const struct ez_buf *buf);
void ez_buf_release(struct ez_buf *buf);

/* ------------------------------------------------------------------ */
/* Objects of the connection layer                                      */
/* ------------------------------------------------------------------ */

struct ev_loop;
struct ez_ctx;
struct ez_listener;
struct ez_conn;
struct ez_conn_req;
struct ez_mr;
struct ez_srqpool;
struct ez_buf;

#ifdef __cplusplus
}
#endif

#endif /* EASYRDMA_H */
