/* fuzz_resume.c: libFuzzer target: untrusted private data through the session resume decoder, its re-encoding and its MAC checks. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/auth.h"
#include "wire/resume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct auth_key *fuzz_key(void)
{
	static const char secret[] = "fuzzing key, 32 bytes of secret";
	static struct auth_key key;

	if (!key.len && auth_key_set(&key, secret, sizeof(secret) - 1))
		abort();
	return &key;
}

/* The fields a kind carries are the same after a second trip. */
static int same(const struct resume_msg *a, const struct resume_msg *b)
{
	size_t mac = !(a->flags & RESUME_F_MAC) ? 0 :
		     a->kind == RESUME_REQUEST ? RESUME_REQ_MAC_LEN : RESUME_REP_MAC_LEN;

	if (a->kind != b->kind || a->flags != b->flags || a->reason != b->reason)
		return 0;
	if (a->kind == RESUME_REJECT)
		return a->text_len == b->text_len && !strcmp(a->text, b->text);
	return !memcmp(a->token, b->token, HS_TOKEN_LEN) && a->epoch == b->epoch &&
	       a->count == b->count && a->psn == b->psn && !memcmp(a->mac, b->mac, mac);
}

/* What was accepted is what an easyrdma could send. */
static void check_fields(const struct resume_msg *m)
{
	if (m->flags & ~RESUME_F_MAC)
		abort();
	if (m->kind == RESUME_REJECT) {
		if (!m->reason || m->flags || m->text_len > RESUME_TEXT_MAX ||
		    strlen(m->text) != m->text_len)
			abort();
		for (const char *p = m->text; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				abort();
		return;
	}
	if (m->reason || m->psn > 0xffffff)
		abort();
}

/* Whatever a peer without the key sends, the checks refuse it (a request
 * or reply that happens to carry a right MAC aside, which a fuzzer does
 * not find), and none crashes. */
static void check_macs(const struct resume_msg *m)
{
	static struct resume_msg ours;
	const struct auth_key *k = fuzz_key();

	if (!ours.kind) {
		ours = (struct resume_msg){ .kind = RESUME_REQUEST, .epoch = 3, .psn = 1 };
		memset(ours.token, 0x5a, HS_TOKEN_LEN);
		if (resume_req_seal(k, &ours, 0x1234))
			abort();
	}
	if (m->kind == RESUME_REQUEST) {
		if (resume_req_check(k, m, 0x1234) != -EACCES)
			abort();
		if (resume_req_check(NULL, m, 0x1234) != ((m->flags & RESUME_F_MAC) ? -EACCES : 0))
			abort();
		(void)resume_rep_fits(m, &ours);
	}
	if (m->kind == RESUME_REPLY) {
		if (resume_rep_check(k, &ours, m, 0x5678) != -EACCES)
			abort();
		(void)resume_rep_fits(&ours, m);
	}
	if (m->kind == RESUME_REJECT && !resume_reason_str(m->reason))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum resume_kind kinds[] = { RESUME_REQUEST, RESUME_REPLY, RESUME_REJECT };
	uint8_t wire[RESUME_MAX_LEN];
	struct resume_msg m, again;
	char why[160];

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		int rc = resume_decode(data, size, kinds[k], &m, why, sizeof(why)), n;

		if (rc != 0 && rc != -EPROTO)
			abort();
		if (rc == -EPROTO && why[0] == '\0')
			abort();	/* a refusal always says why */
		if (rc)
			continue;
		if (!resume_is(data, size) || m.kind != kinds[k])
			abort();
		check_fields(&m);
		n = resume_encode(&m, wire, sizeof(wire));
		if (n < RESUME_HDR_LEN || (size_t)n > size)
			abort();	/* what decoded re-encodes, never longer than it came */
		if (resume_decode(wire, (size_t)n, kinds[k], &again, why, sizeof(why)) || !same(&m, &again))
			abort();
		check_macs(&m);
	}
	return 0;
}
