/* sqd.c: the SQ-drain path: RTS->SQD with en_sqd_async_notify, and IBV_EVENT_SQ_DRAINED handed to the caller's hook. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "qpfsm.h"

struct hook {
	struct ibv_qp *qp;
	uint32_t qp_num;
	ez_qp_drained_fn fn;
	void *arg;
};

/* A few QPs drain at a time; a plain array under a lock is enough, and
 * it is touched only on the (rare) drain path, never per work request. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hook *hooks;
static size_t nhooks, cap;

static int find(const struct ibv_qp *qp)
{
	for (size_t i = 0; i < nhooks; i++)
		if (hooks[i].qp == qp && hooks[i].qp_num == qp->qp_num)
			return (int)i;
	return -1;
}

static void remove_at(int i)
{
	hooks[i] = hooks[--nhooks];
}

static int add(struct ibv_qp *qp, ez_qp_drained_fn fn, void *arg)
{
	int i = find(qp);

	if (i < 0) {
		if (nhooks == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct hook *n = realloc(hooks, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			hooks = n;
			cap = ncap;
		}
		i = (int)nhooks++;
	}
	hooks[i] = (struct hook){ .qp = qp, .qp_num = qp->qp_num, .fn = fn, .arg = arg };
	return 0;
}

void ez_qp_drain_cancel(struct ibv_qp *qp)
{
	int i;

	pthread_mutex_lock(&lock);
	if (qp && (i = find(qp)) >= 0)
		remove_at(i);
	pthread_mutex_unlock(&lock);
}

int ez_qp_drain_sq(struct ibv_qp *qp, ez_qp_drained_fn fn, void *arg)
{
	struct ibv_qp_attr a;
	int err;

	if (!qp)
		return ezi_fail(-EINVAL, "ez_qp_drain_sq: qp is required");
	/* Registered before the modify: the event may come before it returns. */
	if (fn) {
		pthread_mutex_lock(&lock);
		err = add(qp, fn, arg);
		pthread_mutex_unlock(&lock);
		if (err)
			return ezi_fail(err, "%s RTS->SQD: no memory for the drain hook",
					ez_qp_type_str(qp->qp_type));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	err = ez_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);
	if (err && fn)
		ez_qp_drain_cancel(qp);
	return err;
}

int qpfsm_sqd_dispatch(struct ibv_qp *qp)
{
	struct hook h;
	int i;

	pthread_mutex_lock(&lock);
	i = qp ? find(qp) : -1;
	if (i < 0) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	h = hooks[i];
	remove_at(i); /* one event per drain */
	pthread_mutex_unlock(&lock);
	h.fn(h.qp, h.arg);
	return 1;
}

int ez_qp_async_event(const struct ibv_async_event *event)
{
	if (!event || event->event_type != IBV_EVENT_SQ_DRAINED)
		return 0;
	return qpfsm_sqd_dispatch(event->element.qp);
}
