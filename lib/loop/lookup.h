/* lookup.h: host names resolved off the loop, so ez_connect() never blocks on DNS. */
#ifndef EZ_LOOP_LOOKUP_H
#define EZ_LOOP_LOOKUP_H

#include <sys/socket.h>

struct ez_ctx;
struct ez_conn;
struct lookup;

/* Done callback, run from the context's loop: rc 0 and the first address,
 * or a negative errno and a message in err. */
typedef void (*lookup_done_fn)(struct ez_conn *conn, int rc, const struct sockaddr_storage *ss,
			       const char *err);

/* Starts resolving host:service in the background; done runs later from
 * the loop unless lookup_abandon() comes first. */
int lookup_start(struct ez_ctx *ctx, const char *host, const char *service, struct ez_conn *conn,
		 lookup_done_fn done, struct lookup **out);
/* The connection no longer wants the answer: done will not run. Never
 * blocks: a lookup still running frees itself when it ends. */
void lookup_abandon(struct lookup *l);
/* At ez_ctx_free(): lets go of the context's side of the notifier. */
void lookup_ctx_fini(struct ez_ctx *ctx);

#endif
