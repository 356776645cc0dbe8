/* assert.h: invariants the code states as executable checks (SQLite's
 * assert/ALWAYS/NEVER), on in the sanitizer builds and wherever
 * --enable-assertions asks for them, compiled out of the release build (and
 * so out of the instruction budget's).
 *
 *   EZ_ASSERT(x)  x holds here; nothing else depends on it. Off: nothing.
 *   ALWAYS(x)     x holds, but the code still copes if it did not:
 *                 if (!ALWAYS(p->posted > 0)) return; Off: (x).
 *   NEVER(x)      x never holds, coped with the same way:
 *                 if (NEVER(op == NULL)) return -EIO; Off: (x).
 *
 * A broken invariant on: the expression, file, line and function on stderr,
 * then abort() (a core, a test that fails with SIGABRT, ASan's stack). */
#ifndef EZ_BASE_ASSERT_H
#define EZ_BASE_ASSERT_H

void ezi_assert_fail(const char *expr, const char *file, int line, const char *func)
	__attribute__((noreturn, cold));

#ifdef EZ_ASSERTIONS
#define EZ_ASSERT(x) \
	(__builtin_expect(!!(x), 1) ? (void)0 : ezi_assert_fail(#x, __FILE__, __LINE__, __func__))
#define ALWAYS(x) \
	(__builtin_expect(!!(x), 1) ? 1 : (ezi_assert_fail(#x, __FILE__, __LINE__, __func__), 0))
#define NEVER(x) \
	(__builtin_expect(!!(x), 0) ? (ezi_assert_fail(#x, __FILE__, __LINE__, __func__), 1) : 0)
#else
#define EZ_ASSERT(x) ((void)0)
#define ALWAYS(x) (!!(x))
#define NEVER(x) (!!(x))
#endif

/* Whether this build checks them (ez_version's report, the unit tests). */
int ezi_assertions_on(void);

#endif
