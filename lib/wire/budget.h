/* budget.h: a pure, two-level byte budget (a whole and each peer's share of it) and the reason a refusal gives: the staging budget of large messages (lib/conn/staging.c). */
#ifndef EZ_WIRE_BUDGET_H
#define EZ_WIRE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* Bytes held against a limit for the whole (a context) and for each peer
 * address of it. A limit of 0 is no limit. */
struct budget {
	uint64_t held;		/* by every peer */
	uint64_t max;		/* the whole's limit */
	uint64_t peer_max;	/* each peer's */
};

enum budget_verdict {
	BUDGET_OK = 0,
	BUDGET_FULL,		/* the whole would pass max */
	BUDGET_PEER_FULL,	/* the peer would pass peer_max */
};

/* A limit of 0 is none (ez_ctx_set_limit() turns EZ_LIMIT_NONE into it). */
void budget_init(struct budget *b, uint64_t max, uint64_t peer_max);
void budget_set_max(struct budget *b, uint64_t max);
void budget_set_peer_max(struct budget *b, uint64_t peer_max);
/* held grows by add (after budget_check() said it fits); shrinks by n,
 * never below zero: a miscount must not wrap into "full forever". */
void budget_hold(struct budget *b, uint64_t add);
void budget_release(struct budget *b, uint64_t n);

/* Whether add more bytes fit, the peer holding peer_held of b->held now.
 * A first hold always fits (a message larger than a limit still goes,
 * alone: a budget bounds what waits, not what may be sent), so that no
 * limit turns into a message that can never be sent. */
enum budget_verdict budget_check(const struct budget *b, uint64_t peer_held, uint64_t add);
/* Whether the peer's share could matter: only then is it summed (a walk
 * over the peer's holders), so a context far below peer_max pays nothing. */
int budget_peer_matters(const struct budget *b, uint64_t add);
/* The reason of verdict v (not BUDGET_OK), for the caller's fn, in out:
 * "ez_send: large messages waiting for their peers to fetch them hold
 * 64.0 MiB for this peer address (EZ_LIMIT_STAGED_PER_PEER 64.0 MiB); ...". */
void budget_reason(const struct budget *b, enum budget_verdict v, uint64_t peer_held,
		   uint64_t add, const char *fn, char *out, size_t len);

#endif
