/* heaplive.c: the heap the program holds, counted allocation by allocation
 * (see heaplive.h). malloc and its family are defined here, in the test
 * executable, so every caller's (easyrdma, librdmacm, libibverbs and its
 * provider, libc's own callers) resolves to them; each live allocation is
 * kept in a table (address, malloc_usable_size, epoch and, with
 * EZ_LEAK_SITES set, its call stack), allocated by mmap, never by malloc.
 * A free of an address the table does not hold (allocated before the
 * interposition could see it) is passed on and not counted. */
#include "config.h"

#include "heaplive.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizers interpose malloc themselves. */
long heap_live(void)
{
	return -1;
}

void heap_live_epoch(int n)
{
	(void)n;
}

void heap_live_sites(const char *label)
{
	(void)label;
}
#else

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* glibc's allocator under its exported second names. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

enum { DEPTH = 10, SLOT_BITS = 20, SLOTS = 1 << SLOT_BITS, AGG = 1 << 14 };

struct ent {
	void *p;	/* NULL: empty slot */
	size_t sz;	/* malloc_usable_size */
	int epoch;
	int live_at_start;	/* live when the current epoch began */
	void *st[DEPTH];	/* with EZ_LEAK_SITES */
};

/* Call sites: what was made in the epoch and is live, and what was live
 * at its start and was freed in it. */
struct agg {
	int used;
	void *st[DEPTH];
	long n_new, n_old, b_new, b_old;
};

static struct ent *tab;
static struct agg *agg;
static int lk, ready, failed, sites;
static __thread int in_hook;
static int cur_epoch;
static long live_bytes, live_n, full;

static void lock(void)
{
	while (__atomic_exchange_n(&lk, 1, __ATOMIC_ACQUIRE))
		;
}

static void unlock(void)
{
	__atomic_store_n(&lk, 0, __ATOMIC_RELEASE);
}

static size_t slot_of(const void *p)
{
	return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - SLOT_BITS));
}

/* Once, from the first allocation (the process is single-threaded then). */
static int init(void)
{
	void *b[2];

	if (ready)
		return !failed;
	ready = 1;
	in_hook = 1;
	tab = mmap(NULL, SLOTS * sizeof(*tab), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	agg = mmap(NULL, AGG * sizeof(*agg), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	failed = tab == MAP_FAILED || agg == MAP_FAILED;
	sites = getenv("EZ_LEAK_SITES") != NULL;
	if (sites)
		backtrace(b, 2);	/* loads libgcc_s, which allocates, now */
	in_hook = 0;
	return !failed;
}

static struct agg *agg_of(void *const *st)
{
	uint64_t x = 0;

	for (int i = 0; i < DEPTH; i++)
		x = (x ^ (uintptr_t)st[i]) * 0x100000001B3ull;
	for (size_t i = x % AGG, k = 0; k < AGG; i = (i + 1) % AGG, k++) {
		if (!agg[i].used) {
			agg[i].used = 1;
			memcpy(agg[i].st, st, sizeof(agg[i].st));
			return &agg[i];
		}
		if (!memcmp(agg[i].st, st, sizeof(agg[i].st)))
			return &agg[i];
	}
	return NULL;
}

static void rec_add(void *p, void *const *st)
{
	size_t i;

	if (!p)
		return;
	lock();
	if (live_n >= SLOTS / 2) {
		full = 1;	/* heap_live() says -1 from now on */
		unlock();
		return;
	}
	for (i = slot_of(p); tab[i].p; i = (i + 1) % SLOTS)
		;
	tab[i].p = p;
	tab[i].sz = malloc_usable_size(p);
	tab[i].epoch = cur_epoch;
	tab[i].live_at_start = 0;
	if (st)
		memcpy(tab[i].st, st, sizeof(tab[i].st));
	else
		memset(tab[i].st, 0, sizeof(tab[i].st));
	live_bytes += (long)tab[i].sz;
	live_n++;
	unlock();
}

static void rec_del(void *p)
{
	size_t i, j, k;

	if (!p)
		return;
	lock();
	for (i = slot_of(p); tab[i].p && tab[i].p != p; i = (i + 1) % SLOTS)
		;
	if (!tab[i].p) {
		unlock();
		return;
	}
	live_bytes -= (long)tab[i].sz;
	live_n--;
	if (tab[i].live_at_start && sites) {
		struct agg *a = agg_of(tab[i].st);

		if (a) {
			a->n_old++;
			a->b_old += (long)tab[i].sz;
		}
	}
	tab[i].p = NULL;
	/* Linear probing's deletion (Knuth 6.4, algorithm R): no tombstones. */
	j = i;
	for (;;) {
		j = (j + 1) % SLOTS;
		if (!tab[j].p)
			break;
		k = slot_of(tab[j].p);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			tab[i] = tab[j];
			tab[j].p = NULL;
			i = j;
		}
	}
	unlock();
}

static void *const *stack(void **st)
{
	void *b[DEPTH + 2];
	int n;

	if (!sites)
		return NULL;
	memset(st, 0, DEPTH * sizeof(*st));
	n = backtrace(b, DEPTH + 2);
	for (int i = 2; i < n; i++)	/* without stack() and the wrapper */
		st[i - 2] = b[i];
	return st;
}

/* Enters the hook, or says to pass the call through untracked. */
static int enter(void)
{
	if (in_hook)
		return 0;
	if (!init())
		return 0;
	in_hook = 1;
	return 1;
}

#define TRACKED(call)                                                                              \
	do {                                                                                       \
		void *st_[DEPTH], *const *s_, *r_;                                                 \
		if (!enter())                                                                      \
			return call;                                                               \
		s_ = stack(st_);                                                                   \
		r_ = call;                                                                         \
		rec_add(r_, s_);                                                                   \
		in_hook = 0;                                                                       \
		return r_;                                                                         \
	} while (0)

void *malloc(size_t n)
{
	TRACKED(__libc_malloc(n));
}

void *calloc(size_t a, size_t b)
{
	TRACKED(__libc_calloc(a, b));
}

void *memalign(size_t al, size_t n)
{
	TRACKED(__libc_memalign(al, n));
}

void *aligned_alloc(size_t al, size_t n)
{
	TRACKED(__libc_memalign(al, n));
}

void *valloc(size_t n)
{
	TRACKED(__libc_valloc(n));
}

void *pvalloc(size_t n)
{
	TRACKED(__libc_pvalloc(n));
}

int posix_memalign(void **out, size_t al, size_t n)
{
	void *p;

	if (al < sizeof(void *) || (al & (al - 1)))
		return EINVAL;
	p = memalign(al, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *realloc(void *p, size_t n)
{
	void *st[DEPTH], *const *s, *r;

	if (!enter())
		return __libc_realloc(p, n);
	s = stack(st);
	if (p && n == 0) {
		rec_del(p);
		r = __libc_realloc(p, 0);	/* frees p */
	} else {
		/* Taken out first: once realloc returns, p may be another's. */
		int had = 0;

		if (p) {
			lock();
			for (size_t i = slot_of(p); tab[i].p; i = (i + 1) % SLOTS)
				had |= tab[i].p == p;
			unlock();
			rec_del(p);
		}
		r = __libc_realloc(p, n);
		if (r)
			rec_add(r, s);
		else if (had)
			rec_add(p, s);	/* failed: p stays */
	}
	in_hook = 0;
	return r;
}

void *reallocarray(void *p, size_t a, size_t b)
{
	size_t n;

	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n);
}

void free(void *p)
{
	if (p && enter()) {
		rec_del(p);
		in_hook = 0;
	}
	__libc_free(p);
}

long heap_live(void)
{
	long n;

	if (!init())
		return -1;
	lock();
	n = full ? -1 : live_bytes;
	unlock();
	return n;
}

void heap_live_epoch(int n)
{
	if (!init())
		return;
	lock();
	cur_epoch = n;
	for (size_t i = 0; i < SLOTS; i++)
		tab[i].live_at_start = tab[i].p != NULL;
	memset(agg, 0, AGG * sizeof(*agg));
	unlock();
}

static void print_frame(void *a)
{
	Dl_info d;

	if (dladdr(a, &d) && d.dli_fname) {
		/* addr2line -f -i -e FILE OFFSET names a frame in the executable. */
		printf("      %s+0x%lx", d.dli_fname,
		       (unsigned long)((char *)a - (char *)d.dli_fbase));
		if (d.dli_sname)
			printf(" (%s+0x%lx)", d.dli_sname,
			       (unsigned long)((char *)a - (char *)d.dli_saddr));
		printf("\n");
	} else {
		printf("      %p\n", a);
	}
}

/* Largest net first, growth or shrinkage. */
static int by_net(const void *x, const void *y)
{
	const struct agg *a = x, *b = y;
	long na = labs(a->b_new - a->b_old), nb = labs(b->b_new - b->b_old);

	return (nb > na) - (nb < na);
}

void heap_live_sites(const char *label)
{
	long made = 0, gone = 0;
	int shown = 0;

	if (!sites || !init())
		return;
	in_hook = 1;
	lock();
	for (size_t i = 0; i < SLOTS; i++) {
		struct agg *a;

		if (!tab[i].p || tab[i].epoch != cur_epoch || !(a = agg_of(tab[i].st)))
			continue;
		a->n_new++;
		a->b_new += (long)tab[i].sz;
	}
	for (size_t i = 0; i < AGG; i++) {
		made += agg[i].b_new;
		gone += agg[i].b_old;
	}
	qsort(agg, AGG, sizeof(*agg), by_net);
	printf("%s: %ld B allocated since the last mark and live, %ld B live then and freed since: "
	       "net %+ld B; by call site:\n", label, made, gone, made - gone);
	for (size_t i = 0; i < AGG; i++) {
		struct agg *a = &agg[i];
		long net = a->b_new - a->b_old;

		if (!a->used || (!net && a->n_new == a->n_old) || shown++ >= 20)
			continue;
		printf("  net %+ld B: %ld B in %ld allocated, %ld B in %ld freed\n", net, a->b_new,
		       a->n_new, a->b_old, a->n_old);
		for (int f = 0; f < DEPTH && a->st[f]; f++)
			print_frame(a->st[f]);
	}
	memset(agg, 0, AGG * sizeof(*agg));
	unlock();
	fflush(stdout);
	in_hook = 0;
}
#endif
