/* budget.c: the two-level byte budget's verdict and its reason (budget.h); pure. */
#include "config.h"

#include <stdio.h>

#include "budget.h"

void budget_init(struct budget *b, uint64_t max, uint64_t peer_max)
{
	b->held = 0;
	b->max = max;
	b->peer_max = peer_max;
}

void budget_set_max(struct budget *b, uint64_t max)
{
	b->max = max;
}

void budget_set_peer_max(struct budget *b, uint64_t peer_max)
{
	b->peer_max = peer_max;
}

void budget_hold(struct budget *b, uint64_t add)
{
	b->held += add;
}

void budget_release(struct budget *b, uint64_t n)
{
	b->held -= n <= b->held ? n : b->held;
}

static int passes(uint64_t held, uint64_t add, uint64_t max)
{
	return max && held && (add > max || held > max - add);
}

enum budget_verdict budget_check(const struct budget *b, uint64_t peer_held, uint64_t add)
{
	if (passes(b->held, add, b->max))
		return BUDGET_FULL;
	if (passes(peer_held, add, b->peer_max))
		return BUDGET_PEER_FULL;
	return BUDGET_OK;
}

int budget_peer_matters(const struct budget *b, uint64_t add)
{
	/* The peer holds at most what everyone holds. */
	return passes(b->held, add, b->peer_max);
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

void budget_reason(const struct budget *b, enum budget_verdict v, uint64_t peer_held,
		   uint64_t add, const char *fn, char *out, size_t len)
{
	if (v == BUDGET_FULL)
		snprintf(out, len, "%s: large messages waiting for their peers to fetch them hold %.1f MiB of this context (EZ_LIMIT_STAGED %.1f MiB); %.1f MiB more must wait until one is fetched (on_send_ready)",
			 fn, mib(b->held), mib(b->max), mib(add));
	else
		snprintf(out, len, "%s: large messages waiting for this peer address to fetch them hold %.1f MiB (EZ_LIMIT_STAGED_PER_PEER %.1f MiB); %.1f MiB more must wait until one is fetched (on_send_ready)",
			 fn, mib(peer_held), mib(b->peer_max), mib(add));
}
