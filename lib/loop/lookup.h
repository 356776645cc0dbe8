/* lookup.h: host names resolved off the loop, so ez_connect() never blocks on DNS. */
#ifndef EZ_LOOP_LOOKUP_H
#define EZ_LOOP_LOOKUP_H

#include <sys/socket.h>

#include "loop.h"

struct lookup;
struct lookup_notifier;

/* A loop's lookups in flight and the eventfd their resolver threads poke
 * (opened with the first lookup). */
struct lookup_set {
	struct loop *loop;
	struct lookup *list;
	struct lookup_notifier *notifier;
	struct loop_watch watch;
};

/* Done callback, run from the loop: rc 0 and the first address, or a
 * negative errno and a message in err. */
typedef void (*lookup_done_fn)(void *arg, int rc, const struct sockaddr_storage *ss,
			       const char *err);

void lookup_set_init(struct lookup_set *set, struct loop *loop);
/* Starts resolving host:service in the background; done(arg, ...) runs
 * later from the loop unless lookup_abandon() comes first. */
int lookup_set_start(struct lookup_set *set, const char *host, const char *service, void *arg,
		     lookup_done_fn done, struct lookup **out);
/* The connection no longer wants the answer: done will not run. Never
 * blocks: a lookup still running frees itself when it ends. */
void lookup_abandon(struct lookup *l);
/* When the loop goes: lets go of its side of the notifier. */
void lookup_set_fini(struct lookup_set *set);

#endif
