/* settle.c: the ops of a failed path settled exactly once from the peer's count (settle.h; pure). */
#include "config.h"

#include "settle.h"
#include "be.h"

void path_count_encode(uint32_t count, uint8_t out[PATH_COUNT_LEN])
{
	be_put32(out, count);
}

uint32_t path_count_decode(const uint8_t in[PATH_COUNT_LEN])
{
	return be_get32(in);
}

enum settle_fault settle_check_count(uint32_t count, uint32_t tx, uint32_t unacked)
{
	/* Counts wrap: compared as distances back from tx. */
	if (settle_seq_before(tx, count))
		return SETTLE_F_OVER_SENT;
	if (tx - count > unacked)
		return SETTLE_F_UNDER_ACKED;
	return SETTLE_OK;
}

const char *settle_fault_str(enum settle_fault f)
{
	switch (f) {
	case SETTLE_OK:
		return "consistent";
	case SETTLE_F_OVER_SENT:
		return "more messages than were sent on the path";
	case SETTLE_F_UNDER_ACKED:
		return "fewer messages than it acknowledged";
	}
	return "?";
}

enum settle_action settle_decide(enum settle_class c, int path_fault, uint32_t seq, uint32_t count)
{
	/* A message the peer counted arrived, whatever its completion said. */
	if (settle_takes_recv(c) && settle_seq_before(seq, count))
		return SETTLE_DONE;
	/* Its own error (an access right, a length) would repeat anywhere. */
	if (!path_fault)
		return SETTLE_FAIL;
	switch (c) {
	case SETTLE_MSG:
	case SETTLE_RDMA:
		return SETTLE_REPOST;
	case SETTLE_ATOMIC:
		/* It may have been applied with only the response lost; doing it
		 * again could apply it twice. */
		return SETTLE_UNKNOWN;
	case SETTLE_MSG_BOUND:
	case SETTLE_BOUND:
		break;
	}
	return SETTLE_FAIL;
}

void path_up_encode(const struct path_up *u, uint8_t out[PATH_UP_LEN])
{
	out[0] = u->step;
	out[1] = (uint8_t)(u->qpn >> 16);
	out[2] = (uint8_t)(u->qpn >> 8);
	out[3] = (uint8_t)u->qpn;
	path_count_encode(u->psn, out + 4);
}

int path_up_decode(const uint8_t in[PATH_UP_LEN], struct path_up *u)
{
	u->step = in[0];
	u->qpn = (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
	u->psn = path_count_decode(in + 4);
	if (u->step < PATH_UP_REQUEST || u->step > PATH_UP_HELD || u->psn > 0xffffffu)
		return -1;
	if (u->step == PATH_UP_READY)
		return u->qpn || u->psn ? -1 : 0;
	if (u->step == PATH_UP_HELD)
		return u->qpn || !u->psn ? -1 : 0;
	/* QP number 0 is the special QP0, 1 GSI: never an RC QP. */
	return u->qpn < 2 ? -1 : 0;
}
