/* test_heap.c: the intrusive min-heap against a plain array: random inserts, removals of arbitrary nodes, pops in order, updates. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/heap.h"
#include "../checkmain.h"

#define NODES 512
#define STEPS 20000

struct item {
	struct heap_node node;
	uint32_t key;
	uint32_t seq;		/* ties in insertion order, as the loop's timers */
};

static int item_less(const struct heap_node *a, const struct heap_node *b)
{
	const struct item *x = (const struct item *)a, *y = (const struct item *)b;

	return x->key != y->key ? x->key < y->key : x->seq < y->seq;
}

static struct item items[NODES];
static int in[NODES];		/* the reference: which items are in the heap */

/* The reference's least item (-1: empty). */
static int ref_min(void)
{
	int best = -1;

	for (int i = 0; i < NODES; i++)
		if (in[i] && (best < 0 || item_less(&items[i].node, &items[best].node)))
			best = i;
	return best;
}

/* Every node's children order after it, links agree, positions are 1..n. */
static size_t check_tree(const struct heap_node *n, const struct heap_node *parent, size_t idx)
{
	if (!n)
		return 0;
	ck_assert_ptr_eq(n->parent, parent);
	ck_assert_uint_eq(n->idx, idx);
	if (parent)
		ck_assert(!item_less(n, parent));
	return 1 + check_tree(n->left, n, 2 * idx) + check_tree(n->right, n, 2 * idx + 1);
}

START_TEST(random_against_reference)
{
	struct heap h;
	uint32_t seq = 0;
	size_t count = 0;

	srand(12345);
	heap_init(&h, item_less);
	for (int step = 0; step < STEPS; step++) {
		int i = rand() % NODES, op = rand() % 4;

		if (op == 0 && count) {
			int want = ref_min();
			struct heap_node *got = heap_pop(&h);

			ck_assert_ptr_eq(got, &items[want].node);
			ck_assert(!heap_node_in_heap(got));
			in[want] = 0;
			count--;
		} else if (in[i] && op == 1) {
			heap_remove(&h, &items[i].node);	/* anywhere in the tree */
			ck_assert(!heap_node_in_heap(&items[i].node));
			in[i] = 0;
			count--;
		} else if (in[i] && op == 2) {
			items[i].key = (uint32_t)rand() % 1000;
			items[i].seq = seq++;
			heap_update(&h, &items[i].node);
		} else if (!in[i]) {
			items[i].key = (uint32_t)rand() % 1000;
			items[i].seq = seq++;
			heap_insert(&h, &items[i].node);
			in[i] = 1;
			count++;
		}
		ck_assert_uint_eq(h.n, count);
		if (step % 97 == 0)
			ck_assert_uint_eq(check_tree(h.root, NULL, 1), count);
		if (count)
			ck_assert_ptr_eq(heap_min(&h), &items[ref_min()].node);
		else
			ck_assert_ptr_null(heap_min(&h));
	}
	/* Drained, it comes out in order. */
	for (struct item *prev = NULL, *it; count; count--, prev = it) {
		it = (struct item *)heap_pop(&h);
		if (prev)
			ck_assert(!item_less(&it->node, &prev->node));
	}
	ck_assert_ptr_null(heap_pop(&h));
}
END_TEST

START_TEST(remove_root_last_and_only)
{
	struct heap h;
	struct item a = { .key = 1 }, b = { .key = 2 }, c = { .key = 3 };

	heap_init(&h, item_less);
	heap_insert(&h, &a.node);
	heap_remove(&h, &a.node);
	ck_assert_ptr_null(h.root);
	heap_insert(&h, &c.node);
	heap_insert(&h, &b.node);
	heap_insert(&h, &a.node);
	ck_assert_ptr_eq(heap_min(&h), &a.node);
	heap_remove(&h, &c.node);	/* a leaf, not the last one */
	ck_assert_uint_eq(check_tree(h.root, NULL, 1), 2);
	heap_remove(&h, &b.node);	/* the last node itself */
	ck_assert_ptr_eq(heap_pop(&h), &a.node);
	ck_assert_uint_eq(h.n, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("heap");
	TCase *tc = tcase_create("heap");

	tcase_add_test(tc, random_against_reference);
	tcase_add_test(tc, remove_root_last_and_only);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
