/* test_resume.c: session resume's messages (lib/wire/resume.c): round trips, every refusal of the decoder, the MACs and what they bind, the epoch rule, the redial backoff and the resume window. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wire/auth.h"
#include "wire/handshake.h"
#include "wire/resume.h"
#include "../checkmain.h"

static const char KEY_A[] = "0123456789abcdef-resume-secret-A";
static const char KEY_B[] = "0123456789abcdef-resume-secret-B";
#define QPN_CLIENT 0x001234u
#define QPN_SERVER 0x005678u

static struct auth_key key(const char *s)
{
	struct auth_key k;

	ck_assert_int_eq(auth_key_set(&k, s, (uint32_t)strlen(s)), 0);
	return k;
}

static struct resume_msg req_sample(void)
{
	struct resume_msg m = { .kind = RESUME_REQUEST, .epoch = 0x01020304, .count = 0x0a0b0c0d,
				.psn = 0x123456 };

	for (unsigned int i = 0; i < HS_TOKEN_LEN; i++)
		m.token[i] = (uint8_t)(i + 1);
	return m;
}

static struct resume_msg rep_sample(void)
{
	return (struct resume_msg){ .kind = RESUME_REPLY, .epoch = 0x01020305, .count = 7,
				    .psn = 0xabcdef };
}

static struct resume_msg rej_sample(uint8_t reason, const char *text)
{
	struct resume_msg m = { .kind = RESUME_REJECT, .reason = reason,
				.text_len = (uint8_t)strlen(text) };

	memcpy(m.text, text, m.text_len);
	return m;
}

/* Encodes m, checks its length, decodes it back as kind. */
static struct resume_msg trip(const struct resume_msg *m, int want_len)
{
	uint8_t buf[RESUME_MAX_LEN];
	struct resume_msg out;
	char why[160] = "";
	int n = resume_encode(m, buf, sizeof(buf));

	ck_assert_int_eq(n, want_len);
	ck_assert_msg(resume_decode(buf, (size_t)n, m->kind, &out, why, sizeof(why)) == 0, "%s", why);
	return out;
}

START_TEST(request_round_trip)
{
	struct auth_key k = key(KEY_A);
	struct resume_msg in = req_sample(), out;
	uint8_t buf[HS_REQ_MAX] = { 0 };
	char why[160];
	static const uint8_t head[] = { 'E', 'Z', 'R', 'S', 1, RESUME_REQUEST, 0, 0 };
	static const uint8_t tail[] = { 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0x12, 0x34, 0x56 };

	ck_assert_int_eq(resume_encode(&in, buf, sizeof(buf)), RESUME_REQ_LEN);
	ck_assert_mem_eq(buf, head, sizeof(head));
	ck_assert_mem_eq(buf + 8, in.token, HS_TOKEN_LEN);
	ck_assert_mem_eq(buf + 24, tail, sizeof(tail));
	out = trip(&in, RESUME_REQ_LEN);
	ck_assert_uint_eq(out.kind, RESUME_REQUEST);
	ck_assert_uint_eq(out.flags, 0);
	ck_assert_mem_eq(out.token, in.token, HS_TOKEN_LEN);
	ck_assert_uint_eq(out.epoch, 0x01020304);
	ck_assert_uint_eq(out.count, 0x0a0b0c0d);
	ck_assert_uint_eq(out.psn, 0x123456);
	/* Sealed: 16 bytes of MAC after the fields, 52 in all. */
	ck_assert_int_eq(resume_req_seal(&k, &in, QPN_CLIENT), 0);
	ck_assert_uint_eq(in.flags, RESUME_F_MAC);
	out = trip(&in, RESUME_REQ_LEN + RESUME_REQ_MAC_LEN);
	ck_assert_uint_eq(out.flags, RESUME_F_MAC);
	ck_assert_mem_eq(out.mac, in.mac, RESUME_REQ_MAC_LEN);
	ck_assert_uint_eq(out.psn, 0x123456);
	ck_assert_int_eq(resume_req_check(&k, &out, QPN_CLIENT), 0);
	/* rdma_cm pads a request to 56 bytes: the padding is not read. */
	ck_assert_int_eq(resume_encode(&in, buf, sizeof(buf)), 52);
	memset(buf + 52, 0xee, sizeof(buf) - 52);
	ck_assert_int_eq(resume_decode(buf, sizeof(buf), RESUME_REQUEST, &out, why, sizeof(why)), 0);
	ck_assert_int_eq(resume_req_check(&k, &out, QPN_CLIENT), 0);
	ck_assert_int_le(RESUME_REQ_LEN + RESUME_REQ_MAC_LEN, HS_REQ_MAX);
}
END_TEST

START_TEST(reply_round_trip)
{
	struct auth_key k = key(KEY_A);
	struct resume_msg req = req_sample(), in = rep_sample(), out;
	uint8_t buf[RESUME_MAX_LEN];
	static const uint8_t want[] = { 'E', 'Z', 'R', 'S', 1, RESUME_REPLY, 0, 0, 1, 2, 3, 5,
					0, 0, 0, 7, 0, 0xab, 0xcd, 0xef };

	ck_assert_int_eq(resume_encode(&in, buf, sizeof(buf)), RESUME_REP_LEN);
	ck_assert_mem_eq(buf, want, sizeof(want));
	out = trip(&in, RESUME_REP_LEN);
	ck_assert_uint_eq(out.kind, RESUME_REPLY);
	ck_assert_uint_eq(out.epoch, 0x01020305);
	ck_assert_uint_eq(out.count, 7);
	ck_assert_uint_eq(out.psn, 0xabcdef);
	ck_assert_int_eq(resume_req_seal(&k, &req, QPN_CLIENT), 0);
	ck_assert_int_eq(resume_rep_seal(&k, &req, &in, QPN_SERVER), 0);
	ck_assert_uint_eq(in.flags, RESUME_F_MAC);
	out = trip(&in, RESUME_REP_LEN + RESUME_REP_MAC_LEN);
	ck_assert_mem_eq(out.mac, in.mac, RESUME_REP_MAC_LEN);
	ck_assert_uint_eq(out.count, 7);
	ck_assert_int_eq(resume_rep_check(&k, &req, &out, QPN_SERVER), 0);
}
END_TEST

START_TEST(reject_round_trip)
{
	static const uint8_t reasons[] = { RESUME_R_UNKNOWN, RESUME_R_STALE, RESUME_R_DENIED,
					   RESUME_R_BUSY, RESUME_R_NOT_READY, 200 };
	char longest[RESUME_TEXT_MAX + 2];
	struct resume_msg in, out;
	uint8_t buf[RESUME_MAX_LEN + 1];
	char why[160];

	for (unsigned int i = 0; i < sizeof(reasons); i++) {
		in = rej_sample(reasons[i], "session 7 gone");
		out = trip(&in, RESUME_REJ_LEN + 14);
		ck_assert_uint_eq(out.reason, reasons[i]);
		ck_assert_uint_eq(out.text_len, 14);
		ck_assert_str_eq(out.text, "session 7 gone");
	}
	in = rej_sample(RESUME_R_BUSY, "");
	out = trip(&in, RESUME_REJ_LEN);
	ck_assert_str_eq(out.text, "");
	/* The longest text, 109 bytes in all; one more is not sent. */
	memset(longest, 'x', sizeof(longest));
	longest[RESUME_TEXT_MAX] = '\0';
	in = rej_sample(RESUME_R_STALE, longest);
	out = trip(&in, RESUME_MAX_LEN);
	ck_assert_str_eq(out.text, longest);
	in.text_len = RESUME_TEXT_MAX + 1;
	ck_assert_int_eq(resume_encode(&in, buf, sizeof(buf)), -EMSGSIZE);
	/* Bytes a person should not see come out as '?', the length kept. */
	in = rej_sample(RESUME_R_DENIED, "a\x01" "b\x7f" "c");
	in.text[5] = 'z';	/* beyond text_len: not sent */
	ck_assert_int_eq(resume_encode(&in, buf, sizeof(buf)), RESUME_REJ_LEN + 5);
	ck_assert_int_eq(resume_decode(buf, RESUME_REJ_LEN + 5, RESUME_REJECT, &out, why, sizeof(why)), 0);
	ck_assert_str_eq(out.text, "a?b?c");
	ck_assert_uint_eq(out.text_len, 5);
}
END_TEST

/* What no easyrdma sends is not encoded. */
START_TEST(encoder_refusals)
{
	struct resume_msg m;
	uint8_t buf[RESUME_MAX_LEN];

	m = req_sample();
	m.kind = 4;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.kind = 0;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = req_sample();
	m.flags = 0x02;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = req_sample();
	m.psn = 0x1000000;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.psn = 0xffffff;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), RESUME_REQ_LEN);
	m = rep_sample();
	m.psn = 0x1000000;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = req_sample();
	memset(m.token, 0, HS_TOKEN_LEN);
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = rej_sample(0, "why");
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	m = rej_sample(RESUME_R_BUSY, "why");
	m.flags = RESUME_F_MAC;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), -EINVAL);
	/* A buffer one byte short, for each kind, sealed or not. */
	m = req_sample();
	ck_assert_int_eq(resume_encode(&m, buf, RESUME_REQ_LEN - 1), -EMSGSIZE);
	m.flags = RESUME_F_MAC;
	ck_assert_int_eq(resume_encode(&m, buf, RESUME_REQ_LEN + RESUME_REQ_MAC_LEN - 1), -EMSGSIZE);
	m = rep_sample();
	ck_assert_int_eq(resume_encode(&m, buf, RESUME_REP_LEN - 1), -EMSGSIZE);
	m.flags = RESUME_F_MAC;
	ck_assert_int_eq(resume_encode(&m, buf, RESUME_REP_LEN + RESUME_REP_MAC_LEN - 1), -EMSGSIZE);
	m = rej_sample(RESUME_R_BUSY, "why");
	ck_assert_int_eq(resume_encode(&m, buf, RESUME_REJ_LEN + 2), -EMSGSIZE);
	/* A reason given to a request is not sent: byte 7 stays 0. */
	m = req_sample();
	m.reason = RESUME_R_BUSY;
	ck_assert_int_eq(resume_encode(&m, buf, sizeof(buf)), RESUME_REQ_LEN);
	ck_assert_uint_eq(buf[7], 0);
}
END_TEST

static int decode_why(const uint8_t *buf, size_t len, enum resume_kind kind, char *why, size_t whylen)
{
	struct resume_msg m;

	why[0] = '\0';
	return resume_decode(buf, len, kind, &m, why, whylen);
}

/* The header: too short, not ours, another version or kind, flags this
 * side does not know, a reason where none belongs or none where one does. */
START_TEST(decoder_refuses_bad_header)
{
	static const struct {
		uint8_t reject;	/* the reject, not the request */
		uint8_t at, value;
		enum resume_kind kind;	/* expected */
		const char *want;
	} rows[] = {
		{ 0, 3, 'D', RESUME_REQUEST,	/* a handshake's magic */
		  "not an easyrdma resume message: magic 0x455a5244, expected 0x455a5253" },
		{ 0, 4, 2, RESUME_REQUEST, "easyrdma resume version 2 not supported (this side speaks 1)" },
		{ 0, 5, 1, RESUME_REPLY, "easyrdma resume: got a request (kind 1), expected a reply" },
		{ 0, 5, 9, RESUME_REQUEST, "easyrdma resume: got a unknown (kind 9), expected a request" },
		{ 0, 6, 0x81, RESUME_REQUEST,
		  "easyrdma resume request: flags 0x80 unknown to this side (a newer peer?)" },
		{ 0, 7, 3, RESUME_REQUEST, "easyrdma resume request: reason byte 3, which only a reject carries" },
		{ 1, 6, 0x02, RESUME_REJECT,
		  "easyrdma resume reject: flags 0x02 unknown to this side (a newer peer?)" },
		{ 1, 6, RESUME_F_MAC, RESUME_REJECT,
		  "easyrdma resume reject: flags 0x01 (a MAC), which a reject never carries" },
		{ 1, 7, 0, RESUME_REJECT, "easyrdma resume reject without a reason (0)" },
	};
	struct resume_msg req = req_sample(), rej = rej_sample(RESUME_R_BUSY, "full");
	uint8_t good[2][RESUME_MAX_LEN], bad[RESUME_MAX_LEN];
	char why[160];

	ck_assert_int_eq(resume_encode(&req, good[0], sizeof(good[0])), RESUME_REQ_LEN);
	ck_assert_int_eq(resume_encode(&rej, good[1], sizeof(good[1])), RESUME_REJ_LEN + 4);
	ck_assert_int_eq(decode_why(NULL, 0, RESUME_REQUEST, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume message truncated: 0 bytes, header needs 8");
	ck_assert_int_eq(decode_why(good[0], 7, RESUME_REQUEST, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume message truncated: 7 bytes, header needs 8");
	for (unsigned int i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memcpy(bad, good[rows[i].reject], sizeof(bad));
		bad[rows[i].at] = rows[i].value;
		ck_assert_msg(decode_why(bad, sizeof(bad), rows[i].kind, why, sizeof(why)) == -EPROTO,
			      "row %u decoded", i);
		ck_assert_str_eq(why, rows[i].want);
	}
	/* Every flag but the MAC's, alone. */
	for (unsigned int bit = 1; bit < 8; bit++) {
		memcpy(bad, good[0], sizeof(bad));
		bad[6] = (uint8_t)(1u << bit);
		ck_assert_int_eq(decode_why(bad, sizeof(bad), RESUME_REQUEST, why, sizeof(why)), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "unknown to this side (a newer peer?)"));
	}
	ck_assert_int_eq(decode_why(good[0], RESUME_REQ_LEN, RESUME_REQUEST, why, sizeof(why)), 0);
	ck_assert_int_eq(decode_why(good[1], RESUME_REJ_LEN + 4, RESUME_REJECT, why, sizeof(why)), 0);
}
END_TEST

/* Every length from the header's to one short of m's is refused, naming
 * both lengths and whether m has a MAC (a reject: its text). */
static void each_truncation(const struct resume_msg *m, const char *name, int want_len)
{
	uint8_t buf[RESUME_MAX_LEN];
	char why[160], want[160];
	int n = resume_encode(m, buf, sizeof(buf));

	ck_assert_int_eq(n, want_len);
	for (int len = RESUME_HDR_LEN; len < n; len++) {
		if (m->kind == RESUME_REJECT && len >= RESUME_REJ_LEN)
			snprintf(want, sizeof(want), "easyrdma resume reject truncated: %d bytes, its text needs %d",
				 len, n);
		else
			snprintf(want, sizeof(want), "easyrdma resume %s truncated: %d bytes, one%s needs %d",
				 name, len, m->flags & RESUME_F_MAC ? " with a MAC" : "",
				 m->kind == RESUME_REJECT ? RESUME_REJ_LEN : n);
		ck_assert_int_eq(decode_why(buf, (size_t)len, m->kind, why, sizeof(why)), -EPROTO);
		ck_assert_str_eq(why, want);
	}
	ck_assert_int_eq(decode_why(buf, (size_t)n, m->kind, why, sizeof(why)), 0);
}

/* Every length short of its kind's, sealed or not; a reject's text past
 * the bytes or over its bound. */
START_TEST(decoder_refuses_short_messages)
{
	struct auth_key k = key(KEY_A);
	struct resume_msg req = req_sample(), rep = rep_sample(), rej = rej_sample(RESUME_R_STALE, "old");
	uint8_t buf[RESUME_MAX_LEN];
	char why[160];

	each_truncation(&req, "request", RESUME_REQ_LEN);
	each_truncation(&rep, "reply", RESUME_REP_LEN);
	ck_assert_int_eq(resume_req_seal(&k, &req, QPN_CLIENT), 0);
	ck_assert_int_eq(resume_rep_seal(&k, &req, &rep, QPN_SERVER), 0);
	each_truncation(&req, "request", RESUME_REQ_LEN + RESUME_REQ_MAC_LEN);
	each_truncation(&rep, "reply", RESUME_REP_LEN + RESUME_REP_MAC_LEN);
	each_truncation(&rej, "reject", RESUME_REJ_LEN + 3);
	ck_assert_int_eq(resume_encode(&rej, buf, sizeof(buf)), RESUME_REJ_LEN + 3);
	ck_assert_int_eq(decode_why(buf, 8, RESUME_REJECT, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume reject truncated: 8 bytes, one needs 9");
	buf[8] = RESUME_TEXT_MAX + 1;
	ck_assert_int_eq(decode_why(buf, sizeof(buf), RESUME_REJECT, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume reject: text of 101 bytes, at most 100");
	buf[8] = 255;
	ck_assert_int_eq(decode_why(buf, sizeof(buf), RESUME_REJECT, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume reject: text of 255 bytes, at most 100");
}
END_TEST

/* Fields no easyrdma sends: a PSN above 24 bits, a request for the zero token. */
START_TEST(decoder_refuses_bad_fields)
{
	struct resume_msg req = req_sample(), rep = rep_sample();
	uint8_t buf[RESUME_MAX_LEN];
	char why[160];

	resume_encode(&req, buf, sizeof(buf));
	buf[32] = 0x01;
	ck_assert_int_eq(decode_why(buf, RESUME_REQ_LEN, RESUME_REQUEST, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume request: first PSN 0x01123456 exceeds 24 bits");
	buf[32] = 0x80;
	ck_assert_int_eq(decode_why(buf, RESUME_REQ_LEN, RESUME_REQUEST, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume request: first PSN 0x80123456 exceeds 24 bits");
	resume_encode(&rep, buf, sizeof(buf));
	buf[16] = 0xff;
	ck_assert_int_eq(decode_why(buf, RESUME_REP_LEN, RESUME_REPLY, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume reply: first PSN 0xffabcdef exceeds 24 bits");
	resume_encode(&req, buf, sizeof(buf));
	memset(buf + 8, 0, HS_TOKEN_LEN);
	ck_assert_int_eq(decode_why(buf, RESUME_REQ_LEN, RESUME_REQUEST, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma resume request: session token all zero (no session has it)");
	/* One bit of the token is enough. */
	buf[23] = 0x01;
	ck_assert_int_eq(decode_why(buf, RESUME_REQ_LEN, RESUME_REQUEST, why, sizeof(why)), 0);
}
END_TEST

/* The listener's switch: a resume request, not a handshake, and each
 * decoder names the other's magic. */
START_TEST(listener_tells_resume_from_handshake)
{
	struct resume_msg req = req_sample();
	struct hs_msg hs = { .kind = HS_REQ, .credits = 1, .max_msg = 64 }, hout;
	uint8_t r[RESUME_MAX_LEN], h[HS_REQ_MAX];
	char why[160];

	ck_assert_int_gt(resume_encode(&req, r, sizeof(r)), 0);
	ck_assert_int_gt(hs_encode(&hs, h, sizeof(h)), 0);
	ck_assert_int_eq(resume_is(r, RESUME_REQ_LEN), 1);
	ck_assert_int_eq(resume_is(r, 4), 1);
	ck_assert_int_eq(resume_is(r, 3), 0);
	ck_assert_int_eq(resume_is(NULL, 56), 0);
	ck_assert_int_eq(resume_is(h, sizeof(h)), 0);
	ck_assert_int_eq(hs_decode(r, RESUME_REQ_LEN, HS_REQ, &hout, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "not an easyrdma handshake: magic 0x455a5253, expected 0x455a5244");
	ck_assert_int_eq(decode_why(h, sizeof(h), RESUME_REQUEST, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "not an easyrdma resume message: magic 0x455a5244, expected 0x455a5253");
}
END_TEST

/* The request MAC: the key, every field, the client's new QP; a request
 * without a MAC to a keyed listener, one with a MAC to a listener without. */
START_TEST(request_mac_binds_fields_and_qpn)
{
	struct auth_key k = key(KEY_A), kb = key(KEY_B);
	struct resume_msg req = req_sample(), out;
	uint8_t buf[RESUME_MAX_LEN], bad[RESUME_MAX_LEN];
	char why[160];
	int n, refused = 0;

	ck_assert_int_eq(resume_req_seal(&k, &req, QPN_CLIENT), 0);
	ck_assert_int_eq(resume_req_check(&k, &req, QPN_CLIENT), 0);
	ck_assert_int_eq(resume_req_check(&kb, &req, QPN_CLIENT), -EACCES);
	ck_assert_int_eq(resume_req_check(&k, &req, QPN_CLIENT + 1), -EACCES);
	ck_assert_int_eq(resume_req_check(NULL, &req, QPN_CLIENT), -EACCES);
	n = resume_encode(&req, buf, sizeof(buf));
	/* A flipped byte of the token, epoch, count, PSN or MAC; byte 32 is
	 * the PSN's top, which the decoder already refuses. */
	for (int i = 8; i < n; i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[i] ^= 0x01;
		if (i == 32) {
			ck_assert_int_eq(resume_decode(bad, (size_t)n, RESUME_REQUEST, &out, why, sizeof(why)),
					 -EPROTO);
			continue;
		}
		ck_assert_int_eq(resume_decode(bad, (size_t)n, RESUME_REQUEST, &out, why, sizeof(why)), 0);
		ck_assert_msg(resume_req_check(&k, &out, QPN_CLIENT) == -EACCES, "flip of byte %d passed", i);
		refused++;
	}
	ck_assert_int_eq(refused, n - 8 - 1);
	/* The MAC flag cleared: a request without a MAC. */
	memcpy(bad, buf, sizeof(bad));
	bad[6] = 0;
	ck_assert_int_eq(resume_decode(bad, (size_t)n, RESUME_REQUEST, &out, why, sizeof(why)), 0);
	ck_assert_int_eq(resume_req_check(&k, &out, QPN_CLIENT), -EACCES);
	ck_assert_int_eq(resume_req_check(NULL, &out, QPN_CLIENT), 0);
	/* A field changed in the struct after sealing. */
	out = req;
	out.epoch++;
	ck_assert_int_eq(resume_req_check(&k, &out, QPN_CLIENT), -EACCES);
	out = req;
	out.count ^= 0x80000000u;
	ck_assert_int_eq(resume_req_check(&k, &out, QPN_CLIENT), -EACCES);
	/* Seal refuses what is not a request, and a missing key. */
	out = rep_sample();
	ck_assert_int_eq(resume_req_seal(&k, &out, QPN_CLIENT), -EINVAL);
	ck_assert_int_eq(resume_req_check(&k, &out, QPN_CLIENT), -EACCES);
	out = req_sample();
	ck_assert_int_eq(resume_req_seal(NULL, &out, QPN_CLIENT), -EINVAL);
	/* The same request for another QP has another MAC (bound to it). */
	out = req_sample();
	ck_assert_int_eq(resume_req_seal(&k, &out, QPN_CLIENT + 1), 0);
	ck_assert_int_ne(memcmp(out.mac, req.mac, RESUME_REQ_MAC_LEN), 0);
}
END_TEST

/* The reply MAC: the key, every field, the request it answers (its MAC
 * included) and the listener's new QP. */
START_TEST(reply_mac_binds_request_fields_and_qpn)
{
	struct auth_key k = key(KEY_A), kb = key(KEY_B);
	struct resume_msg req = req_sample(), rep = rep_sample(), other, out;
	uint8_t buf[RESUME_MAX_LEN], bad[RESUME_MAX_LEN];
	char why[160];
	int n, refused = 0;

	ck_assert_int_eq(resume_req_seal(&k, &req, QPN_CLIENT), 0);
	ck_assert_int_eq(resume_rep_seal(&k, &req, &rep, QPN_SERVER), 0);
	ck_assert_int_eq(resume_rep_check(&k, &req, &rep, QPN_SERVER), 0);
	ck_assert_int_eq(resume_rep_check(&kb, &req, &rep, QPN_SERVER), -EACCES);
	ck_assert_int_eq(resume_rep_check(&k, &req, &rep, QPN_SERVER ^ 0x800000), -EACCES);
	ck_assert_int_eq(resume_rep_check(NULL, &req, &rep, QPN_SERVER), -EACCES);
	/* Another request: its MAC (for another client QP) differs. */
	other = req_sample();
	ck_assert_int_eq(resume_req_seal(&k, &other, QPN_CLIENT + 2), 0);
	ck_assert_int_eq(resume_rep_check(&k, &other, &rep, QPN_SERVER), -EACCES);
	other = req;
	other.token[0] ^= 0x10;
	ck_assert_int_eq(resume_rep_check(&k, &other, &rep, QPN_SERVER), -EACCES);
	n = resume_encode(&rep, buf, sizeof(buf));
	ck_assert_int_eq(n, 52);
	for (int i = 8; i < n; i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[i] ^= 0x01;
		if (i == 16) {	/* the PSN's top byte */
			ck_assert_int_eq(resume_decode(bad, (size_t)n, RESUME_REPLY, &out, why, sizeof(why)),
					 -EPROTO);
			continue;
		}
		ck_assert_int_eq(resume_decode(bad, (size_t)n, RESUME_REPLY, &out, why, sizeof(why)), 0);
		ck_assert_msg(resume_rep_check(&k, &req, &out, QPN_SERVER) == -EACCES, "flip of byte %d passed",
			      i);
		refused++;
	}
	ck_assert_int_eq(refused, n - 8 - 1);
	/* Without the MAC flag: refused with a key, taken without one. */
	out = rep_sample();
	ck_assert_int_eq(resume_rep_check(&k, &req, &out, QPN_SERVER), -EACCES);
	other = req_sample();
	ck_assert_int_eq(resume_rep_check(NULL, &other, &out, QPN_SERVER), 0);
	/* Seal and check refuse kinds out of place, and a missing key. */
	ck_assert_int_eq(resume_rep_seal(&k, &out, &rep, QPN_SERVER), -EINVAL);
	ck_assert_int_eq(resume_rep_seal(&k, &req, &other, QPN_SERVER), -EINVAL);
	ck_assert_int_eq(resume_rep_seal(NULL, &req, &out, QPN_SERVER), -EINVAL);
	ck_assert_int_eq(resume_rep_check(&k, &rep, &rep, QPN_SERVER), -EACCES);
	/* A reply MAC never passes for a request MAC, nor the other way. */
	other = req;
	memcpy(other.mac, rep.mac, RESUME_REQ_MAC_LEN);
	ck_assert_int_eq(resume_req_check(&k, &other, QPN_CLIENT), -EACCES);
}
END_TEST

/* A reply carries the request's epoch + 1, across the wrap too. */
START_TEST(reply_epoch_follows_request)
{
	static const uint32_t epochs[] = { 0, 1, 0x7fffffffu, 0xfffffffeu, 0xffffffffu };
	struct resume_msg req = req_sample(), rep = rep_sample();

	for (unsigned int i = 0; i < sizeof(epochs) / sizeof(epochs[0]); i++) {
		req.epoch = epochs[i];
		rep.epoch = epochs[i] + 1;
		ck_assert_int_eq(resume_rep_fits(&req, &rep), 1);
		rep.epoch = epochs[i];
		ck_assert_int_eq(resume_rep_fits(&req, &rep), 0);
		rep.epoch = epochs[i] + 2;
		ck_assert_int_eq(resume_rep_fits(&req, &rep), 0);
		rep.epoch = epochs[i] - 1;
		ck_assert_int_eq(resume_rep_fits(&req, &rep), 0);
	}
	req.epoch = 0xffffffffu;
	rep.epoch = 0;
	ck_assert_int_eq(resume_rep_fits(&req, &rep), 1);
	/* Only a reply answers, only a request is answered. */
	rep.kind = RESUME_REJECT;
	ck_assert_int_eq(resume_rep_fits(&req, &rep), 0);
	rep.kind = RESUME_REPLY;
	req.kind = RESUME_REPLY;
	ck_assert_int_eq(resume_rep_fits(&req, &rep), 0);
}
END_TEST

START_TEST(reasons_say_retry_or_give_up)
{
	ck_assert_str_eq(resume_reason_str(RESUME_R_UNKNOWN),
			 "no such session (the listener restarted or the resume window lapsed)");
	ck_assert_str_eq(resume_reason_str(RESUME_R_STALE),
			 "not the session's epoch (a replay or an older attempt)");
	ck_assert_str_eq(resume_reason_str(RESUME_R_DENIED),
			 "denied (the MAC was wrong or missing, or another address without the shared secret)");
	ck_assert_str_eq(resume_reason_str(RESUME_R_BUSY),
			 "listener busy (its handshakes are at their limit)");
	ck_assert_str_eq(resume_reason_str(RESUME_R_NOT_READY),
			 "session not ready (still settling its previous attempt)");
	ck_assert_str_eq(resume_reason_str(0), "reason unknown to this side");
	ck_assert_str_eq(resume_reason_str(6), "reason unknown to this side");
	ck_assert_str_eq(resume_reason_str(255), "reason unknown to this side");
	ck_assert_int_eq(resume_reason_retry(RESUME_R_UNKNOWN), 0);
	ck_assert_int_eq(resume_reason_retry(RESUME_R_STALE), 0);
	ck_assert_int_eq(resume_reason_retry(RESUME_R_DENIED), 0);
	ck_assert_int_eq(resume_reason_retry(RESUME_R_BUSY), 1);
	ck_assert_int_eq(resume_reason_retry(RESUME_R_NOT_READY), 1);
	/* A newer listener's reason: give up rather than dial for ever. */
	ck_assert_int_eq(resume_reason_retry(0), 0);
	ck_assert_int_eq(resume_reason_retry(6), 0);
	ck_assert_int_eq(resume_reason_retry(255), 0);
}
END_TEST

/* 100 ms doubling to 2000 ms, each in [d*3/4, d*5/4] by rnd, never 0; the
 * range's ends reached, its middle too. */
START_TEST(backoff_doubles_to_a_cap_with_jitter)
{
	static const uint32_t rnds[] = { 0, 1, 2, 49, 50, 51, 1000, 0x7fffffffu, 0x80000000u,
					 0xdeadbeefu, 0xfffffffeu, 0xffffffffu };
	uint32_t d = 100, prev_lo = 0;

	for (uint32_t attempt = 0; attempt <= 40; attempt++) {
		uint32_t lo = d * 3 / 4, hi = d * 5 / 4;

		ck_assert_uint_ge(lo, prev_lo);	/* the bounds never go down */
		for (unsigned int i = 0; i < sizeof(rnds) / sizeof(rnds[0]); i++) {
			uint32_t w = resume_backoff_ms(attempt, rnds[i]);

			ck_assert_msg(w >= lo && w <= hi && w > 0, "attempt %u rnd 0x%x: %u not in [%u, %u]",
				      attempt, rnds[i], w, lo, hi);
		}
		ck_assert_uint_eq(resume_backoff_ms(attempt, 0), lo);
		ck_assert_uint_eq(resume_backoff_ms(attempt, d / 2), hi);
		ck_assert_uint_eq(resume_backoff_ms(attempt, d / 4), d);
		prev_lo = lo;
		d = d * 2 > 2000 ? 2000 : d * 2;
	}
	ck_assert_uint_eq(resume_backoff_ms(0, 0), 75);
	ck_assert_uint_eq(resume_backoff_ms(4, 0), 1200);
	ck_assert_uint_eq(resume_backoff_ms(5, 0), 1500);
	ck_assert_uint_eq(resume_backoff_ms(0xffffffffu, 0xffffffffu) <= 2500, 1);
	/* The first redial's every value, 75..125 ms, is reachable. */
	for (uint32_t r = 0; r <= 50; r++)
		ck_assert_uint_eq(resume_backoff_ms(0, r), 75 + r);
}
END_TEST

/* The window: ms left rounded up while inside, 0 from its end on, 0
 * always without one; a clock that wraps between the reads. */
START_TEST(window_left_and_lapsed)
{
	const uint64_t t0 = 5000000000ull, ms = 1000000ull;
	uint32_t left = 77;

	ck_assert_int_eq(resume_window_left(t0, t0, 0, &left), 0);
	ck_assert_uint_eq(left, 0);
	ck_assert_int_eq(resume_window_left(t0, t0, 3000, &left), 1);
	ck_assert_uint_eq(left, 3000);
	ck_assert_int_eq(resume_window_left(t0, t0 + 1, 3000, &left), 1);
	ck_assert_uint_eq(left, 3000);	/* 2999.999999 ms: rounded up */
	ck_assert_int_eq(resume_window_left(t0, t0 + ms, 3000, &left), 1);
	ck_assert_uint_eq(left, 2999);
	ck_assert_int_eq(resume_window_left(t0, t0 + 3000 * ms - 1, 3000, &left), 1);
	ck_assert_uint_eq(left, 1);
	ck_assert_int_eq(resume_window_left(t0, t0 + 3000 * ms, 3000, &left), 0);
	ck_assert_uint_eq(left, 0);
	left = 77;
	ck_assert_int_eq(resume_window_left(t0, t0 + 3000 * ms + 1, 3000, &left), 0);
	ck_assert_uint_eq(left, 0);
	ck_assert_int_eq(resume_window_left(t0, t0 + 100000 * ms, 3000, &left), 0);
	/* Across the clock's wrap: 1 ms elapsed. */
	ck_assert_int_eq(resume_window_left(UINT64_MAX - ms / 2 + 1, ms / 2, 3000, &left), 1);
	ck_assert_uint_eq(left, 2999);
	/* A now before the start reads as long past. */
	ck_assert_int_eq(resume_window_left(t0, t0 - 1, 3000, &left), 0);
	/* The largest window does not overflow. */
	ck_assert_int_eq(resume_window_left(t0, t0, UINT32_MAX, &left), 1);
	ck_assert_uint_eq(left, UINT32_MAX);
	ck_assert_int_eq(resume_window_left(0, UINT64_MAX, UINT32_MAX, &left), 0);
	ck_assert_int_eq(resume_window_left(t0, t0 + 5, 10, NULL), 1);
	ck_assert_int_eq(resume_window_left(t0, t0 + 10 * ms, 10, NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resume");
	TCase *tc = tcase_create("resume");

	tcase_add_test(tc, request_round_trip);
	tcase_add_test(tc, reply_round_trip);
	tcase_add_test(tc, reject_round_trip);
	tcase_add_test(tc, encoder_refusals);
	tcase_add_test(tc, decoder_refuses_bad_header);
	tcase_add_test(tc, decoder_refuses_short_messages);
	tcase_add_test(tc, decoder_refuses_bad_fields);
	tcase_add_test(tc, listener_tells_resume_from_handshake);
	tcase_add_test(tc, request_mac_binds_fields_and_qpn);
	tcase_add_test(tc, reply_mac_binds_request_fields_and_qpn);
	tcase_add_test(tc, reply_epoch_follows_request);
	tcase_add_test(tc, reasons_say_retry_or_give_up);
	tcase_add_test(tc, backoff_doubles_to_a_cap_with_jitter);
	tcase_add_test(tc, window_left_and_lapsed);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
