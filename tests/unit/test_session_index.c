/* test_session_index.c: the passive side's sessions by token: found, removed, the table grown with nothing lost, and a forged token's lookup reading one short chain whatever the number of sessions. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn/session_index.h"
#include "../checkmain.h"

#define N 10000

struct sess {
	struct session_node node;
	uint8_t token[HS_TOKEN_LEN];
	int in;
};

static struct sess ss[N];

static void draw(uint8_t *t, uint32_t *state)
{
	for (int i = 0; i < HS_TOKEN_LEN; i++) {
		*state = *state * 1103515245u + 12345u;
		t[i] = (uint8_t)(*state >> 16);
	}
}

static void fill(uint32_t seed)
{
	memset(ss, 0, sizeof(ss));
	for (int i = 0; i < N; i++) {
		draw(ss[i].token, &seed);
		ss[i].node.token = ss[i].token;
	}
}

START_TEST(found_removed_grown)
{
	struct session_index ix = { 0 };
	uint8_t miss[HS_TOKEN_LEN];

	fill(1);
	ck_assert_ptr_null(session_index_find(&ix, ss[0].token));	/* empty: no table */
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(session_index_add(&ix, &ss[i].node), 0);
		ss[i].in = 1;
	}
	ck_assert_uint_eq(ix.count, N);
	/* Doubled from 64 while the chains averaged two: 8192 buckets for 10,000. */
	ck_assert_uint_eq(ix.nbuckets, 8192);
	for (int i = 0; i < N; i++)
		ck_assert_ptr_eq(session_index_find(&ix, ss[i].token), &ss[i].node);
	/* Every third one removed; the rest still found, the removed not. */
	for (int i = 0; i < N; i += 3) {
		session_index_del(&ix, &ss[i].node);
		ss[i].in = 0;
	}
	session_index_del(&ix, &ss[0].node);	/* a second removal is nothing */
	ck_assert_uint_eq(ix.count, N - (N + 2) / 3);
	for (int i = 0; i < N; i++)
		ck_assert_ptr_eq(session_index_find(&ix, ss[i].token), ss[i].in ? &ss[i].node : NULL);
	/* A token one bit off a live one is not it. */
	memcpy(miss, ss[1].token, sizeof(miss));
	miss[HS_TOKEN_LEN - 1] ^= 1;
	ck_assert_ptr_null(session_index_find(&ix, miss));
	session_index_fini(&ix);
	ck_assert_uint_eq(ix.nbuckets, 0);
	ck_assert_ptr_null(session_index_find(&ix, ss[1].token));
}
END_TEST

/* The point of the index: 10,000 forged tokens against 10,000 sessions read
 * about one entry each (walking the connections read 10,000 each). */
START_TEST(forged_lookups_read_short_chains)
{
	struct session_index ix = { 0 };
	uint32_t seed = 99;
	uint64_t most = 0;

	fill(7);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(session_index_add(&ix, &ss[i].node), 0);
	for (int i = 0; i < N; i++) {
		uint8_t forged[HS_TOKEN_LEN];
		uint64_t before = ix.compares;

		draw(forged, &seed);
		ck_assert_ptr_null(session_index_find(&ix, forged));
		if (ix.compares - before > most)
			most = ix.compares - before;
	}
	/* 10,000 in 8,192 chains: 1.2 on average; the longest chain of a
	 * uniform fill of this size is under 10. */
	ck_assert_msg(ix.compares <= 2 * N, "%llu compares for %d forged lookups",
		      (unsigned long long)ix.compares, N);
	ck_assert_msg(most < 10, "one forged lookup read %llu entries", (unsigned long long)most);
	session_index_fini(&ix);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_index");
	TCase *tc = tcase_create("index");

	tcase_add_test(tc, found_removed_grown);
	tcase_add_test(tc, forged_lookups_read_short_chains);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
