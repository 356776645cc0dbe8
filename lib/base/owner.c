/* owner.c: the thread token and the refusal message of a call from a thread that does not own the object. */
#include "config.h"

#include <errno.h>

#include "error.h"
#include "owner.h"

__thread char ezi_thread_mark __attribute__((tls_model("initial-exec")));

void ezi_owner_init(struct ezi_owner *o)
{
	o->token = ezi_thread_token();
	o->thread = pthread_self();
}

int ezi_owner_refuse(const struct ezi_owner *o, const char *fn, const char *what)
{
	return ezi_fail(-EPERM, "%s: called from thread %#lx; %s belongs to thread %#lx "
			"(an easyrdma context and its objects are used from one thread)",
			fn, (unsigned long)pthread_self(), what, (unsigned long)o->thread);
}
