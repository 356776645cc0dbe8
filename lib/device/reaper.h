/* reaper.h: a context's thread that destroys CM ids whose rdma_destroy_id() may wait on the network, off the loop. */
#ifndef EZ_DEVICE_REAPER_H
#define EZ_DEVICE_REAPER_H

#include <pthread.h>
#include <rdma/rdma_cma.h>

struct reap_item;

/* rdma_destroy_id() of an id whose DREQ the peer has not answered waits in
 * the kernel until the CM gives up on it (~50 s on Soft-RoCE: the DREQ's
 * retries); so does one that sends a DREQ itself (an id never disconnected)
 * to a host that is gone. The loop hands such ids here: the thread owns
 * nothing but this queue and calls nothing but rdma_destroy_id(). It starts
 * at the first id handed over. */
struct reaper {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct reap_item *head, **tail;
	int running;		/* the thread was started (reaper_fini joins it) */
	int stop;		/* reaper_fini: destroy what is queued, then end */
	unsigned int queued;	/* handed over, not destroyed yet (under mu) */
	unsigned long long reaped;	/* destroyed (under mu) */
	pthread_t thread;
};

void reaper_init(struct reaper *r);
/* Hands id over: it is destroyed on the thread, soon. Never waits on the
 * network (a mutex held for a list insert). The caller must have acked
 * every event of id already and set id->context to NULL, so that an event
 * read meanwhile is dropped without touching its owner; librdmacm keeps
 * the id alive until such an event is acked (rdma_destroy_id() waits for
 * it). If the thread cannot be started (or memory is short) the id is
 * destroyed here, as before. */
void reaper_hand(struct reaper *r, struct rdma_cm_id *id);
/* Ids handed over and not destroyed yet (for tests and stats). */
unsigned int reaper_pending(struct reaper *r);
/* Destroys whatever is still queued and joins the thread: it waits for the
 * ids being destroyed (each at most the CM's DREQ timeout). */
void reaper_fini(struct reaper *r);

#endif
