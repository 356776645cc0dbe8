/* testenv.h: what the connection-level integration tests read from the test bed: the address and a clock. */
#ifndef EZ_TESTENV_H
#define EZ_TESTENV_H

#include <stdlib.h>
#include <time.h>

/* The address tests listen and connect on: $EZ_TEST_ADDR or 192.0.2.1. */
static inline const char *test_addr(void)
{
	const char *a = getenv("EZ_TEST_ADDR");

	return a && *a ? a : "192.0.2.1";
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
