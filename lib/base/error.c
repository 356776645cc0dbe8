/* error.c: error strings and the per-thread last-error message. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "easyrdma.h"
#include "error.h"

static __thread char last_error[EZ_ERRMSG_MAX];

/* A message formatted when it is read (ezi_fail_lazy()): a failure that a
 * caller hits at message rate, such as a full send window, must not cost a
 * vsnprintf each time. fmt takes one string and one unsigned. */
static __thread struct {
	const char *fmt;
	const char *s;
	unsigned int u;
} pending __attribute__((tls_model("initial-exec")));	/* set at message rate: no __tls_get_addr call */

const char *ez_strerror(int err)
{
	static __thread char buf[64];

	if (err < 0)
		err = -err;
	if (err == 0)
		return "Success";
	/* strerror_r (GNU) may return a static string instead of filling buf. */
	return strerror_r(err, buf, sizeof(buf));
}

const char *ez_errmsg(void)
{
	if (pending.fmt) {
		snprintf(last_error, sizeof(last_error), pending.fmt, pending.s, pending.u);
		pending.fmt = NULL;
	}
	return last_error;
}

void ezi_clear_error(void)
{
	pending.fmt = NULL;
	last_error[0] = '\0';
}

int ezi_fail_lazy(int err, const char *fmt, const char *s, unsigned int u)
{
	pending.fmt = fmt;
	pending.s = s;
	pending.u = u;
	return err;
}

static void format_into(char *buf, size_t len, const char *fmt, va_list ap)
{
	vsnprintf(buf, len, fmt, ap);
}

int ezi_fail(int err, const char *fmt, ...)
{
	va_list ap;

	pending.fmt = NULL;
	va_start(ap, fmt);
	format_into(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

int ezi_fail_into(char *buf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	pending.fmt = NULL;
	va_start(ap, fmt);
	format_into(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (buf && len)
		snprintf(buf, len, "%s", last_error);
	return err;
}

int ezi_gai_errno(int gai_rc)
{
	switch (gai_rc) {
	case 0:
		return 0;
	case EAI_SERVICE:
		return -EINVAL;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -ENXIO;
	default:	/* EAI_NONAME, EAI_NODATA, EAI_FAIL, EAI_ADDRFAMILY, ... */
		return -ENXIO;
	}
}
