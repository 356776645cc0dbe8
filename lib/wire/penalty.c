/* penalty.c: the peer penalty table: addresses and their prefixes, failures in a window, the refusal that follows; no I/O, no clock (the caller gives the time). */
#include "config.h"

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "penalty.h"

/* The address as 16 bytes (IPv4 v4-mapped) and its prefix's length in
 * those bits; -1 for a family without addresses. */
static int key_of(const struct sockaddr *sa, uint8_t key[16], unsigned *prefix_len)
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		*prefix_len = 96 + PENALTY_V4_PREFIX;
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		*prefix_len = PENALTY_V6_PREFIX;
		return 0;
	}
	return -1;
}

/* key cut to its first plen bits. */
static void prefix_of(const uint8_t key[16], unsigned plen, uint8_t out[16])
{
	memcpy(out, key, 16);
	for (unsigned bit = plen; bit < 128; bit++)
		out[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
}

static struct penalty_entry *find(const struct penalty_table *t, const uint8_t key[16],
				  unsigned plen)
{
	for (int i = 0; i < PENALTY_SLOTS; i++)
		if (t->e[i].used && t->e[i].plen == plen && !memcmp(t->e[i].addr, key, 16))
			return (struct penalty_entry *)&t->e[i];
	return NULL;
}

/* What an entry is worth keeping: its failures, 0 once its window is over. */
static uint32_t weight(const struct penalty_entry *e, uint64_t now_ms, uint32_t window_ms)
{
	return now_ms - e->first_ms > window_ms ? 0 : e->fails;
}

/* A free slot, else the one weighing least (then the least recently
 * failed), never keep (the entry this failure just counted on). */
static struct penalty_entry *victim(struct penalty_table *t, const struct penalty_entry *keep,
				    uint64_t now_ms, uint32_t window_ms)
{
	struct penalty_entry *v = NULL;

	for (int i = 0; i < PENALTY_SLOTS; i++) {
		struct penalty_entry *e = &t->e[i];

		if (!e->used)
			return e;
		if (e == keep)
			continue;
		if (!v || weight(e, now_ms, window_ms) < weight(v, now_ms, window_ms) ||
		    (weight(e, now_ms, window_ms) == weight(v, now_ms, window_ms) &&
		     e->last_ms < v->last_ms))
			v = e;
	}
	return v;
}

static struct penalty_entry *count(struct penalty_table *t, const uint8_t key[16], unsigned plen,
				   const struct penalty_entry *keep, uint64_t now_ms,
				   uint32_t window_ms)
{
	struct penalty_entry *e = find(t, key, plen);

	if (!e) {
		e = victim(t, keep, now_ms, window_ms);
		memset(e, 0, sizeof(*e));
		memcpy(e->addr, key, 16);
		e->plen = (uint8_t)plen;
		e->used = 1;
	}
	if (!e->fails || now_ms - e->first_ms > window_ms) {
		e->fails = 0;
		e->first_ms = now_ms;
	}
	e->fails++;
	e->last_ms = now_ms;
	return e;
}

uint32_t penalty_record(struct penalty_table *t, const struct sockaddr *sa, uint64_t now_ms,
			uint32_t window_ms)
{
	uint8_t key[16], pkey[16];
	unsigned plen;
	struct penalty_entry *host;

	if (!sa || key_of(sa, key, &plen))
		return 0;
	host = count(t, key, 128, NULL, now_ms, window_ms);
	prefix_of(key, plen, pkey);
	count(t, pkey, plen, host, now_ms, window_ms);
	return host->fails;
}

/* How long e refuses at limit (0: it does not). */
static uint64_t refusal_left(const struct penalty_entry *e, uint64_t now_ms, uint32_t limit,
			     uint32_t ban_ms)
{
	if (!e || e->fails < limit || now_ms >= e->last_ms + ban_ms)
		return 0;
	return e->last_ms + ban_ms - now_ms;
}

uint64_t penalty_refused_ms(const struct penalty_table *t, const struct sockaddr *sa,
			    uint64_t now_ms, uint32_t limit, uint32_t ban_ms, uint32_t *fails,
			    unsigned *plen)
{
	uint8_t key[16], pkey[16];
	unsigned prefix_len;
	const struct penalty_entry *host, *prefix;
	uint64_t left_host, left_prefix;

	if (fails)
		*fails = 0;
	if (plen)
		*plen = 128;
	if (!t || !sa || !limit || key_of(sa, key, &prefix_len))
		return 0;
	host = find(t, key, 128);
	prefix_of(key, prefix_len, pkey);
	prefix = find(t, pkey, prefix_len);
	if (fails && host)
		*fails = host->fails;
	left_host = refusal_left(host, now_ms, limit, ban_ms);
	left_prefix = refusal_left(prefix, now_ms,
				   limit > UINT32_MAX / PENALTY_PREFIX_FACTOR ?
					   UINT32_MAX : limit * PENALTY_PREFIX_FACTOR,
				   ban_ms);
	if (left_prefix > left_host) {
		if (fails)
			*fails = prefix->fails;
		if (plen)
			*plen = prefix_len;
		return left_prefix;
	}
	return left_host;
}
