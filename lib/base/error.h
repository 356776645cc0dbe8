/* error.h: the thread's last error message, set by every failing call. */
#ifndef EZ_BASE_ERROR_H
#define EZ_BASE_ERROR_H

#include <stddef.h>

/* Formats the calling thread's last error message and returns err, so that a
 * failure reads as one line: return ezi_fail(-EINVAL, "...: %s", why); */
int ezi_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies a message into a caller's buffer as well (objects keep their own). */
int ezi_fail_into(char *buf, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* As ezi_fail() for a failure on the per-message path: only the arguments are
 * kept, and the message ("fmt" with one %s and one %u) is formatted when
 * ez_errmsg() reads it. s must outlive the next failure (a string literal). */
int ezi_fail_lazy(int err, const char *fmt, const char *s, unsigned int u)
	__attribute__((format(printf, 2, 0)));

void ezi_clear_error(void);

/* A getaddrinfo() failure as an errno of its own kind (not a route's
 * EHOSTUNREACH): -ENXIO the name has no address, -EINVAL an unknown
 * service, -EAGAIN a temporary failure of the resolver, -ENOMEM. */
int ezi_gai_errno(int gai_rc);

#define EZ_ERRMSG_MAX 256

#endif
