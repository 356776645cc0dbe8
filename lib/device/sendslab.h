/* sendslab.h: a device's registered slots for send copies, shared by all its connections. */
#ifndef EZ_DEVICE_SENDSLAB_H
#define EZ_DEVICE_SENDSLAB_H

#include <stddef.h>
#include <stdint.h>

/* A copied send needs registered memory until its completion. Registering
 * it per connection (send_depth x max_msg_size) cost 0.4-0.5 ms of every
 * connection's setup on Soft-RoCE, and pinned memory in proportion to the
 * connections, not to the sends in flight. Here a device keeps slots by
 * size class (powers of two from 64 B, SLAB_MIN_SHIFT), carved from chunks that
 * are registered when a class runs dry: setup registers nothing, and what
 * stays registered follows the copies in flight, per class (sendslab_trim
 * gives back what a burst left). */
#define SLAB_MIN_SHIFT 6	/* 64-byte slots: one cache line */
#define SLAB_CLASSES 26		/* up to 2^31-byte slots */

struct slab_chunk;

struct slab_slot {
	struct slab_slot *next;	/* its chunk's free list */
	uint8_t *addr;
	uint32_t lkey;
	uint32_t cls;
	struct slab_chunk *chunk;
};

/* Each chunk keeps its own free slots, and slots are handed out from the
 * oldest chunk that has one: under a lighter load the newer chunks empty,
 * and an empty one that handed out nothing for a whole trim period is
 * deregistered (sendslab_trim). A class's first chunk, the smallest, stays. */
struct slab_chunk {
	struct slab_chunk *next;	/* the class's chunks, oldest first */
	uint8_t *base;
	size_t size;
	void *mr;		/* what reg returned */
	struct slab_slot *slots;
	struct slab_slot *free;
	uint32_t nslots, nfree;
	int used;		/* handed out a slot since the last trim pass */
};

struct slab_class {
	struct slab_chunk *chunks;	/* oldest first */
	size_t next_chunk;	/* bytes of the next chunk; doubles to SLAB_MAX_CHUNK */
	uint32_t nfree, nslots;
};

/* How chunks are registered: verbs by default (sendslab_init); a unit test
 * supplies its own. reg returns a handle (NULL and errno on failure) and
 * the local key. */
struct slab_ops {
	void *(*reg)(void *arg, void *addr, size_t len, uint32_t *lkey);
	int (*dereg)(void *arg, void *mr);
	void *arg;
};

struct sendslab {
	struct slab_ops ops;
	struct slab_class cls[SLAB_CLASSES];
	uint64_t registrations;	/* chunks registered so far */
	uint64_t bytes_registered;	/* registered now */
	uint32_t slots_out;	/* handed out, not yet back */
	uint32_t extra_chunks;	/* chunks beyond each class's first: what a trim may release */
};

/* Registers chunks on pd with ibv_reg_mr (local access only: the device
 * reads the copies, no peer touches them). */
void sendslab_init(struct sendslab *s, void *pd);
void sendslab_init_ops(struct sendslab *s, const struct slab_ops *ops);
/* Deregisters and frees every chunk; logs slots still handed out. */
void sendslab_fini(struct sendslab *s, const char *devname);
/* A slot of at least len bytes (1 <= len <= 2^31): the smallest class that
 * fits, registering a chunk for it if it has no free slot. 0, or a
 * negative errno with the reason in the thread's error (ezi_fail). */
int sendslab_get(struct sendslab *s, size_t len, struct slab_slot **out);
void sendslab_put(struct sendslab *s, struct slab_slot *slot);
/* One trim pass: deregisters and frees every chunk but each class's first
 * that has all its slots back and handed none out since the previous pass.
 * Called every SLAB_TRIM_MS while extra_chunks is not 0, a chunk goes after
 * one to two idle periods. Returns the chunks released. */
#define SLAB_TRIM_MS 5000
unsigned int sendslab_trim(struct sendslab *s, const char *devname);
/* The class of len bytes, and its slot size (pure; for tests). */
unsigned int sendslab_class(size_t len);
size_t sendslab_class_size(unsigned int cls);

#endif
