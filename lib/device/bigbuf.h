/* bigbuf.h: a device's registered large buffers, for messages sent and received by rendezvous. */
#ifndef EZ_DEVICE_BIGBUF_H
#define EZ_DEVICE_BIGBUF_H

#include <stddef.h>
#include <stdint.h>

#include "mr.h"
#include "srqpool/srqpool.h"

/*
 * A large message (above the receive buffers) is copied by its sender
 * into one of these (ez_send) and fetched by its receiver into another
 * (RDMA READ). Registering 1-16 MiB costs milliseconds, so buffers are kept
 * by size class (powers of two from 2^BIGBUF_MIN_SHIFT) once given back, up
 * to BIGBUF_CACHE_MAX bytes per device; the rest are deregistered at once,
 * and a cache from which nothing was taken for BIGBUF_TRIM_MS is emptied:
 * the memory a burst of large messages needed goes back once it is over.
 * The memory is mapped for each buffer and unmapped with it (malloc would
 * keep freed megabytes in its heap, raising its mmap threshold to their
 * size: the process's RSS stayed 130 MB above idle after its clients left,
 * issue 42).
 * The registration asks for remote read so that a type-2 window can be
 * bound over it (IBV_ACCESS_MW_BIND; the MR's own key grants nothing).
 * How many bytes a receiver may hold is bounded by its pool
 * (srqpool_big_reserve), not here.
 */
#define BIGBUF_MIN_SHIFT 12
#define BIGBUF_CLASSES 20	/* 4 KiB .. 2 GiB */
#define BIGBUF_CACHE_MAX (64u << 20)
#define BIGBUF_TRIM_MS 5000

struct bigbuf {
	struct bigbuf *next;	/* the class's free list */
	struct device *dev;
	struct ez_mr *mr;	/* internal: never the application's */
	void *mem;
	size_t size;		/* the class's */
	uint32_t cls;
	/* Delivered to on_recv: the application holds this descriptor's
	 * handle. Not embedded: descriptors are type-stable (srqpool's
	 * desc.c), so a handle released twice after the buffer is gone
	 * still reads a (void) descriptor, not freed memory. */
	struct ez_buf *desc;
};

/* A registered buffer of at least len bytes (len <= 2 GiB). 0, or -errno
 * with the thread's message naming the allocation or the registration. */
int bigbuf_get(struct device *dev, size_t len, struct bigbuf **out);
/* The bytes bigbuf_get(len) registers: len's size class. */
size_t bigbuf_size_for(size_t len);
/* Given back: cached for the next, or deregistered and freed. */
void bigbuf_put(struct bigbuf *b);
/* The device's cache as ez_srqpool_stats() reports it (its pools point
 * here), made now if need be; NULL: out of memory. */
const struct srqpool_big_report *bigbuf_report(struct device *dev);

#endif
