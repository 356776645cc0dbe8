/* test_auth.c: the shared-secret check: HMAC-SHA256 against RFC 4231, auth blocks through the codec, seals and proofs, tampering and truncation refused. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "easyrdma.h"
#include "wire/auth.h"
#include "wire/handshake.h"
#include "../checkmain.h"

static void unhex(const char *hex, uint8_t *out)
{
	size_t i;

	for (i = 0; hex[2 * i]; i++) {
		unsigned int v;

		ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/* RFC 4231 section 4: HMAC-SHA-256 test cases 1, 2, 4 and 6. */
START_TEST(hmac_sha256_rfc4231)
{
	uint8_t key[131], data[64], want[32], got[32];

	memset(key, 0x0b, 20);
	unhex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", want);
	ck_assert_int_eq(auth_hmac(key, 20, "Hi There", 8, got), 0);
	ck_assert_mem_eq(got, want, 32);

	unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", want);
	ck_assert_int_eq(auth_hmac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
				   got), 0);
	ck_assert_mem_eq(got, want, 32);

	unhex("0102030405060708090a0b0c0d0e0f10111213141516171819", key);
	memset(data, 0xcd, 50);
	unhex("82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", want);
	ck_assert_int_eq(auth_hmac(key, 25, data, 50, got), 0);
	ck_assert_mem_eq(got, want, 32);

	memset(key, 0xaa, 131);
	unhex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", want);
	ck_assert_int_eq(auth_hmac(key, 131, "Test Using Larger Than Block-Size Key - Hash Key First",
				   54, got), 0);
	ck_assert_mem_eq(got, want, 32);
}
END_TEST

START_TEST(key_bounds_and_wipe)
{
	uint8_t raw[EZ_AUTH_KEY_MAX + 1];
	struct auth_key k;
	size_t i;

	memset(raw, 0x5a, sizeof(raw));
	ck_assert_int_eq(auth_key_set(&k, raw, 15), -EINVAL);
	ck_assert_int_eq(auth_key_set(&k, raw, EZ_AUTH_KEY_MAX + 1), -EINVAL);
	ck_assert_int_eq(auth_key_set(&k, NULL, 16), -EINVAL);
	ck_assert_int_eq(auth_key_set(&k, raw, 16), 0);
	ck_assert_uint_eq(k.len, 16);
	ck_assert_int_eq(auth_key_set(&k, raw, EZ_AUTH_KEY_MAX), 0);
	ck_assert_mem_eq(k.key, raw, EZ_AUTH_KEY_MAX);
	auth_key_wipe(&k);
	for (i = 0; i < sizeof(k.key); i++)
		ck_assert_uint_eq(k.key[i], 0);
	ck_assert_uint_eq(k.len, 0);
}
END_TEST

START_TEST(constant_time_compare_and_random)
{
	uint8_t a[32] = { 1, 2, 3 }, b[32] = { 1, 2, 3 }, r1[16], r2[16];

	ck_assert_int_eq(auth_memcmp(a, b, 32), 0);
	b[31] = 1;
	ck_assert_int_ne(auth_memcmp(a, b, 32), 0);
	ck_assert_int_eq(auth_random(r1, sizeof(r1)), 0);
	ck_assert_int_eq(auth_random(r2, sizeof(r2)), 0);
	ck_assert_int_ne(memcmp(r1, r2, sizeof(r1)), 0);
}
END_TEST

static const char KEY_A[] = "0123456789abcdef-shared-secret-A";
static const char KEY_B[] = "0123456789abcdef-shared-secret-B";

static struct auth_key key(const char *s)
{
	struct auth_key k;

	ck_assert_int_eq(auth_key_set(&k, s, (uint32_t)strlen(s)), 0);
	return k;
}

static struct hs_msg msg(enum hs_kind kind, uint8_t user_len)
{
	struct hs_msg m = { .kind = kind, .caps = HS_CAP_CREDITS, .credits = 63, .max_msg = 4096,
			    .user_len = user_len };
	int i;

	for (i = 0; i < user_len; i++)
		m.user[i] = (uint8_t)(0x30 + i);
	return m;
}

START_TEST(limits_with_a_shared_secret)
{
	ck_assert_uint_eq(EZ_CONNECT_DATA_MAX_AUTH, hs_user_max(HS_REQ) - HS_AUTH_REQ_LEN);
	ck_assert_uint_eq(EZ_ACCEPT_DATA_MAX_AUTH, hs_user_max(HS_REP) - HS_AUTH_REP_LEN);
	ck_assert_uint_eq(HS_AUTH_REQ_LEN, AUTH_NONCE_LEN + AUTH_REQ_MAC_LEN);
	ck_assert_uint_eq(HS_AUTH_REP_LEN, AUTH_NONCE_LEN + AUTH_REP_MAC_LEN);
	ck_assert_uint_eq(hs_auth_len(HS_REJ, HS_CAP_AUTH), 0);
	ck_assert_uint_eq(hs_auth_len(HS_REQ, 0), 0);
}
END_TEST

/* Sealed requests and replies of every user length decode to the same
 * fields and auth bytes, and still verify after the trip. */
START_TEST(auth_fields_round_trip)
{
	struct auth_key k = key(KEY_A);
	uint8_t wire[HS_REP_MAX], proof_s[AUTH_PROOF_LEN], proof_c[AUTH_PROOF_LEN];
	char why[160];
	unsigned int len;

	for (len = 0; len <= EZ_CONNECT_DATA_MAX_AUTH; len++) {
		struct hs_msg req = msg(HS_REQ, (uint8_t)len), out;
		int n;

		ck_assert_int_eq(auth_req_seal(&k, &req), 0);
		n = hs_encode(&req, wire, sizeof(wire));
		ck_assert_int_eq(n, HS_HDR_LEN + HS_AUTH_REQ_LEN + (int)len);
		ck_assert_uint_eq(wire[9] & HS_CAP_AUTH, HS_CAP_AUTH);
		ck_assert_mem_eq(wire + HS_HDR_LEN, req.auth, HS_AUTH_REQ_LEN);
		/* rdma_cm pads to 56 bytes */
		memset(wire + n, 0, HS_REQ_MAX - (size_t)n);
		ck_assert_int_eq(hs_decode(wire, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.user_len, len);
		ck_assert_mem_eq(out.user, req.user, len);
		ck_assert_mem_eq(out.auth, req.auth, HS_AUTH_REQ_LEN);
		ck_assert_int_eq(auth_req_check(&k, &out), 0);
	}
	for (len = 0; len <= EZ_ACCEPT_DATA_MAX_AUTH; len += 11) {
		struct hs_msg req = msg(HS_REQ, 3), rep = msg(HS_REP, (uint8_t)len), out;
		int n;

		ck_assert_int_eq(auth_req_seal(&k, &req), 0);
		ck_assert_int_eq(auth_rep_seal(&k, &req, &rep, proof_s), 0);
		n = hs_encode(&rep, wire, sizeof(wire));
		ck_assert_int_eq(n, HS_HDR_LEN + HS_AUTH_REP_LEN + (int)len);
		ck_assert_int_eq(hs_decode(wire, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
		ck_assert_mem_eq(out.auth, rep.auth, HS_AUTH_REP_LEN);
		ck_assert_mem_eq(out.user, rep.user, len);
		ck_assert_int_eq(auth_rep_check(&k, &req, &out, proof_c), 0);
		/* Both sides derive the same proof. */
		ck_assert_mem_eq(proof_c, proof_s, AUTH_PROOF_LEN);
	}
	/* One byte more than the auth block leaves room for is refused. */
	{
		struct hs_msg req = msg(HS_REQ, EZ_CONNECT_DATA_MAX_AUTH + 1);

		req.caps |= HS_CAP_AUTH;
		ck_assert_int_eq(hs_encode(&req, wire, sizeof(wire)), -EMSGSIZE);
	}
	/* A reject's HS_CAP_AUTH carries no block: its reason stays readable. */
	{
		struct hs_msg rej = { .kind = HS_REJ, .caps = HS_CAP_AUTH, .user_len = 5 }, out;

		memcpy(rej.user, "nope!", 5);
		ck_assert_int_eq(hs_encode(&rej, wire, sizeof(wire)), HS_HDR_LEN + 5);
		ck_assert_int_eq(hs_decode(wire, HS_HDR_LEN + 5, HS_REJ, &out, why, sizeof(why)), 0);
		ck_assert_uint_eq(out.caps & HS_CAP_AUTH, HS_CAP_AUTH);
		ck_assert_mem_eq(out.user, "nope!", 5);
	}
}
END_TEST

START_TEST(truncated_or_oversized_auth_block_refused)
{
	struct auth_key k = key(KEY_A);
	struct hs_msg req = msg(HS_REQ, 4), rep = msg(HS_REP, 10), out;
	uint8_t wire[HS_REP_MAX], proof[AUTH_PROOF_LEN];
	char why[160];
	int n, len;

	ck_assert_int_eq(auth_req_seal(&k, &req), 0);
	n = hs_encode(&req, wire, sizeof(wire));
	for (len = HS_HDR_LEN; len < n; len++) {
		why[0] = '\0';
		ck_assert_int_eq(hs_decode(wire, (size_t)len, HS_REQ, &out, why, sizeof(why)), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "truncated"));
	}
	/* A user length that would overlap the auth block's room. */
	wire[6] = EZ_CONNECT_DATA_MAX_AUTH + 1;
	ck_assert_int_eq(hs_decode(wire, HS_REQ_MAX, HS_REQ, &out, why, sizeof(why)), -EPROTO);
	ck_assert_str_eq(why, "easyrdma handshake: user data length 9 exceeds 8 for a request with a shared-secret block");

	ck_assert_int_eq(auth_rep_seal(&k, &req, &rep, proof), 0);
	n = hs_encode(&rep, wire, sizeof(wire));
	for (len = HS_HDR_LEN; len < n; len++)
		ck_assert_int_eq(hs_decode(wire, (size_t)len, HS_REP, &out, why, sizeof(why)), -EPROTO);
}
END_TEST

/* Every bit of a sealed request is covered: a flip is refused by the decoder
 * or by the MAC (byte 7 is reserved: not interpreted, not covered). */
START_TEST(garbled_request_refused)
{
	struct auth_key k = key(KEY_A);
	struct hs_msg req = msg(HS_REQ, 8), out;
	uint8_t wire[HS_REQ_MAX] = { 0 }, bad[HS_REQ_MAX];
	char why[160];
	int n, i, bit, caught = 0;

	ck_assert_int_eq(auth_req_seal(&k, &req), 0);
	n = hs_encode(&req, wire, sizeof(wire));
	for (i = 0; i < n; i++) {
		if (i == 7)
			continue;
		for (bit = 0; bit < 8; bit++) {
			memcpy(bad, wire, sizeof(bad));
			bad[i] ^= (uint8_t)(1u << bit);
			if (hs_decode(bad, sizeof(bad), HS_REQ, &out, why, sizeof(why)) == 0)
				ck_assert_msg(auth_req_check(&k, &out) == -EACCES,
					      "flip of byte %d bit %d passed", i, bit);
			caught++;
		}
	}
	ck_assert_int_eq(caught, (n - 1) * 8);
	/* The right bytes with the wrong key, or without the capability. */
	ck_assert_int_eq(hs_decode(wire, sizeof(wire), HS_REQ, &out, why, sizeof(why)), 0);
	{
		struct auth_key kb = key(KEY_B);

		ck_assert_int_eq(auth_req_check(&kb, &out), -EACCES);
	}
	out.caps &= (uint16_t)~HS_CAP_AUTH;
	ck_assert_int_eq(auth_req_check(&k, &out), -EACCES);
}
END_TEST

START_TEST(garbled_or_foreign_reply_refused)
{
	struct auth_key k = key(KEY_A), kb = key(KEY_B);
	struct hs_msg req = msg(HS_REQ, 2), other = msg(HS_REQ, 2), rep = msg(HS_REP, 20), out;
	uint8_t wire[HS_REP_MAX], bad[HS_REP_MAX], proof[AUTH_PROOF_LEN], p2[AUTH_PROOF_LEN];
	char why[160];
	int n, i;

	ck_assert_int_eq(auth_req_seal(&k, &req), 0);
	ck_assert_int_eq(auth_req_seal(&k, &other), 0);
	ck_assert_int_eq(auth_rep_seal(&k, &req, &rep, proof), 0);
	n = hs_encode(&rep, wire, sizeof(wire));
	for (i = 0; i < n; i++) {
		if (i == 7)
			continue;
		memcpy(bad, wire, sizeof(bad));
		bad[i] ^= 0x01;
		if (hs_decode(bad, (size_t)n, HS_REP, &out, why, sizeof(why)) == 0)
			ck_assert_msg(auth_rep_check(&k, &req, &out, p2) == -EACCES, "flip of byte %d passed", i);
	}
	ck_assert_int_eq(hs_decode(wire, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
	/* A server without the key, or a reply made for another request. */
	ck_assert_int_eq(auth_rep_check(&kb, &req, &out, p2), -EACCES);
	ck_assert_int_eq(auth_rep_check(&k, &other, &out, p2), -EACCES);
	/* A reply with no auth block at all. */
	out.caps &= (uint16_t)~HS_CAP_AUTH;
	ck_assert_int_eq(auth_rep_check(&k, &req, &out, p2), -EACCES);
}
END_TEST

/* A replayed request gets a fresh server nonce, so the proof captured from
 * the first session does not open the second. */
START_TEST(replayed_request_needs_a_new_proof)
{
	struct auth_key k = key(KEY_A);
	struct hs_msg req = msg(HS_REQ, 0), rep1 = msg(HS_REP, 0), rep2 = msg(HS_REP, 0);
	uint8_t p1[AUTH_PROOF_LEN], p2[AUTH_PROOF_LEN];

	ck_assert_int_eq(auth_req_seal(&k, &req), 0);
	ck_assert_int_eq(auth_rep_seal(&k, &req, &rep1, p1), 0);
	ck_assert_int_eq(auth_rep_seal(&k, &req, &rep2, p2), 0);
	ck_assert_int_ne(memcmp(rep1.auth, rep2.auth, AUTH_NONCE_LEN), 0);
	ck_assert_int_ne(memcmp(p1, p2, AUTH_PROOF_LEN), 0);
	/* The proof is not the reply MAC (labels keep them apart). */
	ck_assert_int_ne(memcmp(p1, rep1.auth + AUTH_NONCE_LEN, AUTH_PROOF_LEN), 0);
}
END_TEST

/* A keyed reply's session token (HS_CAP_RESUME) is under its MAC: a
 * listener's token cannot be swapped on the way, nor the bit cleared. */
START_TEST(reply_mac_covers_the_session_token)
{
	struct auth_key k = key(KEY_A);
	struct hs_msg req = msg(HS_REQ, 0), rep = msg(HS_REP, 4), out;
	uint8_t wire[HS_REP_MAX], bad[HS_REP_MAX], proof[AUTH_PROOF_LEN];
	char why[160];
	int n;

	rep.caps |= HS_CAP_RESUME;
	memset(rep.token, 0x42, HS_TOKEN_LEN);
	ck_assert_int_eq(auth_req_seal(&k, &req), 0);
	ck_assert_int_eq(auth_rep_seal(&k, &req, &rep, proof), 0);
	n = hs_encode(&rep, wire, sizeof(wire));
	ck_assert_int_eq(n, HS_HDR_LEN + HS_AUTH_REP_LEN + 4 + HS_TOKEN_LEN);
	ck_assert_int_eq(hs_decode(wire, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_int_eq(auth_rep_check(&k, &req, &out, proof), 0);
	for (int i = n - HS_TOKEN_LEN; i < n; i++) {
		memcpy(bad, wire, sizeof(bad));
		bad[i] ^= 0x80;
		ck_assert_int_eq(hs_decode(bad, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
		ck_assert_msg(auth_rep_check(&k, &req, &out, proof) == -EACCES, "flip of token byte %d passed",
			      i - (n - HS_TOKEN_LEN));
	}
	/* The bit cleared: the token's bytes are no longer read, and the MAC fails. */
	memcpy(bad, wire, sizeof(bad));
	bad[8] &= (uint8_t)~(HS_CAP_RESUME >> 8);
	ck_assert_int_eq(hs_decode(bad, (size_t)n, HS_REP, &out, why, sizeof(why)), 0);
	ck_assert_int_eq(auth_rep_check(&k, &req, &out, proof), -EACCES);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("auth");

	tcase_add_test(tc, hmac_sha256_rfc4231);
	tcase_add_test(tc, key_bounds_and_wipe);
	tcase_add_test(tc, constant_time_compare_and_random);
	tcase_add_test(tc, limits_with_a_shared_secret);
	tcase_add_test(tc, auth_fields_round_trip);
	tcase_add_test(tc, truncated_or_oversized_auth_block_refused);
	tcase_add_test(tc, garbled_request_refused);
	tcase_add_test(tc, garbled_or_foreign_reply_refused);
	tcase_add_test(tc, replayed_request_needs_a_new_proof);
	tcase_add_test(tc, reply_mac_covers_the_session_token);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
