/* handshake.c: encodes and parses the handshake carried in rdma_cm private data. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "handshake.h"
#include "be.h"

size_t hs_user_max(enum hs_kind kind)
{
	switch (kind) {
	case HS_REQ:
		return HS_REQ_MAX - HS_HDR_LEN;
	case HS_REP:
		return HS_REP_MAX - HS_HDR_LEN;
	case HS_REJ:
		return HS_REJ_MAX - HS_HDR_LEN;
	}
	return 0;
}

size_t hs_paths_len(unsigned int paths)
{
	return paths ? 1 + 3 * ((size_t)paths - 1) : 0;
}

uint32_t hs_path_psn(uint32_t psn0, unsigned int path)
{
	/* A large odd step keeps the paths' sequence spaces far apart. */
	return (psn0 + path * 0x5a5a5bu) & 0xffffffu;
}

static int has_paths(const struct hs_msg *m)
{
	return (m->caps & HS_CAP_PATHS) && m->kind != HS_REJ;
}

/* Only a reply carries the token: in a request the bit asks for one. */
static size_t token_len(const struct hs_msg *m)
{
	return (m->caps & HS_CAP_RESUME) && m->kind == HS_REP ? HS_TOKEN_LEN : 0;
}

size_t hs_token_len(const struct hs_msg *m)
{
	return token_len(m);
}

size_t hs_user_room(const struct hs_msg *m)
{
	size_t max = hs_user_max(m->kind), used = hs_auth_len(m->kind, m->caps) + token_len(m);

	if ((m->caps & HS_CAP_PATHS) && m->kind != HS_REJ)
		used += hs_paths_len(m->paths);
	return used < max ? max - used : 0;
}

size_t hs_auth_len(enum hs_kind kind, uint16_t caps)
{
	if (!(caps & HS_CAP_AUTH))
		return 0;
	switch (kind) {
	case HS_REQ:
		return HS_AUTH_REQ_LEN;
	case HS_REP:
		return HS_AUTH_REP_LEN;
	case HS_REJ:
		break;
	}
	return 0;
}

static void put_paths(uint8_t *b, const struct hs_msg *m)
{
	b[0] = m->paths;
	for (unsigned int i = 1; i < m->paths; i++) {
		uint32_t q = m->path_qpn[i];

		b[3 * i - 2] = (uint8_t)(q >> 16);
		b[3 * i - 1] = (uint8_t)(q >> 8);
		b[3 * i] = (uint8_t)q;
	}
}

int hs_encode(const struct hs_msg *m, void *buf, size_t buflen)
{
	uint8_t *p = buf;
	size_t max = hs_user_max(m->kind), alen = hs_auth_len(m->kind, m->caps);
	size_t block = 0, tlen = token_len(m), off;

	if (!max)
		return -EINVAL;
	if (has_paths(m)) {
		if (m->paths < 1 || m->paths > HS_MAX_PATHS)
			return -EINVAL;
		block = hs_paths_len(m->paths);
	}
	if (m->user_len + alen + block + tlen > max ||
	    buflen < HS_HDR_LEN + alen + (size_t)m->user_len + block + tlen)
		return -EMSGSIZE;
	be_put32(p, HS_MAGIC);
	p[4] = HS_VERSION;
	p[5] = m->kind;
	p[6] = m->user_len;
	p[7] = (m->caps & HS_CAP_RNDV) ? m->rndv_shift : 0;
	be_put16(p + 8, m->caps);
	be_put16(p + 10, m->credits);
	be_put32(p + 12, m->max_msg);
	memcpy(p + HS_HDR_LEN, m->auth, alen);
	memcpy(p + HS_HDR_LEN + alen, m->user, m->user_len);
	off = HS_HDR_LEN + alen + m->user_len;
	if (block)
		put_paths(p + off, m);
	memcpy(p + off + block, m->token, tlen);
	return (int)(off + block + tlen);
}

static const char *kind_name(unsigned int kind)
{
	switch (kind) {
	case HS_REQ:
		return "request";
	case HS_REP:
		return "reply";
	case HS_REJ:
		return "reject";
	}
	return "unknown";
}

/* The path block at off (the header, auth block and user bytes already
 * checked): its count, its room in the kind, its bytes. */
static int get_paths(const uint8_t *p, size_t len, size_t off, size_t alen, struct hs_msg *m,
		     char *why, size_t whylen)
{
	const uint8_t *b;
	size_t block;

	if (len < off + 1) {
		snprintf(why, whylen, "easyrdma handshake truncated: %zu bytes, the path block starts at %zu",
			 len, off);
		return -EPROTO;
	}
	b = p + off;
	if (b[0] < 1 || b[0] > HS_MAX_PATHS) {
		snprintf(why, whylen, "easyrdma handshake: %s offers %u paths, 1..%d allowed",
			 kind_name(m->kind), b[0], HS_MAX_PATHS);
		return -EPROTO;
	}
	block = hs_paths_len(b[0]);
	if (alen + m->user_len + block > hs_user_max(m->kind)) {
		snprintf(why, whylen, "easyrdma handshake: %u user bytes and %u paths exceed the %zu bytes of a %s%s",
			 m->user_len, b[0], hs_user_max(m->kind) - alen, kind_name(m->kind),
			 alen ? " with a shared-secret block" : "");
		return -EPROTO;
	}
	if (len < off + block) {
		snprintf(why, whylen, "easyrdma handshake truncated: %zu bytes, %u paths need %zu",
			 len, b[0], off + block);
		return -EPROTO;
	}
	m->paths = b[0];
	for (unsigned int i = 1; i < m->paths; i++)
		m->path_qpn[i] = (uint32_t)b[3 * i - 2] << 16 | (uint32_t)b[3 * i - 1] << 8 | b[3 * i];
	return 0;
}

/* A reply's session token at off, after everything else it carries. */
static int get_token(const uint8_t *p, size_t len, size_t off, struct hs_msg *m, char *why,
		     size_t whylen)
{
	size_t tlen = token_len(m), max = HS_HDR_LEN + hs_user_max(m->kind);

	if (!tlen)
		return 0;
	if (off + tlen > max) {
		snprintf(why, whylen, "easyrdma handshake: the session token at bytes %zu..%zu exceeds the %zu bytes of a %s",
			 off, off + tlen - 1, max, kind_name(m->kind));
		return -EPROTO;
	}
	if (len < off + tlen) {
		snprintf(why, whylen, "easyrdma handshake truncated: %zu bytes, the session token needs %zu",
			 len, off + tlen);
		return -EPROTO;
	}
	memcpy(m->token, p + off, tlen);
	return 0;
}

int hs_decode(const void *buf, size_t len, enum hs_kind kind, struct hs_msg *m,
	      char *why, size_t whylen)
{
	const uint8_t *p = buf;
	uint32_t magic;
	size_t alen, off;

	memset(m, 0, sizeof(*m));
	if (!buf || len < HS_HDR_LEN) {
		snprintf(why, whylen, "easyrdma handshake truncated: %zu bytes, header needs %d",
			 buf ? len : 0, HS_HDR_LEN);
		return -EPROTO;
	}
	magic = be_get32(p);
	if (magic != HS_MAGIC) {
		snprintf(why, whylen, "not an easyrdma handshake: magic 0x%08x, expected 0x%08x",
			 magic, HS_MAGIC);
		return -EPROTO;
	}
	if (p[4] != HS_VERSION) {
		snprintf(why, whylen, "easyrdma handshake version %u not supported (this side speaks %d)",
			 p[4], HS_VERSION);
		return -EPROTO;
	}
	if (p[5] != kind) {
		snprintf(why, whylen, "easyrdma handshake: got a %s (kind %u), expected a %s",
			 kind_name(p[5]), p[5], kind_name(kind));
		return -EPROTO;
	}
	m->version = p[4];
	m->kind = p[5];
	m->user_len = p[6];
	m->caps = be_get16(p + 8);
	m->credits = be_get16(p + 10);
	m->max_msg = be_get32(p + 12);
	/* A rendezvous peer's large maximum; a shift no peer could mean
	 * (0, or above 2 GiB) reads as 0, which turns rendezvous off rather
	 * than fail. The caps stay as sent: the shared-secret MAC covers them. */
	if ((m->caps & HS_CAP_RNDV) && p[7] >= 1 && p[7] <= HS_RNDV_SHIFT_MAX)
		m->rndv_shift = p[7];
	alen = hs_auth_len(kind, m->caps);
	if (m->user_len + alen > hs_user_max(kind)) {
		snprintf(why, whylen, "easyrdma handshake: user data length %u exceeds %zu for a %s%s",
			 m->user_len, hs_user_max(kind) - alen, kind_name(kind),
			 alen ? " with a shared-secret block" : "");
		return -EPROTO;
	}
	if (len < HS_HDR_LEN + alen + m->user_len) {
		snprintf(why, whylen, "easyrdma handshake truncated: %zu bytes, header says %zu",
			 len, HS_HDR_LEN + alen + m->user_len);
		return -EPROTO;
	}
	if (kind != HS_REJ && (m->credits == 0 || m->max_msg == 0)) {
		snprintf(why, whylen, "easyrdma handshake: %s advertises %u credits and max message %u",
			 kind_name(kind), m->credits, m->max_msg);
		return -EPROTO;
	}
	memcpy(m->auth, p + HS_HDR_LEN, alen);
	memcpy(m->user, p + HS_HDR_LEN + alen, m->user_len);
	m->paths = 1;
	off = HS_HDR_LEN + alen + m->user_len;
	if (has_paths(m) && get_paths(p, len, off, alen, m, why, whylen))
		return -EPROTO;
	off += has_paths(m) ? hs_paths_len(m->paths) : 0;
	return get_token(p, len, off, m, why, whylen);
}

void hs_printable(const void *bytes, size_t len, char *text, size_t textlen)
{
	const uint8_t *b = bytes;
	size_t i, o = 0;

	if (!textlen)
		return;
	for (i = 0; i < len && o + 1 < textlen; i++) {
		if (b[i] == 0 && i + 1 == len)
			break;
		text[o++] = (b[i] >= 0x20 && b[i] < 0x7f) ? (char)b[i] : '?';
	}
	text[o] = '\0';
}
