/* easyrdma.h: the one public header of easyrdma (RDMA connections in one call). */
#ifndef EASYRDMA_H
#define EASYRDMA_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library compiles with -fvisibility=hidden: what this header declares is
 * its public API, so only that stays visible (applications never define
 * EZ_BUILDING_LIBRARY and see no change). */
#if defined(EZ_BUILDING_LIBRARY) && defined(__GNUC__)
#pragma GCC visibility push(default)
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

/* The version of this header. The library's (ez_version()) may be later:
 * a library with the soname the program was linked against runs it
 * unchanged; a release that changes behaviour a working program may rely
 * on takes a new soname (NEWS marks each such change RUN-TIME CHANGE). */
#define EZ_VERSION_MAJOR 0
#define EZ_VERSION_MINOR 2
#define EZ_VERSION_PATCH 0

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

/* ibv_create_qp() with a clear error: -EOPNOTSUPP and a message naming the
 * device and type when the device cannot make QPs of that type (RAW_PACKET
 * on Soft-RoCE, XRC where unsupported). The QP starts in RESET. */
int ez_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *init, struct ibv_qp **qp);

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

/*
 * Structs that grow (doc/abi.md): the option, callback, info and stats
 * structs only ever get fields appended. The functions that take them are
 * inline wrappers passing the sizeof of the structs this program was built
 * with to an ez_*_sz() entry point, so a program built against this header
 * runs on a later library: the library zero-fills what an older program's
 * struct lacks, and writes no byte past its size. A struct longer than the
 * library knows is accepted if the unknown bytes are zero, else -EINVAL.
 * Initialize them as a whole (= { ... } or memset) so that no byte is left
 * undefined.
 */

/* Zero in any field means its default. */
struct ez_srqpool_opts {
	uint32_t buf_size;	   /* bytes per receive buffer (default 4096) */
	uint32_t nbufs;		   /* buffers registered and posted at creation (default 256) */
	uint32_t low_watermark;	   /* srq_limit, absolute (default nbufs / 4) */
	uint32_t low_watermark_pct; /* or as a percentage of nbufs, when low_watermark is 0 */
	uint32_t refill_batch;	   /* receive WRs linked per ibv_post_srq_recv() (default 32) */
	uint32_t max_bufs;	   /* growth cap; 0 or <= nbufs: the pool never grows */
	uint32_t expected_conns;   /* connections the receive credits are shared over at least:
				    * each starts with its full share (0: size by those attached,
				    * a connection starts with one credit and earns its share) */
	/* Large messages (above buf_size, by rendezvous, ez_send(3)): bytes of
	 * them the pool's connections hold at once, being fetched or held by
	 * the application; a fetch beyond waits for a release [64 MiB; one
	 * message always fits]. Field added after 0.2. */
	uint64_t large_max_bytes;
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
	/* Receive credits: each attached connection's peer may hold up to
	 * credit_share; all of them together never more than the buffers
	 * posted minus credit_reserve (see ez_srqpool_new(3)). */
	uint32_t expected_conns;
	uint32_t credit_share;	   /* credits one connection may hold now */
	uint32_t credit_reserve;   /* posted buffers never granted (credit-only messages) */
	uint32_t conn_granted_max; /* most credits one connection ever held */
	uint64_t credits_granted;  /* credits all peers hold or have in flight now */
	uint64_t credits_granted_max; /* highest credits_granted seen */
	uint64_t credits_withheld; /* returns refused: the connection was over its share */
	uint64_t credit_waits;	   /* returns that waited for buffers to be reposted */
	uint64_t rebalances;	   /* share changes (attach, detach, growth) */
	/* Large messages (rendezvous), added after 0.2. */
	uint64_t large_bytes;	   /* bytes of them fetching or held by the application now */
	uint64_t large_max_bytes;  /* the bound (ez_srqpool_opts.large_max_bytes) */
	uint64_t large_waits;	   /* fetches that waited for the bound */
	/* The device's registered large-message buffers kept for reuse once
	 * given back (by every pool and connection of the context on the
	 * device, sends' copies too; at most 64 MiB), and the bytes freed
	 * because none was taken for 5 s (ez_srqpool_new(3)). */
	uint64_t large_cached_bytes;
	uint64_t large_trimmed_bytes;
};

/* One SRQ and its registered buffers on the device named (NULL: the first). */
int ez_srqpool_new_sz(struct ez_ctx *ctx, const char *device,
		      const struct ez_srqpool_opts *opts, size_t opts_size,
		      struct ez_srqpool **pool);
static inline int ez_srqpool_new(struct ez_ctx *ctx, const char *device,
				 const struct ez_srqpool_opts *opts, struct ez_srqpool **pool)
{
	return ez_srqpool_new_sz(ctx, device, opts, sizeof(*opts), pool);
}
/* -EBUSY while connections are attached or buffers are held; nothing is freed then. */
int ez_srqpool_free(struct ez_srqpool *pool);
int ez_srqpool_stats_sz(const struct ez_srqpool *pool, struct ez_srqpool_stats *stats,
			size_t stats_size);
static inline int ez_srqpool_stats(const struct ez_srqpool *pool, struct ez_srqpool_stats *stats)
{
	return ez_srqpool_stats_sz(pool, stats, sizeof(*stats));
}
/* The pool's last failure (refills run from events, so no call returns it); "" if none. */
const char *ez_srqpool_errmsg(const struct ez_srqpool *pool);

/* A received message: valid until released; released buffers go back to the
 * pool. A struct ez_buf * is a handle carrying the buffer's generation: one
 * kept after its release is refused (logged, nothing changed) once the
 * buffer holds another message (ez_buf_release(3)). */
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
struct iovec;

/*
 * Threading: an ez_ctx and everything made from it (listeners, requests,
 * connections, MRs, pools, received buffers) belong to the thread that
 * called ez_ctx_new() (one ctx per thread, one thread per ctx). Callbacks
 * run on that thread, from the libev loop or from ez_ctx_process(). Any
 * callback may call any function of this API, including ez_conn_close() on
 * its own connection. Every call checks the calling thread (a compare,
 * always on): from another thread, calls that return an int do nothing and
 * return -EPERM with ez_errmsg() naming the call and both threads; the
 * others (ez_conn_close, ez_listener_close, ez_buf_release, ez_buf_data,
 * getters) do nothing, return NULL/0/"" and log the error. See THREADS in
 * easyrdma(7). The one call that reaches another thread's context is
 * ez_handoff() (a connection request handed to it; a listener's workers
 * do the same): see the end of this header.
 */

/* ez_ctx_new() flags. */
enum {
	/* No libev watcher: the application polls ez_ctx_fd() for POLLIN with
	 * its own loop (epoll, poll, io_uring) and calls ez_ctx_process(). */
	EZ_CTX_NO_LOOP = 1u << 0,
	/* Busy-poll mode, for latency: the completion queues are polled on
	 * every pass instead of waiting for the completion channel (which is
	 * never armed), so a completion costs no interrupt and no wakeup, and
	 * one core spins. On a libev loop an ev_idle watcher keeps the loop
	 * turning; with EZ_CTX_NO_LOOP, call ez_ctx_process() in a loop
	 * without waiting on the fd. */
	EZ_CTX_BUSY_POLL = 1u << 1,
	/* Confine each export to its connection with a protection domain of
	 * the connection's own (EZ_EXPORT_PD) even where the device has type-2
	 * memory windows; without memory windows that is the default for a
	 * connection on a private pool. Such a connection cannot receive from a
	 * shared pool, and does not reach EZ_MR_SHARED regions. See SECURITY
	 * in easyrdma(7). */
	EZ_CTX_EXPORT_PD = 1u << 2,
};

/* A context on loop (NULL: libev's default loop), or with EZ_CTX_NO_LOOP
 * on none. Devices are opened when a connection or pool first needs them. */
int ez_ctx_new(struct ev_loop *loop, unsigned int flags, struct ez_ctx **ctx);
/* -EBUSY (and nothing freed) while the application holds received buffers
 * of any of the context's pools (a closed connection's too: release them
 * first), or while listeners, connections, pools or MRs of the context are
 * alive: close and free them first. */
int ez_ctx_free(struct ez_ctx *ctx);
/* One fd that becomes readable when the context has work; level-triggered. */
int ez_ctx_fd(const struct ez_ctx *ctx);
/* Does whatever work is ready without blocking: CM events, completions,
 * device events, timers. Returns the number of events handled, or < 0:
 * -EBUSY when called from one of the context's own callbacks (a pass is
 * running), -EPERM from a thread that does not own the context. */
int ez_ctx_process(struct ez_ctx *ctx);
/* Milliseconds until the next library timer is due (-1: none), as a poll timeout. */
int ez_ctx_timeout_ms(const struct ez_ctx *ctx);

/* What a context's connections may make it hold (ez_ctx_set_limit(3)). */
enum ez_ctx_limit {
	/* Large messages that ez_send()/ez_sendv() copied into registered
	 * (pinned) buffers and that the peers have not fetched yet, in bytes,
	 * for the whole context: a send beyond it is refused with -ENOBUFS
	 * and on_send_ready follows once a staged message is fetched. A
	 * message larger than the limit still goes when nothing is staged.
	 * [256 MiB] */
	EZ_LIMIT_STAGED = 1,
	/* The same, for each peer address [64 MiB] */
	EZ_LIMIT_STAGED_PER_PEER = 2,
	/* Receive buffers the connections this context accepted registered
	 * in pools of their own (no ez_conn_opts.srqpool): recv_depth x
	 * min(max_msg_size, 64 KiB) each, counted at ez_accept(), which
	 * refuses a connection beyond it (-ENOBUFS; the peer reads why).
	 * [1 GiB: 4096 connections at the default options] */
	EZ_LIMIT_RECV_BUFS = 3,
	/* The same, for the connections accepted from each peer address
	 * [256 MiB: 1024 connections at the default options] */
	EZ_LIMIT_RECV_BUFS_PER_PEER = 4,
	/* Large messages this context's connections are fetching from their
	 * peers (rendezvous READs into registered buffers) or have delivered
	 * and the application still holds, in bytes, for the whole context:
	 * beyond it the next fetch waits (the peer's send with it) until
	 * memory is released. A message larger than the limit is still
	 * fetched when nothing is held. [256 MiB] */
	EZ_LIMIT_LARGE_RECV = 5,
	/* The same, for the fetches in progress from each peer address (a
	 * delivered message counts in the context's total only) [64 MiB] */
	EZ_LIMIT_LARGE_RECV_PER_PEER = 6,
};
/* ez_ctx_set_limit() value: no limit. */
#define EZ_LIMIT_NONE UINT64_MAX
/* Sets limit to value (0: its default; EZ_LIMIT_NONE: none), for what the
 * context holds from now on. 0, or -EINVAL (an unknown limit), -EPERM. */
int ez_ctx_set_limit(struct ez_ctx *ctx, enum ez_ctx_limit limit, uint64_t value);

/* Private data limits of rdma_cm on InfiniBand/RoCE (56 bytes in a connect
 * request, 196 in a reply, 148 in a reject) minus easyrdma's 16-byte header. */
#define EZ_CONNECT_DATA_MAX 40
#define EZ_ACCEPT_DATA_MAX 180
#define EZ_REJECT_DATA_MAX 132

/* How a connection's RoCEv2 UDP source port is chosen (ez_conn_opts.sport_policy;
 * see ez_conn_opts(3)). Fabrics hash the source port to pick a path (ECMP, LAG). */
enum ez_sport_policy {
	EZ_SPORT_DEFAULT = 0,	/* udp_sport if set (as EZ_SPORT_FIXED), else rdma_cm's label */
	EZ_SPORT_AUTO,		/* 0xC000 + (local QPN mod 16384): distinct for any 16384
				 * consecutive QPs of a device, whichever process owns them */
	EZ_SPORT_RANGE,		/* round-robin over sport_min..sport_max, per context */
	EZ_SPORT_FIXED,		/* udp_sport */
};

/* How the chosen port reaches the wire (ez_conn_info.sport_mech). */
enum ez_sport_mech {
	EZ_SPORT_MECH_NONE = 0,	/* InfiniBand or RoCEv1 port: no UDP, the policy is a no-op */
	EZ_SPORT_MECH_FLOW_LABEL, /* GRH flow label at RTR (RoCEv2, any device) */
	EZ_SPORT_MECH_MLX5DV,	/* mlx5dv_modify_qp_udp_sport() in RTS (mlx5 devices) */
};

/* A region given to the peer with the connection (ez_conn_opts.exports):
 * mr[off, off+len) with access (EZ_MR_REMOTE_*, a subset of the MR's),
 * confined to that connection as ez_conn_export() confines it. */
struct ez_export {
	struct ez_mr *mr;
	uint64_t off;
	uint64_t len;
	uint32_t access;
	uint32_t reserved;	/* must be 0 */
};
/* The most regions a side gives with the connection. */
#define EZ_CONN_EXPORTS_MAX 8

/* Zero in any field means its default (given in brackets), unless the
 * field's bit is set in comp_mask: then the value is taken as given, 0
 * included. */
struct ez_conn_opts {
	uint32_t send_depth;	   /* sends/RDMA ops posted or queued at once [64] */
	uint32_t recv_depth;	   /* buffers of the private receive pool [64] */
	uint32_t max_msg_size;	   /* largest message sent or received, above the receive buffers
				    * by rendezvous (ez_send(3)) [4096] */
	uint32_t inline_threshold; /* sends up to this size go inline, capped by the device [64] */
	uint32_t connect_timeout_ms; /* whole connect: resolve, route, CM exchange [5000] */
	uint8_t qp_timeout;	   /* local ACK timeout, 4.096 us * 2^n (0: none) [14] */
	uint8_t retry_count;	   /* transport retries, 0..7 (7: for ever on Soft-RoCE) [6] */
	uint8_t rnr_retry;	   /* RNR retries, 0..7 (7: forever) [7] */
	uint8_t min_rnr_timer;	   /* IB encoding 0..31 (0: 655.36 ms) [12] */
	enum ibv_mtu path_mtu;	   /* upper bound; the path's MTU if lower [path's] */
	uint8_t tos;		   /* IP type of service [0] */
	uint16_t udp_sport;	   /* RoCEv2 source port 0xC000..0xFFFF [rdma_cm's per-connection choice] */
	uint8_t responder_resources; /* RDMA reads the peer may have in flight to us [device max, <= 16] */
	uint8_t initiator_depth;   /* RDMA reads we may have in flight [device max, <= 16] */
	const void *private_data;  /* application bytes for the peer's handshake */
	uint32_t private_data_len; /* <= EZ_CONNECT_DATA_MAX (connect) or EZ_ACCEPT_DATA_MAX (accept) */
	struct ez_srqpool *srqpool; /* receive from this pool [a private pool of recv_depth buffers] */
	enum ez_sport_policy sport_policy; /* our direction's UDP source port [EZ_SPORT_DEFAULT] */
	uint16_t sport_min, sport_max;	/* EZ_SPORT_RANGE bounds, inclusive, in 0xC000..0xFFFF */
	uint32_t paths;		   /* RC QPs (paths) of this connection, 1..EZ_MAX_PATHS [1] */
	const void *auth_key;	   /* shared secret proved with HMAC in the handshake [none] */
	uint32_t auth_key_len;	   /* 16..EZ_AUTH_KEY_MAX bytes; 0: no check */
	uint32_t comp_mask;	   /* EZ_CONN_OPTS_* bits: fields set on purpose, 0 included */
	/* Dead-peer detection, ez_conn_opts(3), "Liveness". */
	uint32_t keepalive_interval_ms; /* nothing received this long: a probe the peer answers [0: off] */
	uint32_t keepalive_probes; /* unanswered probes, an interval apart, that end it [3] */
	uint32_t op_timeout_ms;	   /* an op outstanding this long ends the connection [0: never] */
	uint32_t reserved;	   /* must be 0 */
	/* Ops (sends, writes, reads, atomics) accepted past a full window of
	 * send_depth and posted in call order as room returns; -ENOBUFS only
	 * past these (ez_conn_opts(3), "The op queue") [0: none, -ENOBUFS at
	 * a full window]. A queued send holds a copy of its bytes. */
	uint32_t queue_depth;
	uint32_t reserved2;	   /* must be 0 */
	/* Large messages (ez_conn_opts(3), "Large messages"): this side
	 * fetches each one in RDMA READs of at most fetch_chunk bytes, up to
	 * four in flight, each retried by the transport on its own [0: 256
	 * KiB; 4096..2^30 taken exactly]. */
	uint32_t fetch_chunk;
	uint32_t flags;		   /* EZ_CONN_* below [0] */
	/* Regions given to the peer with the connection (ez_conn_opts(3),
	 * "Exports with the connection"): bound to this connection alone once
	 * it is up on this side, their keys in the peer's hands
	 * (ez_conn_peer_exports()) when its on_connect runs. The array is
	 * copied at the call; the MRs must stay registered until on_connect
	 * [none]. */
	const struct ez_export *exports;
	uint32_t nexports;	   /* 0..EZ_CONN_EXPORTS_MAX [0] */
	uint32_t reserved3;	   /* must be 0 */
	/* Session resume (ez_conn_opts(3), "Session resume"; both sides,
	 * paths >= 2): when every path has failed (a link down beyond the
	 * transport's retries, a port down, keepalive), the session waits
	 * this long to come back instead of ending: the active side dials
	 * the listener again, each side settles the ops the paths held, and
	 * nothing is lost or done twice; past it, on_disconnect(-ETIMEDOUT)
	 * [0: off; at most EZ_RESUME_MAX_MS]. */
	uint32_t resume_ms;
	uint32_t reserved4;	   /* must be 0 */
};

/* The longest resume window ez_conn_opts.resume_ms takes (10 minutes, as
 * NVMe-oF's default ctrl_loss_tmo). */
#define EZ_RESUME_MAX_MS 600000u

/* ez_conn_opts.flags. */
enum {
	/* Messages up to the receive buffer's size are delivered as they
	 * arrive, ahead of large messages still being fetched; each kind
	 * keeps its own send order [off: every message in send order]. */
	EZ_CONN_SMALL_FIRST = 1u << 0,
};

/* ez_conn_opts.comp_mask: the field is taken as given even when it is 0. */
enum {
	EZ_CONN_OPTS_INLINE_THRESHOLD = 1u << 0,    /* 0: no inline sends */
	EZ_CONN_OPTS_QP_TIMEOUT = 1u << 1,	    /* 0: wait for an ACK for ever */
	EZ_CONN_OPTS_RETRY_COUNT = 1u << 2,	    /* 0: no transport retry */
	EZ_CONN_OPTS_RNR_RETRY = 1u << 3,	    /* 0: no RNR retry */
	EZ_CONN_OPTS_MIN_RNR_TIMER = 1u << 4,	    /* 0: 655.36 ms */
	EZ_CONN_OPTS_RESPONDER_RESOURCES = 1u << 5, /* 0: the peer may not RDMA READ us */
	EZ_CONN_OPTS_INITIATOR_DEPTH = 1u << 6,	    /* 0: we do no RDMA READ */
};

/* The most paths a connection may have (ez_conn_opts.paths). It may grow
 * in a later library; the per-path arrays of ez_conn_info and
 * ez_conn_stats do not: they show the first EZ_INFO_PATHS paths, and
 * ez_conn_path_info() reports any path. */
#define EZ_MAX_PATHS 8
#define EZ_INFO_PATHS 8
#define EZ_AUTH_KEY_MAX 64
/* With a shared secret the handshake carries nonces and MACs in the private
 * data, leaving the application this much (see ez_conn_opts(3)). */
#define EZ_CONNECT_DATA_MAX_AUTH 8
#define EZ_ACCEPT_DATA_MAX_AUTH 132

/* Callbacks of one connection (any may be NULL). */
struct ez_conn_cbs {
	/* Exactly once: status 0 when established, or < 0 with ez_conn_errmsg()
	 * naming the step ("rdma_resolve_addr: ...", "rdma_connect: rejected by
	 * peer: <reason>"). After an error the connection is dead; close it. */
	void (*on_connect)(struct ez_conn *conn, int status, void *arg);
	/* A message: keep buf as long as needed, then ez_buf_release() it. */
	void (*on_recv)(struct ez_conn *conn, struct ez_buf *buf, void *arg);
	/* Once, after on_connect(0): the connection is down. 0: closed with
	 * ez_conn_close() on either side; -ECONNRESET: the peer went away
	 * without closing (its process died); other < 0: device or transport
	 * error. Every op has completed, and every message that arrived has
	 * been delivered, before it runs. */
	void (*on_disconnect)(struct ez_conn *conn, int status, void *arg);
	/* The peer's ez_write_imm() landed: its data is in our memory, imm is
	 * the peer's 32-bit value, len the bytes written. */
	void (*on_write_imm)(struct ez_conn *conn, uint32_t imm, uint32_t len, void *arg);
	/* A path of a multi-path connection failed (status < 0) and was taken
	 * out; the connection goes on over the paths left (paths_left > 0). */
	void (*on_path_down)(struct ez_conn *conn, unsigned int path, int status,
			     unsigned int paths_left, void *arg);
	/* Send readiness: after an op (ez_send, ez_write, ez_read, ...) was
	 * refused with -ENOBUFS because send_depth ops were outstanding, this
	 * runs once, as soon as one has completed and its room is free again
	 * (several refusals before that: still once); after a large send
	 * refused for the context's staging bounds (ez_ctx_set_limit()), once
	 * staged bytes come back. Not after the end. */
	void (*on_send_ready)(struct ez_conn *conn, void *arg);
};

/* A send or RDMA operation finished: 0, -ECANCELED (flushed by a close or an
 * error), or another negative errno from the work completion's status. */
/* An operation whose outcome cannot be known: an atomic (ez_atomic_cas(),
 * ez_atomic_fadd()) that a failed path held may have been applied at the
 * peer or not, and is not done again (it could apply twice). Its callback
 * gets -EZ_OUTCOME_UNKNOWN; see ez_connect(3), Multi-path connections. */
#define EZ_OUTCOME_UNKNOWN ENOTRECOVERABLE
typedef void (*ez_op_cb)(struct ez_conn *conn, int status, void *op_arg);

/* Connect to host:service (names or numeric; IPv4 or IPv6). On 0 the conn
 * handle is valid at once (ez_conn_close() may be called any time) and
 * cbs->on_connect will run exactly once, never from inside ez_connect().
 * Returned directly: arguments wrong in themselves (NULL, an option out
 * of range: -EINVAL), -ENOMEM. Whatever depends on the address comes
 * through on_connect: -EINVAL (a port above 65535, an unknown service),
 * -ENXIO (a host name that does not resolve), -EAGAIN (the resolver failed
 * for now), -ECONNREFUSED (rejected, or no listener), -ETIMEDOUT,
 * -EHOSTUNREACH, -ENETUNREACH, -EADDRNOTAVAIL, -EPROTO (bad handshake),
 * -EACCES (shared secret), -ECANCELED (closed before connected). */
int ez_connect_sz(struct ez_ctx *ctx, const char *host, const char *service,
		  const struct ez_conn_opts *opts, size_t opts_size,
		  const struct ez_conn_cbs *cbs, size_t cbs_size, void *arg,
		  struct ez_conn **conn);
static inline int ez_connect(struct ez_ctx *ctx, const char *host, const char *service,
			     const struct ez_conn_opts *opts, const struct ez_conn_cbs *cbs,
			     void *arg, struct ez_conn **conn)
{
	return ez_connect_sz(ctx, host, service, opts, sizeof(*opts), cbs, sizeof(*cbs), arg,
			     conn);
}

/* A connection request seen by a listener; valid until ez_accept(),
 * ez_reject() or ez_handoff() (one of them must be called, now or later). */
typedef void (*ez_request_cb)(struct ez_listener *listener, struct ez_conn_req *req, void *arg);

/* ez_listen_opts.placement: which worker a request goes to. */
enum ez_placement {
	EZ_PLACE_ROUND_ROBIN = 0,	/* each worker in turn */
	EZ_PLACE_LEAST_CONNS = 1,	/* the one with the fewest connections and requests */
	EZ_PLACE_CALLBACK = 2,		/* ez_listen_opts.place decides */
};
/* On the listener's thread: the index in workers of the worker req goes
 * to, or < 0 to keep it (the listener's own on_request; rejected if NULL). */
typedef int (*ez_place_cb)(struct ez_listener *listener, const struct ez_conn_req *req,
			   unsigned int nworkers, void *arg);

struct ez_listen_opts {
	int backlog;		/* rdma_listen() backlog [128] */
	const void *auth_key;	/* requests that do not prove this shared secret are
				 * refused before on_request sees them [none] */
	uint32_t auth_key_len;	/* 16..EZ_AUTH_KEY_MAX bytes; 0: no check */
	/* Peers whose RDMA requests our responder refused (each such failure
	 * ends that connection with -EACCES) or that broke the protocol (cut
	 * with -EPROTO): an address with this many
	 * failures within access_fail_window_ms is refused, with a reason,
	 * until access_ban_ms after its last one, and so is every address of
	 * an IPv4 /24 or IPv6 /64 with 4 times as many [0: never refused]. */
	uint32_t access_fail_limit;
	uint32_t access_fail_window_ms;	/* [60000] */
	uint32_t access_ban_ms;		/* [30000] */
	/* Handshakes in progress (a request on_request has not answered, an
	 * accepted connection not yet established or, keyed, not yet proved):
	 * a request beyond these is rejected with a reason naming the limit. */
	uint32_t max_pending;		/* per listener [256; 0: default] */
	uint32_t max_pending_per_peer;	/* per peer address [64; 0: default] */
	uint32_t handshake_timeout_ms;	/* request to our reply, and our reply
					 * to established (and proved): each
					 * side's part [2000; 0: default] */
	/* Worker contexts (ez_listen(3), "Workers"): each request is handed
	 * to one of them (ez_handoff()), whose on_request (given to
	 * ez_ctx_take_requests()) runs on the worker's thread. */
	uint32_t nworkers;		/* contexts in workers [0: none] */
	uint32_t placement;		/* enum ez_placement [EZ_PLACE_ROUND_ROBIN] */
	struct ez_ctx *const *workers;	/* each has called ez_ctx_take_requests() */
	ez_place_cb place;		/* EZ_PLACE_CALLBACK: the application's choice */
	/* Connections (established, and handshakes in progress): a request
	 * beyond these is rejected at once with a reason naming the limit
	 * (on_request never sees it); a connection that ends frees its place.
	 * The defaults keep a 2 GiB server alive against one host opening
	 * connections until refused: at the default ez_conn_opts one accepted
	 * connection pins ~256 KiB, so 1024 from one address pin ~256 MiB
	 * and 4096 on a listener or context ~1 GiB. A server that accepts
	 * more (or larger: max_msg_size 16 MiB pins ~4 MiB a connection) sets
	 * them to what its memory holds. With workers, each worker context
	 * counts the connections it accepted against these. */
	uint32_t max_conns;		/* per listener [4096; 0: default] */
	uint32_t max_conns_per_peer;	/* per peer address [1024; 0: default] */
	uint32_t max_ctx_conns;		/* connections of the accepting context,
					 * ez_connect()'s included [4096; 0: default] */
	uint32_t reserved;		/* 0 */
};

/* Listen on address (NULL: any, IPv6 and IPv4) and service ("0": a free
 * port, see ez_listener_port()). Names resolve synchronously. */
int ez_listen_sz(struct ez_ctx *ctx, const char *address, const char *service,
		 const struct ez_listen_opts *opts, size_t opts_size, ez_request_cb on_request,
		 void *arg, struct ez_listener **listener);
static inline int ez_listen(struct ez_ctx *ctx, const char *address, const char *service,
			    const struct ez_listen_opts *opts, ez_request_cb on_request,
			    void *arg, struct ez_listener **listener)
{
	return ez_listen_sz(ctx, address, service, opts, sizeof(*opts), on_request, arg,
			    listener);
}
/* Rejects pending requests, stops listening, frees. Never blocks. */
void ez_listener_close(struct ez_listener *listener);
uint16_t ez_listener_port(const struct ez_listener *listener);

const struct sockaddr *ez_conn_req_peer(const struct ez_conn_req *req);
/* The application bytes of the peer's handshake (untrusted, len <= EZ_CONNECT_DATA_MAX). */
const void *ez_conn_req_data(const struct ez_conn_req *req, size_t *len);
/* Creates the connection (QP to RTS) and replies; cbs->on_connect runs once
 * the peer confirms. On error the request is rejected and freed. */
int ez_accept_sz(struct ez_conn_req *req, const struct ez_conn_opts *opts, size_t opts_size,
		 const struct ez_conn_cbs *cbs, size_t cbs_size, void *arg,
		 struct ez_conn **conn);
static inline int ez_accept(struct ez_conn_req *req, const struct ez_conn_opts *opts,
			    const struct ez_conn_cbs *cbs, void *arg, struct ez_conn **conn)
{
	return ez_accept_sz(req, opts, sizeof(*opts), cbs, sizeof(*cbs), arg, conn);
}
/* Refuses with reason bytes (<= EZ_REJECT_DATA_MAX) the peer's on_connect
 * shows in its message; frees req. */
int ez_reject(struct ez_conn_req *req, const void *reason, size_t len);

/* Starts closing; never blocks. Work waiting for credits completes with
 * -ECANCELED; a goodbye goes behind the posted work, then the QP enters ERR
 * (posted work reports its real status, or -ECANCELED when flushed); then
 * on_disconnect(0) runs (or on_connect(-ECANCELED) if not yet connected)
 * and the handle is freed. Call it exactly once per handle, also after an
 * error; no callback runs after it for a dead connection. */
void ez_conn_close(struct ez_conn *conn);

/* The message of the connection's last error ("" if none). */
const char *ez_conn_errmsg(const struct ez_conn *conn);
void *ez_conn_arg(const struct ez_conn *conn);

/* ez_conn_info.export_mech: how a region is confined to one connection. */
enum ez_export_mech {
	EZ_EXPORT_NONE = 0,	/* the device has no type-2 memory windows: ez_conn_export() refuses */
	EZ_EXPORT_MW2 = 1,	/* a type-2 memory window bound to the connection's QP */
	/* The region registered again on the connection's own protection
	 * domain (EZ_CTX_EXPORT_PD, or a device without memory windows). */
	EZ_EXPORT_PD = 2,
};

struct ez_conn_info {
	uint32_t qp_num;
	uint32_t remote_qp_num;
	enum ibv_mtu path_mtu;
	uint32_t flow_label;	/* GRH flow label of our direction */
	uint16_t udp_sport;	/* RoCEv2 UDP source port of our direction (0: sport_mech NONE) */
	char device[64];
	uint8_t port;
	struct sockaddr_storage local, peer;
	uint32_t max_msg_size;	/* largest message ez_send can send (rendezvous included) */
	uint32_t peer_credits;	/* receive credits the peer advertised */
	uint32_t send_credits;	/* credits available now */
	uint32_t max_inline;
	enum ez_sport_policy sport_policy; /* the policy in effect */
	enum ez_sport_mech sport_mech;	/* NONE: udp_sport and flow_label mean nothing */
	/* Multi-path (ez_conn_opts.paths): the paths negotiated, those still
	 * carrying traffic, and per path its QPs, our direction's UDP source
	 * port and 0 or the status that took it out. Path 0 is qp_num. */
	uint32_t paths, paths_live;
	uint32_t path_qp_num[EZ_INFO_PATHS];
	uint32_t path_remote_qp_num[EZ_INFO_PATHS];
	uint16_t path_udp_sport[EZ_INFO_PATHS];
	int32_t path_status[EZ_INFO_PATHS];
	/* How ez_conn_export() confines a region to this connection. */
	uint32_t export_mech;	/* enum ez_export_mech */
	uint32_t exports;	/* regions exported to it now */
};
int ez_conn_info_sz(const struct ez_conn *conn, struct ez_conn_info *info, size_t info_size);
static inline int ez_conn_info(const struct ez_conn *conn, struct ez_conn_info *info)
{
	return ez_conn_info_sz(conn, info, sizeof(*info));
}

/* One path of a connection, any of its ez_conn_info.paths (ez_conn_path_info()). */
struct ez_path_info {
	uint32_t index;		/* the path: 0..paths-1; 0 is the QP rdma_cm connected */
	uint32_t qp_num, remote_qp_num;
	int32_t status;		/* 0: carrying traffic; else the -errno that took it out */
	uint8_t live;		/* takes new work */
	uint8_t port;		/* the local device's port */
	uint16_t udp_sport;	/* RoCEv2 UDP source port of our direction (0: none) */
	char device[64];	/* the local device */
	uint8_t gid[16];	/* our GID on the path (network order) */
	uint8_t remote_gid[16];	/* the peer's */
	uint32_t gid_index;	/* of gid in the port's table */
	uint32_t posted;	/* WRs on its send queue now */
	uint64_t ops, bytes;	/* ops posted on it and their payload bytes */
	uint64_t msgs_recv;	/* messages received on it */
	/* Exact failover (a failed path of a connection of several paths;
	 * ez_connect(3)): of the ops it held at its failure, those the
	 * peer's count showed had arrived, those posted again on a live
	 * path, and atomics that ended with -EZ_OUTCOME_UNKNOWN; receives
	 * that completed on it after this side's count went to the peer,
	 * dropped (the peer sent them again). */
	uint32_t settled_done, reposted, outcome_unknown, recvs_dropped;
	/* Times the path was made again after a failure (new QPs at both
	 * ends; the counters above are its last failure's). */
	uint32_t rebuilds;
	/* Tries to make it again that were held, because regions exported
	 * on the path (ez_conn_export(), this side's or the peer's) are
	 * bound to its old QP: it stays down until they are revoked. */
	uint32_t rebuilds_held;
};
int ez_conn_path_info_sz(const struct ez_conn *conn, uint32_t path, struct ez_path_info *info,
			 size_t info_size);
static inline int ez_conn_path_info(const struct ez_conn *conn, uint32_t path,
				    struct ez_path_info *info)
{
	return ez_conn_path_info_sz(conn, path, info, sizeof(*info));
}

struct ez_conn_stats {
	uint64_t msgs_sent, bytes_sent;
	uint64_t msgs_recv, bytes_recv;
	uint64_t writes, reads, rdma_bytes;
	uint64_t credit_msgs_sent, credit_msgs_recv;
	uint64_t waits_for_credits;	/* ops queued because the peer had no credit */
	uint64_t op_errors;		/* ops completed with a status != 0 */
	uint64_t write_imms, write_imms_recv; /* ez_write_imm() posted / landed here */
	/* Per path: ops posted (sends, writes, reads), their payload bytes,
	 * messages received; and paths taken out after a failure. */
	uint64_t path_ops[EZ_INFO_PATHS];
	uint64_t path_bytes[EZ_INFO_PATHS];
	uint64_t path_msgs_recv[EZ_INFO_PATHS];
	uint64_t paths_down;
	/* Keepalive probes this side sent, and probes the peer sent here. */
	uint64_t keepalives_sent, keepalives_recv;
	/* Ops refused for lack of room (-ENOBUFS: send_depth outstanding),
	 * and on_send_ready calls that followed. */
	uint64_t send_refusals, send_ready_calls;
	uint64_t atomics;		/* ez_atomic_cas/fadd posted */
	/* Callback-less small sends posted without a completion of their
	 * own (a later one accounts for them), and the teardowns that had
	 * to post a WR into the QP in ERR to account for the last of them. */
	uint64_t sends_unsignalled, seals;
	/* The op queue (ez_conn_opts.queue_depth): ops accepted into it, and
	 * the most it held at once. */
	uint64_t ops_queued, ops_queued_most;
	/* Large messages received: the RDMA READs that fetched them
	 * (fetch_chunk each at most), and small messages delivered ahead of
	 * one still being fetched (EZ_CONN_SMALL_FIRST). */
	uint64_t fetch_reads, small_first;
	/* Times a fetch of a large message waited for the context's bound
	 * on them (EZ_LIMIT_LARGE_RECV, EZ_LIMIT_LARGE_RECV_PER_PEER). */
	uint64_t large_recv_waits;
	/* Session resume (ez_conn_opts.resume_ms): times every path was lost,
	 * times the session came back, and the active side's dials. */
	uint64_t sessions_lost, resumes, resume_dials;
};
int ez_conn_stats_sz(const struct ez_conn *conn, struct ez_conn_stats *stats,
		     size_t stats_size);
static inline int ez_conn_stats(const struct ez_conn *conn, struct ez_conn_stats *stats)
{
	return ez_conn_stats_sz(conn, stats, sizeof(*stats));
}

/* Send a copy of data (len <= the peer's max message size, else -EMSGSIZE
 * before anything is posted). The data is copied before return; cb (may be
 * NULL) runs when the send completes. -ENOBUFS: send_depth ops already
 * outstanding (and, with ez_conn_opts.queue_depth, that many queued behind
 * them; every op call below alike); -ENOTCONN: not connected. Messages
 * beyond the peer's receive credits wait in the library (bounded by
 * send_depth). */
int ez_send(struct ez_conn *conn, const void *data, size_t len, ez_op_cb cb, void *op_arg);
int ez_sendv(struct ez_conn *conn, const struct iovec *iov, int iovcnt, ez_op_cb cb, void *op_arg);

/* Memory registration. Access is local (read/write) only unless asked:
 * EZ_MR_REMOTE_READ / EZ_MR_REMOTE_WRITE say what a peer may be given:
 * ez_conn_export() gives it to one connection (a memory window bound to
 * that connection's QP); the MR's own key grants nothing remote. With
 * EZ_MR_SHARED the MR's own key grants that access to every peer of the
 * context (ez_mr_export()): see easyrdma(7), SECURITY. */
enum {
	EZ_MR_REMOTE_READ = 1u << 0,
	EZ_MR_REMOTE_WRITE = 1u << 1,
	EZ_MR_SHARED = 1u << 2,	/* reachable by every peer of the context */
	EZ_MR_REMOTE_ATOMIC = 1u << 3, /* may be given for RDMA atomics (ez_atomic_cas(3)) */
};
/* On device (NULL: the first). The MR is usable by connections on that device. */
int ez_mr_reg(struct ez_ctx *ctx, const char *device, void *addr, size_t len,
	      unsigned int access, struct ez_mr **mr);
int ez_mr_dereg(struct ez_mr *mr);
void *ez_mr_addr(const struct ez_mr *mr);
size_t ez_mr_len(const struct ez_mr *mr);

/* What a peer needs to read or write a region: send it in a message. */
struct ez_rkey {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	/* The QP the key is bound to: EZ_RKEY_PATH_BOUND with the path's number
	 * in the low 8 bits (ez_conn_export() of a memory window), or 0: any
	 * path (ez_mr_export(), an export on a connection's own PD). Set by the
	 * library; the peer passes it on unchanged. `reserved`, its earlier
	 * name, is the same 4 bytes, so code using it still compiles (the struct
	 * stays 24 bytes with this word at offset 20: it travels in messages). */
#ifdef __GNUC__
	__extension__	/* an anonymous union is C11; also in C99 -pedantic */
#endif
	union {
		uint32_t path_binding;
		uint32_t reserved;
	};
};
/* The MR's own key, for an MR registered with EZ_MR_SHARED (any peer of
 * the context that has it may use it); else -EPERM. */
int ez_mr_export(const struct ez_mr *mr, struct ez_rkey *out);

/* ez_rkey.path_binding of a per-connection export: the window is bound to
 * the QP of path (path_binding & 0xff) and one-sided ops with it go on that
 * path. */
#define EZ_RKEY_PATH_BOUND 0x80000000u

/* mr[off, off+len) for this connection alone, with access (EZ_MR_REMOTE_*,
 * a subset of the MR's): a type-2 memory window bound to the connection's
 * QP, with a fresh key. Valid for the peer once it has *out (sent after
 * this call returns); until ez_conn_revoke(), ez_mr_dereg() or the
 * connection's end. -EOPNOTSUPP when the device has no type-2 windows. */
int ez_conn_export(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		   unsigned int access, struct ez_rkey *out);
/* The regions the peer gave with the connection (its
 * ez_conn_opts.exports, in its order), as ez_conn_export() gives keys:
 * valid from on_connect on until ez_conn_close(), untrusted like any key a
 * peer sends (a wrong one fails the op, not this side). NULL with *n 0 when
 * it gave none. */
const struct ez_rkey *ez_conn_peer_exports(const struct ez_conn *conn, unsigned int *n);
/* This side's: the keys made from ez_conn_opts.exports (for
 * ez_conn_revoke()), valid from on_connect on until ez_conn_close(); a
 * revoked one keeps its place. NULL with *n 0 when there are none. */
const struct ez_rkey *ez_conn_own_exports(const struct ez_conn *conn, unsigned int *n);
/* Invalidates an export of this connection at once (the window is freed):
 * the peer's later ops with it fail. -ENOENT if it is not (or no longer) one. */
int ez_conn_revoke(struct ez_conn *conn, const struct ez_rkey *rkey);

/* Zero-copy send of mr[off, off+len): the memory must stay unchanged until cb. */
int ez_send_mr(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
	       ez_op_cb cb, void *op_arg);
/* RDMA WRITE mr[off, off+len) to remote->addr + roff / RDMA READ it from there. */
int ez_write(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
	     const struct ez_rkey *remote, uint64_t roff, ez_op_cb cb, void *op_arg);
int ez_read(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
	    const struct ez_rkey *remote, uint64_t roff, ez_op_cb cb, void *op_arg);
/* RDMA WRITE with immediate: as ez_write(), then the peer's on_write_imm()
 * runs with imm once the data is in its memory. Uses one of the peer's
 * receive credits, like a send. */
int ez_write_imm(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		 const struct ez_rkey *remote, uint64_t roff, uint32_t imm,
		 ez_op_cb cb, void *op_arg);

/* ------------------------------------------------------------------ */
/* The listener's reply data, and RDMA atomics                       */
/* ------------------------------------------------------------------ */

/* Active side: the application bytes of the listener's reply (its
 * ez_conn_opts.private_data at ez_accept(); untrusted, *len <=
 * EZ_ACCEPT_DATA_MAX), valid from on_connect on until ez_conn_close().
 * NULL with *len 0 before the reply came (-ENOTCONN in ez_errmsg()) or on
 * an accepted connection (-EINVAL). */
const void *ez_conn_accept_data(const struct ez_conn *conn, size_t *len);

/* An RDMA atomic finished: status as ez_op_cb's; old is the remote word's
 * value before the operation (0 when status != 0). */
typedef void (*ez_atomic_cb)(struct ez_conn *conn, int status, uint64_t old, void *op_arg);
/* On the 8-byte aligned word at remote->addr + roff (exported with
 * EZ_MR_REMOTE_ATOMIC): compare-and-swap (swap is stored if the word equals
 * expect; cb gets the old value either way) and fetch-and-add. Atomic
 * against every other atomic on the word through the same device; one op
 * of send_depth. -EOPNOTSUPP when the device has no atomics, -EINVAL when
 * the word is misaligned or outside the key's range. */
int ez_atomic_cas(struct ez_conn *conn, const struct ez_rkey *remote, uint64_t roff,
		  uint64_t expect, uint64_t swap, ez_atomic_cb cb, void *op_arg);
int ez_atomic_fadd(struct ez_conn *conn, const struct ez_rkey *remote, uint64_t roff,
		   uint64_t add, ez_atomic_cb cb, void *op_arg);
/* ------------------------------------------------------------------ */
/* Many cores: connection requests handed to other threads' contexts   */
/* ------------------------------------------------------------------ */

/* On ctx's thread: ctx takes connection requests handed to it from other
 * threads (ez_handoff(), a listener's workers); on_request(listener, req,
 * arg) runs on ctx's thread for each, with the worker's own listener
 * (ez_listener_port() 0; not to be closed). The request is then ctx's:
 * ez_accept() makes the connection on ctx (its devices, CQ, pools,
 * callbacks). Called again, it replaces on_request and arg; with
 * on_request NULL, ctx stops taking them (requests on their way are
 * rejected: "worker stopped taking requests"), as ez_ctx_free() does
 * ("worker context freed"). */
int ez_ctx_take_requests(struct ez_ctx *ctx, ez_request_cb on_request, void *arg);

/* On the request's thread: hands req to target, a context of another
 * thread (or this one) that takes requests. The one call that reaches
 * another thread's context: it never waits for that thread. 0: req is
 * target's now (do not touch it); target's on_request will run on its
 * thread. < 0: req was rejected with a reason the peer sees and freed:
 * -ESHUTDOWN when target takes no requests (never asked, stopped, or
 * freed, also while this call runs), -ETIMEDOUT after the handshake
 * deadline, -EINVAL, or the errno of rdma_migrate_id(). */
int ez_handoff(struct ez_conn_req *req, struct ez_ctx *target);

#if defined(EZ_BUILDING_LIBRARY) && defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* EASYRDMA_H */
