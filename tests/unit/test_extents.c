/* test_extents.c: the send slab's range allocator without a device: first fit, coalescing, refusals, and 100,000 random operations against a byte map. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn/extents.h"

static size_t free_ranges(const struct extents *x)
{
	size_t n = 0;

	for (const struct extent *e = x->free; e; e = e->next)
		n++;
	return n;
}

START_TEST(first_fit_and_coalescing)
{
	struct extents x;
	size_t a, b, c, d;

	ck_assert_int_eq(extents_init(&x, 1000), 0);
	ck_assert_int_eq(extents_alloc(&x, 100, &a), 0);
	ck_assert_int_eq(extents_alloc(&x, 200, &b), 0);
	ck_assert_int_eq(extents_alloc(&x, 300, &c), 0);
	ck_assert_uint_eq(a, 0);
	ck_assert_uint_eq(b, 100);
	ck_assert_uint_eq(c, 300);
	ck_assert_uint_eq(x.used, 600);
	ck_assert_uint_eq(x.nlive, 3);
	/* A hole at 100..300 takes the next ask that fits, lowest first. */
	ck_assert_int_eq(extents_free(&x, b, 200), 0);
	ck_assert_uint_eq(free_ranges(&x), 2);
	ck_assert_int_eq(extents_alloc(&x, 150, &d), 0);
	ck_assert_uint_eq(d, 100);
	ck_assert_int_eq(extents_free(&x, d, 150), 0);
	/* Freeing both neighbours of the hole merges all into one range. */
	ck_assert_int_eq(extents_free(&x, a, 100), 0);
	ck_assert_uint_eq(free_ranges(&x), 2);
	ck_assert_int_eq(extents_free(&x, c, 300), 0);
	ck_assert_uint_eq(free_ranges(&x), 1);
	ck_assert_uint_eq(x.free->off, 0);
	ck_assert_uint_eq(x.free->len, 1000);
	ck_assert_uint_eq(x.used, 0);
	ck_assert_uint_eq(x.nlive, 0);
	ck_assert_ptr_null(x.spare);
	extents_fini(&x);
}
END_TEST

START_TEST(full_region_and_refusals)
{
	struct extents x;
	size_t a, b;

	ck_assert_int_eq(extents_init(&x, 256), 0);
	ck_assert_int_eq(extents_alloc(&x, 0, &a), -ENOSPC);
	ck_assert_int_eq(extents_alloc(&x, 257, &a), -ENOSPC);
	ck_assert_int_eq(extents_alloc(&x, 128, &a), 0);
	ck_assert_int_eq(extents_alloc(&x, 128, &b), 0);
	ck_assert_ptr_null(x.free);
	ck_assert_int_eq(extents_alloc(&x, 1, &b), -ENOSPC);
	/* Not handed out as given: outside, or overlapping a free range. */
	ck_assert_int_eq(extents_free(&x, 200, 100), -EINVAL);
	ck_assert_int_eq(extents_free(&x, 0, 128), 0);
	ck_assert_int_eq(extents_free(&x, 64, 64), -EINVAL);
	ck_assert_int_eq(extents_free(&x, 128, 128), 0);
	ck_assert_int_eq(extents_free(&x, 128, 128), -EINVAL);
	ck_assert_uint_eq(x.used, 0);
	ck_assert_uint_eq(free_ranges(&x), 1);
	/* Fragmented: 4 free bytes in two pieces do not make a 4-byte range. */
	ck_assert_int_eq(extents_alloc(&x, 2, &a), 0);
	ck_assert_int_eq(extents_alloc(&x, 2, &b), 0);
	ck_assert_int_eq(extents_alloc(&x, 252, &b), 0);
	ck_assert_int_eq(extents_free(&x, 0, 2), 0);
	ck_assert_int_eq(extents_free(&x, 4, 252), 0);
	ck_assert_int_eq(extents_alloc(&x, 253, &a), -ENOSPC);
	extents_fini(&x);
}
END_TEST

#define REGION 8192
#define SLOTS 64

/* Every byte handed out is owned by one live range; freeing every range
 * leaves one free range of the whole region. */
START_TEST(random_operations_against_a_byte_map)
{
	static uint8_t owner[REGION];
	struct {
		size_t off, len;
		int live;
	} r[SLOTS] = { { 0 } };
	struct extents x;
	size_t used = 0;

	srandom(12345);
	memset(owner, 0, sizeof(owner));
	ck_assert_int_eq(extents_init(&x, REGION), 0);
	for (int step = 0; step < 100000; step++) {
		int k = (int)(random() % SLOTS);

		if (r[k].live) {
			size_t wrong = 0;

			ck_assert_int_eq(extents_free(&x, r[k].off, r[k].len), 0);
			/* Plain loops: each Check assertion writes to a pipe. */
			for (size_t i = r[k].off; i < r[k].off + r[k].len; i++) {
				wrong += owner[i] != k + 1;
				owner[i] = 0;
			}
			ck_assert_uint_eq(wrong, 0);
			used -= r[k].len;
			r[k].live = 0;
		} else {
			size_t len = 1 + (size_t)(random() % 700), off, taken = 0;
			int ret = extents_alloc(&x, len, &off);

			if (ret) {
				ck_assert_int_eq(ret, -ENOSPC);
				continue;
			}
			ck_assert_uint_le(off + len, REGION);
			for (size_t i = off; i < off + len; i++) {
				taken += owner[i] != 0;
				owner[i] = (uint8_t)(k + 1);
			}
			ck_assert_uint_eq(taken, 0);
			r[k].off = off;
			r[k].len = len;
			r[k].live = 1;
			used += len;
		}
		ck_assert_uint_eq(x.used, used);
		/* The free list is sorted, disjoint and never adjacent (merged). */
		size_t bad = 0;

		for (struct extent *e = x.free; e && e->next; e = e->next)
			bad += e->off + e->len >= e->next->off;
		ck_assert_uint_eq(bad, 0);
	}
	for (int k = 0; k < SLOTS; k++)
		if (r[k].live)
			ck_assert_int_eq(extents_free(&x, r[k].off, r[k].len), 0);
	ck_assert_uint_eq(x.used, 0);
	ck_assert_uint_eq(free_ranges(&x), 1);
	ck_assert_uint_eq(x.free->len, REGION);
	ck_assert_ptr_null(x.spare);
	extents_fini(&x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("extents");
	TCase *tc = tcase_create("extents");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, first_fit_and_coalescing);
	tcase_add_test(tc, full_region_and_refusals);
	tcase_add_test(tc, random_operations_against_a_byte_map);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
