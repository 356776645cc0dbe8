/* penalty.c: the peer penalty table: addresses, failures in a window, the refusal that follows; no I/O, no clock (the caller gives the time). */
#include "config.h"

#include <netinet/in.h>
#include <string.h>

#include "penalty.h"

static int key_of(const struct sockaddr *sa, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -1;
}

static struct penalty_entry *find(const struct penalty_table *t, const uint8_t key[16])
{
	for (int i = 0; i < PENALTY_SLOTS; i++)
		if (t->e[i].used && !memcmp(t->e[i].addr, key, 16))
			return (struct penalty_entry *)&t->e[i];
	return NULL;
}

/* A free slot, else the one whose last failure is the oldest. */
static struct penalty_entry *victim(struct penalty_table *t)
{
	struct penalty_entry *v = &t->e[0];

	for (int i = 0; i < PENALTY_SLOTS; i++) {
		if (!t->e[i].used)
			return &t->e[i];
		if (t->e[i].last_ms < v->last_ms)
			v = &t->e[i];
	}
	return v;
}

uint32_t penalty_record(struct penalty_table *t, const struct sockaddr *sa, uint64_t now_ms,
			uint32_t window_ms)
{
	uint8_t key[16];
	struct penalty_entry *e;

	if (!sa || key_of(sa, key))
		return 0;
	e = find(t, key);
	if (!e) {
		e = victim(t);
		memset(e, 0, sizeof(*e));
		memcpy(e->addr, key, 16);
		e->used = 1;
	}
	if (!e->fails || now_ms - e->first_ms > window_ms) {
		e->fails = 0;
		e->first_ms = now_ms;
	}
	e->fails++;
	e->last_ms = now_ms;
	return e->fails;
}

uint64_t penalty_refused_ms(const struct penalty_table *t, const struct sockaddr *sa,
			    uint64_t now_ms, uint32_t limit, uint32_t ban_ms, uint32_t *fails)
{
	uint8_t key[16];
	const struct penalty_entry *e;

	if (fails)
		*fails = 0;
	if (!t || !sa || !limit || key_of(sa, key))
		return 0;
	e = find(t, key);
	if (!e)
		return 0;
	if (fails)
		*fails = e->fails;
	if (e->fails < limit || now_ms >= e->last_ms + ban_ms)
		return 0;
	return e->last_ms + ban_ms - now_ms;
}
