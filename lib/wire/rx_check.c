/* rx_check.c: what a received message is, or which rule the peer broke: immediate bits, length, credits, paths and the auth step (pure). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "bye.h"
#include "exports.h"
#include "imm.h"
#include "rndv.h"
#include "rx_check.h"
#include "settle.h"

_Static_assert(RX_IMM_KNOWN == (IMM_CREDITS_MASK | IMM_PATH_FIELD | IMM_EXPORTS | IMM_PATH_UP | IMM_RNDV |
				IMM_KA_REPLY | IMM_KEEPALIVE | IMM_AUTH | IMM_PATH_DOWN | IMM_BYE |
				IMM_CREDIT_ONLY),
	       "RX_IMM_KNOWN is every bit of imm.h");
_Static_assert(RX_MAX_CREDITS == IMM_CREDITS_MASK, "credits travel in 16 bits");

#define KA_FLAGS (IMM_KEEPALIVE | IMM_KA_REPLY)
#define CONTROL_FLAGS (IMM_AUTH | IMM_PATH_DOWN | IMM_BYE | KA_FLAGS | IMM_PATH_UP | IMM_EXPORTS)

uint64_t rx_return_room(const struct rx_track *t)
{
	/* An honest peer hands back at most two credits per message of ours
	 * it received (its window doubles while used, share.c), whatever the
	 * order its returns arrive in over several paths. */
	uint64_t room = 2 * t->sent + t->return_slack;

	return room > t->returned ? room - t->returned : 0;
}

/* The message lands in one of our receive buffers against a credit. */
static enum rx_fault take_credit(const struct rx_view *v, struct rx_msg *out)
{
	if (v->recv_granted)
		return RX_OK;
	if (v->t->recv_slack) {
		out->slack = 1;
		return RX_OK;
	}
	return RX_F_NO_CREDIT;
}

static enum rx_fault take_returns(const struct rx_view *v, uint32_t credits, struct rx_msg *out)
{
	if (credits > rx_return_room(v->t))
		return RX_F_OVER_RETURN;
	if ((uint64_t)v->send_credits + credits > v->max_send_credits)
		return RX_F_OVER_HOLD;
	out->credits = credits;
	return RX_OK;
}

static int awaiting_auth(const struct rx_view *v)
{
	return v->auth == RX_AUTH_AWAIT_PROOF || v->auth == RX_AUTH_AWAIT_VERDICT;
}

static enum rx_fault check_data(const struct rx_in *in, const struct rx_view *v, struct rx_msg *out)
{
	enum rx_fault f;

	if (in->imm & CONTROL_FLAGS)
		return RX_F_FLAG_NOT_CONTROL;
	if (in->imm & IMM_PATH_FIELD)
		return RX_F_PATH_BITS;
	if (awaiting_auth(v))
		return RX_F_AUTH_WRONG;
	if ((in->imm & IMM_RNDV) && !v->rndv)
		return RX_F_RNDV_OFF;
	f = take_credit(v, out);
	if (f)
		return f;
	if (in->imm & IMM_RNDV) {
		/* A header in place of the bytes: its contents are judged by
		 * rx_check_rndv() once read. */
		if (in->byte_len != RNDV_HDR_LEN)
			return RX_F_RNDV_HDR_LEN;
		out->kind = RX_RNDV;
	} else {
		if (in->byte_len > v->max_msg)
			return RX_F_TOO_LONG;
		out->kind = RX_DATA;
	}
	return take_returns(v, in->imm & IMM_CREDITS_MASK, out);
}

static unsigned int popcount8(uint8_t x)
{
	unsigned int n = 0;

	for (; x; x &= (uint8_t)(x - 1))
		n++;
	return n;
}

/* A path-down names a path the peer still had and that is not our last:
 * the peer sends one only with another path live. A path we took out
 * ourselves may cross with the peer's notice for it, and a notice for our
 * last path may cross with one of ours for another: both are honest. */
static enum rx_fault check_path_down(const struct rx_view *v, unsigned int path)
{
	uint8_t all = (uint8_t)((1u << v->npaths) - 1);
	uint8_t ours_down = (uint8_t)(all & ~v->live & ~v->t->peer_down);
	uint8_t bit = (uint8_t)(1u << path);

	if (path >= v->npaths)
		return RX_F_PATH_NONE;
	if (v->t->peer_down & bit)
		return RX_F_PATH_AGAIN;
	if ((v->live & bit) && popcount8(v->live) == 1 && !ours_down)
		return RX_F_PATH_LAST;
	return RX_OK;
}

static enum rx_fault check_auth(const struct rx_in *in, const struct rx_view *v, struct rx_msg *out)
{
	uint32_t flags = in->imm & CONTROL_FLAGS;

	if (v->auth == RX_AUTH_NOKEY)
		return RX_F_AUTH_NO_KEY;
	if (v->auth == RX_AUTH_DONE)
		return RX_F_AUTH_LATE;
	if (in->imm & IMM_CREDITS_MASK)
		return RX_F_CONTROL_CREDITS;
	if (v->auth == RX_AUTH_AWAIT_PROOF) {
		/* The proof is CREDIT_ONLY|AUTH, the one control message with bytes. */
		if (flags != IMM_AUTH)
			return RX_F_AUTH_WRONG;
		if (in->byte_len != AUTH_PROOF_LEN)
			return RX_F_AUTH_LEN;
		out->kind = RX_AUTH_PROOF;
		return RX_OK;
	}
	if (in->byte_len)
		return RX_F_CONTROL_PAYLOAD;
	out->kind = flags == IMM_AUTH ? RX_AUTH_OK : RX_AUTH_REFUSED;
	return RX_OK;
}

/* A probe or its answer: empty, no credits, after the connect, between
 * peers that both announced HS_CAP_KEEPALIVE. They take a receive buffer
 * without a credit, so both are bounded: an answer by the probes we sent;
 * probes by our answers: while one is outstanding, the probes that come
 * are not answered (it answers them all), and an honest prober sends at
 * most 255 of those (keepalive_probes), one per interval. A loop of ours
 * that stalled finds them all at once, so the bound is a count, not a
 * rate. */
static enum rx_fault check_keepalive(const struct rx_in *in, const struct rx_view *v,
				     struct rx_msg *out)
{
	uint32_t flags = in->imm & CONTROL_FLAGS;

	if (flags != IMM_KEEPALIVE && flags != KA_FLAGS)
		return RX_F_FLAG_MIX;
	if (!v->ka)
		return RX_F_KA_OFF;
	if (awaiting_auth(v))
		return RX_F_AUTH_WRONG;
	if (in->imm & IMM_CREDITS_MASK)
		return RX_F_CONTROL_CREDITS;
	if (in->byte_len)
		return RX_F_CONTROL_PAYLOAD;
	if (flags == KA_FLAGS) {
		if (v->t->ka_answers >= v->t->ka_probes)
			return RX_F_KA_UNASKED;
		out->kind = RX_KA_REPLY;
		return RX_OK;
	}
	if (v->ka_answer_busy && v->t->ka_early >= RX_KA_MAX_UNANSWERED)
		return RX_F_KA_FLOOD;
	out->kind = RX_KA_PROBE;
	out->answer = !v->ka_answer_busy;
	return RX_OK;
}

/* The receiver fetched one of our large messages: 4 bytes (the id), no
 * credits, and only while one of ours is outstanding, so the receive
 * buffers acknowledgements take are bounded by our transfers. */
static enum rx_fault check_rndv_ack(const struct rx_in *in, const struct rx_view *v,
				    struct rx_msg *out)
{
	if (in->imm & CONTROL_FLAGS)
		return RX_F_FLAG_MIX;
	if (!v->rndv)
		return RX_F_RNDV_OFF;
	if (awaiting_auth(v))
		return RX_F_AUTH_WRONG;
	if (in->imm & IMM_CREDITS_MASK)
		return RX_F_CONTROL_CREDITS;
	if (in->byte_len != RNDV_ACK_LEN)
		return RX_F_RNDV_ACK_LEN;
	if (v->t->rndv_acked >= v->t->rndv_sent)
		return RX_F_RNDV_ACK_NONE;
	out->kind = RX_RNDV_ACK;
	return RX_OK;
}

/* A step of a failed path's rebuild: exact failover only, 8 bytes, no
 * credits, no other flag, a path the connection has (path 0 included). Whether
 * the step fits where the rebuild stands is the connection's to judge
 * (rebuild.c); each step costs the peer a receive buffer of ours without a
 * credit, and the connection bounds them (one request per path per
 * interval). */
static enum rx_fault check_path_up(const struct rx_in *in, const struct rx_view *v,
				   struct rx_msg *out)
{
	unsigned int path = imm_path(in->imm);

	if ((in->imm & CONTROL_FLAGS) != IMM_PATH_UP || (in->imm & IMM_RNDV))
		return RX_F_FLAG_MIX;
	if (!v->exact)
		return RX_F_PATH_UP_OFF;
	if (awaiting_auth(v))
		return RX_F_AUTH_WRONG;
	if (in->imm & IMM_CREDITS_MASK)
		return RX_F_CONTROL_CREDITS;
	if (in->byte_len != PATH_UP_LEN)
		return RX_F_PATH_UP_LEN;
	if (path >= v->npaths)
		return RX_F_PATH_NONE;
	out->kind = RX_PATH_UP;
	out->path = (uint8_t)path;
	return RX_OK;
}

/* The regions the peer gives with the connection: once, from a peer that
 * announced them (so the receive buffer it takes without a credit is one
 * per connection), after the shared-secret exchange, no credits, no other
 * bit, at most EXPORTS_MAX_LEN bytes (its contents: exports_decode()). */
static enum rx_fault check_exports(const struct rx_in *in, const struct rx_view *v,
				   struct rx_msg *out)
{
	if (in->imm != IMM_EXPORTS_MSG)
		return in->imm & ~IMM_EXPORTS_MSG & (CONTROL_FLAGS | IMM_RNDV | IMM_PATH_FIELD) ?
		       RX_F_FLAG_MIX : RX_F_CONTROL_CREDITS;
	if (awaiting_auth(v))
		return RX_F_AUTH_WRONG;
	if (!v->exports_due)
		return RX_F_EXPORTS_UNASKED;
	if (in->byte_len < EXPORTS_HDR_LEN || in->byte_len > EXPORTS_MAX_LEN)
		return RX_F_EXPORTS_LEN;
	out->kind = RX_EXPORTS;
	return RX_OK;
}

static enum rx_fault check_control(const struct rx_in *in, const struct rx_view *v,
				   struct rx_msg *out)
{
	uint32_t flags = in->imm & CONTROL_FLAGS, credits = in->imm & IMM_CREDITS_MASK;
	enum rx_fault f;

	if (in->imm & IMM_EXPORTS)
		return check_exports(in, v, out);
	if ((in->imm & IMM_PATH_FIELD) && !(flags & (IMM_PATH_DOWN | IMM_PATH_UP)))
		return RX_F_PATH_BITS;
	if (flags & IMM_PATH_UP)
		return check_path_up(in, v, out);
	if (in->imm & IMM_RNDV)
		return check_rndv_ack(in, v, out);
	if (flags & KA_FLAGS)
		return check_keepalive(in, v, out);
	if (flags == IMM_AUTH || flags == (IMM_AUTH | IMM_BYE))
		return check_auth(in, v, out);
	if (flags != 0 && flags != IMM_BYE && flags != IMM_PATH_DOWN)
		return RX_F_FLAG_MIX;
	if (awaiting_auth(v))
		return RX_F_AUTH_WRONG;
	if (flags && credits)
		return RX_F_CONTROL_CREDITS;
	/* Exact failover's path-down carries the sender's receive count on
	 * the path (settle.h); every other credit-only message is empty. */
	if (flags == IMM_PATH_DOWN && in->byte_len != (v->exact ? PATH_COUNT_LEN : 0))
		return RX_F_PATH_COUNT_LEN;
	/* A goodbye may say why (bye.h): this library takes it from anyone,
	 * and sends it only to a peer that announced it takes it. */
	if (in->byte_len && flags != IMM_PATH_DOWN &&
	    !(flags == IMM_BYE && in->byte_len == BYE_REASON_LEN))
		return RX_F_CONTROL_PAYLOAD;
	if (flags == IMM_BYE) {
		if (v->t->byes >= v->npaths)
			return RX_F_BYE_AGAIN;
		out->kind = RX_BYE;
		return RX_OK;
	}
	if (flags == IMM_PATH_DOWN) {
		out->path = (uint8_t)imm_path(in->imm);
		f = check_path_down(v, out->path);
		if (!f)
			out->kind = RX_PATH_DOWN;
		return f;
	}
	/* A credit message uses a receive buffer without a credit: the peer
	 * sends one only to hand credits back, so their number is bounded by
	 * the credits it may return. */
	if (!credits)
		return RX_F_CREDIT_EMPTY;
	out->kind = RX_CREDIT;
	return take_returns(v, credits, out);
}

enum rx_fault rx_check(const struct rx_in *in, const struct rx_view *v, struct rx_msg *out)
{
	memset(out, 0, sizeof(*out));
	if (in->write_imm) {
		/* The immediate and the bytes (already in our memory) are the
		 * application's; only the receive buffer it used is ours. */
		if (awaiting_auth(v))
			return RX_F_AUTH_WRONG;
		out->kind = RX_WRITE_IMM;
		return take_credit(v, out);
	}
	if (!in->has_imm)
		return RX_F_NO_IMM;
	if (in->imm & ~RX_IMM_KNOWN)
		return RX_F_UNKNOWN_BITS;
	if (!(in->imm & IMM_CREDIT_ONLY))
		return check_data(in, v, out);
	return check_control(in, v, out);
}

void rx_commit(struct rx_track *t, const struct rx_view *v, const struct rx_msg *m)
{
	t->rx_msgs++;
	switch (m->kind) {
	case RX_KA_REPLY:
		t->ka_answers++;
		break;
	case RX_KA_PROBE:
		t->ka_early = m->answer ? 0 : t->ka_early + 1;
		break;
	case RX_DATA:
	case RX_WRITE_IMM:
		t->used++;
		if (m->slack)
			t->recv_slack--;
		break;
	case RX_RNDV:
		/* Its header's id is checked (rx_check_rndv) before the commit. */
		t->used++;
		t->rndv_recv++;
		if (m->slack)
			t->recv_slack--;
		break;
	case RX_RNDV_ACK:
		t->rndv_acked++;
		break;
	case RX_BYE:
		t->byes++;
		break;
	case RX_PATH_UP:
		/* The peer makes the path again: its next failure is a new one. */
		t->peer_down &= (uint8_t)~(1u << m->path);
		break;
	case RX_PATH_DOWN:
		t->peer_down |= (uint8_t)(1u << m->path);
		/* Exact failover settles the path's messages by the counts:
		 * nothing is counted twice, no slack. */
		if (v->exact)
			break;
		/* Its failed sends: delivered maybe, though it counts them as
		 * not (it takes their credits back, path.c), so it may send up
		 * to its window more, and hand back again what they carried. */
		t->recv_slack += v->recv_max_granted;
		t->return_slack += RX_MAX_CREDITS;
		break;
	default:
		break;
	}
	t->returned += m->credits;
}

static const char *const names[RX_NFAULTS] = {
	[RX_OK] = "accepted",
	[RX_F_NO_IMM] = "SEND without immediate data",
	[RX_F_UNKNOWN_BITS] = "unknown immediate bits",
	[RX_F_FLAG_NOT_CONTROL] = "control flag on a data message",
	[RX_F_PATH_BITS] = "path index without IMM_PATH_DOWN",
	[RX_F_FLAG_MIX] = "impossible flag combination",
	[RX_F_CONTROL_CREDITS] = "credits on a control message",
	[RX_F_CONTROL_PAYLOAD] = "payload on a credit-only message",
	[RX_F_CREDIT_EMPTY] = "credit message with no credit",
	[RX_F_NO_CREDIT] = "no receive credit",
	[RX_F_TOO_LONG] = "message longer than max_msg_size",
	[RX_F_OVER_RETURN] = "more credits returned than used",
	[RX_F_OVER_HOLD] = "more credits than a pool grants",
	[RX_F_AUTH_NO_KEY] = "shared-secret message without a key",
	[RX_F_AUTH_LATE] = "shared-secret message after the exchange",
	[RX_F_AUTH_WRONG] = "not the shared-secret message expected",
	[RX_F_AUTH_LEN] = "shared-secret proof of the wrong length",
	[RX_F_PATH_NONE] = "path-down for a path that does not exist",
	[RX_F_PATH_AGAIN] = "path-down for a path already down",
	[RX_F_PATH_LAST] = "path-down for the last live path",
	[RX_F_BYE_AGAIN] = "more goodbyes than paths",
	[RX_F_KA_OFF] = "keepalive message without HS_CAP_KEEPALIVE",
	[RX_F_KA_UNASKED] = "keepalive answer without a probe",
	[RX_F_KA_FLOOD] = "keepalive probes faster than answered",
	[RX_F_RNDV_OFF] = "rendezvous message without HS_CAP_RNDV",
	[RX_F_RNDV_HDR_LEN] = "rendezvous header of the wrong length",
	[RX_F_RNDV_ZERO] = "rendezvous header offering no bytes",
	[RX_F_RNDV_TOO_LONG] = "rendezvous header above max_msg_size",
	[RX_F_RNDV_SEQ] = "rendezvous header out of turn",
	[RX_F_RNDV_FLAGS] = "rendezvous header with unknown flags",
	[RX_F_RNDV_READ] = "rendezvous key that fails the RDMA READ",
	[RX_F_RNDV_ACK_LEN] = "rendezvous acknowledgement of the wrong length",
	[RX_F_RNDV_ACK_NONE] = "rendezvous acknowledgement with no transfer outstanding",
	[RX_F_RNDV_ACK_UNKNOWN] = "rendezvous acknowledgement of a transfer never offered",
	[RX_F_RNDV_ACK_AGAIN] = "second rendezvous acknowledgement",
	[RX_F_PATH_COUNT_LEN] = "path-down of the wrong length",
	[RX_F_PATH_UP_OFF] = "path rebuild without exact failover",
	[RX_F_PATH_UP_LEN] = "path rebuild message of the wrong length",
	[RX_F_EXPORTS_UNASKED] = "exports message not announced, or a second",
	[RX_F_EXPORTS_LEN] = "exports message of an impossible length",
};

const char *rx_fault_name(enum rx_fault f)
{
	return (unsigned int)f < RX_NFAULTS ? names[f] : "unknown fault";
}

char *rx_fault_format(enum rx_fault f, const struct rx_in *in, const struct rx_view *v,
		      char *buf, size_t len)
{
	uint32_t imm = in->imm, credits = imm & IMM_CREDITS_MASK;
	const struct rx_track *t = v->t;

	switch (f) {
	case RX_F_NO_IMM:
		snprintf(buf, len, "peer sent a %u-byte SEND without immediate data", in->byte_len);
		break;
	case RX_F_UNKNOWN_BITS:
		snprintf(buf, len, "peer's immediate 0x%08x has bits 0x%08x no easyrdma message uses",
			 imm, imm & ~RX_IMM_KNOWN);
		break;
	case RX_F_FLAG_NOT_CONTROL:
		snprintf(buf, len, "peer's message (immediate 0x%08x) has control flags 0x%08x without IMM_CREDIT_ONLY",
			 imm, imm & CONTROL_FLAGS);
		break;
	case RX_F_PATH_BITS:
		snprintf(buf, len, "peer's immediate 0x%08x names path %u without IMM_PATH_DOWN", imm,
			 imm_path(imm));
		break;
	case RX_F_FLAG_MIX:
		snprintf(buf, len, "peer's control message (immediate 0x%08x) combines flags 0x%08x that no easyrdma message combines",
			 imm, imm & CONTROL_FLAGS);
		break;
	case RX_F_CONTROL_CREDITS:
		snprintf(buf, len, "peer's control message (immediate 0x%08x) carries %u credits", imm,
			 credits);
		break;
	case RX_F_CONTROL_PAYLOAD:
		snprintf(buf, len, "peer sent %u bytes on a credit-only message (immediate 0x%08x)",
			 in->byte_len, imm);
		break;
	case RX_F_CREDIT_EMPTY:
		snprintf(buf, len, "peer sent a credit message that returns no credit (immediate 0x%08x)",
			 imm);
		break;
	case RX_F_NO_CREDIT:
		snprintf(buf, len, "peer sent a message with no receive credit (%llu granted, %llu used)",
			 (unsigned long long)t->granted, (unsigned long long)t->used);
		break;
	case RX_F_TOO_LONG:
		snprintf(buf, len, "peer sent %u bytes, max_msg_size %u", in->byte_len, v->max_msg);
		break;
	case RX_F_OVER_RETURN:
		snprintf(buf, len, "peer returned %u credits; this side sent %llu messages, so at most %llu more could come back",
			 credits, (unsigned long long)t->sent, (unsigned long long)rx_return_room(t));
		break;
	case RX_F_OVER_HOLD:
		snprintf(buf, len, "peer granted %u credits on top of the %u this side holds (at most %u)",
			 credits, v->send_credits, v->max_send_credits);
		break;
	case RX_F_AUTH_NO_KEY:
		snprintf(buf, len, "peer sent a shared-secret message (immediate 0x%08x) on a connection without a shared secret",
			 imm);
		break;
	case RX_F_AUTH_LATE:
		snprintf(buf, len, "peer sent a shared-secret message (immediate 0x%08x) after the exchange",
			 imm);
		break;
	case RX_F_AUTH_WRONG:
		snprintf(buf, len, "peer sent %s (immediate 0x%08x, %u bytes) where only the shared-secret %s may come",
			 in->write_imm ? "an RDMA WRITE with immediate" : "a message", imm, in->byte_len,
			 v->auth == RX_AUTH_AWAIT_PROOF ? "proof" : "verdict");
		break;
	case RX_F_AUTH_LEN:
		snprintf(buf, len, "peer sent a %u-byte shared-secret proof (%d expected)", in->byte_len,
			 AUTH_PROOF_LEN);
		break;
	case RX_F_PATH_NONE:
		if (imm & IMM_PATH_UP)
			snprintf(buf, len, "peer's path rebuild message names path %u of a connection of %u paths",
				 imm_path(imm), v->npaths);
		else
			snprintf(buf, len, "peer took path %u out of a connection of %u paths",
				 imm_path(imm), v->npaths);
		break;
	case RX_F_PATH_AGAIN:
		snprintf(buf, len, "peer took path %u out again", imm_path(imm));
		break;
	case RX_F_PATH_UP_OFF:
		snprintf(buf, len, "peer sent a path rebuild message (immediate 0x%08x) without announcing exact failover",
			 imm);
		break;
	case RX_F_PATH_UP_LEN:
		snprintf(buf, len, "peer's path rebuild message for path %u carries %u bytes (%u)",
			 imm_path(imm), in->byte_len, PATH_UP_LEN);
		break;
	case RX_F_EXPORTS_UNASKED:
		snprintf(buf, len, "peer sent an exports message (%u bytes) that its handshake did not announce, or a second one",
			 in->byte_len);
		break;
	case RX_F_EXPORTS_LEN:
		snprintf(buf, len, "peer's exports message carries %u bytes (%u..%zu)", in->byte_len,
			 EXPORTS_HDR_LEN, (size_t)EXPORTS_MAX_LEN);
		break;
	case RX_F_PATH_COUNT_LEN:
		snprintf(buf, len, "peer's path-down for path %u carries %u bytes (%u %s)", imm_path(imm),
			 in->byte_len, v->exact ? PATH_COUNT_LEN : 0,
			 v->exact ? "with exact failover: its receive count" : "without exact failover");
		break;
	case RX_F_PATH_LAST:
		snprintf(buf, len, "peer took the last live path (%u) out with a path-down notice",
			 imm_path(imm));
		break;
	case RX_F_BYE_AGAIN:
		snprintf(buf, len, "peer sent goodbye %u on a connection of %u paths", t->byes + 1,
			 v->npaths);
		break;
	case RX_F_KA_OFF:
		snprintf(buf, len, "peer sent a keepalive message (immediate 0x%08x) but did not announce keepalive in its handshake",
			 imm);
		break;
	case RX_F_KA_UNASKED:
		snprintf(buf, len, "peer answered a keepalive probe this side did not send (%llu sent, %llu answered)",
			 (unsigned long long)t->ka_probes, (unsigned long long)t->ka_answers);
		break;
	case RX_F_KA_FLOOD:
		snprintf(buf, len, "peer sent %u keepalive probes while this side's answer to an earlier one was outstanding (at most %u)",
			 t->ka_early + 1, RX_KA_MAX_UNANSWERED);
		break;
	case RX_F_RNDV_OFF:
		snprintf(buf, len, "peer sent a rendezvous message (immediate 0x%08x) but did not announce rendezvous in its handshake",
			 imm);
		break;
	case RX_F_RNDV_HDR_LEN:
		snprintf(buf, len, "peer sent a %u-byte rendezvous header (%d expected)", in->byte_len,
			 RNDV_HDR_LEN);
		break;
	case RX_F_RNDV_ACK_LEN:
		snprintf(buf, len, "peer sent a %u-byte rendezvous acknowledgement (%d expected)",
			 in->byte_len, RNDV_ACK_LEN);
		break;
	case RX_F_RNDV_ACK_NONE:
		snprintf(buf, len, "peer acknowledged a rendezvous transfer while none of ours was outstanding (%u offered, %u acknowledged)",
			 t->rndv_sent, t->rndv_acked);
		break;
	default: {
		/* A header's or an ack's contents (rx_check_rndv*): named with
		 * the fields unknown here. */
		struct rndv_hdr h = { 0 };

		return rx_rndv_fault_format(f, &h, v, buf, len);
	}
	}
	return buf;
}

enum rx_fault rx_check_rndv(const struct rndv_hdr *h, const struct rx_view *v)
{
	if (h->id != v->t->rndv_recv)
		return RX_F_RNDV_SEQ;
	if (h->flags)
		return RX_F_RNDV_FLAGS;
	if (!h->len)
		return RX_F_RNDV_ZERO;
	if (h->len > v->rndv_max)
		return RX_F_RNDV_TOO_LONG;
	return RX_OK;
}

enum rx_fault rx_check_rndv_ack(const struct rx_view *v, uint32_t id, int outstanding)
{
	if (id >= v->t->rndv_sent)
		return RX_F_RNDV_ACK_UNKNOWN;
	if (!outstanding)
		return RX_F_RNDV_ACK_AGAIN;
	return RX_OK;
}

char *rx_rndv_fault_format(enum rx_fault f, const struct rndv_hdr *h, const struct rx_view *v,
			   char *buf, size_t len)
{
	switch (f) {
	case RX_F_RNDV_SEQ:
		snprintf(buf, len, "peer's rendezvous header carries transfer id %u, expected %u",
			 h->id, v->t->rndv_recv);
		break;
	case RX_F_RNDV_FLAGS:
		snprintf(buf, len, "peer's rendezvous header %u has flags 0x%08x no easyrdma sets",
			 h->id, h->flags);
		break;
	case RX_F_RNDV_ZERO:
		snprintf(buf, len, "peer's rendezvous header %u offers 0 bytes (rkey 0x%x)", h->id,
			 h->rkey);
		break;
	case RX_F_RNDV_TOO_LONG:
		snprintf(buf, len, "peer's rendezvous header %u offers %u bytes, max_msg_size %u",
			 h->id, h->len, v->rndv_max);
		break;
	case RX_F_RNDV_READ:
		snprintf(buf, len, "peer's rendezvous header %u offered rkey 0x%x [0x%llx, +%u), which failed this side's RDMA READ",
			 h->id, h->rkey, (unsigned long long)h->addr, h->len);
		break;
	case RX_F_RNDV_ACK_UNKNOWN:
		snprintf(buf, len, "peer acknowledged rendezvous transfer %u, which this side never offered (%u offered)",
			 h->id, v->t->rndv_sent);
		break;
	case RX_F_RNDV_ACK_AGAIN:
		snprintf(buf, len, "peer acknowledged rendezvous transfer %u a second time", h->id);
		break;
	default:
		snprintf(buf, len, "peer broke a rule: %s", rx_fault_name(f));
		break;
	}
	return buf;
}
