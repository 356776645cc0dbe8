/* cq.h: polling a device's CQs and dispatching completions (the CQ half of device.c). */
#ifndef EZ_DEVICE_CQ_H
#define EZ_DEVICE_CQ_H

#include "device.h"

#define CQ_POLL_BATCH DEVICE_POLL_BATCH
/* Batches polled per completion-channel wake-up, over every CQ it names. */
#define CQ_POLL_TURN 16
/* CQ events read per wake-up when the device has several CQs (with one,
 * a single read: a second would only return EAGAIN). */
#define CQ_EVENTS_PER_PASS 16
/* The first size of a CQ; it grows (ibv_resize_cq) as room is taken. */
#define CQ_INITIAL 1024

/* wr_ids of the library's send-side ops have bit 0 set (a struct
 * device_wr's address); receive buffers (struct ez_buf addresses, from
 * srqpool) have it clear. */
#define CQ_OP_TAG 1u

static inline uint64_t device_wr_id(struct device_wr *wr)
{
	return (uintptr_t)wr | CQ_OP_TAG;
}

void cq_on_channel(struct loop_watch *w);
/* Polls every completion that was in the CQ when called (more if they come
 * meanwhile, within a bound); returns completions handled. NULL: none. */
int cq_poll(struct device_cq *c);
/* cq_poll() on every CQ of the device. */
int device_poll(struct device *dev);
/* A CQ's poll_more work: the rest of a bounded turn. */
void cq_on_poll_more(struct loop_defer *d);

#endif
