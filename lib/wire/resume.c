/* resume.c: encodes, parses and seals session resume's messages; the client's redial schedule (resume.h; pure). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "resume.h"
#include "be.h"

#define PSN_MAX 0xffffffu

/* Domain labels: a resume MAC never passes for a handshake's, nor a
 * request's for a reply's. */
static const char LABEL_REQ[] = "easyrdma-resume-req";
static const char LABEL_REP[] = "easyrdma-resume-rep";
#define LABEL_LEN 19
_Static_assert(sizeof(LABEL_REQ) - 1 == LABEL_LEN && sizeof(LABEL_REP) - 1 == LABEL_LEN,
	       "resume MAC labels are LABEL_LEN bytes");

static const char *kind_name(unsigned int kind)
{
	switch (kind) {
	case RESUME_REQUEST:
		return "request";
	case RESUME_REPLY:
		return "reply";
	case RESUME_REJECT:
		return "reject";
	}
	return "unknown";
}

static size_t mac_len(unsigned int kind, uint8_t flags)
{
	if (!(flags & RESUME_F_MAC))
		return 0;
	return kind == RESUME_REQUEST ? RESUME_REQ_MAC_LEN :
	       kind == RESUME_REPLY ? RESUME_REP_MAC_LEN : 0;
}

/* The fixed part of a kind, before any MAC or text (0: no such kind). */
static size_t body_len(unsigned int kind)
{
	switch (kind) {
	case RESUME_REQUEST:
		return RESUME_REQ_LEN;
	case RESUME_REPLY:
		return RESUME_REP_LEN;
	case RESUME_REJECT:
		return RESUME_REJ_LEN;
	}
	return 0;
}

static int token_zero(const uint8_t token[HS_TOKEN_LEN])
{
	uint8_t any = 0;

	for (unsigned int i = 0; i < HS_TOKEN_LEN; i++)
		any |= token[i];
	return !any;
}

/* What the encoder refuses: the decoder would refuse it too. */
static int encodable(const struct resume_msg *m)
{
	if (!body_len(m->kind) || (m->flags & ~RESUME_F_MAC))
		return -EINVAL;
	if (m->kind == RESUME_REJECT)
		return m->reason && !m->flags ? 0 : -EINVAL;
	if (m->psn > PSN_MAX)
		return -EINVAL;
	return m->kind == RESUME_REQUEST && token_zero(m->token) ? -EINVAL : 0;
}

/* The fields after the header, at p (room checked). */
static void put_body(uint8_t *p, const struct resume_msg *m)
{
	switch (m->kind) {
	case RESUME_REQUEST:
		memcpy(p + 8, m->token, HS_TOKEN_LEN);
		be_put32(p + 24, m->epoch);
		be_put32(p + 28, m->count);
		be_put32(p + 32, m->psn);
		break;
	case RESUME_REPLY:
		be_put32(p + 8, m->epoch);
		be_put32(p + 12, m->count);
		be_put32(p + 16, m->psn);
		break;
	case RESUME_REJECT:
		p[8] = m->text_len;
		memcpy(p + RESUME_REJ_LEN, m->text, m->text_len);
		break;
	}
}

int resume_encode(const struct resume_msg *m, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t body, mlen, n;
	int ret = encodable(m);

	if (ret)
		return ret;
	if (m->kind == RESUME_REJECT && m->text_len > RESUME_TEXT_MAX)
		return -EMSGSIZE;
	body = body_len(m->kind);
	mlen = mac_len(m->kind, m->flags);
	n = body + mlen + (m->kind == RESUME_REJECT ? m->text_len : 0);
	if (len < n)
		return -EMSGSIZE;
	be_put32(p, RESUME_MAGIC);
	p[4] = RESUME_VERSION;
	p[5] = m->kind;
	p[6] = m->flags;
	p[7] = m->kind == RESUME_REJECT ? m->reason : 0;
	put_body(p, m);
	memcpy(p + body, m->mac, mlen);
	return (int)n;
}

int resume_is(const void *buf, size_t len)
{
	return buf && len >= 4 && be_get32(buf) == RESUME_MAGIC;
}

/* The header's checks: magic, version, kind, flags, reason byte. */
static int check_header(const uint8_t *p, size_t len, enum resume_kind kind, char *why,
			size_t whylen)
{
	if (!p || len < RESUME_HDR_LEN) {
		snprintf(why, whylen, "easyrdma resume message truncated: %zu bytes, header needs %d",
			 p ? len : 0, RESUME_HDR_LEN);
		return -EPROTO;
	}
	if (be_get32(p) != RESUME_MAGIC) {
		snprintf(why, whylen, "not an easyrdma resume message: magic 0x%08x, expected 0x%08x",
			 be_get32(p), RESUME_MAGIC);
		return -EPROTO;
	}
	if (p[4] != RESUME_VERSION) {
		snprintf(why, whylen, "easyrdma resume version %u not supported (this side speaks %d)",
			 p[4], RESUME_VERSION);
		return -EPROTO;
	}
	if (p[5] != kind) {
		snprintf(why, whylen, "easyrdma resume: got a %s (kind %u), expected a %s",
			 kind_name(p[5]), p[5], kind_name(kind));
		return -EPROTO;
	}
	return 0;
}

/* Flags and the reason byte, which say what the rest means. */
static int check_flags(const uint8_t *p, enum resume_kind kind, char *why, size_t whylen)
{
	if (p[6] & ~RESUME_F_MAC) {
		snprintf(why, whylen, "easyrdma resume %s: flags 0x%02x unknown to this side (a newer peer?)",
			 kind_name(kind), p[6] & ~RESUME_F_MAC);
		return -EPROTO;
	}
	if (kind == RESUME_REJECT && p[6]) {
		snprintf(why, whylen, "easyrdma resume reject: flags 0x%02x (a MAC), which a reject never carries",
			 p[6]);
		return -EPROTO;
	}
	if (kind == RESUME_REJECT && !p[7]) {
		snprintf(why, whylen, "easyrdma resume reject without a reason (0)");
		return -EPROTO;
	}
	if (kind != RESUME_REJECT && p[7]) {
		snprintf(why, whylen, "easyrdma resume %s: reason byte %u, which only a reject carries",
			 kind_name(kind), p[7]);
		return -EPROTO;
	}
	return 0;
}

/* Each printable byte as it is, any other as '?': the text is shown to people. */
static void get_text(const uint8_t *b, uint8_t n, struct resume_msg *m)
{
	for (unsigned int i = 0; i < n; i++)
		m->text[i] = b[i] >= 0x20 && b[i] < 0x7f ? (char)b[i] : '?';
	m->text[n] = '\0';
	m->text_len = n;
}

static int get_reject(const uint8_t *p, size_t len, struct resume_msg *m, char *why, size_t whylen)
{
	uint8_t n = p[8];

	if (n > RESUME_TEXT_MAX) {
		snprintf(why, whylen, "easyrdma resume reject: text of %u bytes, at most %d",
			 n, RESUME_TEXT_MAX);
		return -EPROTO;
	}
	if (len < (size_t)RESUME_REJ_LEN + n) {
		snprintf(why, whylen, "easyrdma resume reject truncated: %zu bytes, its text needs %zu",
			 len, (size_t)RESUME_REJ_LEN + n);
		return -EPROTO;
	}
	get_text(p + RESUME_REJ_LEN, n, m);
	return 0;
}

/* A REQUEST's or REPLY's fields (length checked). */
static int get_fields(const uint8_t *p, struct resume_msg *m, char *why, size_t whylen)
{
	const uint8_t *f = p + (m->kind == RESUME_REQUEST ? 24 : 8);

	if (m->kind == RESUME_REQUEST)
		memcpy(m->token, p + 8, HS_TOKEN_LEN);
	m->epoch = be_get32(f);
	m->count = be_get32(f + 4);
	m->psn = be_get32(f + 8);
	if (m->psn > PSN_MAX) {
		snprintf(why, whylen, "easyrdma resume %s: first PSN 0x%08x exceeds 24 bits",
			 kind_name(m->kind), m->psn);
		return -EPROTO;
	}
	if (m->kind == RESUME_REQUEST && token_zero(m->token)) {
		snprintf(why, whylen, "easyrdma resume request: session token all zero (no session has it)");
		return -EPROTO;
	}
	memcpy(m->mac, p + body_len(m->kind), mac_len(m->kind, m->flags));
	return 0;
}

int resume_decode(const void *buf, size_t len, enum resume_kind kind, struct resume_msg *m,
		  char *why, size_t whylen)
{
	const uint8_t *p = buf;
	size_t need;

	memset(m, 0, sizeof(*m));
	if (check_header(p, len, kind, why, whylen) || check_flags(p, kind, why, whylen))
		return -EPROTO;
	m->kind = p[5];
	m->flags = p[6];
	m->reason = p[7];
	need = body_len(kind) + mac_len(kind, m->flags);
	if (len < need) {
		snprintf(why, whylen, "easyrdma resume %s truncated: %zu bytes, one%s needs %zu",
			 kind_name(kind), len, m->flags & RESUME_F_MAC ? " with a MAC" : "", need);
		return -EPROTO;
	}
	if (kind == RESUME_REJECT)
		return get_reject(p, len, m, why, whylen);
	return get_fields(p, m, why, whylen);
}

int resume_rep_fits(const struct resume_msg *req, const struct resume_msg *rep)
{
	return req->kind == RESUME_REQUEST && rep->kind == RESUME_REPLY &&
	       rep->epoch == req->epoch + 1;
}

const char *resume_reason_str(uint8_t reason)
{
	switch (reason) {
	case RESUME_R_UNKNOWN:
		return "no such session (the listener restarted or the resume window lapsed)";
	case RESUME_R_STALE:
		return "not the session's epoch (a replay or an older attempt)";
	case RESUME_R_DENIED:
		return "denied (the MAC was wrong or missing, or another address without the shared secret)";
	case RESUME_R_BUSY:
		return "listener busy (its handshakes are at their limit)";
	case RESUME_R_NOT_READY:
		return "session not ready (still settling its previous attempt)";
	}
	return "reason unknown to this side";
}

int resume_reason_retry(uint8_t reason)
{
	return reason == RESUME_R_BUSY || reason == RESUME_R_NOT_READY;
}

/* Appends m's canonical encoding, its MAC left out unless with_mac, at
 * buf + off; returns the new length or -EINVAL. */
static int put_msg(uint8_t *buf, size_t off, size_t size, const struct resume_msg *m, int with_mac)
{
	int n = resume_encode(m, buf + off, size - off);

	if (n < 0)
		return -EINVAL;
	if (!with_mac)
		n -= (int)mac_len(m->kind, m->flags);
	return (int)off + n;
}

/* HMAC(k, label || req [with its MAC when rep] || rep without its MAC || qpn). */
static int mac_of(const struct auth_key *k, const char *label, const struct resume_msg *req,
		  const struct resume_msg *rep, uint32_t qpn, uint8_t out[AUTH_MAC_LEN])
{
	uint8_t buf[LABEL_LEN + 2 * RESUME_MAX_LEN + 4];
	int n;

	memcpy(buf, label, LABEL_LEN);
	n = put_msg(buf, LABEL_LEN, sizeof(buf), req, rep != NULL);
	if (n >= 0 && rep)
		n = put_msg(buf, (size_t)n, sizeof(buf), rep, 0);
	if (n < 0 || (size_t)n + 4 > sizeof(buf))
		return -EINVAL;
	be_put32(buf + n, qpn);
	return auth_hmac(k->key, k->len, buf, (size_t)n + 4, out);
}

/* Sets the MAC flag of m (req, or rep when there is one) and its MAC. */
static int seal(const struct auth_key *k, const char *label, const struct resume_msg *req,
		const struct resume_msg *rep, struct resume_msg *m, uint32_t qpn, size_t len)
{
	uint8_t mac[AUTH_MAC_LEN];
	int ret;

	m->flags |= RESUME_F_MAC;
	ret = mac_of(k, label, req, rep, qpn, mac);
	if (ret)
		return ret;
	memcpy(m->mac, mac, len);
	return 0;
}

/* m's MAC against k: a MAC without a key is refused as the handshake
 * refuses an auth block sent to a listener without one (the two sides
 * disagree on the secret), and no MAC with a key too. */
static int verify(const struct auth_key *k, const char *label, const struct resume_msg *req,
		  const struct resume_msg *rep, const struct resume_msg *m, uint32_t qpn, size_t len)
{
	uint8_t mac[AUTH_MAC_LEN];

	if (!(m->flags & RESUME_F_MAC) != !k)
		return -EACCES;
	if (!k)
		return 0;
	if (mac_of(k, label, req, rep, qpn, mac))
		return -EACCES;
	return auth_memcmp(mac, m->mac, len) ? -EACCES : 0;
}

int resume_req_seal(const struct auth_key *k, struct resume_msg *req, uint32_t qpn)
{
	if (!k || req->kind != RESUME_REQUEST)
		return -EINVAL;
	return seal(k, LABEL_REQ, req, NULL, req, qpn, RESUME_REQ_MAC_LEN);
}

int resume_req_check(const struct auth_key *k, const struct resume_msg *req, uint32_t qpn)
{
	if (req->kind != RESUME_REQUEST)
		return -EACCES;
	return verify(k, LABEL_REQ, req, NULL, req, qpn, RESUME_REQ_MAC_LEN);
}

int resume_rep_seal(const struct auth_key *k, const struct resume_msg *req,
		    struct resume_msg *rep, uint32_t qpn)
{
	if (!k || req->kind != RESUME_REQUEST || rep->kind != RESUME_REPLY)
		return -EINVAL;
	return seal(k, LABEL_REP, req, rep, rep, qpn, RESUME_REP_MAC_LEN);
}

int resume_rep_check(const struct auth_key *k, const struct resume_msg *req,
		     const struct resume_msg *rep, uint32_t qpn)
{
	if (req->kind != RESUME_REQUEST || rep->kind != RESUME_REPLY)
		return -EACCES;
	return verify(k, LABEL_REP, req, rep, rep, qpn, RESUME_REP_MAC_LEN);
}

uint32_t resume_backoff_ms(uint32_t attempt, uint32_t rnd)
{
	/* 100 << 5 is past the cap, so no shift of 32 or more is ever made;
	 * every d is a multiple of 4: the range [d*3/4, d*5/4] is exact. */
	uint32_t d = attempt < 5 ? 100u << attempt : 2000u;

	return d * 3 / 4 + rnd % (d / 2 + 1);
}

int resume_window_left(uint64_t start_ns, uint64_t now_ns, uint32_t window_ms,
		       uint32_t *left_ms)
{
	uint64_t window_ns = (uint64_t)window_ms * 1000000u, gone = now_ns - start_ns;
	uint32_t left = 0;

	if (gone < window_ns)
		left = (uint32_t)((window_ns - gone + 999999u) / 1000000u);
	if (left_ms)
		*left_ms = left;
	return left != 0;
}
