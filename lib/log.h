/* log.h: the library's log lines, routed to the application's hook. */
#ifndef EZ_LOG_H
#define EZ_LOG_H

#include "easyrdma.h"

void ez_log(enum ez_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ez_log_err(...) ez_log(EZ_LOG_ERR, __VA_ARGS__)
#define ez_log_warn(...) ez_log(EZ_LOG_WARN, __VA_ARGS__)
#define ez_log_info(...) ez_log(EZ_LOG_INFO, __VA_ARGS__)
#define ez_log_debug(...) ez_log(EZ_LOG_DEBUG, __VA_ARGS__)

#endif
