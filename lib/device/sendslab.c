/* sendslab.c: a device's registered slots for send copies, shared by all its connections. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/error.h"
#include "base/log.h"
#include "sendslab.h"

/* A class's first chunk is small (registration cost grows with the pages
 * pinned); each further one doubles, so a class that keeps growing
 * registers log2 times, not once per slot. */
#define SLAB_FIRST_CHUNK (64u << 10)
#define SLAB_MAX_CHUNK (4u << 20)
#define PAGE 4096u

static void *verbs_reg(void *pd, void *addr, size_t len, uint32_t *lkey)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, 0);

	if (mr)
		*lkey = mr->lkey;
	return mr;
}

static int verbs_dereg(void *pd, void *mr)
{
	(void)pd;
	return ibv_dereg_mr(mr);
}

void sendslab_init_ops(struct sendslab *s, const struct slab_ops *ops)
{
	memset(s, 0, sizeof(*s));
	s->ops = *ops;
	for (unsigned int c = 0; c < SLAB_CLASSES; c++)
		s->cls[c].next_chunk = SLAB_FIRST_CHUNK;
}

void sendslab_init(struct sendslab *s, void *pd)
{
	struct slab_ops ops = { .reg = verbs_reg, .dereg = verbs_dereg, .arg = pd };

	sendslab_init_ops(s, &ops);
}

unsigned int sendslab_class(size_t len)
{
	unsigned int c = 0;

	while (c + 1 < SLAB_CLASSES && sendslab_class_size(c) < len)
		c++;
	return c;
}

size_t sendslab_class_size(unsigned int cls)
{
	return (size_t)1 << (SLAB_MIN_SHIFT + cls);
}

static void chunk_free(struct sendslab *s, struct slab_chunk *ch, const char *devname)
{
	int err;

	if (ch->mr && (err = s->ops.dereg(s->ops.arg, ch->mr)))
		ezi_log_err("ibv_dereg_mr(send slots of %s, %zu bytes): %s", devname ? devname : "?",
			    ch->size, ez_strerror(err));
	s->bytes_registered -= ch->size;
	free(ch->slots);
	free(ch->base);
	free(ch);
}

void sendslab_fini(struct sendslab *s, const char *devname)
{
	if (s->slots_out)
		ezi_log_err("send slots of %s: %u still handed out at close", devname ? devname : "?",
			    s->slots_out);
	for (unsigned int c = 0; c < SLAB_CLASSES; c++) {
		struct slab_class *k = &s->cls[c];

		while (k->chunks) {
			struct slab_chunk *ch = k->chunks;

			k->chunks = ch->next;
			chunk_free(s, ch, devname);
		}
		k->nfree = k->nslots = 0;
	}
	s->extra_chunks = 0;
}

unsigned int sendslab_trim(struct sendslab *s, const char *devname)
{
	unsigned int released = 0;

	for (unsigned int c = 0; c < SLAB_CLASSES; c++) {
		struct slab_class *k = &s->cls[c];
		struct slab_chunk **pp;

		if (!k->chunks)
			continue;
		/* The first chunk stays whatever it did: start at the second. */
		for (pp = &k->chunks->next; *pp;) {
			struct slab_chunk *ch = *pp;

			if (ch->nfree == ch->nslots && !ch->used) {
				*pp = ch->next;
				k->nfree -= ch->nslots;
				k->nslots -= ch->nslots;
				s->extra_chunks--;
				/* The load that grew it has gone: grow by less next time. */
				if (k->next_chunk > SLAB_FIRST_CHUNK)
					k->next_chunk /= 2;
				chunk_free(s, ch, devname);
				released++;
				continue;
			}
			ch->used = 0;
			pp = &ch->next;
		}
	}
	return released;
}

/* Registers one more chunk for class c and puts its slots on the free list. */
static int class_grow(struct sendslab *s, unsigned int c)
{
	struct slab_class *k = &s->cls[c];
	size_t slot = sendslab_class_size(c);
	size_t size = k->next_chunk > slot ? k->next_chunk : slot;
	struct slab_chunk *ch, **pp;
	uint32_t lkey = 0, i;
	int ret;

	size = (size + PAGE - 1) & ~(size_t)(PAGE - 1);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return ezi_fail(-ENOMEM, "send slots: out of memory");
	ch->size = size;
	ch->nslots = (uint32_t)(size / slot);
	ch->base = aligned_alloc(PAGE, size);
	ch->slots = calloc(ch->nslots, sizeof(*ch->slots));
	if (!ch->base || !ch->slots) {
		free(ch->base);
		free(ch->slots);
		free(ch);
		return ezi_fail(-ENOMEM, "send slots (%zu bytes): out of memory", size);
	}
	ch->mr = s->ops.reg(s->ops.arg, ch->base, size, &lkey);
	if (!ch->mr) {
		ret = errno ? -errno : -ENOMEM;
		free(ch->base);
		free(ch->slots);
		free(ch);
		return ezi_fail(ret, "ibv_reg_mr(send slots, %zu bytes, local read): %s", size,
				ez_strerror(ret));
	}
	for (i = ch->nslots; i-- > 0;) {
		struct slab_slot *sl = &ch->slots[i];

		sl->addr = ch->base + (size_t)i * slot;
		sl->lkey = lkey;
		sl->cls = c;
		sl->chunk = ch;
		sl->next = ch->free;
		ch->free = sl;
	}
	ch->nfree = ch->nslots;
	k->nfree += ch->nslots;
	k->nslots += ch->nslots;
	/* Newest last: slots come from the oldest chunk that has one. */
	if (k->chunks)
		s->extra_chunks++;
	for (pp = &k->chunks; *pp; pp = &(*pp)->next)
		;
	*pp = ch;
	if (k->next_chunk < SLAB_MAX_CHUNK)
		k->next_chunk *= 2;
	s->registrations++;
	s->bytes_registered += size;
	return 0;
}

int sendslab_get(struct sendslab *s, size_t len, struct slab_slot **out)
{
	unsigned int c;
	struct slab_class *k;
	struct slab_chunk *ch;
	struct slab_slot *sl;
	int ret;

	if (!len || len > sendslab_class_size(SLAB_CLASSES - 1))
		return ezi_fail(-EINVAL, "send slots: no class for %zu bytes", len);
	c = sendslab_class(len);
	k = &s->cls[c];
	if (!k->nfree && (ret = class_grow(s, c)))
		return ret;
	/* The oldest chunk with a free slot: nearly always the first. */
	for (ch = k->chunks; !ch->nfree; ch = ch->next)
		;
	sl = ch->free;
	ch->free = sl->next;
	ch->nfree--;
	ch->used = 1;
	sl->next = NULL;
	k->nfree--;
	s->slots_out++;
	*out = sl;
	return 0;
}

void sendslab_put(struct sendslab *s, struct slab_slot *slot)
{
	struct slab_chunk *ch = slot->chunk;

	/* LIFO within a chunk: the slot used last is the one most likely
	 * still in cache. */
	slot->next = ch->free;
	ch->free = slot;
	ch->nfree++;
	s->cls[slot->cls].nfree++;
	s->slots_out--;
}
