/* sendslab.c: a device's registered memory for send copies, carved per connection. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "sendslab.h"

#define SENDSLAB_FIRST_CHUNK (1u << 20)
#define SENDSLAB_MAX_CHUNK (16u << 20)
#define SENDSLAB_ALIGN 64u
#define PAGE 4096u

void sendslab_init(struct sendslab *s, struct ibv_pd *pd)
{
	memset(s, 0, sizeof(*s));
	s->pd = pd;
	s->next_size = SENDSLAB_FIRST_CHUNK;
}

static void chunk_free(struct sendslab *s, struct slab_chunk *c, const char *devname)
{
	int err;

	if (c->mr && (err = ibv_dereg_mr(c->mr)))
		ezi_log_err("ibv_dereg_mr(send slab of %s, %zu bytes): %s", devname ? devname : "?",
			    c->size, ez_strerror(err));
	extents_fini(&c->ranges);
	free(c->base);
	free(c);
	s->nchunks--;
}

void sendslab_fini(struct sendslab *s, const char *devname)
{
	while (s->chunks) {
		struct slab_chunk *c = s->chunks;

		if (c->ranges.nlive)
			ezi_log_err("send slab of %s: %zu ranges still handed out at close",
				    devname ? devname : "?", c->ranges.nlive);
		s->chunks = c->next;
		chunk_free(s, c, devname);
	}
}

static int chunk_new(struct sendslab *s, size_t need, struct slab_chunk **out, char *errmsg,
		     size_t errlen)
{
	size_t size = s->next_size > need ? s->next_size : need;
	struct slab_chunk *c;
	int ret;

	size = (size + PAGE - 1) & ~(size_t)(PAGE - 1);
	c = calloc(1, sizeof(*c));
	if (!c)
		return ezi_fail_into(errmsg, errlen, -ENOMEM, "send slab: out of memory");
	c->size = size;
	c->base = aligned_alloc(PAGE, size);
	if (!c->base) {
		free(c);
		return ezi_fail_into(errmsg, errlen, -ENOMEM,
				     "send slab (%zu bytes): out of memory", size);
	}
	ret = extents_init(&c->ranges, size);
	if (ret) {
		free(c->base);
		free(c);
		return ezi_fail_into(errmsg, errlen, ret, "send slab: out of memory");
	}
	/* Local read only: the device reads the copies, no peer touches them. */
	c->mr = ibv_reg_mr(s->pd, c->base, size, 0);
	if (!c->mr) {
		ret = -errno;
		extents_fini(&c->ranges);
		free(c->base);
		free(c);
		return ezi_fail_into(errmsg, errlen, ret,
				     "ibv_reg_mr(send buffers, %zu bytes, local read): %s", size,
				     ez_strerror(ret));
	}
	s->registrations++;
	s->nchunks++;
	c->next = s->chunks;
	s->chunks = c;
	if (s->next_size < SENDSLAB_MAX_CHUNK)
		s->next_size *= 2;
	*out = c;
	return 0;
}

int sendslab_get(struct sendslab *s, size_t len, struct slab_range *r, char *errmsg,
		 size_t errlen)
{
	struct slab_chunk *c;
	size_t off;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!len)
		return 0;
	len = (len + SENDSLAB_ALIGN - 1) & ~(size_t)(SENDSLAB_ALIGN - 1);
	for (c = s->chunks; c; c = c->next)
		if (!(ret = extents_alloc(&c->ranges, len, &off)))
			goto found;
		else if (ret != -ENOSPC)
			return ezi_fail_into(errmsg, errlen, ret, "send slab: out of memory");
	ret = chunk_new(s, len, &c, errmsg, errlen);
	if (ret)
		return ret;
	ret = extents_alloc(&c->ranges, len, &off);
	if (ret)
		return ezi_fail_into(errmsg, errlen, ret, "send slab: out of memory");
found:
	r->chunk = c;
	r->addr = c->base + off;
	r->len = len;
	r->lkey = c->mr->lkey;
	return 0;
}

void sendslab_put(struct sendslab *s, struct slab_range *r)
{
	struct slab_chunk *c = r->chunk, **pp, *o;
	int ret;

	if (!c)
		return;
	ret = extents_free(&c->ranges, (size_t)(r->addr - c->base), r->len);
	if (ret)
		ezi_log_err("send slab: range %p+%zu was not handed out (%s)", (void *)r->addr,
			    r->len, ez_strerror(ret));
	memset(r, 0, sizeof(*r));
	if (c->ranges.nlive)
		return;
	/* Keep one empty chunk for the next connection; a second goes. */
	for (o = s->chunks; o; o = o->next)
		if (o != c && !o->ranges.nlive)
			break;
	if (!o)
		return;
	for (pp = &s->chunks; *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	chunk_free(s, c, NULL);
}
