/* test_hostile_resume.c: session resume requests from a raw rdma_cm peer (a forged token, a stale epoch, a MAC where the session has no key, an unknown flag, a keyed session's right token with a wrong or no MAC): each refused with its reason, the honest session untouched. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "fault.h"
#include "rawcm.h"
#include "conn/conn_types.h"
#include "conn/ctx.h"
#include "conn/path.h"
#include "conn/resume.h"
#include "wire/resume.h"
#include "../checkmain.h"

#define IB_REJ_CONSUMER 28	/* the IB CM's "consumer defined" reject reason */

static const char KEY[] = "easyrdma test key: 32 bytes long";
static const char WRONG_KEY[] = "not the key, yet 32 bytes long!!";

struct bench {
	struct fb b;
	struct srv s;
	struct ep c;
	uint8_t token[HS_TOKEN_LEN];
	uint32_t epoch;
};

/* A session of two paths with resume on both sides (keyed or not), up. */
static void bench_init(struct bench *t, int keyed)
{
	struct ez_conn_opts o = { .paths = 2, .resume_ms = 10000, .connect_timeout_ms = 20000 };

	memset(t, 0, sizeof(*t));
	fb_init(&t->b);
	t->s.opts = o;
	if (keyed) {
		t->s.auth_key = KEY;
		t->s.auth_key_len = sizeof(KEY) - 1;
		o.auth_key = KEY;
		o.auth_key_len = sizeof(KEY) - 1;
	}
	srv_start(&t->b, &t->s, 4);
	ck_assert_int_eq(ep_connect(&t->b, &t->c, t->s.port, &o), 0);
	ck_assert(fb_run(&t->b, &t->c.connected, 1, 30));
	ck_assert(fb_run(&t->b, &t->s.connected, 1, 30));
	ck_assert_int_eq(t->c.connect_status, 0);
	ck_assert_int_eq(resume_test_session(t->s.eps[0].conn, t->token, &t->epoch), 0);
	ck_assert_int_eq(t->epoch, 0);
}

static void bench_fini(struct bench *t)
{
	ep_close(&t->c);
	srv_stop(&t->s);
	fb_fini(&t->b);
}

/* One raw request with these bytes; the refusal's reason and text. */
static uint8_t attempt(struct bench *t, const void *req, int len, char *text, size_t textlen)
{
	struct raw r;
	struct resume_msg m;
	char why[256];
	int st;

	memset(&r, 0, sizeof(r));
	st = raw_connect_result(&t->b, &r, t->s.port, req, len);
	ck_assert_msg(st == IB_REJ_CONSUMER, "a forged resume got %s (status %d), not a consumer reject",
		      rdma_event_str(r.last), st);
	ck_assert_msg(resume_decode(r.pdata, (size_t)r.pdata_len, RESUME_REJECT, &m, why, sizeof(why)) == 0,
		      "the refusal is no resume reject: %s", why);
	snprintf(text, textlen, "%s", m.text);
	printf("refused: %s (%s)\n", resume_reason_str(m.reason), m.text);
	raw_free(&r);
	return m.reason;
}

static int encode_req(const struct resume_msg *m, uint8_t *buf)
{
	int n = resume_encode(m, buf, HS_REQ_MAX);

	ck_assert_int_gt(n, 0);
	return n;
}

/* The honest session after the attempts: both ends up, both paths live, no
 * loss counted, the epoch unchanged, and a message still goes through. */
static void honest_untouched(struct bench *t)
{
	struct ez_conn_stats cs, ss;
	struct ez_conn_info ci;
	uint8_t token[HS_TOKEN_LEN];
	uint32_t epoch;

	ck_assert_int_eq(t->c.disconnected, 0);
	ck_assert_int_eq(t->s.disconnected, 0);
	ck_assert_int_eq(ez_conn_info(t->s.eps[0].conn, &ci), 0);
	ck_assert_uint_eq(ci.paths_live, 2);
	ck_assert_int_eq(ez_conn_stats(t->c.conn, &cs), 0);
	ck_assert_int_eq(ez_conn_stats(t->s.eps[0].conn, &ss), 0);
	ck_assert_uint_eq(cs.sessions_lost + ss.sessions_lost, 0);
	ck_assert_int_eq(resume_test_session(t->s.eps[0].conn, token, &epoch), 0);
	ck_assert_uint_eq(epoch, 0);
	ck_assert_int_eq(ep_send_seq(&t->c, 0), 0);
	ck_assert(fb_run(&t->b, &t->s.eps[0].received, 1, 10));
}

START_TEST(forged_stale_and_malformed_refused)
{
	struct bench t;
	struct resume_msg m = { .kind = RESUME_REQUEST, .count = 0, .psn = 1 };
	uint8_t buf[HS_REQ_MAX];
	char text[128];
	int n;

	bench_init(&t, 0);
	/* A token nobody was given. */
	memset(m.token, 0x5a, sizeof(m.token));
	n = encode_req(&m, buf);
	ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_UNKNOWN);
	ck_assert_ptr_nonnull(strstr(text, "no session with this token"));
	/* The session's token with an epoch it never had (a replay of a
	 * later request, or a guess). */
	memcpy(m.token, t.token, sizeof(m.token));
	m.epoch = 3;
	n = encode_req(&m, buf);
	ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_STALE);
	ck_assert_str_eq(text, "epoch 3, the session's is 0");
	/* The right token and epoch with a MAC the session cannot check. */
	m.epoch = 0;
	m.flags = RESUME_F_MAC;
	memset(m.mac, 0x11, sizeof(m.mac));
	n = encode_req(&m, buf);
	ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_DENIED);
	ck_assert_ptr_nonnull(strstr(text, "the session has no shared secret"));
	/* A flag this version does not know (rdma_cm pads private data with
	 * zeros, so a request cut short reads as one with a zero tail: the
	 * token no longer matches, UNKNOWN above). */
	m.flags = 0;
	n = encode_req(&m, buf);
	buf[6] = 0x80;
	ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_DENIED);
	ck_assert_ptr_nonnull(strstr(text, "flag"));
	honest_untouched(&t);
	bench_fini(&t);
}
END_TEST

/* A run of forged tokens: each refused UNKNOWN with its reason, each lookup
 * one short chain of the context's index (session_index.h), not a walk of
 * the connections, and the honest session untouched throughout. */
/* A keyed reply of two paths granting resume holds 132 - 4 - 16 = 112 user
 * bytes (ez_conn_opts(3)): with 113, ez_accept() itself returns -EMSGSIZE
 * naming each part (it knows them once it granted paths and resume), the
 * client is told why in the rejection; 112 arrive whole. */
static int keyed_accept_with(struct bench *t, uint32_t len, const uint8_t *data)
{
	struct ez_conn_opts o = { .paths = 2, .resume_ms = 10000, .connect_timeout_ms = 20000,
				  .auth_key = KEY, .auth_key_len = sizeof(KEY) - 1 };

	memset(t, 0, sizeof(*t));
	fb_init(&t->b);
	t->s.opts = (struct ez_conn_opts){ .paths = 2, .resume_ms = 10000, .connect_timeout_ms = 20000,
					   .private_data = data, .private_data_len = len };
	t->s.auth_key = KEY;
	t->s.auth_key_len = sizeof(KEY) - 1;
	srv_start(&t->b, &t->s, 4);
	ck_assert_int_eq(ep_connect(&t->b, &t->c, t->s.port, &o), 0);
	ck_assert(fb_run(&t->b, &t->c.connected, 1, 30));
	return t->c.connect_status;
}

START_TEST(keyed_reply_room_with_paths_and_token)
{
	static uint8_t data[EZ_ACCEPT_DATA_MAX_AUTH];
	struct bench t;
	const void *got;
	size_t len = 0;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 5);
	ck_assert_int_ne(keyed_accept_with(&t, 113, data), 0);
	printf("113 bytes: ez_accept: %s; client: %s\n", t.s.accept_msg, t.c.connect_msg);
	ck_assert_int_eq(t.s.accept_errors, 1);
	ck_assert_int_eq(t.s.accept_status, -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(t.s.accept_msg,
				     "ez_accept: 113 bytes of private data do not fit: the reply holds 112 "
				     "beside the shared secret's 48 bytes, the path block's 4 and the "
				     "session token's 16"));
	ck_assert_int_eq(t.s.neps, 0);
	ck_assert_int_eq(t.c.connect_status, -ECONNREFUSED);
	ck_assert_ptr_nonnull(strstr(t.c.connect_msg, "accept failed: ez_accept: 113 bytes"));
	bench_fini(&t);

	ck_assert_int_eq(keyed_accept_with(&t, 112, data), 0);
	got = ez_conn_accept_data(t.c.conn, &len);
	ck_assert_uint_eq(len, 112);
	ck_assert_int_eq(memcmp(got, data, 112), 0);
	bench_fini(&t);
}
END_TEST

/* Deterministic, well spread token bytes (splitmix64). */
static uint64_t mix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_token(uint8_t *t, uint64_t *seed)
{
	uint64_t a = mix64(seed), b = mix64(seed);

	memcpy(t, &a, 8);
	memcpy(t + 8, &b, 8);
}

/* The listener's context holds the honest session and, standing for the
 * sessions of thousands of other connections (too many to open in the
 * tier's time), DECOYS more entries of its own index: a walk of every
 * session would read FLOOD x (DECOYS + 1) tokens for the flood; the index
 * reads a chain each (they average at most two). */
#define DECOYS 2000
#define FLOOD 64
START_TEST(forged_token_flood_refused)
{
	static struct session_node decoy[DECOYS];
	static uint8_t decoy_token[DECOYS][HS_TOKEN_LEN];
	struct bench t;
	struct resume_msg m = { .kind = RESUME_REQUEST, .count = 0, .psn = 1 };
	struct session_index *ix;
	uint8_t buf[HS_REQ_MAX];
	char text[128];
	uint64_t compares0, seed = 42, read;
	int n;

	bench_init(&t, 0);
	ix = &t.s.eps[0].conn->ctx->sessions;
	ck_assert_uint_eq(ix->count, 1);
	for (int i = 0; i < DECOYS; i++) {
		fill_token(decoy_token[i], &seed);
		decoy[i].token = decoy_token[i];
		ck_assert_int_eq(session_index_add(ix, &decoy[i]), 0);
	}
	ck_assert_uint_eq(ix->count, DECOYS + 1);
	compares0 = ix->compares;
	for (int i = 0; i < FLOOD; i++) {
		fill_token(m.token, &seed);
		n = encode_req(&m, buf);
		ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_UNKNOWN);
		ck_assert_ptr_nonnull(strstr(text, "no session with this token"));
	}
	read = ix->compares - compares0;
	printf("%d forged tokens refused among %u sessions; the index read %llu entries for them "
	       "(a walk: %llu)\n", FLOOD, ix->count, (unsigned long long)read,
	       (unsigned long long)FLOOD * ix->count);
	/* Chains average at most two: 8 a lookup is far above what the
	 * index reads and far below a walk (2,001 a lookup). */
	ck_assert_uint_le(read, 8 * FLOOD);
	for (int i = 0; i < DECOYS; i++)
		session_index_del(ix, &decoy[i]);
	ck_assert_uint_eq(ix->count, 1);
	honest_untouched(&t);
	bench_fini(&t);
}
END_TEST

START_TEST(keyed_session_needs_the_key)
{
	struct bench t;
	struct resume_msg m = { .kind = RESUME_REQUEST, .count = 0, .psn = 1 };
	struct auth_key wrong;
	uint8_t buf[HS_REQ_MAX];
	char text[128];
	int n;

	bench_init(&t, 1);
	memcpy(m.token, t.token, sizeof(m.token));
	/* No MAC at all. */
	n = encode_req(&m, buf);
	ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_DENIED);
	ck_assert_ptr_nonnull(strstr(text, "no MAC made with the listener's shared secret"));
	/* A MAC made with another key (for some QP: it is refused before
	 * the QP number matters). */
	ck_assert_int_eq(auth_key_set(&wrong, WRONG_KEY, sizeof(WRONG_KEY) - 1), 0);
	ck_assert_int_eq(resume_req_seal(&wrong, &m, 1234), 0);
	n = encode_req(&m, buf);
	ck_assert_uint_eq(attempt(&t, buf, n, text, sizeof(text)), RESUME_R_DENIED);
	ck_assert_ptr_nonnull(strstr(text, "no MAC made with the listener's shared secret"));
	honest_untouched(&t);

	/* The honest client, which has the key, resumes the same session
	 * when its paths fail: its MACs pass, the epoch moves on, and the
	 * message sent before arrives once. */
	{
		struct ez_conn_stats cs = { 0 }, ss = { 0 };
		uint8_t token[HS_TOKEN_LEN];
		uint32_t epoch = 0;
		double end = now_s() + 30;

		ck_assert_int_eq(path_test_break(t.c.conn, 0), 0);
		ck_assert_int_eq(path_test_break(t.c.conn, 1), 0);
		while (now_s() < end && !t.c.disconnected && (cs.resumes < 1 || ss.resumes < 1)) {
			fb_spin(&t.b, 0.05);
			ck_assert_int_eq(ez_conn_stats(t.c.conn, &cs), 0);
			ck_assert_int_eq(ez_conn_stats(t.s.eps[0].conn, &ss), 0);
		}
		printf("keyed session: client resumed %llu after %llu dial(s), server %llu\n",
		       (unsigned long long)cs.resumes, (unsigned long long)cs.resume_dials,
		       (unsigned long long)ss.resumes);
		ck_assert_msg(cs.resumes == 1 && ss.resumes == 1, "not resumed: %s",
			      t.c.disconnected ? t.c.disconnect_msg : "(still waiting)");
		ck_assert_int_eq(resume_test_session(t.s.eps[0].conn, token, &epoch), 0);
		ck_assert_uint_eq(epoch, 1);
		ck_assert_int_eq(resume_test_session(t.c.conn, token, &epoch), 0);
		ck_assert_uint_eq(epoch, 1);
		ck_assert_int_eq(ep_send_seq(&t.c, 1), 0);
		ck_assert(fb_run(&t.b, &t.s.eps[0].received, 2, 10));
		ck_assert_int_eq(t.s.eps[0].bad_seq, 0);
	}
	bench_fini(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile_resume");
	TCase *tc = tcase_create("rxe");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, forged_stale_and_malformed_refused);
	tcase_add_test(tc, forged_token_flood_refused);
	tcase_add_test(tc, keyed_reply_room_with_paths_and_token);
	tcase_add_test(tc, keyed_session_needs_the_key);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
