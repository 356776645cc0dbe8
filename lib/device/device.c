/* device.c: opens a device for the context (PD, completion channel, CQs), keeps its QP registry, hands its async events to the QPs' owners, and polls its CQs (cq.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "device.h"
#include "base/error.h"
#include "base/log.h"
#include "srqpool/srqpool.h"

/* Async events handled per loop pass (a port event reaches every QP). */
#define DEVICE_ASYNC_PER_PASS 32

static void on_async(struct loop_watch *w);
static void cq_free(struct device_cq *c);
static int cq_new(struct device *dev, struct device_cq **out);
static void on_cq_reap(struct loop_defer *d);

/* Frees the verbs objects of a device; a failure (EBUSY: something still
 * uses them) is a leak worth a log line, not a reason to stop closing. */
static void device_release(struct device *dev)
{
	int err;

	while (dev->cqs)
		cq_free(dev->cqs);
	free(dev->qps);
	if (dev->cc && (err = ibv_destroy_comp_channel(dev->cc)))
		ezi_log_err("ibv_destroy_comp_channel(%s): %s", dev->name, ez_strerror(err));
	sendslab_fini(&dev->slab, dev->name);
	if (dev->pd && (err = ibv_dealloc_pd(dev->pd)))
		ezi_log_err("ibv_dealloc_pd(%s): %s", dev->name, ez_strerror(err));
	if (dev->verbs && ibv_close_device(dev->verbs))
		ezi_log_err("ibv_close_device(%s): %s", dev->name, ez_strerror(errno));
	free(dev);
}

int device_sport_mech(struct device *dev, uint8_t port, int is_global, unsigned int sgid_index,
		      enum ez_sport_mech *mech)
{
	unsigned int i;
	int ret;

	for (i = 0; i < DEVICE_MECH_CACHE; i++) {
		if (dev->mech_cache[i].valid && dev->mech_cache[i].port == port &&
		    dev->mech_cache[i].is_global == !!is_global &&
		    dev->mech_cache[i].sgid_index == sgid_index) {
			*mech = dev->mech_cache[i].mech;
			return 0;
		}
	}
	ret = flowdev_mech(dev->verbs, port, is_global, sgid_index, mech);
	if (ret)
		return ret;
	i = dev->mech_next++ % DEVICE_MECH_CACHE;
	dev->mech_cache[i].port = port;
	dev->mech_cache[i].is_global = !!is_global;
	dev->mech_cache[i].sgid_index = (uint16_t)sgid_index;
	dev->mech_cache[i].mech = *mech;
	dev->mech_cache[i].valid = 1;
	return 0;
}

static void forget_mechs(struct device *dev)
{
	for (unsigned int i = 0; i < DEVICE_MECH_CACHE; i++)
		dev->mech_cache[i].valid = 0;
}

struct parked_id {
	struct parked_id *next;
	struct rdma_cm_id *id;
	uint8_t port;
};

int device_port_down(struct device *dev, uint8_t port)
{
	struct ibv_port_attr pa;

	if (!port || ibv_query_port(dev->verbs, port, &pa))
		return 0;
	return pa.state == IBV_PORT_DOWN;
}

void device_park_id(struct device *dev, uint8_t port, struct rdma_cm_id *id)
{
	struct parked_id *p = malloc(sizeof(*p));

	if (!p) {
		if (rdma_destroy_id(id))
			ezi_log_warn("rdma_destroy_id: %s", ez_strerror(errno));
		return;
	}
	/* Its later events (the peer's DREQ) are acked and dropped. */
	id->context = NULL;
	p->id = id;
	p->port = port;
	p->next = dev->parked;
	dev->parked = p;
	ezi_log_info("device %s: port %u is down: CM id kept until it is up (no DREQ now)",
		     dev->name, port);
}

void device_reap_id(struct device *dev, struct rdma_cm_id *id)
{
	id->context = NULL;
	reaper_hand(dev->reaper, id);
}

/* Destroys the parked ids of port (0: all) on the reaper: destroying one
 * sends its DREQ now, and a peer that went away meanwhile never answers. */
static void unpark(struct device *dev, uint8_t port)
{
	struct parked_id **pp = &dev->parked, *p;

	while ((p = *pp)) {
		if (port && p->port != port) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		reaper_hand(dev->reaper, p->id);
		free(p);
	}
}

/* Every SLAB_TRIM_MS while the slab has chunks beyond each class's first:
 * a burst's chunks go once the load that needed them has gone. */
static void on_slab_trim(struct loop_timer *t)
{
	struct device *dev = container_of(t, struct device, slab_trim);
	unsigned int n = sendslab_trim(&dev->slab, dev->name);

	if (n)
		ezi_log_debug("device %s: %u idle send-slot chunks deregistered, %llu bytes still registered",
			      dev->name, n, (unsigned long long)dev->slab.bytes_registered);
	if (dev->slab.extra_chunks)
		loop_timer_start(dev->loop, &dev->slab_trim, SLAB_TRIM_MS);
}

int device_slot_get(struct device *dev, size_t len, struct slab_slot **out)
{
	int ret = sendslab_get(&dev->slab, len, out);

	if (!ret && dev->slab.extra_chunks && !loop_timer_armed(&dev->slab_trim))
		loop_timer_start(dev->loop, &dev->slab_trim, SLAB_TRIM_MS);
	return ret;
}

static void device_close(struct device *dev)
{
	unpark(dev, 0);
	loop_defer_cancel(dev->loop, &dev->cq_reap);
	loop_timer_stop(dev->loop, &dev->slab_trim);
	loop_watch_del(dev->loop, &dev->comp_watch);
	loop_watch_del(dev->loop, &dev->async_watch);
	if (dev->big_cache_free)
		dev->big_cache_free(dev);
	device_release(dev);
}

/* After a device or CQ came or went: set->only. */
static void set_note_cqs(struct device_set *set)
{
	struct device *d = set->list;

	set->only = d && !d->next && d->cqs && !d->cqs->next ? d->cqs : NULL;
}

void device_set_init(struct device_set *set, struct loop *loop, int busy_poll)
{
	set->loop = loop;
	set->busy_poll = busy_poll;
	set->list = NULL;
	set->only = NULL;
	reaper_init(&set->reaper);
}

void device_set_fini(struct device_set *set)
{
	struct device *dev;

	set->only = NULL;
	while ((dev = set->list)) {
		set->list = dev->next;
		dev->set = NULL;
		device_close(dev);
	}
	reaper_fini(&set->reaper);
}

static int poll_dispatch(struct device_cq *c, struct ibv_wc *wc, int n, int max_batches, int *full);

/* The busy-poll pass: every CQ of every device, each polled once into one
 * batch on this frame; only a CQ with completions goes on to the dispatch
 * loop (cq_poll()'s bound). An empty pass is the walk and one
 * ibv_poll_cq() per CQ, no call frame per device or CQ. */
static __attribute__((noinline)) int set_poll_all(struct device_set *set)
{
	struct ibv_wc wc[CQ_POLL_BATCH];
	struct device_cq *c;
	struct device *dev;
	int total = 0, n;

	for (dev = set->list; dev; dev = dev->next) {
		for (c = dev->cqs; c; c = c->next) {
			n = ibv_poll_cq(c->cq, CQ_POLL_BATCH, wc);
			if (__builtin_expect(n != 0, 0))
				total += poll_dispatch(c, wc, n, 0, NULL);
		}
	}
	return total;
}

int device_set_get(struct device_set *set, struct ibv_context *verbs, struct device **out)
{
	struct device *dev;
	int ret;

	for (dev = set->list; dev; dev = dev->next) {
		if (dev->cm_verbs == verbs) {
			*out = dev;
			return 0;
		}
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return ezi_fail(-ENOMEM, "device: out of memory");
	dev->loop = set->loop;
	dev->reaper = &set->reaper;
	dev->cm_verbs = verbs;
	loop_defer_list_init(&dev->after_batch);
	dev->comp_watch.fd = -1;
	dev->async_watch.fd = -1;
	dev->cq_reap.fn = on_cq_reap;
	dev->slab_trim.fn = on_slab_trim;
	snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(verbs->device));
	/* Our own verbs context, not rdma_cm's: rdma_cm keeps one per device
	 * for the whole process, and with it one async event fd. Two contexts
	 * (threads) reading that fd would take each other's QP, SRQ-limit and
	 * last-WQE events. The QPs we create on it are used with rdma_cm's ids
	 * by QP number only, which any context of the same device allows. */
	dev->verbs = ibv_open_device(verbs->device);
	if (!dev->verbs) {
		ret = ezi_fail(errno ? -errno : -ENODEV, "ibv_open_device(%s): %s", dev->name,
			       ez_strerror(errno ? errno : ENODEV));
		goto err;
	}
	verbs = dev->verbs;
	if (ibv_query_device(verbs, &dev->attr)) {
		ret = ezi_fail(-errno, "ibv_query_device(%s): %s", dev->name, ez_strerror(errno));
		goto err;
	}
	ret = qpfsm_limits_query(verbs, &dev->lim);
	if (ret)
		goto err;
	dev->pd = ibv_alloc_pd(verbs);
	if (!dev->pd) {
		ret = ezi_fail(-errno, "ibv_alloc_pd(%s): %s", dev->name, ez_strerror(errno));
		goto err;
	}
	sendslab_init(&dev->slab, dev->pd);
	dev->cc = ibv_create_comp_channel(verbs);
	if (!dev->cc) {
		ret = ezi_fail(-errno, "ibv_create_comp_channel(%s): %s", dev->name, ez_strerror(errno));
		goto err;
	}
	dev->busy_poll = set->busy_poll;
	dev->qp_buckets = DEVICE_QPN_BUCKETS;
	dev->qps = calloc(dev->qp_buckets, sizeof(*dev->qps));
	if (!dev->qps) {
		ret = ezi_fail(-ENOMEM, "device %s: out of memory (QP registry)", dev->name);
		goto err;
	}
	/* The first CQ stays as long as the device: a context that connects
	 * and closes in turn does not make and free one each time. */
	ret = cq_new(dev, NULL);
	if (ret)
		goto err;
	dev->comp_watch.fd = dev->cc->fd;
	dev->comp_watch.fn = cq_on_channel;
	/* The completion channel is the watch that wakes the loop per message
	 * in event mode: on the application's libev loop itself, if any. */
	ret = loop_watch_add_hot(dev->loop, &dev->comp_watch);
	if (ret)
		goto err;
	dev->async_watch.fd = verbs->async_fd;
	dev->async_watch.fn = on_async;
	ret = loop_watch_add(dev->loop, &dev->async_watch);
	if (ret) {
		loop_watch_del(dev->loop, &dev->comp_watch);
		goto err;
	}
	dev->next = set->list;
	set->list = dev;
	dev->set = set;
	set_note_cqs(set);
	*out = dev;
	return 0;
err:
	dev->comp_watch.fd = dev->async_watch.fd = -1;
	device_release(dev);
	return ret;
}

int device_set_by_name(struct device_set *set, const char *name, struct device **out)
{
	struct ibv_context **list;
	int n, i, ret;

	list = rdma_get_devices(&n);
	if (!list)
		return ezi_fail(-ENODEV, "rdma_get_devices: %s", ez_strerror(errno ? errno : ENODEV));
	for (i = 0; i < n; i++) {
		if (!name || !strcmp(name, ibv_get_device_name(list[i]->device)))
			break;
	}
	if (i == n) {
		rdma_free_devices(list);
		if (name)
			return ezi_fail(-ENODEV, "no RDMA device named %s (%d known to rdma_cm)", name, n);
		return ezi_fail(-ENODEV, "no RDMA device (rdma_get_devices lists none)");
	}
	ret = device_set_get(set, list[i], out);
	rdma_free_devices(list);
	return ret;
}

/* ---- the CQs: room claimed by connections and pools (device.h) ---- */

/* Appended, so the oldest CQs fill first and the newest empty first. */
static int cq_new(struct device *dev, struct device_cq **out)
{
	struct device_cq *c, **pp;
	int size = CQ_INITIAL < dev->attr.max_cqe ? CQ_INITIAL : dev->attr.max_cqe;

	if (dev->attr.max_cq && dev->ncq >= dev->attr.max_cq)
		return ezi_fail(-ENOSPC, "CQs of %s: a new one would exceed the device's max_cq %d",
				dev->name, dev->attr.max_cq);
	c = calloc(1, sizeof(*c));
	if (!c)
		return ezi_fail(-ENOMEM, "device %s: out of memory (CQ %d)", dev->name, dev->ncq + 1);
	c->dev = dev;
	c->poll_more.fn = cq_on_poll_more;
	c->serial = ++dev->cq_serial;
	c->cq = ibv_create_cq(dev->verbs, size, c, dev->cc, 0);
	if (!c->cq) {
		int err = errno ? errno : ENOMEM;

		free(c);
		return ezi_fail(-err, "ibv_create_cq(%s, cqe=%d): %s (this context has %d CQs on it, "
				"%d completions taken; device max_cq %d)", dev->name, size,
				ez_strerror(err), dev->ncq, dev->cq_reserved, dev->attr.max_cq);
	}
	c->size = c->cq->cqe;
	/* In busy-poll mode the context polls the CQs on every pass; an armed
	 * CQ would only add an interrupt and a wakeup per completion. */
	if (!dev->busy_poll && ibv_req_notify_cq(c->cq, 0)) {
		int err = errno;

		ibv_destroy_cq(c->cq);
		free(c);
		return ezi_fail(-err, "ibv_req_notify_cq(%s): %s", dev->name, ez_strerror(err));
	}
	for (pp = &dev->cqs; *pp; pp = &(*pp)->next)
		;
	*pp = c;
	dev->ncq++;
	dev->cqs_made++;
	if (dev->set)
		set_note_cqs(dev->set);
	if (dev->ncq > dev->ncq_max)
		dev->ncq_max = dev->ncq;
	if (out)
		*out = c;
	return 0;
}

/* A CQ goes once nothing holds room on it: every QP that used it is
 * destroyed and its owner polled it after the destroy, so a completion
 * still in it would belong to a freed op or pool. It is not polled. */
static void cq_free(struct device_cq *c)
{
	struct device *dev = c->dev;
	struct device_cq **pp;
	int err;

	for (pp = &dev->cqs; *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	dev->ncq--;
	dev->cqs_freed++;
	if (dev->set)
		set_note_cqs(dev->set);
	loop_defer_cancel(dev->loop, &c->poll_more);
	if ((err = ibv_destroy_cq(c->cq)))
		ezi_log_err("ibv_destroy_cq(%s, CQ %u): %s", dev->name, c->serial, ez_strerror(err));
	free(c);
}

/* Deferred, never from inside a poll of the CQ (a callback that closes the
 * last holder runs under it), and once for a burst of closes. */
static void on_cq_reap(struct loop_defer *d)
{
	struct device *dev = container_of(d, struct device, cq_reap);
	struct device_cq *c, *next;

	for (c = dev->cqs; c; c = next) {
		next = c->next;
		if (!c->holders && dev->ncq > 1)
			cq_free(c);
	}
}

/* Resizes c to hold its taken room (doubling, within max_cqe). */
static int cq_fit(struct device_cq *c, int want)
{
	struct device *dev = c->dev;
	int size;

	if (want <= c->size)
		return 0;
	size = c->size * 2 > want ? c->size * 2 : want;
	if (size > dev->attr.max_cqe)
		size = dev->attr.max_cqe;
	if (ibv_resize_cq(c->cq, size))
		return ezi_fail(-ENOSPC, "ibv_resize_cq(%s, CQ %u, %d): %s (%d completions taken on it)",
				dev->name, c->serial, size, ez_strerror(errno), want);
	c->size = c->cq->cqe;
	return 0;
}

static int cq_fits(const struct device_cq *c, int n)
{
	return c->taken + c->promised + n <= c->dev->attr.max_cqe;
}

int device_cq_claim(struct device *dev, struct device_cq_room *r, int take, int promise)
{
	struct device_cq *c;
	int ret;

	if (take < 0 || promise < 0 || take + promise > dev->attr.max_cqe)
		return ezi_fail(-ENOSPC, "CQ of %s: %d completions outstanding would exceed max_cqe %d",
				dev->name, take + promise, dev->attr.max_cqe);
	/* First fit from the oldest: the newest CQs are the ones that empty
	 * and go when connections close. */
	for (c = dev->cqs; c && !cq_fits(c, take + promise); c = c->next)
		;
	if (!c) {
		ret = cq_new(dev, &c);
		if (ret)
			return ret;
	}
	ret = cq_fit(c, c->taken + take);
	if (ret) {
		if (!c->holders)
			loop_defer(dev->loop, &dev->cq_reap);
		return ret;
	}
	c->taken += take;
	c->promised += promise;
	c->holders++;
	dev->cq_reserved += take;
	*r = (struct device_cq_room){ .cq = c, .taken = take, .promised = promise };
	return 0;
}

int device_cq_take(struct device *dev, struct device_cq_room *r, int n)
{
	struct device_cq *c = r->cq;
	int from_promise = n < r->promised ? n : r->promised;
	int beyond = n - from_promise, ret;

	if (beyond > 0 && !cq_fits(c, beyond))
		return ezi_fail(-ENOSPC, "CQ %u of %s: %d completions outstanding would exceed max_cqe %d",
				c->serial, dev->name, c->taken + c->promised + beyond, dev->attr.max_cqe);
	ret = cq_fit(c, c->taken + n);
	if (ret)
		return ret;
	c->taken += n;
	c->promised -= from_promise;
	r->taken += n;
	r->promised -= from_promise;
	dev->cq_reserved += n;
	return 0;
}

void device_cq_unclaim(struct device *dev, struct device_cq_room *r)
{
	struct device_cq *c = r->cq;

	if (!c)
		return;
	c->taken -= r->taken;
	c->promised -= r->promised;
	dev->cq_reserved -= r->taken;
	*r = (struct device_cq_room){ 0 };
	if (--c->holders == 0 && dev->ncq > 1)
		loop_defer(dev->loop, &dev->cq_reap);
}

static unsigned int qp_bucket(const struct device *dev, uint32_t qpn)
{
	return qpn & (dev->qp_buckets - 1);
}

/* Doubles the table while it holds more QPs than buckets. A failed
 * allocation keeps the old one: longer chains, same answers. */
static void qp_table_grow(struct device *dev)
{
	unsigned int n = dev->qp_buckets * 2, i;
	struct device_qp **t, *dq, *next;

	t = calloc(n, sizeof(*t));
	if (!t)
		return;
	for (i = 0; i < dev->qp_buckets; i++) {
		for (dq = dev->qps[i]; dq; dq = next) {
			next = dq->next;
			dq->next = t[dq->qpn & (n - 1)];
			t[dq->qpn & (n - 1)] = dq;
		}
	}
	free(dev->qps);
	dev->qps = t;
	dev->qp_buckets = n;
}

void device_qp_add(struct device *dev, struct device_qp *dq, struct ibv_qp *qp,
		   const struct device_qp_ops *ops)
{
	struct device_qp **b;

	if (++dev->nqp > dev->qp_buckets)
		qp_table_grow(dev);
	b = &dev->qps[qp_bucket(dev, qp->qp_num)];
	dq->qpn = qp->qp_num;
	dq->qp = qp;
	dq->ops = ops;
	dq->next = *b;
	*b = dq;
}

void device_qp_del(struct device *dev, struct device_qp *dq)
{
	struct device_qp **pp;

	for (pp = &dev->qps[qp_bucket(dev, dq->qpn)]; *pp; pp = &(*pp)->next) {
		if (*pp == dq) {
			*pp = dq->next;
			dev->nqp--;
			return;
		}
	}
}

struct device_qp *device_qp_find(struct device *dev, uint32_t qpn)
{
	struct device_qp *dq;

	for (dq = dev->qps[qp_bucket(dev, qpn)]; dq; dq = dq->next)
		if (dq->qpn == qpn)
			return dq;
	return NULL;
}

void device_after_batch(struct device *dev, struct loop_defer *d)
{
	loop_defer_list_push(&dev->after_batch, d);
}

void device_after_batch_cancel(struct device *dev, struct loop_defer *d)
{
	loop_defer_list_cancel(&dev->after_batch, d);
}

void device_batch_close_run(struct device *dev)
{
	loop_defer_list_run(&dev->after_batch);
}

/* A port or device event, to the owner of every QP (its ops tell whether
 * it concerns them: a connection's port, say). */
static void tell_all(struct device *dev, const struct device_event *ev)
{
	struct device_qp *dq, *next;
	int i;

	for (i = 0; i < (int)dev->qp_buckets; i++) {
		for (dq = dev->qps[i]; dq; dq = next) {
			next = dq->next;
			dq->ops->on_async_event(dq, ev);
		}
	}
}

/* Each context has its own verbs context, so every QP event here is about a
 * QP created on it; the check still guards against a stale QP number. */
static void tell_owner(struct device *dev, struct ibv_qp *qp, const struct device_event *ev)
{
	struct device_qp *dq = device_qp_find(dev, qp->qp_num);

	if (dq && dq->qp == qp)
		dq->ops->on_async_event(dq, ev);
}

static void on_qp_error(struct device *dev, const struct ibv_async_event *raw)
{
	char why[128];
	struct device_event ev = { .type = raw->event_type, .status = -EIO, .why = why };

	snprintf(why, sizeof(why), "device %s: async event %s on QP %u", dev->name,
		 ibv_event_type_str(raw->event_type), raw->element.qp->qp_num);
	tell_owner(dev, raw->element.qp, &ev);
}

static void cq_overrun(struct device *dev, struct ibv_cq *cq)
{
	struct device_cq *c = cq->cq_context;

	ezi_log_err("device %s: CQ %u overrun (%d completions claimed, cqe %d): its QPs fail",
		    dev->name, c ? c->serial : 0, c ? c->taken : 0, cq->cqe);
}

/* Acks before handling: ibv_destroy_qp() waits for the acks of its events.
 * At most DEVICE_ASYNC_PER_PASS a pass: the fd stays readable for the rest. */
static void on_async(struct loop_watch *w)
{
	struct device *dev = container_of(w, struct device, async_watch);
	struct ibv_async_event raw, ev;
	struct device_event dev_ev;
	char why[128];
	int n = 0;

	while (n++ < DEVICE_ASYNC_PER_PASS && ibv_get_async_event(dev->verbs, &raw) == 0) {
		ev = raw;
		ibv_ack_async_event(&raw);
		switch (ev.event_type) {
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			/* The pool judges "dry" by its posted count, which only
			 * polled completions lower (a pool's receives are on one
			 * CQ, but which one is the pool's business). */
			device_poll(dev);
			if (ev.element.srq->srq_context)
				srqpool_on_limit_event(ev.element.srq->srq_context);
			break;
		case IBV_EVENT_QP_LAST_WQE_REACHED:
		case IBV_EVENT_COMM_EST:
			dev_ev = (struct device_event){ .type = ev.event_type, .why = "" };
			tell_owner(dev, ev.element.qp, &dev_ev);
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			on_qp_error(dev, &ev);
			break;
		case IBV_EVENT_PORT_ERR:
			forget_mechs(dev);
			snprintf(why, sizeof(why), "device %s: port %d went down", dev->name,
				 ev.element.port_num);
			ezi_log_warn("%s", why);
			dev_ev = (struct device_event){ .type = ev.event_type, .status = -ENETDOWN,
							.port = (uint8_t)ev.element.port_num, .why = why };
			tell_all(dev, &dev_ev);
			break;
		case IBV_EVENT_PORT_ACTIVE:
			forget_mechs(dev);
			ezi_log_info("device %s: port %d is up", dev->name, ev.element.port_num);
			unpark(dev, (uint8_t)ev.element.port_num);
			break;
		case IBV_EVENT_DEVICE_FATAL:
			snprintf(why, sizeof(why), "device %s: fatal error", dev->name);
			ezi_log_err("%s", why);
			dev_ev = (struct device_event){ .type = ev.event_type, .status = -ENODEV,
							.why = why };
			tell_all(dev, &dev_ev);
			break;
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			/* A source GID index may now name another type of GID. */
			forget_mechs(dev);
			ezi_log_debug("device %s: async event %s", dev->name,
				      ibv_event_type_str(ev.event_type));
			break;
		case IBV_EVENT_CQ_ERR:
			/* An overrun: the room claimed on it was too small, a bug. */
			cq_overrun(dev, ev.element.cq);
			break;
		case IBV_EVENT_SRQ_ERR:
			ezi_log_err("device %s: SRQ error", dev->name);
			break;
		default:
			ezi_log_debug("device %s: async event %s", dev->name,
				      ibv_event_type_str(ev.event_type));
			break;
		}
	}
}

/* ---- the CQs: notification, batched polling, dispatch by wr_id (cq.h) ---- */

/* One completion to its owner: an op's by its tag, a receive by its QP. */
static inline void dispatch_one(struct device *dev, const struct ibv_wc *wc)
{
	if (wc->wr_id & CQ_OP_TAG) {
		struct device_wr *wr = (struct device_wr *)(uintptr_t)(wc->wr_id & ~(uint64_t)CQ_OP_TAG);

		wr->done(wr, wc);
	} else {
		struct device_qp *dq = device_qp_find(dev, wc->qp_num);

		if (dq) {
			dq->ops->on_recv(dq, wc);
		} else {
			/* The connection is gone: the buffer goes back. */
			struct ez_buf *b = (struct ez_buf *)(uintptr_t)wc->wr_id;

			b = srqpool_take(b->pool, wc->wr_id, 0);
			if (b)
				ez_buf_release(b);
		}
	}
}

/* Dispatches the n completions of wc (a batch just polled from c), then
 * polls and dispatches up to max_batches batches in all (0: enough to reach
 * every completion the CQ held, cq_poll()'s bound), fewer if c empties
 * first; *full (if set) says how many batches were full. */
static __attribute__((noinline)) int poll_dispatch(struct device_cq *c, struct ibv_wc *wc, int n,
						   int max_batches, int *full)
{
	struct device *dev = c->dev;
	int i, total = 0, batches = 0;

	for (;;) {
		if (n < 0) {
			ezi_log_err("ibv_poll_cq(%s, CQ %u): %d", dev->name, c->serial, n);
			break;
		}
		/* An empty poll dispatches nothing: after_batch only fills
		 * while a batch is dispatched, and runs at its end. */
		if (n == 0)
			break;
		/* The completion that ends the batch is dispatched after the
		 * batch is closed: nothing polled after it can join what its
		 * callback submits, so that goes out at once (a ping-pong's
		 * echo, the next read of a chain of reads: no queue, no
		 * after-batch list). A send completion that retires an
		 * unsignalled run opens a batch of its own for the run's
		 * callbacks (conn_on_send_wc), so that their next sends still
		 * chain into one post. */
		device_batch_open(dev);
		for (i = 0; i < n - 1; i++)
			dispatch_one(dev, &wc[i]);
		/* What the callbacks submitted goes out now, a chain per
		 * connection, before the last one and the next batch. */
		device_batch_close(dev);
		dispatch_one(dev, &wc[n - 1]);
		total += n;
		if (n < CQ_POLL_BATCH)
			break;
		/* The bound, only once a batch came full (0: enough for
		 * every completion the CQ holds): a division saved on the
		 * common short batch. */
		if (!max_batches)
			max_batches = c->cq->cqe / CQ_POLL_BATCH + 1;
		if (++batches == max_batches)
			break;
		n = ibv_poll_cq(c->cq, CQ_POLL_BATCH, wc);
	}
	if (full)
		*full = batches;
	return total;
}

/* Polls up to max_batches batches of c, fewer if it empties first; *full
 * (if set) says how many batches were full. A busy-polling pass mostly
 * finds the CQ empty: that case is one poll and a return, the dispatch
 * loop (and its registers) only when there is something. */
static inline __attribute__((always_inline)) int poll_some(struct device_cq *c, int max_batches,
							     int *full)
{
	struct ibv_wc wc[CQ_POLL_BATCH];
	int n = ibv_poll_cq(c->cq, CQ_POLL_BATCH, wc);

	if (__builtin_expect(n == 0, 1)) {
		if (full)
			*full = 0;
		return 0;
	}
	return poll_dispatch(c, wc, n, max_batches, full);
}

/* A CQ holds at most cqe completions: this many batches reach every one
 * that was there when the call began (the CQ is a FIFO), and the loop ends
 * even when a peer streaming as fast as its completions are handled keeps
 * the CQ from ever emptying (each echo adds a send completion too). */
int cq_poll(struct device_cq *c)
{
	return c ? poll_some(c, 0, NULL) : 0;
}

/* The busy-poll pass: the set's one CQ is polled as cq_poll() polls it,
 * inlined (the bound is taken only when there are completions, so an empty
 * pass keeps one register); several take the walk. */
int device_set_dispatch(struct device_set *set, struct ibv_wc *wc, int n)
{
	return poll_dispatch(set->only, wc, n, 0, NULL);
}

int device_set_poll(struct device_set *set)
{
	return __builtin_expect(set->only != NULL, 1) ? poll_some(set->only, 0, NULL)
						       : set_poll_all(set);
}

int device_poll(struct device *dev)
{
	struct device_cq *c;
	int n = 0;

	for (c = dev->cqs; c; c = c->next)
		n += cq_poll(c);
	return n;
}

/* A peer that sends as fast as we handle its messages keeps a CQ from
 * ever emptying: each turn polls a bounded number of batches and comes
 * back as deferred work (the loop's next pass), so CM events, timers and
 * the application's own watchers still get their turn. Returns the
 * batches used of max. */
static int poll_bounded(struct device_cq *c, int max)
{
	int full = 0;

	poll_some(c, max, &full);
	if (full == max) {
		loop_defer(c->dev->loop, &c->poll_more);
		return max;
	}
	return full + 1;
}

void cq_on_poll_more(struct loop_defer *d)
{
	poll_bounded(container_of(d, struct device_cq, poll_more), CQ_POLL_TURN);
}

/* Each event names the CQ that has completions: only those are polled, so
 * a wake-up costs the same with 10 connections as with 10,000 idle ones on
 * other CQs. One wake-up polls CQ_POLL_TURN batches over all the CQs it
 * names; a CQ whose event comes after the budget is spent is polled from
 * its poll_more, in the next pass. */
void cq_on_channel(struct loop_watch *w)
{
	struct device *dev = container_of(w, struct device, comp_watch);
	int max = dev->ncq > 1 ? CQ_EVENTS_PER_PASS : 1, budget = CQ_POLL_TURN, i;
	struct ibv_cq *cq;
	void *cq_ctx;

	/* One event per arm, and a CQ is armed once per event (below). With
	 * one CQ a second read would only return EAGAIN, a system call per
	 * wake-up; an event left over keeps the fd readable for the next. */
	for (i = 0; i < max && ibv_get_cq_event(dev->cc, &cq, &cq_ctx) == 0; i++) {
		struct device_cq *c = cq_ctx;

		ibv_ack_cq_events(cq, 1);
		/* Arm before the poll so a completion racing it is not missed. */
		if (ibv_req_notify_cq(cq, 0))
			ezi_log_err("ibv_req_notify_cq(%s, CQ %u): %s", dev->name, c->serial,
				    ez_strerror(errno));
		if (budget > 0)
			budget -= poll_bounded(c, budget);
		else
			loop_defer(dev->loop, &c->poll_more);
	}
}
