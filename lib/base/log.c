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
	log_max = (int)max_level;
}

static int current_max(void)
{
	if (log_max < 0) {
		const char *env = getenv("EZ_LOG_LEVEL");

		log_max = env ? atoi(env) : EZ_LOG_WARN;
	}
	return log_max;
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
