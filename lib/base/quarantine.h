/* quarantine.h: freed objects whose addresses the application may still hold, kept (void) for the last N before free(). */
#ifndef EZ_BASE_QUARANTINE_H
#define EZ_BASE_QUARANTINE_H

#include <pthread.h>
#include <stdint.h>

/*
 * A handle that carries no generation (a bare pointer) can only be refused
 * after its object's end while the object's memory is still there to read
 * the "void" mark in. The owner marks the object void and hands it here;
 * the quarantine keeps the last cap objects, FIFO, and gives the oldest to
 * release (free()) as a new one comes in. Bounded: cap objects, whatever
 * their count over the process's life. Beyond the last cap, a handle points
 * at memory malloc may have reused: nothing is guaranteed then. Thread-safe
 * (objects of contexts on different threads share one quarantine).
 */
struct ezi_quarantine {
	pthread_mutex_t lock;
	void **ring;		/* cap slots; NULL while never filled */
	uint32_t cap;
	uint32_t next;		/* the slot the next object takes: the oldest's */
	uint32_t n;		/* objects kept (cap once full) */
	void (*release)(void *obj);
};

#define EZI_QUARANTINE_INIT(ring_, cap_, release_) \
	{ PTHREAD_MUTEX_INITIALIZER, (ring_), (cap_), 0, 0, (release_) }

/* Keeps obj (marked void by its owner); releases the oldest beyond cap. */
void ezi_quarantine_put(struct ezi_quarantine *q, void *obj);
/* How many objects it keeps now (for memory accounting in tests). */
uint32_t ezi_quarantine_count(struct ezi_quarantine *q);

#endif
