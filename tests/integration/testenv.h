/* testenv.h: what the connection-level integration tests read from the test bed: the address, a clock, the device's resources of this process. */
#ifndef EZ_TESTENV_H
#define EZ_TESTENV_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

/* `rdma res show WHAT` (qp, mr, cq, ...) lines of this process; -1 when
 * the tool is not there. */
static inline int rdma_res_mine(const char *what)
{
	char cmd[160];
	int n = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma res show %s 2>/dev/null | grep -c 'pid %d '", what,
		 (int)getpid());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

#endif
