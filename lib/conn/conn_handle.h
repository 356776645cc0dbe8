/* conn_handle.h: a connection's handle once the connection is freed: marked void, its memory in a quarantine, the refusal every entry point makes first. */
#ifndef EZ_CONN_HANDLE_H
#define EZ_CONN_HANDLE_H

#include "conn_types.h"

/*
 * A struct ez_conn * carries no generation: it is the object's address.
 * So the object's memory outlives the connection for a while: once the
 * application has closed the handle and the final callback has run,
 * conn_free() gives back every resource and conn_retire() wipes the
 * struct, marks it void and keeps it in a process-wide FIFO quarantine of
 * the last CONN_QUARANTINE freed connections (sizeof(struct ez_conn) each,
 * 4.5 MiB in all on x86-64); the oldest goes to free() as a new one
 * comes in. A call with a void handle is refused (-EBADF, logged) before
 * anything else is read. A handle older than the last CONN_QUARANTINE
 * freed connections points at memory malloc may have reused: not detected.
 */
#define CONN_VOID 0x766f6964u	/* "void" */
#define CONN_QUARANTINE 1024u

static inline int conn_is_void(const struct ez_conn *conn)
{
	return conn->void_mark == CONN_VOID;
}

/* -EBADF, with the thread's message "fn: connection 0x.. already ended and
 * reported (its final callback ran); the handle is void", logged as an error. */
int conn_void_refuse(const struct ez_conn *conn, const char *fn) __attribute__((cold, noinline));

/* The checks of an entry point that has a connection (not NULL): a void
 * handle (-EBADF), then the calling thread (-EPERM, ctx_check_thread()). */
static inline int conn_check_handle(const struct ez_conn *conn, const char *fn)
{
	if (__builtin_expect(conn_is_void(conn), 0))
		return conn_void_refuse(conn, fn);
	return ctx_check_thread(conn->ctx, fn);
}

/* For calls that return nothing or a pointer: 1 when refused (logged as an
 * error either way), the caller returns. */
int conn_wrong_handle(const struct ez_conn *conn, const char *fn);

/* The end of conn_free(): every resource is given back; the struct is wiped,
 * marked void and quarantined (never touched by the library again). */
void conn_retire(struct ez_conn *conn);

/* Bytes the quarantine keeps now: what the memory-growth tests discount
 * (it grows once, to CONN_QUARANTINE connections, then stays). */
size_t conn_quarantine_bytes(void);

#endif
