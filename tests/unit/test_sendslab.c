/* test_sendslab.c: the device's send slots without a device: size classes, chunk growth, distinct slots, reuse, oldest chunk first, trimming idle chunks, registration failure. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "device/sendslab.h"
#include "../checkmain.h"

/* Registration as the slab sees it: a handle and a key, counted. */
static int regs, deregs, fail_next;

static void *fake_reg(void *arg, void *addr, size_t len, uint32_t *lkey)
{
	(void)arg;
	(void)len;
	if (fail_next) {
		fail_next = 0;
		errno = ENOMEM;
		return NULL;
	}
	*lkey = 0x1000u + (uint32_t)regs;
	regs++;
	return addr;
}

static int fake_dereg(void *arg, void *mr)
{
	(void)arg;
	(void)mr;
	deregs++;
	return 0;
}

static void slab_new(struct sendslab *s)
{
	struct slab_ops ops = { .reg = fake_reg, .dereg = fake_dereg };

	regs = deregs = fail_next = 0;
	sendslab_init_ops(s, &ops);
}

START_TEST(size_classes)
{
	ck_assert_uint_eq(sendslab_class(1), 0);
	ck_assert_uint_eq(sendslab_class(64), 0);
	ck_assert_uint_eq(sendslab_class(65), 1);
	ck_assert_uint_eq(sendslab_class(4096), 6);
	ck_assert_uint_eq(sendslab_class_size(6), 4096);
	ck_assert_uint_eq(sendslab_class(4097), 7);
	ck_assert_uint_eq(sendslab_class_size(SLAB_CLASSES - 1), (size_t)1 << 31);
}
END_TEST

/* 4 KiB slots: a 64 KiB chunk holds 16, the next (128 KiB) 32; no two slots
 * overlap, and freed slots come back before anything is registered. */
START_TEST(growth_distinct_and_reuse)
{
	struct sendslab s;
	struct slab_slot *sl[48];
	int i, j;

	slab_new(&s);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(sendslab_get(&s, 4000, &sl[i]), 0);
	ck_assert_int_eq(regs, 1);
	ck_assert_uint_eq(s.bytes_registered, 64u << 10);
	ck_assert_int_eq(sendslab_get(&s, 4096, &sl[16]), 0);
	ck_assert_int_eq(regs, 2);
	ck_assert_uint_eq(s.bytes_registered, (64u + 128u) << 10);
	for (i = 17; i < 48; i++)
		ck_assert_int_eq(sendslab_get(&s, 3000, &sl[i]), 0);
	ck_assert_int_eq(regs, 2);
	ck_assert_uint_eq(s.slots_out, 48);
	for (i = 0; i < 48; i++) {
		ck_assert_uint_eq(sl[i]->lkey, i < 16 ? 0x1000u : 0x1001u);
		ck_assert_uint_eq((uintptr_t)sl[i]->addr % 4096, 0);
		for (j = 0; j < i; j++) {
			uintptr_t a = (uintptr_t)sl[i]->addr, b = (uintptr_t)sl[j]->addr;

			ck_assert_msg(a + 4096 <= b || b + 4096 <= a, "slots %d and %d overlap", i, j);
		}
		memset(sl[i]->addr, i, 4096);	/* ASan: the whole slot is ours */
	}
	/* Back and out again, last in first out: nothing new registered. */
	sendslab_put(&s, sl[47]);
	sendslab_put(&s, sl[3]);
	ck_assert_int_eq(sendslab_get(&s, 4096, &sl[3]), 0);
	ck_assert_int_eq(sendslab_get(&s, 4096, &sl[47]), 0);
	ck_assert_int_eq(regs, 2);
	for (i = 0; i < 48; i++)
		sendslab_put(&s, sl[i]);
	ck_assert_uint_eq(s.slots_out, 0);
	ck_assert_uint_eq(s.cls[6].nfree, 48);
	sendslab_fini(&s, "fake");
	ck_assert_int_eq(deregs, 2);
}
END_TEST

/* Classes are apart: a 64-byte slot never comes from a 4 KiB chunk, and a
 * slot larger than the first chunk gets a chunk of its own size. */
START_TEST(classes_apart_and_large_slots)
{
	struct sendslab s;
	struct slab_slot *a, *b, *c;

	slab_new(&s);
	ck_assert_int_eq(sendslab_get(&s, 10, &a), 0);
	ck_assert_int_eq(sendslab_get(&s, 4096, &b), 0);
	ck_assert_int_eq(regs, 2);
	ck_assert_uint_eq(a->cls, 0);
	ck_assert_uint_eq(b->cls, 6);
	ck_assert_int_eq(sendslab_get(&s, 1u << 20, &c), 0);
	ck_assert_int_eq(regs, 3);
	ck_assert_uint_eq(s.bytes_registered, (64u + 64u + 1024u) << 10);
	memset(c->addr, 0xab, 1u << 20);
	sendslab_put(&s, a);
	sendslab_put(&s, b);
	sendslab_put(&s, c);
	sendslab_fini(&s, "fake");
	ck_assert_int_eq(deregs, 3);
}
END_TEST

/* Slots come from the oldest chunk that has one, so a later chunk empties
 * when the load drops; a trim pass releases a chunk (never a class's first)
 * that is empty and handed out nothing since the pass before. */
START_TEST(oldest_first_and_trim)
{
	struct sendslab s;
	struct slab_slot *sl[48];
	int i;

	slab_new(&s);
	for (i = 0; i < 48; i++)
		ck_assert_int_eq(sendslab_get(&s, 4096, &sl[i]), 0);
	ck_assert_int_eq(regs, 2);
	ck_assert_uint_eq(s.extra_chunks, 1);
	for (i = 47; i >= 0; i--)
		sendslab_put(&s, sl[i]);
	/* 16 slots fit the first chunk: none comes from the second. */
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(sendslab_get(&s, 4096, &sl[i]), 0);
		ck_assert_uint_eq(sl[i]->lkey, 0x1000u);
	}
	ck_assert_int_eq(sendslab_get(&s, 4096, &sl[16]), 0);
	ck_assert_uint_eq(sl[16]->lkey, 0x1001u);
	sendslab_put(&s, sl[16]);
	/* The second chunk handed out a slot since the last pass: it stays. */
	ck_assert_uint_eq(sendslab_trim(&s, "fake"), 0);
	ck_assert_int_eq(deregs, 0);
	/* Idle for a whole period, and empty: it goes. The first stays, busy. */
	ck_assert_uint_eq(sendslab_trim(&s, "fake"), 1);
	ck_assert_int_eq(deregs, 1);
	ck_assert_uint_eq(s.extra_chunks, 0);
	ck_assert_uint_eq(s.bytes_registered, 64u << 10);
	ck_assert_uint_eq(s.cls[6].nslots, 16);
	ck_assert_uint_eq(s.cls[6].nfree, 0);
	/* A first chunk is never released, even empty and idle. */
	for (i = 0; i < 16; i++)
		sendslab_put(&s, sl[i]);
	ck_assert_uint_eq(sendslab_trim(&s, "fake"), 0);
	ck_assert_uint_eq(sendslab_trim(&s, "fake"), 0);
	ck_assert_int_eq(deregs, 1);
	/* Growing again registers a new chunk, and the slots are usable. */
	for (i = 0; i < 17; i++) {
		ck_assert_int_eq(sendslab_get(&s, 4096, &sl[i]), 0);
		memset(sl[i]->addr, i, 4096);
	}
	ck_assert_int_eq(regs, 3);
	ck_assert_uint_eq(s.extra_chunks, 1);
	/* One release halved the next chunk: 128 KiB again, not 256. */
	ck_assert_uint_eq(s.bytes_registered, (64u + 128u) << 10);
	ck_assert_uint_eq(s.slots_out, 17);
	for (i = 0; i < 17; i++)
		sendslab_put(&s, sl[i]);
	sendslab_fini(&s, "fake");
	ck_assert_int_eq(deregs, regs);
	ck_assert_uint_eq(s.bytes_registered, 0);
}
END_TEST

/* A chunk with one slot out is never released, however long it waits. */
START_TEST(trim_keeps_a_chunk_in_use)
{
	struct sendslab s;
	struct slab_slot *sl[20];
	int i;

	slab_new(&s);
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(sendslab_get(&s, 4096, &sl[i]), 0);
	for (i = 0; i < 19; i++)
		sendslab_put(&s, sl[i]);
	ck_assert_uint_eq(sl[19]->lkey, 0x1001u);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(sendslab_trim(&s, "fake"), 0);
	ck_assert_int_eq(deregs, 0);
	memset(sl[19]->addr, 0x5a, 4096);	/* ASan: still ours */
	sendslab_put(&s, sl[19]);
	ck_assert_uint_eq(sendslab_trim(&s, "fake"), 1);
	ck_assert_int_eq(deregs, 1);
	sendslab_fini(&s, "fake");
	ck_assert_int_eq(deregs, 2);
}
END_TEST

START_TEST(refusals)
{
	struct sendslab s;
	struct slab_slot *a = NULL;

	slab_new(&s);
	ck_assert_int_eq(sendslab_get(&s, 0, &a), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "send slots: no class for 0 bytes");
	fail_next = 1;
	ck_assert_int_eq(sendslab_get(&s, 100, &a), -ENOMEM);
	ck_assert_str_eq(ez_errmsg(),
			 "ibv_reg_mr(send slots, 65536 bytes, local read): Cannot allocate memory");
	ck_assert_ptr_null(a);
	ck_assert_uint_eq(s.slots_out, 0);
	/* The next ask registers and succeeds. */
	ck_assert_int_eq(sendslab_get(&s, 100, &a), 0);
	sendslab_put(&s, a);
	sendslab_fini(&s, "fake");
	ck_assert_int_eq(deregs, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sendslab");
	TCase *tc = tcase_create("slots");

	tcase_add_test(tc, size_classes);
	tcase_add_test(tc, growth_distinct_and_reuse);
	tcase_add_test(tc, classes_apart_and_large_slots);
	tcase_add_test(tc, oldest_first_and_trim);
	tcase_add_test(tc, trim_keeps_a_chunk_in_use);
	tcase_add_test(tc, refusals);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
