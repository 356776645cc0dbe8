/* auth.h: the shared-secret check of the handshake: HMAC-SHA256 seals and proofs (pure functions). */
#ifndef EZ_WIRE_AUTH_H
#define EZ_WIRE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "easyrdma.h"
#include "handshake.h"

/*
 * A keyed request and reply carry HS_CAP_AUTH and an auth block between the
 * header and the user bytes (handshake.h):
 *   request: client nonce (16) | request MAC (16)
 *   reply:   server nonce (16) | reply MAC (32)
 * request MAC = HMAC(key, "easyrdma-req" || request, MAC field zero)[0..16)
 * reply MAC   = HMAC(key, "easyrdma-srv" || request || reply, MAC field zero)
 * client proof = HMAC(key, "easyrdma-cli" || server nonce || client nonce || reply MAC)
 * The request MAC lets a listener refuse peers without the key before the
 * application sees them; it can be replayed, so the client also proves the
 * key over the server's fresh nonce in its first message on the QP (imm
 * AUTH_IMM_PROOF), and the server answers AUTH_IMM_OK or AUTH_IMM_REFUSED.
 * Messages are MACed in their canonical encoding (hs_encode of the decoded
 * fields), so the zero padding rdma_cm adds does not matter.
 */
#define AUTH_KEY_MIN 16
#define AUTH_NONCE_LEN 16
#define AUTH_REQ_MAC_LEN 16
#define AUTH_REP_MAC_LEN 32
#define AUTH_PROOF_LEN 32
#define AUTH_MAC_LEN 32		/* HMAC-SHA256 */

struct auth_key {
	uint8_t key[EZ_AUTH_KEY_MAX];
	uint32_t len;
};

/* HMAC-SHA256 of data; 0 or -EIO. */
int auth_hmac(const uint8_t *key, size_t keylen, const void *data, size_t len,
	      uint8_t out[AUTH_MAC_LEN]);
/* Fills buf from the kernel's CSPRNG (getrandom); 0 or -errno. */
int auth_random(void *buf, size_t len);
/* Constant-time comparison: 0 when equal. */
int auth_memcmp(const void *a, const void *b, size_t len);
/* Copies the key (16..EZ_AUTH_KEY_MAX bytes); -EINVAL for a bad length or NULL. */
int auth_key_set(struct auth_key *k, const void *key, uint32_t len);
/* Wipes the key (OPENSSL_cleanse: not optimised away). */
void auth_key_wipe(struct auth_key *k);

/* Sets HS_CAP_AUTH, a fresh client nonce and the request MAC in req. */
int auth_req_seal(const struct auth_key *k, struct hs_msg *req);
/* 0 when req carries a request MAC made with k, else -EACCES. */
int auth_req_check(const struct auth_key *k, const struct hs_msg *req);
/* Sets HS_CAP_AUTH, a fresh server nonce and the reply MAC in rep (req:
 * the checked request), and the proof the client must send back. */
int auth_rep_seal(const struct auth_key *k, const struct hs_msg *req, struct hs_msg *rep,
		  uint8_t proof[AUTH_PROOF_LEN]);
/* Checks rep's MAC against our req; on 0, proof is what we send back.
 * -EACCES when rep has no auth block or a wrong MAC. */
int auth_rep_check(const struct auth_key *k, const struct hs_msg *req, const struct hs_msg *rep,
		   uint8_t proof[AUTH_PROOF_LEN]);

#endif
