/* cq.h: polling a device's CQ and dispatching completions (the CQ half of device.c). */
#ifndef EZ_DEVICE_CQ_H
#define EZ_DEVICE_CQ_H

#include "device.h"

#define CQ_POLL_BATCH 32
/* Batches polled per loop turn when a completion event comes. */
#define CQ_POLL_TURN 16

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
 * meanwhile, within a bound); returns completions handled. */
int cq_poll(struct device *dev);
/* The device's poll_more work: the rest of a bounded turn. */
void cq_on_poll_more(struct loop_defer *d);

#endif
