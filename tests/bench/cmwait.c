/* cmwait.c: how long a CM event takes to reach a process that waits for it asleep: in a blocking rdma_get_cm_event(), in epoll, and in an epoll inside an epoll (easyrdma on libev). */
/*
 * Not built by make (a profiling aid for doc/performance.md):
 *   gcc -O2 -o cmwait tests/bench/cmwait.c -lrdmacm
 *   ./cmwait 300 192.0.2.1        (in the Soft-RoCE VM: tests/testbed/testbed run -- ...)
 * Each sample: rdma_resolve_addr() to its ADDR_RESOLVED in hand, then the id is
 * destroyed; the three ways take turns, so drift falls on all of them alike.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <rdma/rdma_cma.h>

enum { WAIT_READ, WAIT_EPOLL, WAIT_NESTED, NWAYS };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *name[NWAYS] = { "blocking read", "epoll", "epoll in epoll" };
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct epoll_event ev = { .events = EPOLLIN }, out[8];
	struct rdma_event_channel *ch;
	double *ms[NWAYS];
	int n, i, w, inner, outer, fl;

	if (argc != 3 || (n = atoi(argv[1])) <= 0 || inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: cmwait SAMPLES IPV4-ADDRESS-OF-AN-RDMA-DEVICE\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	inner = epoll_create1(0);
	outer = epoll_create1(0);
	if (!ch || inner < 0 || outer < 0 || epoll_ctl(inner, EPOLL_CTL_ADD, ch->fd, &ev) ||
	    epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev)) {
		perror("cmwait: setup");
		return 1;
	}
	fl = fcntl(ch->fd, F_GETFL);
	for (w = 0; w < NWAYS; w++)
		ms[w] = calloc((size_t)n, sizeof(double));
	for (i = 0; i < n; i++) {
		for (w = 0; w < NWAYS; w++) {
			struct rdma_cm_event *e;
			struct rdma_cm_id *id;
			double t;

			fcntl(ch->fd, F_SETFL, w == WAIT_READ ? fl & ~O_NONBLOCK : fl | O_NONBLOCK);
			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
				perror("cmwait: rdma_create_id");
				return 1;
			}
			t = now_ms();
			if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)) {
				perror("cmwait: rdma_resolve_addr");
				return 1;
			}
			for (;;) {
				if (w == WAIT_EPOLL)
					epoll_wait(inner, out, 8, -1);
				else if (w == WAIT_NESTED && epoll_wait(outer, out, 8, -1) > 0)
					epoll_wait(inner, out, 8, 0);
				if (rdma_get_cm_event(ch, &e) == 0)
					break;
			}
			ms[w][i] = now_ms() - t;
			if (e->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
				fprintf(stderr, "cmwait: %s\n", rdma_event_str(e->event));
				return 1;
			}
			rdma_ack_cm_event(e);
			rdma_destroy_id(id);
		}
	}
	for (w = 0; w < NWAYS; w++) {
		double sum = 0;

		qsort(ms[w], (size_t)n, sizeof(double), cmp_double);
		for (i = 0; i < n; i++)
			sum += ms[w][i];
		printf("cmwait: way=\"%s\" samples=%d unit=ms median=%.3f mean=%.3f p90=%.3f\n", name[w], n,
		       ms[w][n / 2], sum / n, ms[w][n * 9 / 10]);
	}
	return 0;
}
