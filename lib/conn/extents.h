/* extents.h: first-fit allocation of byte ranges inside one region (pure logic, no verbs). */
#ifndef EZ_CONN_EXTENTS_H
#define EZ_CONN_EXTENTS_H

#include <stddef.h>

struct extent {
	size_t off, len;
	struct extent *next;	/* free ranges in address order */
};

struct extents {
	size_t size;		/* of the region */
	size_t used;		/* bytes handed out */
	size_t nlive;		/* ranges handed out */
	struct extent *free;
	struct extent *spare;	/* one node per range handed out */
};

/* A region of size bytes, all free. 0 or -ENOMEM. */
int extents_init(struct extents *x, size_t size);
void extents_fini(struct extents *x);
/* The lowest free range of len bytes: 0 and *off, -ENOSPC, or -ENOMEM.
 * The caller rounds len to its alignment; ranges are then aligned alike. */
int extents_alloc(struct extents *x, size_t len, size_t *off);
/* Gives back a range extents_alloc() returned, merging it with its free
 * neighbours; needs no memory. -EINVAL for a range that overlaps a free
 * one or lies outside the region. */
int extents_free(struct extents *x, size_t off, size_t len);

#endif
