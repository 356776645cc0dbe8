/* cq.c: the device's CQ: notification, batched polling, dispatch by wr_id to the op or receive buffer. */
#include "config.h"

#include <errno.h>

#include "cq.h"
#include "base/log.h"
#include "srqpool/srqpool.h"

/* Polls up to max_batches batches, fewer if the CQ empties first. */
static int poll_some(struct device *dev, int max_batches)
{
	struct ibv_wc wc[CQ_POLL_BATCH];
	int n, i, total = 0, batches = 0;

	for (;;) {
		n = ibv_poll_cq(dev->cq, CQ_POLL_BATCH, wc);
		if (n < 0) {
			ezi_log_err("ibv_poll_cq(%s): %d", dev->name, n);
			return total;
		}
		dev->dispatching++;
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & CQ_OP_TAG) {
				struct device_wr *wr = (struct device_wr *)(uintptr_t)
					(wc[i].wr_id & ~(uint64_t)CQ_OP_TAG);

				wr->done(wr, &wc[i]);
			} else {
				struct device_qp *dq = device_qp_find(dev, wc[i].qp_num);

				if (dq) {
					dq->ops->on_recv(dq, &wc[i]);
				} else {
					/* The connection is gone: the buffer goes back. */
					struct ez_buf *b = (struct ez_buf *)(uintptr_t)wc[i].wr_id;

					b = srqpool_take(b->pool, wc[i].wr_id, 0);
					if (b)
						ez_buf_release(b);
				}
			}
		}
		/* What the callbacks submitted goes out now, a chain per
		 * connection, before the next batch is polled. */
		if (--dev->dispatching == 0)
			loop_defer_list_run(&dev->after_batch);
		total += n;
		if (n < CQ_POLL_BATCH || ++batches == max_batches)
			return total;
	}
}

/* A CQ holds at most cqe completions: this many batches reach every one
 * that was there when the call began (the CQ is a FIFO), and the loop ends
 * even when a peer streaming as fast as its completions are handled keeps
 * the CQ from ever emptying (each echo adds a send completion too). */
int cq_poll(struct device *dev)
{
	return poll_some(dev, dev->cq->cqe / CQ_POLL_BATCH + 1);
}

/* A peer that sends as fast as we handle its messages keeps the CQ from
 * ever emptying: each turn polls a bounded number of completions and
 * comes back as deferred work (the loop's next pass), so CM events, timers
 * and the application's own watchers still get their turn. */
static void poll_bounded(struct device *dev)
{
	if (poll_some(dev, CQ_POLL_TURN) == CQ_POLL_TURN * CQ_POLL_BATCH)
		loop_defer(dev->loop, &dev->poll_more);
}

void cq_on_poll_more(struct loop_defer *d)
{
	poll_bounded(container_of(d, struct device, poll_more));
}

void cq_on_channel(struct loop_watch *w)
{
	struct device *dev = container_of(w, struct device, comp_watch);
	struct ibv_cq *cq;
	void *cq_ctx;
	unsigned int events = 0;

	while (ibv_get_cq_event(dev->cc, &cq, &cq_ctx) == 0)
		events++;
	if (!events)
		return;
	ibv_ack_cq_events(dev->cq, events);
	/* Arm before the final poll so a completion racing it is not missed. */
	if (ibv_req_notify_cq(dev->cq, 0))
		ezi_log_err("ibv_req_notify_cq(%s): %s", dev->name, ez_strerror(errno));
	poll_bounded(dev);
}
