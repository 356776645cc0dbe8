/* bigbuf.c: the device's cache of registered large buffers (rendezvous sends and fetches), emptied when idle. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bigbuf.h"
#include "device.h"
#include "base/error.h"
#include "base/log.h"

/* The free lists; rep.cached is their bytes. gets counts bigbuf_get()
 * calls, gets_seen its value when the trim timer was last armed: equal at
 * the timer, nothing was taken for a whole period. */
struct bigbuf_cache {
	struct bigbuf *free[BIGBUF_CLASSES];
	struct srqpool_big_report rep;
	struct device *dev;
	struct loop_timer trim;
	uint64_t gets, gets_seen;
};

static uint32_t class_of(size_t len)
{
	uint32_t c = 0;

	while (((size_t)1 << (c + BIGBUF_MIN_SHIFT)) < len)
		c++;
	return c;
}

static void bigbuf_destroy(struct bigbuf *b)
{
	if (mr_dereg(b->mr))
		ezi_log_err("bigbuf: %s", ez_errmsg());
	free(b->mr);
	if (munmap(b->mem, b->size))
		ezi_log_err("bigbuf: munmap of %zu bytes: %s", b->size, ez_strerror(errno));
	srqpool_desc_put(&b->desc, 1, SRQPOOL_VOID_RELEASED);
	free(b);
}

/* Every cached buffer goes; the bytes they held. */
static uint64_t cache_empty(struct bigbuf_cache *c)
{
	uint64_t bytes = c->rep.cached;

	for (uint32_t i = 0; i < BIGBUF_CLASSES; i++)
		while (c->free[i]) {
			struct bigbuf *b = c->free[i];

			c->free[i] = b->next;
			bigbuf_destroy(b);
		}
	c->rep.cached = 0;
	return bytes;
}

/* device_close(): every cached buffer goes (the application holds none:
 * ez_ctx_free() refuses while it does). */
static void cache_free(struct device *dev)
{
	struct bigbuf_cache *c = dev->big_cache;

	if (!c)
		return;
	loop_timer_stop(dev->loop, &c->trim);
	cache_empty(c);
	free(c);
	dev->big_cache = NULL;
}

/* BIGBUF_TRIM_MS after a buffer was cached: empty when nothing was taken
 * since, else look again a period later. */
static void on_trim(struct loop_timer *t)
{
	struct bigbuf_cache *c = container_of(t, struct bigbuf_cache, trim);
	uint64_t bytes;

	if (c->gets != c->gets_seen) {
		c->gets_seen = c->gets;
		if (c->rep.cached)
			loop_timer_start(c->dev->loop, &c->trim, BIGBUF_TRIM_MS);
		return;
	}
	bytes = cache_empty(c);
	c->rep.trimmed += bytes;
	ezi_log_debug("device %s: %llu bytes of large-message buffers idle for %u ms, deregistered",
		      c->dev->name, (unsigned long long)bytes, BIGBUF_TRIM_MS);
}

static struct bigbuf_cache *cache_of(struct device *dev)
{
	struct bigbuf_cache *c = dev->big_cache;

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->dev = dev;
		c->trim.fn = on_trim;
		dev->big_cache = c;
		dev->big_cache_free = cache_free;
	}
	return c;
}

const struct srqpool_big_report *bigbuf_report(struct device *dev)
{
	struct bigbuf_cache *c = cache_of(dev);

	return c ? &c->rep : NULL;
}

size_t bigbuf_size_for(size_t len)
{
	return (size_t)1 << (class_of(len) + BIGBUF_MIN_SHIFT);
}

int bigbuf_get(struct device *dev, size_t len, struct bigbuf **out)
{
	struct bigbuf_cache *c = cache_of(dev);
	uint32_t cls = class_of(len);
	struct bigbuf *b;
	int ret;

	if (!c || cls >= BIGBUF_CLASSES)
		return ezi_fail(c ? -EMSGSIZE : -ENOMEM, "large message buffer of %zu bytes: %s", len,
				c ? "above 2 GiB" : "out of memory");
	c->gets++;
	if ((b = c->free[cls])) {
		c->free[cls] = b->next;
		c->rep.cached -= b->size;
		*out = b;
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return ezi_fail(-ENOMEM, "large message buffer of %zu bytes: out of memory", len);
	ret = srqpool_desc_get(1, &b->desc);
	if (ret) {
		free(b);
		return ret;
	}
	b->size = (size_t)1 << (cls + BIGBUF_MIN_SHIFT);
	b->cls = cls;
	b->dev = dev;
	b->mem = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->mem == MAP_FAILED) {
		ret = -errno;
		srqpool_desc_put(&b->desc, 1, SRQPOOL_VOID_RELEASED);
		free(b);
		return ezi_fail(ret, "large message buffer of %zu bytes: mmap of %zu bytes: %s", len,
				(size_t)1 << (cls + BIGBUF_MIN_SHIFT), ez_strerror(-ret));
	}
	ret = mr_reg(dev, b->mem, b->size, EZ_MR_REMOTE_READ, &b->mr);
	if (ret) {
		munmap(b->mem, b->size);
		srqpool_desc_put(&b->desc, 1, SRQPOOL_VOID_RELEASED);
		free(b);
		return ret;
	}
	*out = b;
	return 0;
}

void bigbuf_put(struct bigbuf *b)
{
	struct bigbuf_cache *c = b->dev->big_cache;

	if (!c || c->rep.cached + b->size > BIGBUF_CACHE_MAX) {
		bigbuf_destroy(b);
		return;
	}
	b->next = c->free[b->cls];
	c->free[b->cls] = b;
	c->rep.cached += b->size;
	if (!loop_timer_armed(&c->trim)) {
		c->gets_seen = c->gets;
		loop_timer_start(c->dev->loop, &c->trim, BIGBUF_TRIM_MS);
	}
}
