/* cmserial.c: the serial rdma_cm anchor of tests/bench/compare: N connections one after the other, raw rdma_cm, against cmtime's server. */
/*
 * cmtime (rdmacm-utils) runs each setup step for all N connections at once;
 * it has no serial mode. This is that serial loop, in plain rdma_cm, with
 * cmtime's own QP (RC, one WR each way, CQs made by rdma_create_qp) and
 * connection parameters, against `cmtime -b ADDR -p PORT` as the server:
 *
 *   cmserial -s ADDR -p PORT -c N
 *
 * Per connection it times rdma_create_id .. RDMA_CM_EVENT_ESTABLISHED (the
 * span of ezbench --conn: resolve address, resolve route, QP, connect) and
 * prints one line:
 *
 *   cmserial: conns=N ok=N unit=ms total=T per_conn=T/N median=M rate=N/T
 *
 * then disconnects every connection and exits 0 if all N connected.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static struct rdma_event_channel *channel;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Waits for the next event on id and checks it is the one wanted. */
static int wait_event(struct rdma_cm_id *id, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int status;

	if (rdma_get_cm_event(channel, &ev)) {
		perror("cmserial: rdma_get_cm_event");
		return -1;
	}
	got = ev->event;
	status = ev->status;
	if (ev->id != id)
		fprintf(stderr, "cmserial: event %s for another id\n", rdma_event_str(got));
	rdma_ack_cm_event(ev);
	if (got != want) {
		fprintf(stderr, "cmserial: %s (status %d), wanted %s\n", rdma_event_str(got), status,
			rdma_event_str(want));
		return -1;
	}
	return 0;
}

static int connect_one(struct rdma_addrinfo *rai, struct rdma_cm_id **out)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_id *id;

	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP)) {
		perror("cmserial: rdma_create_id");
		return -1;
	}
	*out = id;
	if (rdma_resolve_addr(id, rai->ai_src_addr, rai->ai_dst_addr, 2000) ||
	    wait_event(id, RDMA_CM_EVENT_ADDR_RESOLVED))
		return -1;
	if (rdma_resolve_route(id, 2000) || wait_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return -1;
	/* cmtime's QP. */
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 1;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa)) {
		perror("cmserial: rdma_create_qp");
		return -1;
	}
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	if (rdma_connect(id, &cp)) {
		perror("cmserial: rdma_connect");
		return -1;
	}
	return wait_event(id, RDMA_CM_EVENT_ESTABLISHED);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { 0 }, *rai;
	const char *dst = NULL, *port = "7471";
	struct rdma_cm_id **ids;
	double *ms, t0, total;
	int n = 100, ok = 0, op, i, ret;

	while ((op = getopt(argc, argv, "s:p:c:")) != -1) {
		switch (op) {
		case 's':
			dst = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'c':
			n = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: cmserial -s ADDR [-p PORT] [-c N]\n");
			return 2;
		}
	}
	if (!dst || n <= 0) {
		fprintf(stderr, "usage: cmserial -s ADDR [-p PORT] [-c N]\n");
		return 2;
	}
	hints.ai_port_space = RDMA_PS_TCP;
	ret = rdma_getaddrinfo(dst, port, &hints, &rai);
	if (ret) {
		fprintf(stderr, "cmserial: rdma_getaddrinfo(%s, %s): %s\n", dst, port,
			gai_strerror(ret));
		return 1;
	}
	channel = rdma_create_event_channel();
	ids = calloc((size_t)n, sizeof(*ids));
	ms = calloc((size_t)n, sizeof(*ms));
	if (!channel || !ids || !ms) {
		fprintf(stderr, "cmserial: setup failed\n");
		return 1;
	}
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		double t = now_ms();

		if (connect_one(rai, &ids[i])) {
			fprintf(stderr, "cmserial: connection %d failed\n", i);
			break;
		}
		ms[i] = now_ms() - t;
		ok++;
	}
	total = now_ms() - t0;
	if (ok) {
		qsort(ms, (size_t)ok, sizeof(*ms), cmp_double);
		printf("cmserial: conns=%d ok=%d unit=ms total=%.2f per_conn=%.3f median=%.3f rate=%.1f\n",
		       n, ok, total, total / ok, ms[ok / 2], ok / (total / 1e3));
	}
	/* Teardown is not timed: disconnect what connected, then free. */
	for (i = 0; i < n && ids[i]; i++) {
		if (i < ok) {
			rdma_disconnect(ids[i]);
			wait_event(ids[i], RDMA_CM_EVENT_DISCONNECTED);
		}
		if (ids[i]->qp)
			rdma_destroy_qp(ids[i]);
		rdma_destroy_id(ids[i]);
	}
	free(ids);
	free(ms);
	rdma_destroy_event_channel(channel);
	rdma_freeaddrinfo(rai);
	return ok == n ? 0 : 1;
}
