/* log.h: the library's log lines, routed to the application's hook. */
#ifndef EZ_BASE_LOG_H
#define EZ_BASE_LOG_H

#include "easyrdma.h"

void ezi_log(enum ez_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ezi_log_err(...) ezi_log(EZ_LOG_ERR, __VA_ARGS__)
#define ezi_log_warn(...) ezi_log(EZ_LOG_WARN, __VA_ARGS__)
#define ezi_log_info(...) ezi_log(EZ_LOG_INFO, __VA_ARGS__)
#define ezi_log_debug(...) ezi_log(EZ_LOG_DEBUG, __VA_ARGS__)

#endif
