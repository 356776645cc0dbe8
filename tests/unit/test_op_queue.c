/* test_op_queue.c: the op queue's list (lib/conn/op_queue.c): call order kept through pops and a put-back, its counts, its room, and an entry's copy room. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "conn/op_queue.h"
#include "../checkmain.h"

static struct queued_op *entry(uint32_t tag)
{
	struct queued_op *e = op_queue_new(8);

	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_null(e->next);
	ck_assert_ptr_null(e->mr);
	e->imm = tag;
	memcpy(e->data, "12345678", 8);	/* the copy's room is there (ASan) */
	return e;
}

/* Pushed 1 2 3, popped in that order; a popped head put back comes out
 * first again, also into an emptied queue (the tail follows); counts and
 * the most at once. */
START_TEST(order_and_put_back)
{
	struct op_queue q;
	struct queued_op *e;

	op_queue_init(&q, 3);
	ck_assert_ptr_null(op_queue_pop(&q));
	for (uint32_t i = 1; i <= 3; i++) {
		ck_assert(op_queue_has_room(&q));
		op_queue_push(&q, entry(i));
	}
	ck_assert(!op_queue_has_room(&q));
	ck_assert_uint_eq(q.n, 3);
	ck_assert_uint_eq(q.most, 3);
	e = op_queue_pop(&q);
	ck_assert_uint_eq(e->imm, 1);
	op_queue_unpop(&q, e);
	ck_assert_uint_eq(q.n, 3);
	ck_assert_uint_eq(q.total, 3);	/* a put-back is no new call */
	for (uint32_t i = 1; i <= 3; i++) {
		e = op_queue_pop(&q);
		ck_assert_uint_eq(e->imm, i);
		free(e);
	}
	ck_assert_ptr_null(op_queue_pop(&q));
	ck_assert_uint_eq(q.n, 0);
	/* Emptied: a put-back and a push after it keep their order. */
	op_queue_push(&q, entry(7));
	e = op_queue_pop(&q);
	op_queue_unpop(&q, e);
	op_queue_push(&q, entry(8));
	e = op_queue_pop(&q);
	ck_assert_uint_eq(e->imm, 7);
	free(e);
	e = op_queue_pop(&q);
	ck_assert_uint_eq(e->imm, 8);
	free(e);
	ck_assert_ptr_null(q.head);
	ck_assert_ptr_eq(q.tail, &q.head);
	ck_assert_uint_eq(q.total, 5);
	ck_assert_uint_eq(q.most, 3);
}
END_TEST

/* A queue of 0 has no room: the connection refuses as without one. */
START_TEST(zero_is_no_queue)
{
	struct op_queue q;

	op_queue_init(&q, 0);
	ck_assert(!op_queue_has_room(&q));
	op_queue_set_draining(&q, 1);
	ck_assert_uint_eq(q.draining, 1);
	op_queue_set_draining(&q, 0);
	ck_assert_uint_eq(q.draining, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("op_queue");
	TCase *tc = tcase_create("list");

	tcase_add_test(tc, order_and_put_back);
	tcase_add_test(tc, zero_is_no_queue);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_VERBOSE);
}
