/* heap.c: the intrusive binary min-heap: a pointer tree kept complete by each node's position. */
#include "config.h"

#include "heap.h"

void heap_init(struct heap *h, heap_less_fn less)
{
	h->root = NULL;
	h->n = 0;
	h->less = less;
}

/* The link that holds (or will hold) the node at position k, and its parent:
 * the bits of k below the top one, high to low, say left (0) or right (1). */
static struct heap_node **link_at(struct heap *h, size_t k, struct heap_node **parent)
{
	struct heap_node **link = &h->root;
	int bit = 0;

	while ((k >> bit) > 1)
		bit++;
	*parent = NULL;
	while (bit-- > 0) {
		*parent = *link;
		link = (k >> bit) & 1 ? &(*link)->right : &(*link)->left;
	}
	return link;
}

/* The link in n's parent (or the root) that points at n. */
static struct heap_node **link_of(struct heap *h, struct heap_node *n)
{
	if (!n->parent)
		return &h->root;
	return n->parent->left == n ? &n->parent->left : &n->parent->right;
}

/* Swaps child c with its parent p: c takes p's place (links and position). */
static void swap_with_parent(struct heap *h, struct heap_node *p, struct heap_node *c)
{
	struct heap_node t = *p, *sibling;

	*link_of(h, p) = c;
	*p = *c;
	*c = t;
	p->parent = c;
	if (c->left == c) {
		c->left = p;
		sibling = c->right;
	} else {
		c->right = p;
		sibling = c->left;
	}
	if (sibling)
		sibling->parent = c;
	if (p->left)
		p->left->parent = p;
	if (p->right)
		p->right->parent = p;
}

static void sift_up(struct heap *h, struct heap_node *n)
{
	while (n->parent && h->less(n, n->parent))
		swap_with_parent(h, n->parent, n);
}

static void sift_down(struct heap *h, struct heap_node *n)
{
	for (;;) {
		struct heap_node *least = n;

		if (n->left && h->less(n->left, least))
			least = n->left;
		if (n->right && h->less(n->right, least))
			least = n->right;
		if (least == n)
			return;
		swap_with_parent(h, n, least);
	}
}

void heap_insert(struct heap *h, struct heap_node *n)
{
	struct heap_node *parent, **link = link_at(h, h->n + 1, &parent);

	n->left = n->right = NULL;
	n->parent = parent;
	n->idx = ++h->n;
	*link = n;
	sift_up(h, n);
}

void heap_remove(struct heap *h, struct heap_node *n)
{
	struct heap_node *parent, **link = link_at(h, h->n, &parent), *last = *link;

	/* The last node leaves its place and fills n's. */
	*link = NULL;
	h->n--;
	if (last != n) {
		last->left = n->left;
		last->right = n->right;
		last->parent = n->parent;
		last->idx = n->idx;
		*link_of(h, n) = last;
		if (last->left)
			last->left->parent = last;
		if (last->right)
			last->right->parent = last;
		sift_down(h, last);
		sift_up(h, last);
	}
	n->left = n->right = n->parent = NULL;
	n->idx = 0;
}

void heap_update(struct heap *h, struct heap_node *n)
{
	sift_up(h, n);
	sift_down(h, n);
}

struct heap_node *heap_pop(struct heap *h)
{
	struct heap_node *n = h->root;

	if (n)
		heap_remove(h, n);
	return n;
}
