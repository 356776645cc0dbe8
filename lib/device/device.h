/* device.h: a verbs device as the context uses it: PD, completion channel, CQ, async events. */
#ifndef EZ_DEVICE_DEVICE_H
#define EZ_DEVICE_DEVICE_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "conn/ctx.h"
#include "wire/flow.h"
#include "qpfsm/qpfsm.h"
#include "sendslab.h"

#define DEVICE_QPN_BUCKETS 256
#define DEVICE_MECH_CACHE 8

struct device {
	struct device *next;
	struct ez_ctx *ctx;
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
	struct ibv_cq *cq;
	int cq_size;
	int cq_reserved;	/* completions that may be outstanding at once */
	struct loop_watch comp_watch;
	struct loop_watch async_watch;
	struct loop_defer poll_more;	/* completions left over from a bounded turn */
	struct ez_conn *qpn[DEVICE_QPN_BUCKETS];
	struct conn_path *path_qpn[DEVICE_QPN_BUCKETS];	/* extra QPs of multi-path connections */
	/* While completions are dispatched, work the callbacks submit waits
	 * here and goes out as one chain per connection after the batch. */
	int dispatching;
	struct ez_conn *kicks;
	struct parked_id *parked;	/* CM ids kept while their port is down */
	/* Which mechanism sets a QP's UDP source port, by port and source GID
	 * index: two queries each, so asked once, not at every connection's
	 * RTR. Forgotten when the GID table or a port changes. */
	struct {
		uint8_t port, is_global, valid;
		uint16_t sgid_index;
		enum ez_sport_mech mech;
	} mech_cache[DEVICE_MECH_CACHE];
	unsigned int mech_next;	/* the entry the next miss replaces */
	char name[64];
};

/* The device behind verbs (rdma_cm's), opened on first use. */
int device_get(struct ez_ctx *ctx, struct ibv_context *verbs, struct device **out);
/* By name (NULL: the first rdma_cm knows). */
int device_by_name(struct ez_ctx *ctx, const char *name, struct device **out);
void device_close(struct device *dev);

/* flowdev_mech() for a QP on port with this source GID, from the cache. */
int device_sport_mech(struct device *dev, uint8_t port, int is_global, unsigned int sgid_index,
		      enum ez_sport_mech *mech);

/* A send slot from the device's slab (sendslab_get), arming the trim timer
 * when the slab has grown beyond one chunk a class. */
int device_slot_get(struct device *dev, size_t len, struct slab_slot **out);

/* Keeps the CQ large enough for n more completions, resizing it if needed. */
int device_cq_reserve(struct device *dev, int n);
void device_cq_release(struct device *dev, int n);

void device_qp_add(struct device *dev, struct ez_conn *conn);
void device_qp_del(struct device *dev, struct ez_conn *conn);
/* The connection of a QP: its first QP or one of its extra paths. */
struct ez_conn *device_qp_find(struct device *dev, uint32_t qpn);

struct conn_path;
void device_path_add(struct device *dev, struct conn_path *p);
void device_path_del(struct device *dev, struct conn_path *p);

/* Whether the port is down now (ibv_query_port; 0 if that fails). */
int device_port_down(struct device *dev, uint8_t port);
/* Keeps an ended connection's CM id, detached from it, until the port is
 * up again (or the device closes), then destroys it: destroying it sends a
 * DREQ, and on Soft-RoCE (Linux 6.1) a CM message sent while the port is
 * down breaks QP1 until the device is recreated (tests/faults/README.md). */
void device_park_id(struct device *dev, uint8_t port, struct rdma_cm_id *id);

#endif
