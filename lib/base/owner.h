/* owner.h: which thread an object belongs to, and the check every entry point makes (cheap: no call, no syscall). */
#ifndef EZ_BASE_OWNER_H
#define EZ_BASE_OWNER_H

#include <pthread.h>
#include <stdint.h>

/* A thread's token is the address of a thread-local byte: distinct between
 * live threads, read with one %fs-relative instruction (initial-exec TLS;
 * the library has a few bytes of it). A thread that has exited may leave
 * its token to a new one, as pthread_self() values are reused. */
extern __thread char ezi_thread_mark __attribute__((tls_model("initial-exec")));

static inline uintptr_t ezi_thread_token(void)
{
	return (uintptr_t)&ezi_thread_mark;
}

/* The thread that made an object (a context); objects of it point at it,
 * so that moving the owner (issue 21: a request handed to another
 * context's thread) is one assignment. thread is kept for messages only. */
struct ezi_owner {
	uintptr_t token;
	pthread_t thread;
};

/* Records the calling thread as the owner. */
void ezi_owner_init(struct ezi_owner *o);

/* Cold path: -EPERM with the thread's message "fn: called from thread 0x..;
 * <what> belongs to thread 0x..". what names the owner ("the context"). */
int ezi_owner_refuse(const struct ezi_owner *o, const char *fn, const char *what)
	__attribute__((cold, noinline));

/* 0 on the owner's thread, else -EPERM (ezi_owner_refuse). */
static inline int ezi_owner_check(const struct ezi_owner *o, const char *fn, const char *what)
{
	if (__builtin_expect(o->token == ezi_thread_token(), 1))
		return 0;
	return ezi_owner_refuse(o, fn, what);
}

#endif
