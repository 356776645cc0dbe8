/* test_replay.c: a keyed listener's window of request nonces: a nonce seen is refused, the window keeps the last N in order, colliding buckets, eviction. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "wire/replay.h"
#include "../checkmain.h"

/* Nonce i: distinct bytes; with same_bucket every nonce hashes alike (the
 * first four bytes are the hash), so the chains are as long as they get. */
static void nonce(uint8_t out[REPLAY_NONCE_LEN], uint32_t i, int same_bucket)
{
	uint32_t j;

	for (j = 0; j < REPLAY_NONCE_LEN; j++)
		out[j] = (uint8_t)(i * 37u + j * 101u);
	if (same_bucket)
		memset(out, 0x5a, 4);
	memcpy(out + 8, &i, sizeof(i));
}

START_TEST(seen_once_is_refused_after)
{
	struct replay_window *w = replay_window_new(8);
	uint8_t n[REPLAY_NONCE_LEN];

	ck_assert_ptr_nonnull(w);
	nonce(n, 1, 0);
	ck_assert_int_eq(replay_window_seen(w, n), 0);
	ck_assert_int_eq(replay_window_seen(w, n), 1);
	ck_assert_int_eq(replay_window_seen(w, n), 1);
	/* One byte apart is another nonce, seen once after. */
	n[REPLAY_NONCE_LEN - 1] ^= 1;
	ck_assert_int_eq(replay_window_seen(w, n), 0);
	ck_assert_int_eq(replay_window_seen(w, n), 1);
	replay_window_free(w);
}
END_TEST

/* The window holds exactly the last cap nonces: the oldest goes first. */
static void window_order(int same_bucket)
{
	const uint32_t cap = 16;
	struct replay_window *w = replay_window_new(cap);
	uint8_t n[REPLAY_NONCE_LEN];
	uint32_t i;

	ck_assert_ptr_nonnull(w);
	for (i = 0; i < cap; i++) {
		nonce(n, i, same_bucket);
		ck_assert_int_eq(replay_window_seen(w, n), 0);
	}
	for (i = 0; i < cap; i++) {
		nonce(n, i, same_bucket);
		ck_assert_msg(replay_window_seen(w, n) == 1, "nonce %u of a full window", i);
	}
	/* Three more evict 0, 1 and 2 (in that order), nothing else. */
	for (i = cap; i < cap + 3; i++) {
		nonce(n, i, same_bucket);
		ck_assert_int_eq(replay_window_seen(w, n), 0);
	}
	for (i = 3; i < cap + 3; i++) {
		nonce(n, i, same_bucket);
		ck_assert_msg(replay_window_seen(w, n) == 1, "nonce %u still in the window", i);
	}
	nonce(n, 0, same_bucket);
	ck_assert_int_eq(replay_window_seen(w, n), 0);	/* evicted: new again, evicts 3 */
	nonce(n, 3, same_bucket);
	ck_assert_int_eq(replay_window_seen(w, n), 0);
	nonce(n, 1, same_bucket);
	ck_assert_int_eq(replay_window_seen(w, n), 0);
	replay_window_free(w);
}

START_TEST(window_keeps_the_last_n)
{
	window_order(0);
}
END_TEST

START_TEST(one_bucket_for_all)
{
	window_order(1);
}
END_TEST

/* Many turns of the ring, a third of the nonces in one bucket: every
 * eviction unlinks what it evicts and nothing else. */
START_TEST(long_run)
{
	const uint32_t cap = 100, total = 50 * cap;
	struct replay_window *w = replay_window_new(cap);
	uint8_t n[REPLAY_NONCE_LEN];
	uint32_t i;

	ck_assert_ptr_nonnull(w);
	for (i = 0; i < total; i++) {
		nonce(n, i, i % 3 == 0);
		ck_assert_int_eq(replay_window_seen(w, n), 0);
		ck_assert_int_eq(replay_window_seen(w, n), 1);
		if (i + 1 >= cap) {
			uint32_t oldest = i + 1 - cap;

			nonce(n, oldest, oldest % 3 == 0);
			ck_assert_msg(replay_window_seen(w, n) == 1, "oldest %u after %u", oldest, i);
		}
	}
	nonce(n, total - cap - 1, (total - cap - 1) % 3 == 0);	/* evicted last */
	ck_assert_int_eq(replay_window_seen(w, n), 0);
	replay_window_free(w);
}
END_TEST

START_TEST(bad_sizes)
{
	ck_assert_ptr_null(replay_window_new(0));
	ck_assert_ptr_null(replay_window_new((1u << 24) + 1));
	replay_window_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("window");

	tcase_add_test(tc, seen_once_is_refused_after);
	tcase_add_test(tc, window_keeps_the_last_n);
	tcase_add_test(tc, one_bucket_for_all);
	tcase_add_test(tc, long_run);
	tcase_add_test(tc, bad_sizes);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
