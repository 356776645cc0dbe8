/* bigbuf.c: the device's cache of registered large buffers (rendezvous sends and fetches). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "bigbuf.h"
#include "base/error.h"
#include "base/log.h"

struct bigbuf_cache {
	struct bigbuf *free[BIGBUF_CLASSES];
	size_t cached;		/* bytes on the free lists */
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
	free(b->mem);
	srqpool_desc_put(&b->desc, 1, SRQPOOL_VOID_RELEASED);
	free(b);
}

/* device_close(): every cached buffer goes (the application holds none:
 * ez_ctx_free() refuses while it does). */
static void cache_free(struct device *dev)
{
	struct bigbuf_cache *c = dev->big_cache;

	for (uint32_t i = 0; c && i < BIGBUF_CLASSES; i++)
		while (c->free[i]) {
			struct bigbuf *b = c->free[i];

			c->free[i] = b->next;
			bigbuf_destroy(b);
		}
	free(c);
	dev->big_cache = NULL;
}

static struct bigbuf_cache *cache_of(struct device *dev)
{
	if (!dev->big_cache) {
		dev->big_cache = calloc(1, sizeof(struct bigbuf_cache));
		if (dev->big_cache)
			dev->big_cache_free = cache_free;
	}
	return dev->big_cache;
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
	if ((b = c->free[cls])) {
		c->free[cls] = b->next;
		c->cached -= b->size;
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
	if (posix_memalign(&b->mem, 4096, b->size)) {
		srqpool_desc_put(&b->desc, 1, SRQPOOL_VOID_RELEASED);
		free(b);
		return ezi_fail(-ENOMEM, "large message buffer of %zu bytes: out of memory", len);
	}
	ret = mr_reg(dev, b->mem, b->size, EZ_MR_REMOTE_READ, &b->mr);
	if (ret) {
		free(b->mem);
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

	if (!c || c->cached + b->size > BIGBUF_CACHE_MAX) {
		bigbuf_destroy(b);
		return;
	}
	b->next = c->free[b->cls];
	c->free[b->cls] = b;
	c->cached += b->size;
}
