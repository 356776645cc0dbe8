/* penalty.h: a pure, bounded table of peer addresses, their address prefixes, and their remote-access failures, for refusing a peer that keeps failing (lib/conn/peer_penalty.c uses it). */
#ifndef EZ_WIRE_PENALTY_H
#define EZ_WIRE_PENALTY_H

#include <stdint.h>
#include <sys/socket.h>

/* 128 entries of 40 bytes (5 KiB, allocated at a context's first failure):
 * each failure counts against its address and its prefix. */
#define PENALTY_SLOTS 128
#define PENALTY_WINDOW_MS 60000u
#define PENALTY_BAN_MS 30000u
/* The prefix a host rotating its addresses stays inside: an IPv4 /24, an
 * IPv6 /64 (a host's own subnet; SLAAC and privacy addresses are all in
 * it). A prefix is refused at PENALTY_PREFIX_FACTOR times the address
 * limit, so that one bad host costs its neighbours nothing until it has
 * failed that often. */
#define PENALTY_V4_PREFIX 24
#define PENALTY_V6_PREFIX 64
#define PENALTY_PREFIX_FACTOR 4u

struct penalty_entry {
	uint8_t addr[16];	/* IPv4 as v4-mapped IPv6; bits past plen zero */
	uint8_t used;
	uint8_t plen;		/* 128: an address; less: a prefix of that many bits */
	uint32_t fails;		/* within the window that began at first_ms */
	uint64_t first_ms, last_ms;
};

/* A listener's ez_listen_opts.access_* (defaults filled), which its
 * accepted connections copy. limit 0: the listener never refuses. */
struct peer_penalty_opts {
	uint32_t limit, window_ms, ban_ms;
};

/* Zero-initialized is empty. When full, the entry that weighs least goes:
 * its window over first, then the fewest failures, then the one that
 * failed least recently. So failures from many addresses, one each, evict
 * one another and never an address (or prefix) that has failed more: the
 * ban cannot be washed out of the table (issue 39: 66 addresses failing
 * once each had freed a banned one when the least recent went first). */
struct penalty_table {
	struct penalty_entry e[PENALTY_SLOTS];
};

/* One more failure of sa's address, and of its prefix, at now_ms; a count
 * starts again when its last window (window_ms) is over. Returns the
 * address's failures counted. */
uint32_t penalty_record(struct penalty_table *t, const struct sockaddr *sa, uint64_t now_ms,
			uint32_t window_ms);
/* Milliseconds the address stays refused (0: not refused): it has limit
 * failures or more in its window and its last one was under ban_ms ago,
 * or its prefix has limit x PENALTY_PREFIX_FACTOR. *fails (may be NULL)
 * gets the address's count, or the prefix's when the prefix is what
 * refuses; *plen (may be NULL) 128 for the address, the prefix's length
 * (in bits of the v4-mapped form for IPv4: 120 for a /24) for the prefix.
 * limit 0: never. */
uint64_t penalty_refused_ms(const struct penalty_table *t, const struct sockaddr *sa,
			    uint64_t now_ms, uint32_t limit, uint32_t ban_ms, uint32_t *fails,
			    unsigned *plen);

#endif
