/* conn_handle.c: freed connections' handles: void, quarantined, refused (see conn_handle.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_handle.h"
#include "base/log.h"
#include "base/quarantine.h"

static void *ring[CONN_QUARANTINE];
static struct ezi_quarantine quarantine = EZI_QUARANTINE_INIT(ring, CONN_QUARANTINE, free);

int conn_void_refuse(const struct ez_conn *conn, const char *fn)
{
	int err = ezi_fail(-EBADF, "%s: connection %p already ended and reported (its final "
			   "callback ran); the handle is void", fn, (const void *)conn);

	ezi_log_err("%s", ez_errmsg());
	return err;
}

int conn_wrong_handle(const struct ez_conn *conn, const char *fn)
{
	if (conn_is_void(conn)) {
		conn_void_refuse(conn, fn);
		return 1;
	}
	return ctx_wrong_thread(conn->ctx, fn);
}

void conn_retire(struct ez_conn *conn)
{
	/* Wiped: nothing it pointed to stays reachable through it (leak
	 * checkers would take it for used), and a path that skipped the void
	 * test reads zeros, not a context's freed memory. Closed and dead
	 * besides, so that the data path's inline tests (established, not
	 * closed) fail over to the slow path, which tests the mark. */
	memset(conn, 0, sizeof(*conn));
	conn->void_mark = CONN_VOID;
	conn->app_closed = 1;
	conn->state = CS_DEAD;
	ezi_quarantine_put(&quarantine, conn);
}

size_t conn_quarantine_bytes(void)
{
	return (size_t)ezi_quarantine_count(&quarantine) * sizeof(struct ez_conn);
}
