/* test_handshake.c: the handshake codec: round trips, every truncation, bad magic/version/kind, oversized data, the path block and the session token. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "easyrdma.h"
#include "wire/handshake.h"
#include "../checkmain.h"

static struct hs_msg sample(enum hs_kind kind, uint8_t user_len)
{
	struct hs_msg m = { .kind = kind, .caps = 0x8001, .credits = 63, .max_msg = 0x01020304,
			    .user_len = user_len };
	int i;

	for (i = 0; i < user_len; i++)
		m.user[i] = (uint8_t)(i * 7 + 1);
	return m;
}

START_TEST(round_trip_every_kind_and_length)
{
	static const enum hs_kind kinds[] = { HS_REQ, HS_REP, HS_REJ };
	uint8_t buf[HS_REP_MAX];
	char why[160];
	unsigned int k, len;

	for (k = 0; k < 3; k++) {
		for (len = 0; len <= hs_user_max(kinds[k]); len++) {
			struct hs_msg in = sample(kinds[k], (uint8_t)len), out;
			int n = hs_encode(&in, buf, sizeof(buf));

			ck_assert_int_eq(n, HS_HDR_LEN + (int)len);
			ck_assert_int_eq(hs_decode(buf, (size_t)n, kinds[k], &out, why, sizeof(why)), 0);
			ck_assert_uint_eq(out.version, HS_VERSION);
			ck_assert_uint_eq(out.kind, kinds[k]);
			ck_assert_uint_eq(out.caps, 0x8001);
			ck_assert_uint_eq(out.credits, 63);
			ck_assert_uint_eq(out.max_msg, 0x01020304);
			ck_assert_uint_eq(out.user_len, len);
			ck_assert_mem_eq(out.user, in.user, len);
		}
	}
}
END_TEST

START_TEST(wire_layout_is_big_endian)
{
	struct hs_msg m = sample(HS_REQ, 2);
	uint8_t buf[HS_REQ_MAX];
	static const uint8_t want[HS_HDR_LEN + 2] = {
		'E', 'Z', 'R', 'D', HS_VERSION, HS_REQ, 2, 0, 0x80, 0x01, 0, 63, 1, 2, 3, 4, 1, 8
	};

	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_HDR_LEN + 2);
	ck_assert_mem_eq(buf, want, sizeof(want));
}
END_TEST

/* rdma_cm hands over the full private-data size, zero padded. */
START_TEST(padding_after_user_data_is_accepted)
{
	struct hs_msg m = sample(HS_REQ, 5), out;
	uint8_t buf[HS_REQ_MAX] = { 0 };
	char why[160];

	ck_assert_int_gt(hs_encode(&m, buf, sizeof(buf)), 0);
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.user_len, 5);
}
END_TEST

START_TEST(every_truncation_is_refused)
{
	struct hs_msg m = sample(HS_REP, 40), out;
	uint8_t buf[HS_REP_MAX];
	char why[160];
	int n = hs_encode(&m, buf, sizeof(buf)), len;

	for (len = 0; len < n; len++) {
		why[0] = '\0';
		ck_assert_int_eq(hs_decode(buf, (size_t)len, HS_REP, &out, why, sizeof(why)), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "truncated"));
	}
	ck_assert_int_eq(hs_decode(NULL, 0, HS_REP, &out, why, sizeof(why)), -EPROTO);
}
END_TEST

START_TEST(wrong_magic_is_refused_with_reason)
{
	struct hs_msg m = sample(HS_REQ, 3), out;
	uint8_t buf[HS_REQ_MAX];
	char why[160];

	hs_encode(&m, buf, sizeof(buf));
	buf[0] = 'X';
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "not an easyrdma handshake: magic 0x585a5244, expected 0x455a5244");
}
END_TEST

START_TEST(wrong_version_is_refused_with_reason)
{
	struct hs_msg m = sample(HS_REQ, 3), out;
	uint8_t buf[HS_REQ_MAX];
	char why[160];

	hs_encode(&m, buf, sizeof(buf));
	buf[4] = 9;
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake version 9 not supported (this side speaks 1)");
}
END_TEST

START_TEST(wrong_kind_is_refused)
{
	struct hs_msg m = sample(HS_REP, 3), out;
	uint8_t buf[HS_REP_MAX];
	char why[160];

	hs_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(hs_decode(buf, HS_REP_MAX, HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: got a reply (kind 2), expected a request");
}
END_TEST

START_TEST(oversized_user_data)
{
	struct hs_msg m = sample(HS_REQ, (uint8_t)(hs_user_max(HS_REQ) + 1)), out;
	uint8_t buf[HS_REP_MAX];
	char why[160];

	/* Encoding refuses it... */
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), -EMSGSIZE);
	/* ...and a peer claiming it is refused even if the bytes are there. */
	m.user_len = 10;
	hs_encode(&m, buf, sizeof(buf));
	buf[6] = (uint8_t)(hs_user_max(HS_REQ) + 1);
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: user data length 41 exceeds 40 for a request");
	/* A buffer too small for the message is refused too. */
	m.user_len = 10;
	ck_assert_int_eq(hs_encode(&m, buf, HS_HDR_LEN + 9), -EMSGSIZE);
}
END_TEST

START_TEST(zero_credits_or_max_msg_refused)
{
	struct hs_msg m = sample(HS_REQ, 0), out;
	uint8_t buf[HS_REQ_MAX];
	char why[160];

	m.credits = 0;
	hs_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), -EPROTO);
	m.credits = 1;
	m.max_msg = 0;
	hs_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "max message 0"));
}
END_TEST

START_TEST(limits_match_rdma_cm)
{
	ck_assert_uint_eq(hs_user_max(HS_REQ), EZ_CONNECT_DATA_MAX);
	ck_assert_uint_eq(hs_user_max(HS_REP), EZ_ACCEPT_DATA_MAX);
	ck_assert_uint_eq(hs_user_max(HS_REJ), EZ_REJECT_DATA_MAX);
	ck_assert_uint_eq(hs_user_max(0), 0);
}
END_TEST

START_TEST(printable_reason)
{
	char text[8];

	hs_printable("ab\x01z\0", 5, text, sizeof(text));
	ck_assert_str_eq(text, "ab?z");
	hs_printable("0123456789", 10, text, sizeof(text));
	ck_assert_str_eq(text, "0123456");
}
END_TEST

static struct hs_msg with_paths(enum hs_kind kind, uint8_t user_len, uint8_t paths)
{
	struct hs_msg m = sample(kind, user_len);

	m.caps |= HS_CAP_PATHS;
	m.paths = paths;
	for (unsigned int i = 1; i < paths; i++)
		m.path_qpn[i] = 0xabcd00u + i * 0x010101u;	/* 24 bits */
	return m;
}

START_TEST(paths_round_trip)
{
	static const enum hs_kind kinds[] = { HS_REQ, HS_REP };
	uint8_t buf[HS_REP_MAX];
	char why[160];

	for (unsigned int k = 0; k < 2; k++) {
		for (unsigned int paths = 1; paths <= HS_MAX_PATHS; paths++) {
			size_t room = hs_user_max(kinds[k]) - hs_paths_len(paths);
			struct hs_msg in = with_paths(kinds[k], (uint8_t)room, (uint8_t)paths), out;
			int n = hs_encode(&in, buf, sizeof(buf));

			ck_assert_int_eq(n, HS_HDR_LEN + (int)room + (int)hs_paths_len(paths));
			ck_assert_int_eq(hs_decode(buf, (size_t)n, kinds[k], &out, why, sizeof(why)), 0);
			ck_assert_uint_eq(out.paths, paths);
			ck_assert_uint_eq(out.user_len, room);
			ck_assert_mem_eq(out.user, in.user, room);
			for (unsigned int i = 1; i < paths; i++)
				ck_assert_uint_eq(out.path_qpn[i], in.path_qpn[i]);
			/* One user byte more does not fit. */
			in.user_len++;
			ck_assert_int_eq(hs_encode(&in, buf, sizeof(buf)), -EMSGSIZE);
		}
	}
	/* The limits the documentation gives: 40 - (1 + 3 (K - 1)) request bytes. */
	ck_assert_uint_eq(EZ_CONNECT_DATA_MAX - hs_paths_len(2), 36);
	ck_assert_uint_eq(EZ_CONNECT_DATA_MAX - hs_paths_len(4), 30);
	ck_assert_uint_eq(EZ_CONNECT_DATA_MAX - hs_paths_len(8), 18);
}
END_TEST

START_TEST(paths_block_layout)
{
	struct hs_msg m = with_paths(HS_REQ, 1, 3);
	uint8_t buf[HS_REQ_MAX];
	static const uint8_t want[] = { 3, 0xac, 0xce, 0x01, 0xad, 0xcf, 0x02 };

	m.user[0] = 0x55;
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_HDR_LEN + 1 + 7);
	ck_assert_uint_eq(buf[9] & HS_CAP_PATHS, HS_CAP_PATHS);
	ck_assert_uint_eq(buf[HS_HDR_LEN], 0x55);
	ck_assert_mem_eq(buf + HS_HDR_LEN + 1, want, sizeof(want));
}
END_TEST

/* A peer without the capability: no block means one path, and a request
 * with a block reads, to a decoder that ignores the bit, as its user bytes
 * alone. */
START_TEST(paths_version_compatible)
{
	struct hs_msg m = sample(HS_REQ, 5), out;
	uint8_t buf[HS_REQ_MAX] = { 0 };
	char why[160];

	hs_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.paths, 1);
	m = with_paths(HS_REQ, 5, 4);
	hs_encode(&m, buf, sizeof(buf));
	buf[9] &= (uint8_t)~HS_CAP_PATHS;
	ck_assert_int_eq(hs_decode(buf, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.paths, 1);
	ck_assert_uint_eq(out.user_len, 5);
	ck_assert_mem_eq(out.user, m.user, 5);
	/* The bit on a reject means nothing: rejects carry no paths. */
	m = with_paths(HS_REJ, 5, 4);
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_HDR_LEN + 5);
}
END_TEST

/* HS_CAP_KEEPALIVE costs no byte and survives the codec with the other
 * capabilities; an older peer's request or reply (no bit) says the peer
 * answers no probe; a bit this version does not know changes nothing. */
START_TEST(keepalive_capability)
{
	static const enum hs_kind kinds[] = { HS_REQ, HS_REP };
	uint8_t buf[HS_REP_MAX] = { 0 };
	char why[160];
	unsigned int k;

	for (k = 0; k < 2; k++) {
		struct hs_msg m = sample(kinds[k], 5), out;

		m.caps = HS_CAP_CREDITS | HS_CAP_KEEPALIVE;
		ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_HDR_LEN + 5);
		ck_assert_uint_eq(buf[9], HS_CAP_CREDITS | HS_CAP_KEEPALIVE);
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_int_eq(hs_peer_keepalive(out.caps), 1);
		ck_assert_uint_eq(out.user_len, 5);
		ck_assert_mem_eq(out.user, m.user, 5);
		/* With a path block after the user bytes, still no byte of its own. */
		m.caps |= HS_CAP_PATHS;
		m.paths = 2;
		m.path_qpn[1] = 0x123456;
		ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_HDR_LEN + 5 + 4);
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_int_eq(hs_peer_keepalive(out.caps), 1);
		ck_assert_uint_eq(out.paths, 2);
		ck_assert_uint_eq(out.path_qpn[1], 0x123456);
		/* An older peer: only HS_CAP_CREDITS. */
		m = sample(kinds[k], 5);
		m.caps = HS_CAP_CREDITS;
		hs_encode(&m, buf, sizeof(buf));
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_int_eq(hs_peer_keepalive(out.caps), 0);
		/* A newer one with bits unknown here. */
		m.caps = HS_CAP_CREDITS | HS_CAP_KEEPALIVE | 0xfc00;
		hs_encode(&m, buf, sizeof(buf));
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_int_eq(hs_peer_keepalive(out.caps), 1);
		ck_assert_uint_eq(out.user_len, 5);
	}
	ck_assert_int_eq(HS_CAP_KEEPALIVE & (HS_CAP_CREDITS | HS_CAP_AUTH | HS_CAP_PATHS), 0);
}
END_TEST

/* HS_CAP_RNDV carries the large maximum's shift in byte 7, which was
 * reserved: 0 from an older peer. A shift no peer can mean turns the
 * capability off instead of failing the handshake. */
START_TEST(rndv_capability)
{
	static const enum hs_kind kinds[] = { HS_REQ, HS_REP };
	uint8_t buf[HS_REP_MAX] = { 0 };
	char why[160];
	unsigned int k;

	for (k = 0; k < 2; k++) {
		struct hs_msg m = sample(kinds[k], 5), out;

		m.caps = HS_CAP_CREDITS | HS_CAP_RNDV;
		m.rndv_shift = 24;
		ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_HDR_LEN + 5);
		ck_assert_uint_eq(buf[7], 24);
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.caps, HS_CAP_CREDITS | HS_CAP_RNDV);
		ck_assert_uint_eq(out.rndv_shift, 24);
		ck_assert_uint_eq(out.max_msg, m.max_msg);
		/* Without the capability byte 7 stays 0, whatever the field. */
		m.caps = HS_CAP_CREDITS;
		hs_encode(&m, buf, sizeof(buf));
		ck_assert_uint_eq(buf[7], 0);
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.rndv_shift, 0);
		/* The bit with shift 0 or above 31: shift 0 (off); the caps
		 * stay as sent, so a MAC over them still sees a flipped bit. */
		m.caps = HS_CAP_CREDITS | HS_CAP_RNDV;
		hs_encode(&m, buf, sizeof(buf));
		buf[7] = 0;
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.caps, HS_CAP_CREDITS | HS_CAP_RNDV);
		ck_assert_uint_eq(out.rndv_shift, 0);
		buf[7] = 32;
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.rndv_shift, 0);
	}
}
END_TEST

START_TEST(paths_bad_block_refused)
{
	struct hs_msg m = with_paths(HS_REQ, 4, 4), out;
	uint8_t buf[HS_REQ_MAX];
	char why[160];
	int n = hs_encode(&m, buf, sizeof(buf));

	/* Every truncation inside the block. */
	for (int len = HS_HDR_LEN + 4; len < n; len++) {
		why[0] = '\0';
		ck_assert_int_eq(hs_decode(buf, (size_t)len, HS_REQ, &out, why, sizeof(why)), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "truncated"));
	}
	buf[HS_HDR_LEN + 4] = 0;
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: request offers 0 paths, 1..8 allowed");
	buf[HS_HDR_LEN + 4] = 9;
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: request offers 9 paths, 1..8 allowed");
	/* User bytes and a block that together overflow a request. */
	m = with_paths(HS_REQ, 20, 2);
	hs_encode(&m, buf, sizeof(buf));
	buf[HS_HDR_LEN + 20] = 8;
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: 20 user bytes and 8 paths exceed the 40 bytes of a request");
	/* Encoding refuses a path count it could not send. */
	m.paths = 0;
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), -EINVAL);
	m.paths = HS_MAX_PATHS + 1;
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(paths_psns_distinct_24_bit)
{
	static const uint32_t psn0[] = { 0, 1, 0xffffff, 0x123456, 0xfedcba };

	for (unsigned int k = 0; k < 5; k++) {
		ck_assert_uint_eq(hs_path_psn(psn0[k], 0), psn0[k]);
		for (unsigned int i = 0; i < HS_MAX_PATHS; i++) {
			ck_assert_uint_le(hs_path_psn(psn0[k], i), 0xffffff);
			for (unsigned int j = 0; j < i; j++)
				ck_assert_uint_ne(hs_path_psn(psn0[k], i), hs_path_psn(psn0[k], j));
		}
	}
}
END_TEST

static struct hs_msg with_token(enum hs_kind kind, uint8_t user_len)
{
	struct hs_msg m = sample(kind, user_len);

	m.caps |= HS_CAP_RESUME;
	for (unsigned int i = 0; i < HS_TOKEN_LEN; i++)
		m.token[i] = (uint8_t)(0xa0 + i);
	return m;
}

/* A reply with HS_CAP_RESUME carries the session token last: after the
 * user bytes, or after the path block; with an auth block too. */
START_TEST(resume_token_round_trip)
{
	struct hs_msg in = with_token(HS_REP, 7), out;
	uint8_t buf[HS_REP_MAX];
	char why[160];
	int n;

	n = hs_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(n, HS_HDR_LEN + 7 + HS_TOKEN_LEN);
	ck_assert_uint_eq(buf[8], HS_CAP_RESUME >> 8 | 0x80);
	ck_assert_mem_eq(buf + HS_HDR_LEN + 7, in.token, HS_TOKEN_LEN);
	ck_assert_int_eq(hs_decode(buf, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.user_len, 7);
	ck_assert_mem_eq(out.user, in.user, 7);
	ck_assert_mem_eq(out.token, in.token, HS_TOKEN_LEN);
	/* After a path block of 3 paths (7 bytes). */
	in = with_token(HS_REP, 7);
	in.caps |= HS_CAP_PATHS;
	in.paths = 3;
	in.path_qpn[1] = 0x111111;
	in.path_qpn[2] = 0x222222;
	n = hs_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(n, HS_HDR_LEN + 7 + 7 + HS_TOKEN_LEN);
	ck_assert_uint_eq(buf[HS_HDR_LEN + 7], 3);
	ck_assert_mem_eq(buf + HS_HDR_LEN + 7 + 7, in.token, HS_TOKEN_LEN);
	ck_assert_int_eq(hs_decode(buf, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.paths, 3);
	ck_assert_uint_eq(out.path_qpn[2], 0x222222);
	ck_assert_mem_eq(out.token, in.token, HS_TOKEN_LEN);
	/* With an auth block, 8 paths and the most user bytes: 196 in all. */
	in = with_token(HS_REP, (uint8_t)(hs_user_max(HS_REP) - HS_AUTH_REP_LEN -
					  hs_paths_len(HS_MAX_PATHS) - HS_TOKEN_LEN));
	in.caps |= HS_CAP_PATHS | HS_CAP_AUTH;
	in.paths = HS_MAX_PATHS;
	for (unsigned int i = 1; i < HS_MAX_PATHS; i++)
		in.path_qpn[i] = 0x10000u * i + 5;
	memset(in.auth, 0x5c, HS_AUTH_REP_LEN);
	n = hs_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(n, HS_REP_MAX);
	ck_assert_int_eq(in.user_len, 94);
	ck_assert_mem_eq(buf + HS_REP_MAX - HS_TOKEN_LEN, in.token, HS_TOKEN_LEN);
	ck_assert_int_eq(hs_decode(buf, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_mem_eq(out.auth, in.auth, HS_AUTH_REP_LEN);
	ck_assert_uint_eq(out.paths, HS_MAX_PATHS);
	ck_assert_uint_eq(out.path_qpn[7], in.path_qpn[7]);
	ck_assert_mem_eq(out.user, in.user, in.user_len);
	ck_assert_mem_eq(out.token, in.token, HS_TOKEN_LEN);
	/* One user byte more does not fit. */
	in.user_len++;
	ck_assert_int_eq(hs_encode(&in, buf, sizeof(buf)), -EMSGSIZE);
	/* Nor does a buffer one byte short of the token. */
	in.user_len--;
	ck_assert_int_eq(hs_encode(&in, buf, HS_REP_MAX - 1), -EMSGSIZE);
}
END_TEST

/* In a request the bit asks for resume and adds no byte; a reject never
 * carries the block. */
START_TEST(resume_bit_adds_nothing_to_request_or_reject)
{
	static const enum hs_kind kinds[] = { HS_REQ, HS_REJ };
	uint8_t buf[HS_REP_MAX];
	char why[160];

	for (unsigned int k = 0; k < 2; k++) {
		struct hs_msg in = with_token(kinds[k], 5), out;
		int n = hs_encode(&in, buf, sizeof(buf));

		ck_assert_int_eq(n, HS_HDR_LEN + 5);
		/* The bytes after the message are the decoder's to ignore. */
		memset(buf + n, 0xee, sizeof(buf) - (size_t)n);
		ck_assert_int_eq(hs_decode(buf, sizeof(buf), kinds[k], &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.caps & HS_CAP_RESUME, HS_CAP_RESUME);
		ck_assert_uint_eq(out.user_len, 5);
		for (unsigned int i = 0; i < HS_TOKEN_LEN; i++)
			ck_assert_uint_eq(out.token[i], 0);
	}
	/* A request keeps its whole 40 bytes with the bit. */
	{
		struct hs_msg in = with_token(HS_REQ, (uint8_t)hs_user_max(HS_REQ));

		ck_assert_int_eq(hs_encode(&in, buf, sizeof(buf)), HS_REQ_MAX);
	}
}
END_TEST

/* A reply whose token is cut short, or would run past a reply's 196 bytes,
 * is refused with a reason naming the token. */
START_TEST(resume_token_truncated_or_too_long)
{
	struct hs_msg in = with_token(HS_REP, 10), out;
	uint8_t buf[HS_REP_MAX] = { 0 };
	char why[160];
	int n, len;

	in.caps |= HS_CAP_PATHS;
	in.paths = 2;
	in.path_qpn[1] = 0x123456;
	n = hs_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(n, HS_HDR_LEN + 10 + 4 + HS_TOKEN_LEN);
	for (len = n - HS_TOKEN_LEN; len < n; len++) {
		why[0] = '\0';
		ck_assert_int_eq(hs_decode(buf, (size_t)len, HS_REP, &out, why, sizeof(why)), -EPROTO);
		ck_assert_msg(strstr(why, "truncated") && strstr(why, "session token needs 46"),
			      "length %d: \"%s\"", len, why);
	}
	/* A peer claiming the most user bytes and the token: no room left. */
	in = with_token(HS_REP, 10);
	hs_encode(&in, buf, sizeof(buf));
	buf[6] = (uint8_t)hs_user_max(HS_REP);
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REP, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: the session token at bytes 196..211 exceeds the 196 bytes of a reply");
	/* One byte of room too few. */
	buf[6] = (uint8_t)(hs_user_max(HS_REP) - HS_TOKEN_LEN + 1);
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REP, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: the session token at bytes 181..196 exceeds the 196 bytes of a reply");
	buf[6] = (uint8_t)(hs_user_max(HS_REP) - HS_TOKEN_LEN);
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REP, &out, why, sizeof(why)), 0);
}
END_TEST

/* A reply from a listener that predates resume (no bit) decodes with no
 * token, whatever bytes follow its message. */
START_TEST(resume_old_reply_has_no_token)
{
	struct hs_msg in = sample(HS_REP, 12), out;
	uint8_t buf[HS_REP_MAX];
	char why[160];
	int n = hs_encode(&in, buf, sizeof(buf));

	ck_assert_int_eq(n, HS_HDR_LEN + 12);
	memset(buf + n, 0x77, sizeof(buf) - (size_t)n);
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.caps & HS_CAP_RESUME, 0);
	for (unsigned int i = 0; i < HS_TOKEN_LEN; i++)
		ck_assert_uint_eq(out.token[i], 0);
	/* The same bytes with the bit set: the token is the 16 that follow. */
	buf[8] |= HS_CAP_RESUME >> 8;
	ck_assert_int_eq(hs_decode(buf, sizeof(buf), HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_uint_eq(out.token[0], 0x77);
	ck_assert_uint_eq(out.token[HS_TOKEN_LEN - 1], 0x77);
}
END_TEST

/* The room left for user bytes, as ez_conn_opts(3) gives it: a keyed reply
 * 132, less a path block of 1 + 3 x (paths - 1) and a session token of 16
 * (8 paths and resume: 94); encoding fits exactly there and not one more. */
START_TEST(user_room_beside_auth_paths_and_token)
{
	struct hs_msg m = sample(HS_REP, 0);
	uint8_t buf[HS_REP_MAX];
	size_t room;

	m.caps = HS_CAP_AUTH;
	ck_assert_uint_eq(hs_user_room(&m), EZ_ACCEPT_DATA_MAX_AUTH);
	m.caps |= HS_CAP_PATHS;
	m.paths = 8;
	ck_assert_uint_eq(hs_user_room(&m), EZ_ACCEPT_DATA_MAX_AUTH - 22);
	m.caps |= HS_CAP_RESUME;
	room = hs_user_room(&m);
	ck_assert_uint_eq(room, 94);
	ck_assert_uint_eq(hs_token_len(&m), HS_TOKEN_LEN);
	m.user_len = (uint8_t)room;
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), HS_REP_MAX);
	m.user_len++;
	ck_assert_int_eq(hs_encode(&m, buf, sizeof(buf)), -EMSGSIZE);
	/* A request: the token is a reply's only. */
	m = sample(HS_REQ, 0);
	m.caps = HS_CAP_AUTH | HS_CAP_RESUME;
	ck_assert_uint_eq(hs_user_room(&m), EZ_CONNECT_DATA_MAX_AUTH);
	ck_assert_uint_eq(hs_token_len(&m), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handshake");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, round_trip_every_kind_and_length);
	tcase_add_test(tc, wire_layout_is_big_endian);
	tcase_add_test(tc, padding_after_user_data_is_accepted);
	tcase_add_test(tc, every_truncation_is_refused);
	tcase_add_test(tc, wrong_magic_is_refused_with_reason);
	tcase_add_test(tc, wrong_version_is_refused_with_reason);
	tcase_add_test(tc, wrong_kind_is_refused);
	tcase_add_test(tc, oversized_user_data);
	tcase_add_test(tc, zero_credits_or_max_msg_refused);
	tcase_add_test(tc, limits_match_rdma_cm);
	tcase_add_test(tc, printable_reason);
	tcase_add_test(tc, paths_round_trip);
	tcase_add_test(tc, paths_block_layout);
	tcase_add_test(tc, paths_version_compatible);
	tcase_add_test(tc, paths_bad_block_refused);
	tcase_add_test(tc, keepalive_capability);
	tcase_add_test(tc, rndv_capability);
	tcase_add_test(tc, paths_psns_distinct_24_bit);
	tcase_add_test(tc, resume_token_round_trip);
	tcase_add_test(tc, resume_bit_adds_nothing_to_request_or_reject);
	tcase_add_test(tc, resume_token_truncated_or_too_long);
	tcase_add_test(tc, resume_old_reply_has_no_token);
	tcase_add_test(tc, user_room_beside_auth_paths_and_token);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
