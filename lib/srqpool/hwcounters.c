/* hwcounters.c: the device's RNR NAK counters, read from sysfs hw_counters (what `rdma statistic` shows). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"

/* Counter names differ per driver; the first one a port has is read.
 * rxe: send_rnr_err counts RNR NAKs its responder sent (no receive WQE),
 * rcvd_rnr_err those its requester got back. mlx5's out_of_buffer counts
 * messages dropped for want of a receive WQE, which on RC is an RNR NAK sent;
 * mlx5 has no counter of RNR NAKs received (only rnr_nak_retry_err, when
 * retries ran out). */
static const char *const sent_names[] = { "send_rnr_err", "out_of_buffer", NULL };
static const char *const rcvd_names[] = { "rcvd_rnr_err", NULL };

static int read_u64(const char *path, uint64_t *v)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 10);
	return 0;
}

int64_t srqpool_read_hw_counter(const char *ibdev_path, uint32_t nports, const char *name)
{
	char path[512];
	uint64_t sum = 0, v;
	int found = 0;

	if (!ibdev_path || !*ibdev_path)
		return -1;
	/* Counters kept per device (not per port) live one level up. */
	snprintf(path, sizeof(path), "%s/hw_counters/%s", ibdev_path, name);
	if (!read_u64(path, &v)) {
		sum += v;
		found = 1;
	}
	for (uint32_t port = 1; port <= nports; port++) {
		snprintf(path, sizeof(path), "%s/ports/%u/hw_counters/%s", ibdev_path, port, name);
		if (!read_u64(path, &v)) {
			sum += v;
			found = 1;
		}
	}
	return found ? (int64_t)sum : -1;
}

static int64_t first_counter(const char *ibdev_path, uint32_t nports, const char *const *names)
{
	for (; *names; names++) {
		int64_t v = srqpool_read_hw_counter(ibdev_path, nports, *names);

		if (v >= 0)
			return v;
	}
	return -1;
}

void srqpool_rnr_counters(const struct ez_srqpool *pool, int64_t *sent, int64_t *received)
{
	const char *path = pool->pd->context->device->ibdev_path;
	uint32_t nports = pool->lim.phys_port_cnt;

	*sent = first_counter(path, nports, sent_names);
	*received = first_counter(path, nports, rcvd_names);
}
