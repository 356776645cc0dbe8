/* reaper.c: a context's thread that destroys CM ids whose rdma_destroy_id() may wait on the network, so the loop never does. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "reaper.h"
#include "base/error.h"
#include "base/log.h"

struct reap_item {
	struct reap_item *next;
	struct rdma_cm_id *id;
};

static void destroy_id(struct rdma_cm_id *id)
{
	if (rdma_destroy_id(id))
		ezi_log_warn("rdma_destroy_id: %s", ez_strerror(errno));
}

void reaper_init(struct reaper *r)
{
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->head = NULL;
	r->tail = &r->head;
	r->running = r->stop = 0;
	r->queued = 0;
	r->reaped = 0;
}

static void *reaper_main(void *arg)
{
	struct reaper *r = arg;
	struct reap_item *it;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->head && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		it = r->head;
		if (!it)
			break;	/* stopping, nothing left */
		r->head = it->next;
		if (!r->head)
			r->tail = &r->head;
		pthread_mutex_unlock(&r->mu);
		destroy_id(it->id);
		free(it);
		pthread_mutex_lock(&r->mu);
		r->queued--;
		r->reaped++;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Called with mu held. */
static int reaper_start(struct reaper *r)
{
	int err;

	if (r->running)
		return 0;
	err = pthread_create(&r->thread, NULL, reaper_main, r);
	if (err) {
		ezi_log_warn("reaper: pthread_create: %s; CM ids destroyed on the loop",
			     ez_strerror(err));
		return -err;
	}
	r->running = 1;
	return 0;
}

void reaper_hand(struct reaper *r, struct rdma_cm_id *id)
{
	struct reap_item *it = malloc(sizeof(*it));

	if (!it) {
		destroy_id(id);
		return;
	}
	it->id = id;
	it->next = NULL;
	pthread_mutex_lock(&r->mu);
	if (reaper_start(r)) {
		pthread_mutex_unlock(&r->mu);
		free(it);
		destroy_id(id);
		return;
	}
	*r->tail = it;
	r->tail = &it->next;
	r->queued++;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

unsigned int reaper_pending(struct reaper *r)
{
	unsigned int n;

	pthread_mutex_lock(&r->mu);
	n = r->queued;
	pthread_mutex_unlock(&r->mu);
	return n;
}

void reaper_fini(struct reaper *r)
{
	unsigned int queued;
	int running;

	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	running = r->running;
	queued = r->queued;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (running) {
		if (queued)
			ezi_log_info("reaper: waiting for %u CM ids being destroyed", queued);
		pthread_join(r->thread, NULL);
	}
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
}
