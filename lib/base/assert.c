/* assert.c: what a broken invariant does (assert.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "assert.h"

void ezi_assert_fail(const char *expr, const char *file, int line, const char *func)
{
	/* No logging layer, no allocation: the state is already wrong. */
	fprintf(stderr, "easyrdma: invariant broken: %s (%s:%d, %s())\n", expr, file, line, func);
	fflush(stderr);
	abort();
}

int ezi_assertions_on(void)
{
#ifdef EZ_ASSERTIONS
	return 1;
#else
	return 0;
#endif
}
