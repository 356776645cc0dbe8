/* device.h: a verbs device as the context uses it: PD, completion channel, CQs, async events, the QP registry; a context's set of them. */
#ifndef EZ_DEVICE_DEVICE_H
#define EZ_DEVICE_DEVICE_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "loop/loop.h"
#include "wire/flow.h"
#include "qpfsm/qpfsm.h"
#include "sendslab.h"
#include "reaper.h"

/* The QP registry's first table; it doubles while it holds more QPs than
 * buckets, so a receive's lookup stays one or two steps at 10,000 QPs. */
#define DEVICE_QPN_BUCKETS 256
#define DEVICE_MECH_CACHE 8

/* A send-side work request of the owner: its wr_id is this struct's address
 * with CQ_OP_TAG set (device_wr_id), and its completion goes to done. */
struct device_wr {
	void (*done)(struct device_wr *wr, const struct ibv_wc *wc);
};

/* An async event as a QP's owner gets it. QP events go to that QP's
 * owner; a port or device event to every registered QP's. */
struct device_event {
	enum ibv_event_type type;
	int status;		/* what it means as an errno: QP errors -EIO, port down -ENETDOWN, device fatal -ENODEV */
	uint8_t port;		/* IBV_EVENT_PORT_ERR: the port that went down */
	const char *why;	/* the device's words for it, for the owner's error message */
};

struct device_qp;

/* What the owner of a QP registered for it. */
struct device_qp_ops {
	/* A receive completion on the QP (its wr_id a receive buffer). */
	void (*on_recv)(struct device_qp *qp, const struct ibv_wc *wc);
	void (*on_async_event)(struct device_qp *qp, const struct device_event *ev);
};

/* A QP in the device's registry, embedded in its owner. */
struct device_qp {
	uint32_t qpn;
	struct ibv_qp *qp;
	const struct device_qp_ops *ops;
	struct device_qp *next;	/* its bucket */
};

/* One CQ of a device, on the device's one completion channel. Its room is
 * claimed by connections (their sends) and pools (their receives), so it
 * never holds more completions than were claimed; its size follows what is
 * taken (ibv_resize_cq), up to the device's max_cqe. */
struct device_cq {
	struct device_cq *next;	/* the device's, oldest first */
	struct device *dev;
	struct ibv_cq *cq;
	int size;		/* its cqe now */
	int taken;		/* completions that may be outstanding at once */
	int promised;		/* kept for holders that take it later */
	int holders;		/* claims on it (struct device_cq_room) */
	unsigned int serial;	/* the device's n-th CQ, for messages */
	struct loop_defer poll_more;	/* completions left over from a bounded turn */
};

/* A holder's claim on one CQ: a connection's for its sends, a pool's for
 * its receives. */
struct device_cq_room {
	struct device_cq *cq;	/* NULL: nothing claimed */
	int taken;
	int promised;
};

struct device {
	struct device *next;	/* the set's */
	struct device_set *set;	/* once on the set's list */
	struct loop *loop;	/* watches and timers */
	struct ibv_context *cm_verbs;	/* rdma_cm's context for the device (process-wide) */
	struct ibv_context *verbs;	/* this context's own, from ibv_open_device() */
	struct ibv_device_attr attr;
	/* What every QP transition is validated against, queried once here
	 * rather than by ez_qp_modify() at every step of every connection. */
	struct qpfsm_limits lim;
	struct ibv_pd *pd;
	struct sendslab slab;	/* every connection's send copies */
	struct loop_timer slab_trim;	/* armed while the slab has chunks to trim */
	struct ibv_comp_channel *cc;
	int busy_poll;		/* the set's: CQs are never armed */
	struct device_cq *cqs;	/* on cc; at least one while the device is open */
	int ncq;
	int ncq_max;		/* the most at once */
	uint64_t cqs_made, cqs_freed;
	unsigned int cq_serial;
	int cq_reserved;	/* completions taken on all its CQs */
	struct loop_defer cq_reap;	/* frees CQs left without holders */
	struct loop_watch comp_watch;
	struct loop_watch async_watch;
	struct device_qp **qps;	/* by QP number, qp_buckets (a power of 2) chains */
	unsigned int qp_buckets;
	unsigned int nqp;
	/* While completions are dispatched, work the callbacks submit waits
	 * here and goes out after the batch (a connection's: one chain). */
	int dispatching;
	struct loop_defer_list after_batch;
	struct parked_id *parked;	/* CM ids kept while their port is down */
	struct reaper *reaper;		/* the set's: destroys CM ids off the loop */
	/* Which mechanism sets a QP's UDP source port, by port and source GID
	 * index: two queries each, so asked once, not at every connection's
	 * RTR. Forgotten when the GID table or a port changes. */
	struct {
		uint8_t port, is_global, valid;
		uint16_t sgid_index;
		enum ez_sport_mech mech;
	} mech_cache[DEVICE_MECH_CACHE];
	unsigned int mech_next;	/* the entry the next miss replaces */
	/* Registered large buffers kept for rendezvous (bigbuf.c), freed by
	 * the function it registered when the device closes. */
	void *big_cache;
	void (*big_cache_free)(struct device *dev);
	char name[64];
};

/* The devices a context opened, on its loop. */
struct device_set {
	struct loop *loop;
	int busy_poll;		/* CQs never armed: the owner polls them (device_set_poll) */
	struct device *list;
	/* The set's one CQ while it has one device with one CQ (the common
	 * case): a busy pass polls it without walking the lists. */
	struct device_cq *only;
	struct reaper reaper;	/* rdma_destroy_id() of ids that may wait on the network */
};

/* Completions polled at once (the size of a poll's batch on the stack). */
#define DEVICE_POLL_BATCH 32

/* The set's one CQ (NULL: several, or none), for a busy pass made in its
 * caller's own frame: ibv_poll_cq() of DEVICE_POLL_BATCH into wc, and
 * device_set_dispatch() only when it returned non-zero (n < 0 is logged).
 * What device_set_poll() does for one CQ, without a frame of its own. */
static inline struct ibv_cq *device_set_only_cq(const struct device_set *set)
{
	return set->only ? set->only->cq : NULL;
}
int device_set_dispatch(struct device_set *set, struct ibv_wc *wc, int n);

void device_set_init(struct device_set *set, struct loop *loop, int busy_poll);
/* Closes every device. */
void device_set_fini(struct device_set *set);
/* The device behind verbs (rdma_cm's), opened on first use. */
int device_set_get(struct device_set *set, struct ibv_context *verbs, struct device **out);
/* By name (NULL: the first rdma_cm knows). */
int device_set_by_name(struct device_set *set, const char *name, struct device **out);
/* cq_poll() on every CQ of every device; the completions handled. */
int device_set_poll(struct device_set *set);

/* flowdev_mech() for a QP on port with this source GID, from the cache. */
int device_sport_mech(struct device *dev, uint8_t port, int is_global, unsigned int sgid_index,
		      enum ez_sport_mech *mech);

/* A send slot from the device's slab (sendslab_get), arming the trim timer
 * when the slab has grown beyond one chunk a class. */
int device_slot_get(struct device *dev, size_t len, struct slab_slot **out);

/* Claims room on one CQ of the device for r's holder: take completions now
 * (the CQ resized to hold them) and promise more for later
 * (device_cq_take), on the oldest CQ where both fit, or on a new one. Fails
 * with the limit named: max_cqe for what one claim asks, max_cq, memory. */
int device_cq_claim(struct device *dev, struct device_cq_room *r, int take, int promise);
/* Takes n more on r's CQ, its promise first (0, or -ENOSPC with the
 * message: a QP cannot move to another CQ). */
int device_cq_take(struct device *dev, struct device_cq_room *r, int n);
/* Gives everything of r back; a CQ left without holders goes (the last one
 * stays), from deferred work. */
void device_cq_unclaim(struct device *dev, struct device_cq_room *r);

/* Registers qp (in ibv_qp *, by its number) with its owner's ops. */
void device_qp_add(struct device *dev, struct device_qp *dq, struct ibv_qp *qp,
		   const struct device_qp_ops *ops);
void device_qp_del(struct device *dev, struct device_qp *dq);
struct device_qp *device_qp_find(struct device *dev, uint32_t qpn);

/* Runs d when the completion batch being dispatched ends (work its
 * callbacks submitted goes out together); idempotent while queued. */
void device_after_batch(struct device *dev, struct loop_defer *d);
void device_after_batch_cancel(struct device *dev, struct loop_defer *d);

/* A batch of completions whose callbacks' work should go out together:
 * while one is open (they nest), device_after_batch() holds that work, and
 * the close that ends the outermost runs it. The device opens one around
 * every polled batch but its last completion; an owner opens its own
 * around several completions it finishes at once (a send's unsignalled
 * run). */
static inline void device_batch_open(struct device *dev)
{
	dev->dispatching++;
}

void device_batch_close_run(struct device *dev);
static inline void device_batch_close(struct device *dev)
{
	if (--dev->dispatching == 0 && !loop_defer_list_empty(&dev->after_batch))
		device_batch_close_run(dev);
}

/* Destroys a CM id whose destroy may wait on the network (one that was
 * connected: its DREQ unanswered, or one to send) on the set's reaper
 * thread; the caller has acked its events and cleared id->context. */
void device_reap_id(struct device *dev, struct rdma_cm_id *id);

/* Whether the port is down now (ibv_query_port; 0 if that fails). */
int device_port_down(struct device *dev, uint8_t port);
/* Keeps an ended connection's CM id, detached from it, until the port is
 * up again (or the device closes), then destroys it: destroying it sends a
 * DREQ, and on Soft-RoCE (Linux 6.1) a CM message sent while the port is
 * down breaks QP1 until the device is recreated (tests/faults/README.md). */
void device_park_id(struct device *dev, uint8_t port, struct rdma_cm_id *id);

#endif
