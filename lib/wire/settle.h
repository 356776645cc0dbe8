/* settle.h: the ops of a failed path settled exactly once from the peer's count of the messages it received there (pure functions). */
#ifndef EZ_WIRE_SETTLE_H
#define EZ_WIRE_SETTLE_H

#include <stdint.h>

/*
 * Exact failover (HS_CAP_FAILOVER, connections of several paths). An RC
 * path delivers in order and at most once, so its messages need no number
 * on the wire: the n-th WR posted on a path that lands in the peer's
 * receive queue (a SEND of any kind, a WRITE with immediate) is the peer's
 * n-th receive completion on that path. When a path fails, each side moves
 * its QP to ERR, takes in the receives already completed, and tells the
 * other, on a live path, how many it received on the failed one (the
 * path-down notice's 4 bytes, big-endian); receives that complete on the
 * path after that are dropped. With the peer's count, every op the failed
 * path held ends exactly once: a message the count covers arrived (done,
 * whatever its completion said: only the acknowledgement was lost); one it
 * does not cover is posted again on a live path, as are READs and WRITEs
 * (they may be repeated); an atomic may have been applied or not (its
 * outcome cannot be known); what is bound to the failed QP (a window, a
 * large message's offer) fails with the path's status.
 */
#define PATH_COUNT_LEN 4

/*
 * A failed path (1..K-1; path 0 is rdma_cm's) made again, on the active
 * side's initiative, with credit-only messages flagged IMM_PATH_UP and the
 * path's index, 8 bytes each, big-endian:
 *   0 u8 step   1 u24 QP number   4 u32 first PSN (24 bits)
 * REQUEST (on a live path): the active side's new QP and its send PSN;
 * REPLY (on a live path): the passive side's, its QP already in RTS;
 * READY (on the rebuilt path itself, from the active side once its QP is
 * in RTS): the path carries traffic; its QP and PSN fields are 0;
 * HELD (on a live path, the passive side's answer instead of REPLY): it
 * cannot make the path again yet, because regions it exported are bound
 * to the path's old QP; its QP field is 0 and its PSN field carries how
 * many (1..2^24-1). The active side asks again later.
 */
#define PATH_UP_LEN 8
enum path_up_step {
	PATH_UP_REQUEST = 1,
	PATH_UP_REPLY = 2,
	PATH_UP_READY = 3,
	PATH_UP_HELD = 4,
};
struct path_up {
	uint8_t step;
	uint32_t qpn;	/* 24 bits */
	uint32_t psn;	/* 24 bits; HELD: the windows that hold the path */
};
void path_up_encode(const struct path_up *u, uint8_t out[PATH_UP_LEN]);
/* 0, or -1 for a step, QP number or PSN no easyrdma sends. */
int path_up_decode(const uint8_t in[PATH_UP_LEN], struct path_up *u);

void path_count_encode(uint32_t count, uint8_t out[PATH_COUNT_LEN]);
uint32_t path_count_decode(const uint8_t in[PATH_COUNT_LEN]);

/* a before b in a count that wraps at 2^32 (a window is far smaller). */
static inline int settle_seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* The peer's count for a path we sent tx receive-taking WRs on, of which
 * unacked (those among the ops it held at its failure) had no successful
 * completion: at least tx - unacked (each acknowledged one arrived), at
 * most tx. Anything else is a lie or a lost message: the connection ends. */
enum settle_fault {
	SETTLE_OK,
	SETTLE_F_OVER_SENT,	/* counts more than we sent on the path */
	SETTLE_F_UNDER_ACKED,	/* counts fewer than it acknowledged */
};
enum settle_fault settle_check_count(uint32_t count, uint32_t tx, uint32_t unacked);
const char *settle_fault_str(enum settle_fault f);

/* What an op of the failed path is, for its settling. */
enum settle_class {
	SETTLE_MSG,		/* lands in a receive buffer, may go on any path */
	SETTLE_MSG_BOUND,	/* lands in a receive buffer, bound to the failed QP (a large message's offer) */
	SETTLE_RDMA,		/* a READ or WRITE, on any path */
	SETTLE_ATOMIC,		/* a compare-and-swap or fetch-and-add */
	SETTLE_BOUND,		/* bound to the failed QP (a window bind, a READ through a window bound there) */
};

enum settle_action {
	SETTLE_DONE,		/* it arrived: ends with 0 */
	SETTLE_REPOST,		/* posted again on a live path, ends there */
	SETTLE_FAIL,		/* ends with its error (its own, or the path's) */
	SETTLE_UNKNOWN,		/* ends with -EZ_OUTCOME_UNKNOWN */
};

/* An op of class c that ended on the failed path with a fault of the path
 * (path_fault: a flush, retries exceeded) or an error of its own (0: a
 * remote access error, a length error), whose receive-taking position on
 * the path is seq (SETTLE_MSG*), given the peer's count. */
enum settle_action settle_decide(enum settle_class c, int path_fault, uint32_t seq, uint32_t count);

/* Whether class c takes a receive at the peer (counted on the path). */
static inline int settle_takes_recv(enum settle_class c)
{
	return c == SETTLE_MSG || c == SETTLE_MSG_BOUND;
}

#endif
