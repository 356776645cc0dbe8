/* lookup.c: host names resolved off the loop with getaddrinfo_a(), so ez_connect() never blocks on DNS. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "lookup.h"

/* The eventfd glibc's resolver thread pokes. Shared by the context and every
 * lookup in flight: it outlives a context freed while a lookup still runs
 * (a resolver thread cannot be stopped), and the last user closes it. */
struct lookup_notifier {
	int efd;
	atomic_int refs;
};

enum { LOOKUP_RUNNING, LOOKUP_DONE, LOOKUP_ABANDONED };

struct lookup {
	struct gaicb gcb;
	struct gaicb *list[1];
	struct addrinfo hints;
	struct sigevent sev;
	atomic_int state;
	struct lookup_notifier *notifier;
	struct lookup_set *set;	/* only touched from the loop */
	void *arg;
	lookup_done_fn done;
	struct lookup *next;	/* the set's lookups in flight */
	char host[256];
	char service[32];
};

static void notifier_unref(struct lookup_notifier *n)
{
	if (atomic_fetch_sub(&n->refs, 1) == 1) {
		close(n->efd);
		free(n);
	}
}

static void lookup_free(struct lookup *l)
{
	if (l->gcb.ar_result)
		freeaddrinfo(l->gcb.ar_result);
	notifier_unref(l->notifier);
	free(l);
}

/* In glibc's resolver thread: the only things touched are the lookup's
 * state, the notifier's fd and the reference counts. */
static void on_resolved_thread(union sigval sv)
{
	struct lookup *l = sv.sival_ptr;
	struct lookup_notifier *n = l->notifier;
	uint64_t one = 1;
	int was = LOOKUP_RUNNING;

	/* Our own reference first: once the state says DONE the loop may free
	 * l, and with it the lookup's reference to the notifier. */
	atomic_fetch_add(&n->refs, 1);
	if (!atomic_compare_exchange_strong(&l->state, &was, LOOKUP_DONE)) {
		lookup_free(l);		/* abandoned: nobody else will */
		notifier_unref(n);
		return;
	}
	if (write(n->efd, &one, sizeof(one)) < 0)
		ezi_log_err("lookup: eventfd write: %s", ez_strerror(errno));
	notifier_unref(n);
}

static void unlink_lookup(struct lookup *l)
{
	struct lookup **pp;

	for (pp = &l->set->list; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			return;
		}
}

static void finish(struct lookup *l)
{
	struct sockaddr_storage ss;
	char err[EZ_ERRMSG_MAX + 64] = "";
	int rc = gai_error(&l->gcb), ret = 0;

	unlink_lookup(l);
	if (rc == 0 && l->gcb.ar_result &&
	    l->gcb.ar_result->ai_addrlen <= sizeof(ss)) {
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, l->gcb.ar_result->ai_addr, l->gcb.ar_result->ai_addrlen);
	} else {
		snprintf(err, sizeof(err), "getaddrinfo(%.200s, %s): %s (name lookup failed)",
			 l->host, l->service, rc ? gai_strerror(rc) : "no address");
		ret = rc ? ezi_gai_errno(rc) : -ENXIO;
	}
	l->done(l->arg, ret, &ss, err);
	lookup_free(l);
}

static void on_notify(struct loop_watch *w)
{
	struct lookup_set *set = container_of(w, struct lookup_set, watch);
	struct lookup *l, *next;
	uint64_t v;

	while (read(w->fd, &v, sizeof(v)) > 0)
		;
	for (l = set->list; l; l = next) {
		next = l->next;
		if (atomic_load(&l->state) == LOOKUP_DONE)
			finish(l);	/* may start or end other lookups: next stays valid */
	}
}

void lookup_set_init(struct lookup_set *set, struct loop *loop)
{
	set->loop = loop;
	set->list = NULL;
	set->notifier = NULL;
	set->watch.fd = -1;
}

static int notifier_get(struct lookup_set *set)
{
	struct lookup_notifier *n;
	int ret;

	if (set->notifier)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return ezi_fail(-ENOMEM, "lookup: out of memory");
	n->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (n->efd < 0) {
		ret = ezi_fail(-errno, "eventfd: %s", ez_strerror(errno));
		free(n);
		return ret;
	}
	atomic_init(&n->refs, 1);
	set->watch.fd = n->efd;
	set->watch.fn = on_notify;
	ret = loop_watch_add(set->loop, &set->watch);
	if (ret) {
		notifier_unref(n);
		return ret;
	}
	set->notifier = n;
	return 0;
}

int lookup_set_start(struct lookup_set *set, const char *host, const char *service, void *arg,
		     lookup_done_fn done, struct lookup **out)
{
	struct lookup *l;
	int ret;

	if (strlen(host) >= sizeof(l->host) || strlen(service) >= sizeof(l->service))
		return ezi_fail(-EINVAL, "getaddrinfo(%s, %s): name too long", host, service);
	ret = notifier_get(set);
	if (ret)
		return ret;
	l = calloc(1, sizeof(*l));
	if (!l)
		return ezi_fail(-ENOMEM, "lookup: out of memory");
	strcpy(l->host, host);
	strcpy(l->service, service);
	l->hints.ai_family = AF_UNSPEC;
	l->hints.ai_socktype = SOCK_STREAM;
	l->gcb.ar_name = l->host;
	l->gcb.ar_service = l->service;
	l->gcb.ar_request = &l->hints;
	l->list[0] = &l->gcb;
	l->sev.sigev_notify = SIGEV_THREAD;
	l->sev.sigev_notify_function = on_resolved_thread;
	l->sev.sigev_value.sival_ptr = l;
	atomic_init(&l->state, LOOKUP_RUNNING);
	l->notifier = set->notifier;
	atomic_fetch_add(&l->notifier->refs, 1);
	l->set = set;
	l->arg = arg;
	l->done = done;
	ret = getaddrinfo_a(GAI_NOWAIT, l->list, 1, &l->sev);
	if (ret) {
		lookup_free(l);
		return ezi_fail(ret == EAI_AGAIN ? -EAGAIN : -ENOMEM, "getaddrinfo_a(%s): %s", host,
				gai_strerror(ret));
	}
	l->next = set->list;
	set->list = l;
	*out = l;
	return 0;
}

void lookup_abandon(struct lookup *l)
{
	int was = LOOKUP_RUNNING;

	if (!l)
		return;
	unlink_lookup(l);
	/* Already done (its notification may be on its way): ours to free.
	 * Still queued: cancelled, no notification will come, ours to free.
	 * Running: the resolver thread frees it when it ends. */
	if (!atomic_compare_exchange_strong(&l->state, &was, LOOKUP_ABANDONED) ||
	    gai_cancel(&l->gcb) == EAI_CANCELED)
		lookup_free(l);
}

void lookup_set_fini(struct lookup_set *set)
{
	if (!set->notifier)
		return;
	loop_watch_del(set->loop, &set->watch);
	notifier_unref(set->notifier);
	set->notifier = NULL;
}
