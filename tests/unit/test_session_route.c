/* test_session_route.c: a listener's routes to sessions on other contexts, without a device: a token routes to its context's inbox, a forged one to nothing, a context that takes no requests is refused, a closed one's hand refused, the routes outliving their listener; sessions registered and removed on their threads while the listener's thread looks them up (TSan's tier runs it). */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "conn/ctx.h"
#include "conn/handoff.h"
#include "conn/session_route.h"
#include "../checkmain.h"

static void close_inbox(struct handoff *h)
{
	(void)h;
}

/* No letter is posted to these inboxes but the refused one. */
static const struct handoff_ops ops = { .closed = close_inbox };

/* A context as far as the routes and its inbox need one: its loop (the
 * inbox's eventfd), no CM channel, no device; take: it takes requests. */
static struct ez_ctx *fake_ctx(int take)
{
	struct ez_ctx *ctx = calloc(1, sizeof(*ctx));

	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(loop_init(&ctx->loop), 0);
	if (take)
		ck_assert_int_eq(handoff_open(ctx, &ops, NULL), 0);
	return ctx;
}

static void fake_ctx_free(struct ez_ctx *ctx)
{
	if (ctx->handoff)
		handoff_close(ctx, "test context freed");
	loop_fini(&ctx->loop);
	free(ctx);
}

static void token_of(uint8_t *t, uint32_t n)
{
	for (int i = 0; i < HS_TOKEN_LEN; i++)
		t[i] = (uint8_t)(n * 131u + (uint32_t)i * 7u + (n >> 8));
	memcpy(t, &n, sizeof(n));	/* distinct first bytes: the bucket */
	t[HS_TOKEN_LEN - 1] |= 1;
}

START_TEST(routes_to_the_owner)
{
	struct ez_ctx *a = fake_ctx(1), *b = fake_ctx(1);
	struct session_routes *r = session_routes_new();
	struct session_route ra = { 0 }, rb = { 0 }, never = { 0 };
	uint8_t ta[HS_TOKEN_LEN], tb[HS_TOKEN_LEN], forged[HS_TOKEN_LEN];
	struct handoff *h;
	uint64_t c0;

	ck_assert_ptr_nonnull(r);
	token_of(ta, 1);
	token_of(tb, 2);
	token_of(forged, 3);
	ck_assert_int_eq(session_route_add(r, &ra, ta, a), 0);
	ck_assert_int_eq(session_route_add(r, &rb, tb, b), 0);
	h = session_routes_find(r, ta);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_eq(handoff_ctx(h), a);
	handoff_put(h);
	h = session_routes_find(r, tb);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_eq(handoff_ctx(h), b);
	handoff_put(h);
	/* A forged token: nothing, one chain read. */
	c0 = session_routes_compares(r);
	ck_assert_ptr_null(session_routes_find(r, forged));
	ck_assert_uint_le(session_routes_compares(r) - c0, 2);
	/* Removed: no longer found; removing twice, or one never added, is safe. */
	session_route_del(&ra);
	ck_assert_ptr_null(session_routes_find(r, ta));
	session_route_del(&ra);
	session_route_del(&never);
	/* The listener goes first: the routes live on for b's session. */
	session_routes_put(r);
	session_route_del(&rb);	/* the last reference: freed (ASan, LSan) */
	fake_ctx_free(a);
	fake_ctx_free(b);
}
END_TEST

START_TEST(a_context_without_an_inbox_is_refused)
{
	struct ez_ctx *a = fake_ctx(0);
	struct session_routes *r = session_routes_new();
	struct session_route ra = { 0 };
	uint8_t ta[HS_TOKEN_LEN];

	token_of(ta, 9);
	ck_assert_int_eq(session_route_add(r, &ra, ta, a), -ESHUTDOWN);
	ck_assert_ptr_null(session_routes_find(r, ta));
	session_route_del(&ra);
	session_routes_put(r);
	fake_ctx_free(a);
}
END_TEST

/* The owner stops taking requests while its session is routed: the route
 * still names its inbox (a reference), whose post is refused; the memory
 * goes with the last reference, the route's. */
START_TEST(a_closed_owner_refuses_the_hand)
{
	struct ez_ctx *a = fake_ctx(1);
	struct session_routes *r = session_routes_new();
	struct session_route ra = { 0 };
	struct loop_mail m = { 0 };
	uint8_t ta[HS_TOKEN_LEN];
	struct handoff *h;

	token_of(ta, 5);
	ck_assert_int_eq(session_route_add(r, &ra, ta, a), 0);
	handoff_close(a, "worker stopped taking requests");
	h = session_routes_find(r, ta);
	ck_assert_ptr_nonnull(h);
	ck_assert(handoff_closed(h));
	ck_assert_int_eq(handoff_post(h, &m, NULL), -ESHUTDOWN);
	handoff_put(h);
	session_route_del(&ra);
	session_routes_put(r);
	fake_ctx_free(a);
}
END_TEST

/* Sessions come and go on their threads while the listener's looks up
 * tokens: the stable session is found every time, a forged token never,
 * and what a thread removed is gone. */
#define THREADS 4
#define ROUNDS 2000
#define PER 8

struct owner {
	pthread_t th;
	struct ez_ctx *ctx;
	struct session_routes *r;
	int idx;
	struct session_route rt[PER];
	uint8_t tok[PER][HS_TOKEN_LEN];
};

static void *owner_main(void *arg)
{
	struct owner *o = arg;

	for (int k = 0; k < ROUNDS; k++) {
		for (int i = 0; i < PER; i++) {
			token_of(o->tok[i], (uint32_t)(1000 + o->idx * 100000 + k * PER + i));
			ck_assert_int_eq(session_route_add(o->r, &o->rt[i], o->tok[i], o->ctx), 0);
		}
		for (int i = 0; i < PER; i++)
			session_route_del(&o->rt[i]);
	}
	return NULL;
}

START_TEST(threads_add_and_remove_while_found)
{
	struct owner own[THREADS];
	struct ez_ctx *stable_ctx = fake_ctx(1);
	struct session_routes *r = session_routes_new();
	struct session_route stable = { 0 };
	uint8_t ts[HS_TOKEN_LEN], forged[HS_TOKEN_LEN];
	int found = 0;

	token_of(ts, 7);
	token_of(forged, 8);
	ck_assert_int_eq(session_route_add(r, &stable, ts, stable_ctx), 0);
	for (int t = 0; t < THREADS; t++) {
		memset(&own[t], 0, sizeof(own[t]));
		own[t].ctx = fake_ctx(1);
		own[t].r = r;
		own[t].idx = t;
		ck_assert_int_eq(pthread_create(&own[t].th, NULL, owner_main, &own[t]), 0);
	}
	for (int k = 0; k < 20000; k++) {
		struct handoff *h = session_routes_find(r, ts);

		ck_assert_ptr_nonnull(h);
		ck_assert_ptr_eq(handoff_ctx(h), stable_ctx);
		handoff_put(h);
		found++;
		ck_assert_ptr_null(session_routes_find(r, forged));
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(own[t].th, NULL);
	/* Every thread's sessions removed: only the stable one is left. */
	for (int t = 0; t < THREADS; t++)
		for (int i = 0; i < PER; i++)
			ck_assert_ptr_null(session_routes_find(r, own[t].tok[i]));
	ck_assert_int_eq(found, 20000);
	session_route_del(&stable);
	session_routes_put(r);
	for (int t = 0; t < THREADS; t++)
		fake_ctx_free(own[t].ctx);
	fake_ctx_free(stable_ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_route");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, routes_to_the_owner);
	tcase_add_test(tc, a_context_without_an_inbox_is_refused);
	tcase_add_test(tc, a_closed_owner_refuses_the_hand);
	tcase_add_test(tc, threads_add_and_remove_while_found);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
