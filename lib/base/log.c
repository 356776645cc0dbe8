/* log.c: log lines go to the application's hook, or to stderr by default. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static ez_log_fn log_fn;
static void *log_arg;
static int log_max = -1; /* -1: not set yet; read EZ_LOG_LEVEL once */

void ez_set_log(ez_log_fn fn, void *arg, enum ez_log_level max_level)
{
	log_fn = fn;
	log_arg = arg;
	__atomic_store_n(&log_max, (int)max_level, __ATOMIC_RELAXED);
}

/* Every thread with a context logs: the level is read and, the first time,
 * set from the environment with atomics (each thread computes the same). */
static int current_max(void)
{
	int m = __atomic_load_n(&log_max, __ATOMIC_RELAXED);

	if (m < 0) {
		const char *env = getenv("EZ_LOG_LEVEL");

		m = env ? atoi(env) : EZ_LOG_WARN;
		__atomic_store_n(&log_max, m, __ATOMIC_RELAXED);
	}
	return m;
}

void ezi_log(enum ez_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[512];
	va_list ap;

	if ((int)level > current_max())
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_fn)
		log_fn(level, line, log_arg);
	else
		fprintf(stderr, "easyrdma %s: %s\n", names[level], line);
}
