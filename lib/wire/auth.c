/* auth.c: HMAC-SHA256 seals of the handshake and the client's proof (OpenSSL libcrypto). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth.h"

/* Domain labels: a MAC made for one message can never pass for another. */
static const char LABEL_REQ[] = "easyrdma-req";
static const char LABEL_SRV[] = "easyrdma-srv";
static const char LABEL_CLI[] = "easyrdma-cli";
#define LABEL_LEN 12

int auth_hmac(const uint8_t *key, size_t keylen, const void *data, size_t len,
	      uint8_t out[AUTH_MAC_LEN])
{
	unsigned int n = 0;

	if (!HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &n) || n != AUTH_MAC_LEN)
		return -EIO;
	return 0;
}

int auth_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int auth_memcmp(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) ? 1 : 0;
}

int auth_key_set(struct auth_key *k, const void *key, uint32_t len)
{
	memset(k, 0, sizeof(*k));
	if (!key || len < AUTH_KEY_MIN || len > EZ_AUTH_KEY_MAX)
		return -EINVAL;
	memcpy(k->key, key, len);
	k->len = len;
	return 0;
}

void auth_key_wipe(struct auth_key *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
}

/* label || the canonical encoding of m with its MAC field (mac_len bytes
 * after the nonce) zeroed, appended at buf + off; returns the new length. */
static int put_msg(uint8_t *buf, size_t off, size_t size, const struct hs_msg *m, size_t mac_len)
{
	struct hs_msg z = *m;
	int n;

	memset(z.auth + AUTH_NONCE_LEN, 0, mac_len);
	/* Byte 7 (the rendezvous shift) was reserved and not covered before:
	 * an older peer's MAC has 0 there. A changed shift only changes the
	 * largest message the sender attempts; the receiver enforces its own. */
	z.rndv_shift = 0;
	n = hs_encode(&z, buf + off, size - off);
	if (n < 0)
		return n;
	return (int)off + n;
}

static int mac_of(const struct auth_key *k, const char *label, const struct hs_msg *a,
		  size_t a_mac, const struct hs_msg *b, size_t b_mac, uint8_t out[AUTH_MAC_LEN])
{
	uint8_t buf[LABEL_LEN + HS_REQ_MAX + HS_REP_MAX];
	int n;

	memcpy(buf, label, LABEL_LEN);
	n = put_msg(buf, LABEL_LEN, sizeof(buf), a, a_mac);
	if (n >= 0 && b)
		n = put_msg(buf, (size_t)n, sizeof(buf), b, b_mac);
	if (n < 0)
		return -EINVAL;
	n = auth_hmac(k->key, k->len, buf, (size_t)n, out);
	OPENSSL_cleanse(buf, sizeof(buf));
	return n;
}

int auth_req_seal(const struct auth_key *k, struct hs_msg *req)
{
	uint8_t mac[AUTH_MAC_LEN];
	int ret;

	req->caps |= HS_CAP_AUTH;
	ret = auth_random(req->auth, AUTH_NONCE_LEN);
	if (!ret)
		ret = mac_of(k, LABEL_REQ, req, AUTH_REQ_MAC_LEN, NULL, 0, mac);
	if (ret)
		return ret;
	memcpy(req->auth + AUTH_NONCE_LEN, mac, AUTH_REQ_MAC_LEN);
	return 0;
}

int auth_req_check(const struct auth_key *k, const struct hs_msg *req)
{
	uint8_t mac[AUTH_MAC_LEN];

	if (req->kind != HS_REQ || !(req->caps & HS_CAP_AUTH) ||
	    mac_of(k, LABEL_REQ, req, AUTH_REQ_MAC_LEN, NULL, 0, mac))
		return -EACCES;
	return auth_memcmp(mac, req->auth + AUTH_NONCE_LEN, AUTH_REQ_MAC_LEN) ? -EACCES : 0;
}

static int proof_of(const struct auth_key *k, const struct hs_msg *req, const struct hs_msg *rep,
		    uint8_t proof[AUTH_PROOF_LEN])
{
	uint8_t buf[LABEL_LEN + 2 * AUTH_NONCE_LEN + AUTH_REP_MAC_LEN];

	memcpy(buf, LABEL_CLI, LABEL_LEN);
	memcpy(buf + LABEL_LEN, rep->auth, AUTH_NONCE_LEN);
	memcpy(buf + LABEL_LEN + AUTH_NONCE_LEN, req->auth, AUTH_NONCE_LEN);
	memcpy(buf + LABEL_LEN + 2 * AUTH_NONCE_LEN, rep->auth + AUTH_NONCE_LEN, AUTH_REP_MAC_LEN);
	return auth_hmac(k->key, k->len, buf, sizeof(buf), proof);
}

int auth_rep_seal(const struct auth_key *k, const struct hs_msg *req, struct hs_msg *rep,
		  uint8_t proof[AUTH_PROOF_LEN])
{
	uint8_t mac[AUTH_MAC_LEN];
	int ret;

	rep->caps |= HS_CAP_AUTH;
	ret = auth_random(rep->auth, AUTH_NONCE_LEN);
	if (!ret)
		ret = mac_of(k, LABEL_SRV, req, 0, rep, AUTH_REP_MAC_LEN, mac);
	if (ret)
		return ret;
	memcpy(rep->auth + AUTH_NONCE_LEN, mac, AUTH_REP_MAC_LEN);
	return proof_of(k, req, rep, proof);
}

int auth_rep_check(const struct auth_key *k, const struct hs_msg *req, const struct hs_msg *rep,
		   uint8_t proof[AUTH_PROOF_LEN])
{
	uint8_t mac[AUTH_MAC_LEN];

	if (rep->kind != HS_REP || !(rep->caps & HS_CAP_AUTH) ||
	    mac_of(k, LABEL_SRV, req, 0, rep, AUTH_REP_MAC_LEN, mac))
		return -EACCES;
	if (auth_memcmp(mac, rep->auth + AUTH_NONCE_LEN, AUTH_REP_MAC_LEN))
		return -EACCES;
	return proof_of(k, req, rep, proof) ? -EACCES : 0;
}
