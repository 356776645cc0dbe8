/* rebuild.h: a failed path of an exact-failover connection made again in the background (rebuild.c). */
#ifndef EZ_CONN_REBUILD_H
#define EZ_CONN_REBUILD_H

#include <stdint.h>

#include "conn_types.h"
#include "wire/settle.h"

/* The first try comes this long after a path went down, then twice as
 * long each time a try fails, up to REBUILD_MAX_MS. A request unanswered
 * for REBUILD_REPLY_MS fails. The passive side takes at most one request
 * per path per REBUILD_MIN_GAP_MS: each costs it a QP made and destroyed. */
#define REBUILD_FIRST_MS 1000u
#define REBUILD_MAX_MS 30000u
#define REBUILD_REPLY_MS 5000u
#define REBUILD_MIN_GAP_MS 500u

/* A path of the connection went down (exact failover): the active side
 * tries to make it again after the backoff. Nothing on the passive side or
 * without exact failover. */
void rebuild_arm(struct ez_conn *conn);
/* A step of the peer's (RX_PATH_UP) for path idx, received on QP qpn. */
void rebuild_on_msg(struct ez_conn *conn, unsigned int idx, const uint8_t bytes[PATH_UP_LEN],
		    uint32_t qpn);
/* The connection ends or is freed: its timer and deferred work stop. */
void rebuild_free(struct ez_conn *conn);
/* Times path idx was made again. */
uint32_t rebuild_path_count(const struct ez_conn *conn, uint32_t idx);
/* Tries to make path idx again that regions exported on it held (this
 * side's, or the peer's answer HELD). */
uint32_t rebuild_path_held(const struct ez_conn *conn, uint32_t idx);

#endif
