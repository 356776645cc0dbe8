/* mailbox.h: the one way into a loop from another thread: mail posted under a mutex, an eventfd that wakes the loop, delivery on the loop's thread. */
#ifndef EZ_LOOP_MAILBOX_H
#define EZ_LOOP_MAILBOX_H

#include <pthread.h>

#include "loop.h"

/* Embedded in what is posted; the mailbox links it. */
struct loop_mail {
	struct loop_mail *next;
};

/* At most this many letters are delivered per loop pass; the rest keep the
 * eventfd readable for the next one. */
#define LOOP_MAIL_PER_PASS 32

/*
 * Everything but mu, head, tail, n and closed belongs to the loop's thread.
 * mu is held for the post (with its under_lock step and the eventfd write)
 * and for the loop's take and close: never for a delivery, so a letter's
 * handler may post again (to this mailbox or another).
 */
struct loop_mailbox {
	pthread_mutex_t mu;
	struct loop_mail *head, **tail;
	unsigned int n;		/* letters queued (read by other threads too: atomic) */
	int closed;		/* no more posts (read by other threads too: atomic) */
	struct loop *loop;
	struct loop_watch watch;	/* the eventfd */
	void (*deliver)(struct loop_mailbox *mb, struct loop_mail *m);	/* on the loop's thread */
	unsigned long long delivered;	/* the loop's count */
};

/* On the loop's thread: the eventfd in loop's set; deliver(mb, m) runs for
 * each letter in a later pass, on that thread. A negative errno (ezi_fail). */
int loop_mailbox_init(struct loop *loop, struct loop_mailbox *mb,
		      void (*deliver)(struct loop_mailbox *mb, struct loop_mail *m));

/* Any thread: posts m unless the mailbox is closed (-ESHUTDOWN, m untouched).
 * under_lock (may be NULL) runs first with the mailbox's mutex held, so that
 * what it does and the post are one step against loop_mailbox_close(); a
 * negative return refuses the post (returned, m not queued). It must not
 * wait: it holds up the loop's thread if that takes the mutex meanwhile. */
int loop_mailbox_post(struct loop_mailbox *mb, struct loop_mail *m,
		      int (*under_lock)(struct loop_mail *m, void *arg), void *arg);

/* On the loop's thread: the mutex taken and let go. Whatever a post did
 * under the lock before it let go now happened before the caller's next
 * read (a CM event of an id migrated by an under_lock step, read from this
 * loop's channel, was queued inside that post). */
void loop_mailbox_sync(struct loop_mailbox *mb);

/* On the loop's thread: no more posts; returns the letters still queued, in
 * order (the caller disposes of them). Safe to call again (NULL then). */
struct loop_mail *loop_mailbox_close(struct loop_mailbox *mb);

/* Letters queued now (any thread; a snapshot). */
unsigned int loop_mailbox_queued(const struct loop_mailbox *mb);
int loop_mailbox_is_closed(const struct loop_mailbox *mb);

/* On the loop's thread, after loop_mailbox_close(): out of the set, the
 * eventfd closed (a post that comes later finds the mailbox closed and
 * touches neither). The mutex stays: a poster may still take it. */
void loop_mailbox_fini(struct loop_mailbox *mb);
/* When the memory goes, once no thread can post any more: the mutex. */
void loop_mailbox_destroy(struct loop_mailbox *mb);

#endif
