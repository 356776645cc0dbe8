/* conn_pd.c: a connection's own protection domain (EZ_EXPORT_PD): the fallback of per-connection remote access where memory windows are not used. A peer's RDMA request is checked by the responder against the PD of the QP it arrives on, so a region registered on this PD alone is out of reach of every other connection, whatever key it guesses. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "conn_pd.h"
#include "base/log.h"

/* The connection's registration of one of the application's MRs, for its
 * local use (sends from it, the local side of READ and WRITE): no remote
 * access. */
struct conn_lreg {
	struct mr_copy c;	/* first: on_src_gone's container */
	struct conn_pd *owner;
	struct conn_lreg *next;	/* in its bucket */
};

/* The registrations are found by MR in a hash table (an application that
 * alternates between many MRs does not walk a list per op), with the last
 * one looked up in front: ops come in runs on one MR. */
struct conn_pd {
	struct ibv_pd *pd;
	int pool_has_pd;	/* the private pool deallocates it */
	struct sendslab slab;
	struct conn_lreg **buckets;
	unsigned int nbuckets;	/* a power of two, or 0 before the first */
	unsigned int nlregs;
	struct conn_lreg *last;
};

static unsigned int lreg_bucket(const struct conn_pd *p, const struct ez_mr *mr)
{
	uint64_t h = (uint64_t)(uintptr_t)mr * 0x9e3779b97f4a7c15ull;

	return (unsigned int)(h >> 32) & (p->nbuckets - 1);
}

/* Twice the buckets when the table is full (a load of 1): rehashes every
 * registration, at most log2(n) times in a connection's life. */
static int lregs_grow(struct conn_pd *p)
{
	unsigned int i, old_n = p->nbuckets, n = old_n ? old_n * 2 : 8;
	struct conn_lreg **old = p->buckets, **b = calloc(n, sizeof(*b));

	if (!b)
		return ezi_fail(-ENOMEM, "a connection's registrations of MRs: out of memory for %u buckets", n);
	p->buckets = b;
	p->nbuckets = n;
	for (i = 0; i < old_n; i++)
		while (old[i]) {
			struct conn_lreg *r = old[i];
			unsigned int k = lreg_bucket(p, r->c.src);

			old[i] = r->next;
			r->next = b[k];
			b[k] = r;
		}
	free(old);
	return 0;
}

static struct conn_lreg *lreg_find(const struct conn_pd *p, const struct ez_mr *mr)
{
	struct conn_lreg *r;

	if (!p->nbuckets)
		return NULL;
	for (r = p->buckets[lreg_bucket(p, mr)]; r && r->c.src != mr; r = r->next)
		;
	return r;
}

int conn_pd_choose(struct ez_conn *conn, struct device *dev)
{
	int asked = (conn->ctx->flags & EZ_CTX_EXPORT_PD) != 0;

	if (!asked && device_has_mw2(dev))
		return 0;
	if (conn->o.srqpool) {
		if (!asked)
			return 0;
		return ezi_fail(-EINVAL, "the context has a PD per connection (EZ_CTX_EXPORT_PD): a connection cannot receive from a shared pool (an SRQ belongs to one PD); leave ez_conn_opts.srqpool NULL");
	}
	return 1;
}

int conn_pd_open(struct ez_conn *conn, struct device *dev)
{
	struct conn_pd *p = calloc(1, sizeof(*p));

	if (!p)
		return ezi_fail(-ENOMEM, "a connection's own PD: out of memory");
	p->pd = ibv_alloc_pd(dev->verbs);
	if (!p->pd) {
		int err = errno ? errno : ENOMEM;

		free(p);
		return ezi_fail(-err, "ibv_alloc_pd(%s, a connection's own PD): %s", dev->name,
				ez_strerror(err));
	}
	sendslab_init(&p->slab, p->pd);
	conn->own_pd = p;
	return 0;
}

struct ibv_pd *conn_pd_of(const struct ez_conn *conn)
{
	return conn->own_pd ? conn->own_pd->pd : conn->dev->pd;
}

void conn_pd_handed_to_pool(struct ez_conn *conn)
{
	conn->own_pd->pool_has_pd = 1;
}

static void lreg_free(struct conn_lreg *r)
{
	struct conn_pd *p = r->owner;
	struct conn_lreg **pp;

	for (pp = &p->buckets[lreg_bucket(p, r->c.src)]; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	p->nlregs--;
	if (p->last == r)
		p->last = NULL;
	mr_copy_dereg(&r->c);
	free(r);
}

/* ez_mr_dereg: refused while an op uses the MR, so no op holds this key. */
static void lreg_src_gone(struct mr_copy *c)
{
	lreg_free((struct conn_lreg *)c);
}

int conn_pd_lkey_slow(struct ez_conn *conn, struct ez_mr *mr, uint32_t *lkey)
{
	struct conn_pd *p = conn->own_pd;
	struct conn_lreg *r = p->last;
	int ret;

	if (!r || r->c.src != mr)
		r = lreg_find(p, mr);
	if (!r) {
		unsigned int k;

		if (p->nlregs >= p->nbuckets && (ret = lregs_grow(p)))
			return ret;
		r = calloc(1, sizeof(*r));
		if (!r)
			return ezi_fail(-ENOMEM, "a connection's registration of an MR: out of memory");
		ret = mr_copy_reg(mr, p->pd, 0, mr->len, 0, &r->c);
		if (ret) {
			free(r);
			return ret;
		}
		r->c.on_src_gone = lreg_src_gone;
		r->owner = p;
		k = lreg_bucket(p, mr);
		r->next = p->buckets[k];
		p->buckets[k] = r;
		p->nlregs++;
	}
	p->last = r;
	*lkey = r->c.mr->lkey;
	return 0;
}

int conn_pd_slot_get(struct ez_conn *conn, size_t len, struct slab_slot **out)
{
	return sendslab_get(&conn->own_pd->slab, len, out);
}

void conn_pd_slot_put(struct ez_conn *conn, struct slab_slot *slot)
{
	sendslab_put(&conn->own_pd->slab, slot);
}

int conn_pd_export_reg(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		       int access, struct mr_copy *c)
{
	return mr_copy_reg(mr, conn->own_pd->pd, off, len, access, c);
}

void conn_pd_close(struct ez_conn *conn)
{
	struct conn_pd *p = conn->own_pd;
	int err;

	if (!p)
		return;
	for (unsigned int i = 0; i < p->nbuckets; i++)
		while (p->buckets[i])
			lreg_free(p->buckets[i]);
	free(p->buckets);
	sendslab_fini(&p->slab, conn->dev ? conn->dev->name : "?");
	if (!p->pool_has_pd && (err = ibv_dealloc_pd(p->pd)))
		ezi_log_err("ibv_dealloc_pd(a connection's own PD): %s", ez_strerror(err));
	free(p);
	conn->own_pd = NULL;
}
