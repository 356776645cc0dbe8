/* mailbox.c: the one way into a loop from another thread: mail posted under a mutex, an eventfd that wakes the loop, delivery on the loop's thread. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mailbox.h"
#include "base/error.h"
#include "base/log.h"

static void wake(struct loop_mailbox *mb)
{
	uint64_t one = 1;

	if (write(mb->watch.fd, &one, sizeof(one)) < 0)
		ezi_log_err("mailbox: eventfd write: %s", ez_strerror(errno));
}

/* Takes up to LOOP_MAIL_PER_PASS letters under the lock and delivers them
 * outside it; what is left keeps the eventfd readable. */
static void on_mail(struct loop_watch *w)
{
	struct loop_mailbox *mb = container_of(w, struct loop_mailbox, watch);
	struct loop_mail *first, *m;
	uint64_t v;
	unsigned int k = 0;

	pthread_mutex_lock(&mb->mu);
	while (read(mb->watch.fd, &v, sizeof(v)) > 0)
		;
	first = mb->head;
	for (m = first; m && k < LOOP_MAIL_PER_PASS - 1; m = m->next)
		k++;
	if (m) {
		mb->head = m->next;
		m->next = NULL;
		k++;
	} else {
		mb->head = NULL;
	}
	if (!mb->head)
		mb->tail = &mb->head;
	else
		wake(mb);
	__atomic_store_n(&mb->n, mb->n - k, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mb->mu);
	while ((m = first)) {
		first = m->next;
		m->next = NULL;
		mb->delivered++;
		mb->deliver(mb, m);
	}
}

int loop_mailbox_init(struct loop *loop, struct loop_mailbox *mb,
		      void (*deliver)(struct loop_mailbox *mb, struct loop_mail *m))
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), ret;

	if (fd < 0)
		return ezi_fail(-errno, "mailbox: eventfd: %s", ez_strerror(errno));
	ret = pthread_mutex_init(&mb->mu, NULL);
	if (ret) {
		close(fd);
		return ezi_fail(-ret, "mailbox: pthread_mutex_init: %s", ez_strerror(ret));
	}
	mb->head = NULL;
	mb->tail = &mb->head;
	mb->n = 0;
	mb->closed = 0;
	mb->loop = loop;
	mb->deliver = deliver;
	mb->delivered = 0;
	mb->watch.fd = fd;
	mb->watch.fn = on_mail;
	ret = loop_watch_add(loop, &mb->watch);
	if (ret) {
		pthread_mutex_destroy(&mb->mu);
		close(fd);
	}
	return ret;
}

int loop_mailbox_post(struct loop_mailbox *mb, struct loop_mail *m,
		      int (*under_lock)(struct loop_mail *m, void *arg), void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&mb->mu);
	if (mb->closed)
		ret = -ESHUTDOWN;
	else if (under_lock)
		ret = under_lock(m, arg);
	if (!ret) {
		m->next = NULL;
		*mb->tail = m;
		mb->tail = &m->next;
		__atomic_store_n(&mb->n, mb->n + 1, __ATOMIC_RELAXED);
		/* Under the lock: after the close nobody writes the fd, so the
		 * owner may close it. */
		wake(mb);
	}
	pthread_mutex_unlock(&mb->mu);
	return ret;
}

void loop_mailbox_sync(struct loop_mailbox *mb)
{
	pthread_mutex_lock(&mb->mu);
	pthread_mutex_unlock(&mb->mu);
}

struct loop_mail *loop_mailbox_close(struct loop_mailbox *mb)
{
	struct loop_mail *all;

	pthread_mutex_lock(&mb->mu);
	__atomic_store_n(&mb->closed, 1, __ATOMIC_RELAXED);
	all = mb->head;
	mb->head = NULL;
	mb->tail = &mb->head;
	__atomic_store_n(&mb->n, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mb->mu);
	return all;
}

unsigned int loop_mailbox_queued(const struct loop_mailbox *mb)
{
	return __atomic_load_n(&mb->n, __ATOMIC_RELAXED);
}

int loop_mailbox_is_closed(const struct loop_mailbox *mb)
{
	return __atomic_load_n(&mb->closed, __ATOMIC_RELAXED);
}

void loop_mailbox_fini(struct loop_mailbox *mb)
{
	if (mb->watch.fd < 0)
		return;
	loop_watch_del(mb->loop, &mb->watch);
	close(mb->watch.fd);
	mb->watch.fd = -1;
}

void loop_mailbox_destroy(struct loop_mailbox *mb)
{
	pthread_mutex_destroy(&mb->mu);
}
