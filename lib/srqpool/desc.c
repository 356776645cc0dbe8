/* desc.c: buffer descriptors' memory, type-stable: never given back to malloc, reused only for descriptors, so that a handle kept past its pool's free still points at a descriptor. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "pool.h"

/* A fresh chunk holds at least this many (a large message's buffer takes one). */
#define DESC_CHUNK_MIN 64u

/* Descriptors come in chunks, each kept on the list of every chunk made so
 * that leak checkers see them reachable: they are the library's for the
 * process's life, as the handles pointing into them may be the
 * application's for as long. */
struct desc_chunk {
	struct desc_chunk *next;
	uint32_t n;
	struct ez_buf d[];
};

/* What a void descriptor's pool pointer names: no pool. Its owner's token
 * is 0, which no thread's is (ezi_thread_token() is an address), so the
 * owner check every buffer call makes first fails on it and the refusal
 * (buf.c) sees the descriptor void without reading freed memory. */
static const struct ezi_owner no_owner;
struct ez_srqpool srqpool_no_pool = { .owner = &no_owner };

/* Pools live on their contexts' threads: the spare list is shared. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ez_buf *spare;
static struct desc_chunk *chunks;

/* Keeps the generation (a handle of the descriptor's earlier lives must
 * not match its next deliveries); the rest says only "void, and why". */
static void desc_void(struct ez_buf *b, enum srqpool_void_why why)
{
	uint16_t gen = b->gen;

	memset(b, 0, sizeof(*b));
	b->gen = gen;
	b->pool = &srqpool_no_pool;
	b->state = SRQPOOL_BUF_VOID;
	b->why = (uint8_t)why;
}

/* Called with the lock held. */
static int chunk_new(uint32_t n)
{
	struct desc_chunk *c;

	if (n < DESC_CHUNK_MIN)
		n = DESC_CHUNK_MIN;
	c = calloc(1, sizeof(*c) + (size_t)n * sizeof(struct ez_buf));
	if (!c)
		return ezi_fail(-ENOMEM, "srqpool: no memory for %u buffer descriptors", n);
	if (((uintptr_t)&c->d[n] - 1) & ~(uintptr_t)SRQPOOL_ADDR_MASK) {
		/* Never seen on Linux without an mmap hint above 2^47/2^48. */
		int rc = ezi_fail(-EOPNOTSUPP, "srqpool: buffer descriptors at %p use the top 16 "
				  "address bits that buffer handles carry their generation in",
				  (void *)c->d);

		free(c);
		return rc;
	}
	c->n = n;
	c->next = chunks;
	chunks = c;
	/* Pushed in reverse: taken in address order. */
	for (uint32_t i = n; i-- > 0;) {
		desc_void(&c->d[i], SRQPOOL_VOID_POOL_FREED);
		c->d[i].next = spare;
		spare = &c->d[i];
	}
	return 0;
}

int srqpool_desc_get(uint32_t n, struct ez_buf **out)
{
	uint32_t k = 0, have = 0;
	int rc = 0;

	pthread_mutex_lock(&lock);
	for (struct ez_buf *b = spare; b && have < n; b = b->next)
		have++;
	if (have < n)
		rc = chunk_new(n - have);
	for (; !rc && k < n; k++) {
		out[k] = spare;
		spare = spare->next;
		out[k]->next = NULL;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

void srqpool_desc_put(struct ez_buf *const *descs, uint32_t n, enum srqpool_void_why why)
{
	for (uint32_t i = 0; i < n; i++)
		desc_void(descs[i], why);
	pthread_mutex_lock(&lock);
	for (uint32_t i = n; i-- > 0;) {
		descs[i]->next = spare;
		spare = descs[i];
	}
	pthread_mutex_unlock(&lock);
}

void srqpool_desc_void(struct ez_buf *b, enum srqpool_void_why why)
{
	desc_void(b, why);
}
