/* extents.c: first-fit allocation of byte ranges inside one region, with coalescing (no verbs calls). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "extents.h"

int extents_init(struct extents *x, size_t size)
{
	x->size = size;
	x->used = 0;
	x->nlive = 0;
	x->free = NULL;
	x->spare = NULL;
	if (!size)
		return 0;
	x->free = malloc(sizeof(*x->free));
	if (!x->free)
		return -ENOMEM;
	x->free->off = 0;
	x->free->len = size;
	x->free->next = NULL;
	return 0;
}

static void free_list(struct extent *e)
{
	while (e) {
		struct extent *next = e->next;

		free(e);
		e = next;
	}
}

void extents_fini(struct extents *x)
{
	free_list(x->free);
	free_list(x->spare);
	x->free = NULL;
	x->spare = NULL;
	x->used = 0;
	x->nlive = 0;
}

int extents_alloc(struct extents *x, size_t len, size_t *off)
{
	struct extent **pp, *e;

	if (!len || len > x->size - x->used)
		return -ENOSPC;
	/* First fit: the free list is kept in address order, so the low end of
	 * the region fills first and the high end stays whole for large asks. */
	for (pp = &x->free; (e = *pp); pp = &e->next) {
		if (e->len < len)
			continue;
		if (e->len == len) {
			/* The node goes to the spares: it will describe the range
			 * when it comes back. */
			*pp = e->next;
			e->next = x->spare;
			x->spare = e;
		} else {
			struct extent *s = malloc(sizeof(*s));

			if (!s)
				return -ENOMEM;
			s->next = x->spare;
			x->spare = s;
		}
		*off = e->off;
		if (e != x->spare) {
			e->off += len;
			e->len -= len;
		}
		x->used += len;
		x->nlive++;
		return 0;
	}
	return -ENOSPC;
}

int extents_free(struct extents *x, size_t off, size_t len)
{
	struct extent **pp = &x->free, *prev = NULL, *next, *e = x->spare;

	if (!len || off > x->size || len > x->size - off || len > x->used || !x->nlive)
		return -EINVAL;
	while (*pp && (*pp)->off < off) {
		prev = *pp;
		pp = &prev->next;
	}
	next = *pp;
	/* A range that overlaps a free one was never handed out as given. */
	if ((prev && prev->off + prev->len > off) || (next && off + len > next->off))
		return -EINVAL;
	/* Every range handed out has its spare node (extents_alloc), so
	 * giving one back never needs memory. */
	x->spare = e->next;
	if (prev && prev->off + prev->len == off) {
		prev->len += len;
		if (next && prev->off + prev->len == next->off) {
			prev->len += next->len;
			prev->next = next->next;
			free(next);
		}
		free(e);
	} else if (next && off + len == next->off) {
		next->off = off;
		next->len += len;
		free(e);
	} else {
		e->off = off;
		e->len = len;
		e->next = next;
		*pp = e;
	}
	x->used -= len;
	x->nlive--;
	return 0;
}
