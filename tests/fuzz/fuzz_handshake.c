/* fuzz_handshake.c: libFuzzer target: untrusted private data through the handshake decoder and the shared-secret checks. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/auth.h"
#include "wire/handshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whatever a peer without the key sends, the checks refuse it: a request's
 * MAC, a reply's MAC against a request of ours. */
static void check_auth(const struct hs_msg *m)
{
	static const char secret[] = "fuzzing key, 32 bytes of secret";
	static struct auth_key key;
	static struct hs_msg ours = { .kind = HS_REQ, .credits = 1, .max_msg = 64 };
	uint8_t proof[AUTH_PROOF_LEN];

	if (!key.len) {
		if (auth_key_set(&key, secret, sizeof(secret) - 1) || auth_req_seal(&key, &ours))
			abort();
	}
	if (m->kind == HS_REQ && auth_req_check(&key, m) != -EACCES)
		abort();
	if (m->kind == HS_REP && auth_rep_check(&key, &ours, m, proof) != -EACCES)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum hs_kind kinds[] = { HS_REQ, HS_REP, HS_REJ };
	uint8_t wire[HS_REP_MAX];
	struct hs_msg m, again;
	char why[128], text[4 * HS_REP_MAX + 1];

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		int rc = hs_decode(data, size, kinds[k], &m, why, sizeof(why));

		if (rc != 0 && rc != -EPROTO)
			abort();
		if (rc == -EPROTO && why[0] == '\0')
			abort(); /* a refusal always carries a reason for the peer */
		if (rc == 0) {
			/* What was accepted fits its kind, and re-encodes to bytes
			 * that decode to the same message. */
			if (m.user_len > hs_user_max(kinds[k]))
				abort();
			int n = hs_encode(&m, wire, sizeof(wire));
			if (n < 0 || (size_t)n > sizeof(wire))
				abort();
			if (hs_decode(wire, (size_t)n, kinds[k], &again, why, sizeof(why)))
				abort();
			if (again.user_len != m.user_len || again.credits != m.credits ||
			    again.max_msg != m.max_msg || again.caps != m.caps ||
			    memcmp(again.user, m.user, m.user_len) || again.paths != m.paths ||
			    memcmp(again.auth, m.auth, hs_auth_len(kinds[k], m.caps)) ||
			    memcmp(again.token, m.token, HS_TOKEN_LEN))
				abort();
			/* Only a reply with the bit carries a token, and it fits in the reply. */
			if (kinds[k] != HS_REP || !(m.caps & HS_CAP_RESUME)) {
				static const uint8_t zero[HS_TOKEN_LEN];

				if (memcmp(m.token, zero, HS_TOKEN_LEN))
					abort();
			} else if ((size_t)n < HS_HDR_LEN + HS_TOKEN_LEN + hs_auth_len(kinds[k], m.caps) +
						       m.user_len) {
				abort();
			}
			/* A path block is within its bounds (with any auth block) and round-trips. */
			if (m.paths < 1 || m.paths > HS_MAX_PATHS ||
			    (m.paths > 1 && (hs_auth_len(kinds[k], m.caps) + m.user_len +
					     hs_paths_len(m.paths) > hs_user_max(kinds[k]))))
				abort();
			for (unsigned int i = 1; i < m.paths; i++)
				if (m.path_qpn[i] > 0xffffff || again.path_qpn[i] != m.path_qpn[i])
					abort();
			/* The keepalive capability takes no byte: without it
			 * the same message is as long and decodes alike. */
			if (hs_peer_keepalive(m.caps) != !!(m.caps & HS_CAP_KEEPALIVE))
				abort();
			m.caps ^= HS_CAP_KEEPALIVE;
			if (hs_encode(&m, wire, sizeof(wire)) != n ||
			    hs_decode(wire, (size_t)n, kinds[k], &again, why, sizeof(why)) ||
			    again.user_len != m.user_len || again.paths != m.paths ||
			    hs_peer_keepalive(again.caps) != hs_peer_keepalive(m.caps))
				abort();
			m.caps ^= HS_CAP_KEEPALIVE;
			check_auth(&m);
		}
	}
	/* Reasons are shown to people: always terminated and printable. */
	hs_printable(data, size, text, sizeof(text));
	for (const char *p = text; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			abort();
	hs_printable(data, size, text, 5);
	if (strlen(text) > 4)
		abort();
	return 0;
}
