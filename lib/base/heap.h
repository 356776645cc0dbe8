/* heap.h: an intrusive binary min-heap (no allocation: the nodes are the tree), for the loop's timers. */
#ifndef EZ_BASE_HEAP_H
#define EZ_BASE_HEAP_H

#include <stddef.h>

/* Embedded in the element. idx is the node's position in the implicit
 * complete tree (1 is the root, k's children are 2k and 2k+1), 0 while the
 * node is in no heap: it finds the path from the root to the last node in
 * O(log n) without an array, so inserting never allocates and never fails. */
struct heap_node {
	struct heap_node *left, *right, *parent;
	size_t idx;
};

/* Whether a orders strictly before b. */
typedef int (*heap_less_fn)(const struct heap_node *a, const struct heap_node *b);

struct heap {
	struct heap_node *root;
	size_t n;
	heap_less_fn less;
};

void heap_init(struct heap *h, heap_less_fn less);
/* O(log n). n must not be in a heap. */
void heap_insert(struct heap *h, struct heap_node *n);
/* O(log n). n must be in h. */
void heap_remove(struct heap *h, struct heap_node *n);
/* After n's key changed: moves it to its place, O(log n). */
void heap_update(struct heap *h, struct heap_node *n);
/* The least node (NULL when empty), and the same taken out. */
static inline struct heap_node *heap_min(const struct heap *h)
{
	return h->root;
}
struct heap_node *heap_pop(struct heap *h);

static inline int heap_node_in_heap(const struct heap_node *n)
{
	return n->idx != 0;
}

#endif
