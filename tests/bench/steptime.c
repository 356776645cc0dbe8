/* steptime.c: LD_PRELOAD shim that timestamps the rdma_cm and verbs calls of connection setup (and CM events) into $STEPTIME_OUT. */
/*
 * Not built by make (a profiling aid for doc/performance.md):
 *   gcc -O2 -shared -fPIC -o steptime.so tests/bench/steptime.c -ldl
 *   STEPTIME_OUT=/tmp/st.cli LD_PRELOAD=./steptime.so build/tests/bench/ezbench -c ADDR -p PORT --conn 20
 * Each line: start (ms since the first call, or CLOCK_MONOTONIC ms with STEPTIME_ABS=1),
 * duration (ms), call or "EVENT <type>".
 * ibv_query_port() and ibv_query_gid_ex() are inline in verbs.h and cannot be seen here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <netdb.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static FILE *out;
static double t0;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void rec(const char *what, double start, const char *extra)
{
	if (!out) {
		const char *p = getenv("STEPTIME_OUT");

		out = fopen(p ? p : "/dev/null", "w");
		setvbuf(out, NULL, _IOFBF, 1 << 20);
		/* STEPTIME_ABS=1: CLOCK_MONOTONIC itself, so the files of two
		 * processes (client and server) merge into one timeline. */
		t0 = getenv("STEPTIME_ABS") ? 0 : start;
	}
	fprintf(out, "%.3f %.3f %s %s\n", start - t0, now_ms() - start, what, extra ? extra : "");
}

__attribute__((destructor)) static void fin(void)
{
	if (out)
		fflush(out);
}

#define WRAP(ret, name, params, args)                                   \
	ret name params                                                 \
	{                                                               \
		static ret (*real) params;                              \
		double s = now_ms();                                    \
		ret r;                                                  \
		if (!real)                                              \
			real = (ret (*) params)dlsym(RTLD_NEXT, #name); \
		r = real args;                                          \
		rec(#name, s, NULL);                                    \
		return r;                                               \
	}

WRAP(int, rdma_resolve_addr, (struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int ms), (id, src, dst, ms))
WRAP(int, rdma_resolve_route, (struct rdma_cm_id *id, int ms), (id, ms))
WRAP(int, rdma_connect, (struct rdma_cm_id *id, struct rdma_conn_param *p), (id, p))
WRAP(int, rdma_accept, (struct rdma_cm_id *id, struct rdma_conn_param *p), (id, p))
WRAP(int, rdma_establish, (struct rdma_cm_id *id), (id))
WRAP(int, rdma_create_id, (struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx, enum rdma_port_space ps), (ch, id, ctx, ps))
WRAP(int, rdma_init_qp_attr, (struct rdma_cm_id *id, struct ibv_qp_attr *a, int *m), (id, a, m))
WRAP(struct ibv_qp *, ibv_create_qp, (struct ibv_pd *pd, struct ibv_qp_init_attr *a), (pd, a))
WRAP(int, ibv_modify_qp, (struct ibv_qp *qp, struct ibv_qp_attr *a, int m), (qp, a, m))
WRAP(int, ibv_query_qp, (struct ibv_qp *qp, struct ibv_qp_attr *a, int m, struct ibv_qp_init_attr *ia), (qp, a, m, ia))
#undef ibv_reg_mr
WRAP(struct ibv_mr *, ibv_reg_mr, (struct ibv_pd *pd, void *a, size_t l, int f), (pd, a, l, f))
WRAP(struct ibv_mr *, ibv_reg_mr_iova2, (struct ibv_pd *pd, void *a, size_t l, uint64_t iova, unsigned int f), (pd, a, l, iova, f))
WRAP(int, ibv_resize_cq, (struct ibv_cq *cq, int n), (cq, n))
WRAP(int, getaddrinfo, (const char *n, const char *sv, const struct addrinfo *h, struct addrinfo **res), (n, sv, h, res))

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	static int (*real)(struct rdma_event_channel *, struct rdma_cm_event **);
	double s = now_ms();
	int r;

	if (!real)
		real = (int (*)(struct rdma_event_channel *, struct rdma_cm_event **))dlsym(RTLD_NEXT, "rdma_get_cm_event");
	r = real(ch, ev);
	if (r == 0)
		rec("EVENT", s, rdma_event_str((*ev)->event));
	return r;
}
