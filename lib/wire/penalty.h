/* penalty.h: a pure, bounded table of peer addresses and their remote-access failures, for refusing a peer that keeps failing (lib/conn/peer_penalty.c uses it). */
#ifndef EZ_WIRE_PENALTY_H
#define EZ_WIRE_PENALTY_H

#include <stdint.h>
#include <sys/socket.h>

#define PENALTY_SLOTS 64
#define PENALTY_WINDOW_MS 60000u
#define PENALTY_BAN_MS 30000u

struct penalty_entry {
	uint8_t addr[16];	/* IPv4 as v4-mapped IPv6 */
	uint8_t used;
	uint32_t fails;		/* within the window that began at first_ms */
	uint64_t first_ms, last_ms;
};

/* A listener's ez_listen_opts.access_* (defaults filled), which its
 * accepted connections copy. limit 0: the listener never refuses. */
struct peer_penalty_opts {
	uint32_t limit, window_ms, ban_ms;
};

/* Zero-initialized is empty. When full, the entry failed least recently
 * is forgotten. */
struct penalty_table {
	struct penalty_entry e[PENALTY_SLOTS];
};

/* One more failure of sa's address at now_ms; the count starts again when
 * the last window (window_ms) is over. Returns the failures counted. */
uint32_t penalty_record(struct penalty_table *t, const struct sockaddr *sa, uint64_t now_ms,
			uint32_t window_ms);
/* Milliseconds the address stays refused (0: not refused): it has limit
 * failures or more in its window, and its last one was under ban_ms ago.
 * *fails (may be NULL) gets its count. limit 0: never. */
uint64_t penalty_refused_ms(const struct penalty_table *t, const struct sockaddr *sa,
			    uint64_t now_ms, uint32_t limit, uint32_t ban_ms, uint32_t *fails);

#endif
