/* quarantine.c: a bounded FIFO of void objects, freed oldest first (see quarantine.h). */
#include "config.h"

#include "quarantine.h"

void ezi_quarantine_put(struct ezi_quarantine *q, void *obj)
{
	void *oldest;

	pthread_mutex_lock(&q->lock);
	oldest = q->ring[q->next];
	q->ring[q->next] = obj;
	q->next = (q->next + 1) % q->cap;
	if (!oldest)
		q->n++;
	pthread_mutex_unlock(&q->lock);
	/* Outside the lock: release may be free(), which may take its own. */
	if (oldest)
		q->release(oldest);
}

uint32_t ezi_quarantine_count(struct ezi_quarantine *q)
{
	uint32_t n;

	pthread_mutex_lock(&q->lock);
	n = q->n;
	pthread_mutex_unlock(&q->lock);
	return n;
}
