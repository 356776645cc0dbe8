/* fuzz_rx_check.c: libFuzzer target: a stream of (opcode, immediate, length) against a connection's view through the receive classifier, checking its invariants. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/auth.h"
#include "wire/bye.h"
#include "wire/exports.h"
#include "wire/imm.h"
#include "wire/rndv.h"
#include "wire/rx_check.h"
#include "wire/settle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void take(const uint8_t **p, size_t *left, void *out, size_t n)
{
	size_t k = n < *left ? n : *left;

	memset(out, 0, n);
	memcpy(out, *p, k);
	*p += k;
	*left -= k;
}

static unsigned int popcount8(uint8_t x)
{
	unsigned int n = 0;

	for (; x; x &= (uint8_t)(x - 1))
		n++;
	return n;
}

/* The invariants of an accepted message, against the view it was judged in. */
static void check_accepted(const struct rx_in *in, const struct rx_view *v, const struct rx_msg *m)
{
	uint8_t all = (uint8_t)((1u << v->npaths) - 1);

	switch (m->kind) {
	case RX_DATA:
		if (in->byte_len > v->max_msg)
			abort();	/* never longer than max_msg_size */
		/* fall through */
	case RX_WRITE_IMM:
		if (!v->recv_granted && !(m->slack && v->t->recv_slack))
			abort();	/* never without a credit */
		break;
	case RX_CREDIT:
		if (!m->credits || in->byte_len)
			abort();	/* a credit message returns credits, carries nothing */
		break;
	case RX_PATH_DOWN:
		if (m->path >= v->npaths || (v->t->peer_down & (1u << m->path)))
			abort();
		/* never the last live path unless one of ours is down too */
		if ((v->live & (1u << m->path)) && popcount8(v->live) == 1 &&
		    !(all & ~v->live & ~v->t->peer_down))
			abort();
		/* exact failover: the sender's count, 4 bytes; else empty */
		if (in->byte_len != (v->exact ? PATH_COUNT_LEN : 0u) || (in->imm & IMM_CREDITS_MASK))
			abort();
		break;
	case RX_PATH_UP:
		/* a rebuild step: exact failover, 8 bytes, no credits, path 1..K-1 */
		if (!v->exact || in->byte_len != PATH_UP_LEN || (in->imm & IMM_CREDITS_MASK) ||
		    m->path >= v->npaths)
			abort();
		break;
	case RX_BYE:
		/* empty, or why (bye.h); no credits */
		if ((in->byte_len && in->byte_len != BYE_REASON_LEN) || (in->imm & IMM_CREDITS_MASK))
			abort();
		break;
	case RX_AUTH_OK:
	case RX_AUTH_REFUSED:
		if (in->byte_len || (in->imm & IMM_CREDITS_MASK))
			abort();
		break;
	case RX_EXPORTS:
		/* once, announced, after the auth step, exactly its immediate, a bounded length */
		if (!v->exports_due || in->imm != IMM_EXPORTS_MSG || in->byte_len < EXPORTS_HDR_LEN ||
		    in->byte_len > EXPORTS_MAX_LEN || v->auth == RX_AUTH_AWAIT_PROOF ||
		    v->auth == RX_AUTH_AWAIT_VERDICT)
			abort();
		break;
	case RX_AUTH_PROOF:
		if (v->auth != RX_AUTH_AWAIT_PROOF || in->byte_len != AUTH_PROOF_LEN)
			abort();
		break;
	case RX_KA_PROBE:
		/* empty, no credits, from a peer that announced it, not a flood */
		if (in->byte_len || (in->imm & IMM_CREDITS_MASK) || !v->ka ||
		    (v->ka_answer_busy && v->t->ka_early >= RX_KA_MAX_UNANSWERED) ||
		    m->answer == v->ka_answer_busy)
			abort();
		break;
	case RX_KA_REPLY:
		/* never more answers than probes */
		if (in->byte_len || (in->imm & IMM_CREDITS_MASK) || !v->ka ||
		    v->t->ka_answers >= v->t->ka_probes)
			abort();
		break;
	case RX_RNDV:
		/* a header: a credit, exactly its length, from a peer that announced it */
		if (!v->rndv || in->byte_len != RNDV_HDR_LEN ||
		    (!v->recv_granted && !(m->slack && v->t->recv_slack)))
			abort();
		break;
	case RX_RNDV_ACK:
		/* an ack: its id only, no credits, never more than our transfers */
		if (!v->rndv || in->byte_len != RNDV_ACK_LEN || (in->imm & IMM_CREDITS_MASK) ||
		    v->t->rndv_acked >= v->t->rndv_sent)
			abort();
		break;
	default:
		abort();
	}
	if ((m->kind == RX_KA_PROBE || m->kind == RX_KA_REPLY) && m->credits)
		abort();
	if ((m->kind == RX_AUTH_OK || m->kind == RX_AUTH_REFUSED) && v->auth != RX_AUTH_AWAIT_VERDICT)
		abort();
	if (m->kind != RX_WRITE_IMM && (in->imm & ~RX_IMM_KNOWN))
		abort();
	if (m->credits > rx_return_room(v->t) ||
	    (uint64_t)v->send_credits + m->credits > v->max_send_credits)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rx_track t;
	struct rx_view v;
	uint8_t hdr[4];
	char why[200];

	/* The connection: paths, auth state, max_msg_size, credits held. */
	take(&data, &size, hdr, sizeof(hdr));
	memset(&t, 0, sizeof(t));
	memset(&v, 0, sizeof(v));
	v.t = &t;
	v.npaths = (uint8_t)(1 + hdr[0] % 8);
	v.exact = (uint8_t)(v.npaths > 1 && (hdr[0] & 0x80));
	v.live = (uint8_t)((1u << v.npaths) - 1);
	v.auth = hdr[1] % 4;
	v.ka = hdr[1] >> 7;
	v.rndv = (hdr[1] >> 6) & 1;
	v.rndv_max = v.max_msg << (hdr[2] >> 4);
	v.max_msg = 32u << (hdr[2] % 16);
	v.recv_granted = v.recv_max_granted = hdr[3];
	v.exports_due = hdr[0] >> 6 & 1;
	v.max_send_credits = RX_MAX_CREDITS;
	t.granted = hdr[3];
	/* Then events: a message in, or this side sending / a path of ours failing. */
	while (size) {
		struct rx_in in;
		struct rx_msg m, m2;
		uint8_t op;
		enum rx_fault f;

		take(&data, &size, &op, 1);
		if (op >= 0xf0) {
			if (op & 1) {
				rx_note_sent(&t);
			} else if (op & 2) {
				rx_note_ka_probe(&t);	/* a probe of ours goes out */
			} else if (op & 4) {
				v.ka_answer_busy = 0;	/* our answer completed */
			} else if (op & 8) {
				t.rndv_sent++;	/* a rendezvous header of ours goes out */
			} else if (v.live) {
				v.live &= (uint8_t)(v.live - 1);	/* our lowest live path fails */
				rx_note_ungranted(&t, 1, 1);
			}
			continue;
		}
		memset(&in, 0, sizeof(in));
		in.write_imm = (op & 3) == 3;
		in.has_imm = (op & 3) != 0;
		take(&data, &size, &in.imm, sizeof(in.imm));
		take(&data, &size, &in.byte_len, sizeof(in.byte_len));
		if (op & 4)
			in.byte_len %= 2 * v.max_msg + 2;
		f = rx_check(&in, &v, &m);
		if (rx_check(&in, &v, &m2) != f || memcmp(&m, &m2, sizeof(m)))
			abort();	/* pure: the same question, the same answer */
		if (f) {
			if ((unsigned int)f >= RX_NFAULTS)
				abort();
			rx_fault_format(f, &in, &v, why, sizeof(why));
			if (strncmp(why, "peer", 4))
				abort();	/* every refusal names what the peer did */
			return 0;	/* the connection ends */
		}
		check_accepted(&in, &v, &m);
		if (m.kind == RX_RNDV || m.kind == RX_RNDV_ACK) {
			/* Its bytes: a header's fields, or the ack's id and whether
			 * our table still has it outstanding. */
			uint8_t raw[RNDV_HDR_LEN];
			struct rndv_hdr h;

			take(&data, &size, raw, sizeof(raw));
			rndv_hdr_decode(raw, &h);
			if (m.kind == RX_RNDV) {
				f = rx_check_rndv(&h, &v);
				if (!f && (!h.len || h.len > v.rndv_max || h.id != t.rndv_recv || h.flags))
					abort();
			} else {
				f = rx_check_rndv_ack(&v, h.id, raw[23] & 1);
				if (!f && (h.id >= t.rndv_sent || !(raw[23] & 1)))
					abort();
			}
			if (f) {
				if ((unsigned int)f >= RX_NFAULTS)
					abort();
				rx_rndv_fault_format(f, &h, &v, why, sizeof(why));
				if (strncmp(why, "peer", 4))
					abort();
				return 0;
			}
		}
		if (m.kind == RX_PATH_UP || (m.kind == RX_PATH_DOWN && v.exact)) {
			/* Exact failover's bytes: a rebuild step, or a count
			 * checked against what was sent on the path. */
			uint8_t raw[PATH_UP_LEN];
			struct path_up u;
			uint32_t count, tx, unacked;

			if (!v.exact || (m.kind == RX_PATH_UP && m.path >= v.npaths))
				abort();
			take(&data, &size, raw, sizeof(raw));
			if (path_up_decode(raw, &u) == 0 &&
			    (u.step < PATH_UP_REQUEST || u.step > PATH_UP_HELD || u.psn > 0xffffffu ||
			     ((u.step == PATH_UP_REQUEST || u.step == PATH_UP_REPLY) && u.qpn < 2) ||
			     (u.step == PATH_UP_READY && (u.qpn || u.psn)) ||
			     (u.step == PATH_UP_HELD && (u.qpn || !u.psn))))
				abort();
			count = path_count_decode(raw);
			tx = path_count_decode(raw + 4);
			unacked = raw[0] & 0x3f;
			if (settle_check_count(count, tx, unacked) == SETTLE_OK &&
			    (settle_seq_before(tx, count) || tx - count > unacked))
				abort();
		}
		rx_commit(&t, &v, &m);
		/* What the connection does with it. */
		if (m.kind == RX_DATA || m.kind == RX_WRITE_IMM || m.kind == RX_RNDV) {
			if (v.recv_granted)
				v.recv_granted--;
			t.granted += op >> 6;	/* and hands some back */
			v.recv_granted += op >> 6;
		}
		v.send_credits += m.credits;
		if (m.kind == RX_PATH_DOWN)
			v.live &= (uint8_t)~(1u << m.path);
		if (m.kind == RX_KA_PROBE && m.answer)
			v.ka_answer_busy = 1;	/* answered */
		if (m.kind == RX_AUTH_PROOF || m.kind == RX_AUTH_OK)
			v.auth = RX_AUTH_DONE;
	}
	return 0;
}
