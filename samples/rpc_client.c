/* rpc_client.c: sample RPC client keeping a window of requests in flight and timing them. */
/*
 * Usage: rpc_client [-a HOST] [-p PORT] [-n REQUESTS] [-w WINDOW] [-s PAYLOAD]
 *                   [-C CONNECT_MS] [-Q QP_TIMEOUT]
 *
 * -C and -Q (ez_conn_opts.connect_timeout_ms, .qp_timeout) are for slow
 * setups: a server under valgrind, or an emulated, overloaded machine.
 *
 * Sends REQUESTS requests (alternately ECHO and SUM) over one connection,
 * keeping WINDOW of them outstanding, checks every reply (id, method,
 * status, payload), and prints round trips per second and the latency
 * median and p99. Any wrong reply is an error: exit status 1.
 *
 * Copy from here: the window (send on connect, send again on each reply),
 * the reply check, and the way the program leaves the loop. The window
 * (up to 256 requests) is wider than the connection's send_depth (16):
 * the library's op queue (ez_conn_opts.queue_depth) takes the sends the
 * send queue has no room for yet and posts them in order, so this client
 * keeps no list of its own and never sees -ENOBUFS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <easyrdma.h>

#include "rpc_proto.h"

struct slot {			/* one outstanding request */
	uint64_t sent_ns;
	uint32_t id;
	int busy;
};

struct client {
	struct ev_loop *loop;
	struct ez_conn *conn;
	uint32_t total, window, payload;
	uint32_t sent, done;
	struct slot *slots;		/* indexed by id % window */
	double *lat_us;			/* one latency per reply, sorted at the end */
	uint64_t start_ns, end_ns;
	uint64_t queued, queued_most;	/* the library's op queue, read at the end */
	int failed, closing;
	uint8_t msg[RPC_MAX_MSG];	/* staging area; ez_send() copies it */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The payload of request id: ECHO bytes or SUM numbers, both derived from
 * the id so the reply can be checked without keeping a copy. */
static uint32_t fill(struct client *cl, uint32_t id, uint16_t method, uint8_t *p)
{
	if (method == RPC_ECHO) {
		for (uint32_t i = 0; i < cl->payload; i++)
			p[i] = (uint8_t)(id * 31 + i);
		return cl->payload;
	}
	uint32_t n = cl->payload / 4;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = htonl(id + i * 7);
		memcpy(p + 4 * i, &v, 4);
	}
	return n * 4;
}

/* Closes the connection once; on_disconnect() then ends the loop. */
static void finish(struct client *cl, int failed)
{
	cl->failed |= failed;
	if (!cl->closing) {
		cl->closing = 1;
		ez_conn_close(cl->conn);
	}
}

static void bad_reply(struct client *cl, struct ez_buf *buf, const char *why, uint32_t id)
{
	ez_buf_release(buf);
	fprintf(stderr, "rpc_client: reply %u: %s\n", id, why);
	finish(cl, 1);
}

static void on_sent(struct ez_conn *conn, int status, void *arg);

/* Sends the next request: posted, or queued by the library behind the
 * send_depth already outstanding (ez_conn_opts.queue_depth). */
static void send_next(struct client *cl)
{
	uint32_t id = cl->sent;
	uint16_t method = id % 2 ? RPC_SUM : RPC_ECHO;
	struct rpc_hdr *h = (struct rpc_hdr *)cl->msg;
	struct slot *s = &cl->slots[id % cl->window];
	uint32_t len = fill(cl, id, method, cl->msg + sizeof(*h));
	int ret;

	if (cl->closing)
		return;
	*h = (struct rpc_hdr){ htonl(id), htons(method), 0, htonl(len) };
	s->sent_ns = now_ns();
	ret = ez_send(cl->conn, cl->msg, sizeof(*h) + len, on_sent, cl);
	if (ret) {
		fprintf(stderr, "rpc_client: ez_send: %s\n", ez_errmsg());
		finish(cl, 1);
		return;
	}
	s->id = id;
	s->busy = 1;
	cl->sent++;
}

/* A send completed (the library posts the next queued one itself). */
static void on_sent(struct ez_conn *conn, int status, void *arg)
{
	struct client *cl = arg;

	if (status && !cl->closing) {
		fprintf(stderr, "rpc_client: send failed: %s\n", ez_strerror(status));
		finish(cl, 1);
	}
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct client *cl = arg;
	const uint8_t *data = ez_buf_data(buf);
	size_t n = ez_buf_len(buf);
	uint8_t expect[RPC_MAX_MSG];
	struct rpc_hdr h;
	struct slot *s;
	uint32_t id, len;

	if (cl->closing) {
		ez_buf_release(buf);
		return;
	}
	if (n < sizeof(h)) {
		bad_reply(cl, buf, "shorter than a header", 0);
		return;
	}
	memcpy(&h, data, sizeof(h));
	id = ntohl(h.id);
	s = &cl->slots[id % cl->window];
	if (!s->busy || s->id != id || id >= cl->sent) {
		bad_reply(cl, buf, "id of no outstanding request", id);
		return;
	}
	cl->lat_us[cl->done] = (double)(now_ns() - s->sent_ns) / 1000.0;
	s->busy = 0;
	/* What the reply must say, computed from the id alone. */
	if (ntohs(h.method) == RPC_ECHO) {
		len = fill(cl, id, RPC_ECHO, expect);
	} else {
		uint64_t sum = 0;
		uint32_t cnt = cl->payload / 4, hi, lo;

		for (uint32_t i = 0; i < cnt; i++)
			sum += id + i * 7;
		hi = htonl((uint32_t)(sum >> 32));
		lo = htonl((uint32_t)sum);
		memcpy(expect, &hi, 4);
		memcpy(expect + 4, &lo, 4);
		len = 8;
	}
	if (ntohs(h.method) != (id % 2 ? RPC_SUM : RPC_ECHO) || h.status != 0 ||
	    ntohl(h.len) != len || n != sizeof(h) + len ||
	    memcmp(data + sizeof(h), expect, len)) {
		bad_reply(cl, buf, "wrong method, status, length or payload", id);
		return;
	}
	ez_buf_release(buf);		/* done with the bytes: back to the pool */

	if (++cl->done == cl->total) {
		struct ez_conn_stats st;

		cl->end_ns = now_ns();
		if (!ez_conn_stats(conn, &st))
			cl->queued = st.ops_queued, cl->queued_most = st.ops_queued_most;
		finish(cl, 0);		/* the loop ends in on_disconnect() */
	} else if (cl->sent < cl->total) {
		send_next(cl);		/* keep the window full */
	}
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct client *cl = arg;

	if (status) {
		fprintf(stderr, "rpc_client: connect: %s\n", ez_conn_errmsg(conn));
		finish(cl, 1);		/* once per handle, also after an error */
		ev_break(cl->loop, EVBREAK_ALL);
		return;
	}
	printf("rpc_client: connected, sending %u requests, window %u\n", cl->total, cl->window);
	cl->start_ns = now_ns();
	while (cl->sent < cl->total && cl->sent < cl->window && !cl->closing)
		send_next(cl);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct client *cl = arg;

	if (!cl->closing) {
		fprintf(stderr, "rpc_client: server went away after %u replies: %s\n", cl->done,
			status ? ez_conn_errmsg(conn) : "closed");
		finish(cl, 1);
	}
	ev_break(cl->loop, EVBREAK_ALL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *host = "192.0.2.1", *port = "7471";
	struct client *cl = calloc(1, sizeof(*cl));
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect };
	struct ez_conn_opts o = { .max_msg_size = RPC_MAX_MSG };
	struct ez_ctx *ctx;
	int opt, ret;

	if (!cl)
		return 1;
	cl->total = 10000, cl->window = 16, cl->payload = 64;
	while ((opt = getopt(argc, argv, "a:p:n:w:s:C:Q:")) != -1) {
		switch (opt) {
		case 'a': host = optarg; break;
		case 'p': port = optarg; break;
		case 'n': cl->total = (uint32_t)atoi(optarg); break;
		case 'w': cl->window = (uint32_t)atoi(optarg); break;
		case 's': cl->payload = (uint32_t)atoi(optarg); break;
		case 'C': o.connect_timeout_ms = (uint32_t)atoi(optarg); break;
		case 'Q': o.qp_timeout = (uint8_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a HOST] [-p PORT] [-n REQUESTS] [-w WINDOW (1..256)] "
				"[-s PAYLOAD (8..%d)] [-C CONNECT_MS] [-Q QP_TIMEOUT]\n", argv[0], RPC_MAX_PAYLOAD);
			return 2;
		}
	}
	if (!cl->total || cl->window < 1 || cl->window > 256 || cl->payload < 8 ||
	    cl->payload > RPC_MAX_PAYLOAD) {
		fprintf(stderr, "rpc_client: bad -n, -w or -s\n");
		return 2;
	}
	/* Everything the data path needs is allocated here, once. */
	cl->slots = calloc(cl->window, sizeof(*cl->slots));
	cl->lat_us = calloc(cl->total, sizeof(*cl->lat_us));
	if (!cl->slots || !cl->lat_us)
		return 1;
	/* 16 posted at once; the rest of the window, and sends whose
	 * completion lags behind their reply, wait in the op queue. */
	o.send_depth = 16;
	o.queue_depth = cl->window * 2;
	cl->loop = EV_DEFAULT;
	setvbuf(stdout, NULL, _IOLBF, 0);	/* lines reach a pipe as they come */

	ret = ez_ctx_new(cl->loop, 0, &ctx);
	if (!ret) {
		ret = ez_connect(ctx, host, port, &o, &cbs, cl, &cl->conn);
		if (ret)
			ez_ctx_free(ctx);
	}
	if (ret) {
		fprintf(stderr, "rpc_client: %s\n", ez_errmsg());
	} else {
		ev_run(cl->loop, 0);
		ret = ez_ctx_free(ctx);		/* the connection handle is gone by now */
		if (ret)
			fprintf(stderr, "rpc_client: ez_ctx_free: %s\n", ez_errmsg());
	}
	if (!ret && !cl->failed && cl->done == cl->total) {
		double secs = (double)(cl->end_ns - cl->start_ns) / 1e9;

		qsort(cl->lat_us, cl->done, sizeof(double), cmp_double);
		printf("rpc_client: %u replies verified in %.3f s: %.0f round trips/s, "
		       "latency median %.1f us, p99 %.1f us (window %u, payload %u B)\n",
		       cl->done, secs, cl->done / secs, cl->lat_us[cl->done / 2],
		       cl->lat_us[(size_t)((cl->done - 1) * 0.99)], cl->window, cl->payload);
		printf("rpc_client: sends queued by the library: %llu (most at once %llu)\n",
		       (unsigned long long)cl->queued, (unsigned long long)cl->queued_most);
	} else {
		ret = 1;
	}
	free(cl->slots);
	free(cl->lat_us);
	free(cl);
	return ret ? 1 : 0;
}
