/* storage_daemon.c: sample block store embedding easyrdma in the daemon's own libev loop. */
/*
 * Usage: storage_daemon [-a ADDRESS] [-p PORT] [-d DEVICE] [-S STORE_MiB] [-i STATS_SECONDS]
 *
 * The daemon already has an event loop with its own timers and signal
 * watchers; easyrdma joins it (ez_ctx_new(loop, ...)) instead of bringing one,
 * and one ev_run() drives both. Clients send small control messages (SEND);
 * the block data moves by RDMA: for a client's write the daemon READs the
 * block from the client's registered buffer into the store, for a read it
 * WRITEs the block from the store into the client's buffer, then answers
 * with ST_DONE. Blocks are 4 KiB to 1 MiB.
 *
 * Signals: SIGINT/SIGTERM shut down cleanly with a summary; SIGUSR1 prints
 * the stats line now. The stats line also comes every STATS_SECONDS.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <easyrdma.h>

#include "storage_proto.h"

struct session {		/* one client connection */
	struct daemon *d;
	struct ez_conn *conn;
	struct ez_rkey client_buf;	/* from ST_HELLO */
	int have_buf;
	struct session *next, **pprev;
};

struct op {			/* one block transfer in flight */
	struct session *s;
	struct st_msg req;
};

struct daemon {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	struct ez_mr *store_mr;	/* the store, registered once at start */
	uint8_t *store;
	size_t store_len;
	struct session *sessions;
	int stopping;
	unsigned long conns, writes, reads, errors;
	unsigned long long wbytes, rbytes;
	ev_timer stats;
	ev_signal sigint, sigterm, sigusr1;
};

static void print_stats(struct daemon *d, const char *tag)
{
	int live = 0;

	for (struct session *s = d->sessions; s; s = s->next)
		live++;
	printf("storage_daemon: %s: %d sessions (%lu total), %lu writes (%llu bytes), "
	       "%lu reads (%llu bytes), %lu errors\n", tag, live, d->conns, d->writes,
	       d->wbytes, d->reads, d->rbytes, d->errors);
}

static void reply(struct session *s, const struct st_msg *req, int status, uint64_t csum)
{
	struct st_msg m = { .type = ST_DONE, .id = req->id, .status = status, .csum = csum };

	if (status)
		s->d->errors++;
	if (ez_send(s->conn, &m, sizeof(m), NULL, NULL))
		fprintf(stderr, "storage_daemon: reply: %s\n", ez_errmsg());
}

/* The RDMA READ or WRITE of a request finished. */
static void on_rdma_done(struct ez_conn *conn, int status, void *arg)
{
	struct op *op = arg;
	struct daemon *d = op->s->d;
	uint64_t csum = 0;

	if (status == -ECANCELED) {	/* the connection is closing: no reply */
		free(op);
		return;
	}
	if (!status && op->req.type == ST_WRITE) {
		/* The block is in the store now; the checksum lets the client
		 * verify what landed, not what it meant to send. */
		csum = st_csum(d->store + op->req.store_off, op->req.len);
		d->writes++;
		d->wbytes += op->req.len;
	} else if (!status) {
		d->reads++;
		d->rbytes += op->req.len;
	}
	reply(op->s, &op->req, status, csum);
	free(op);
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct session *s = arg;
	struct daemon *d = s->d;
	struct st_msg req = { 0 };
	struct op *op;
	int ret;

	if (ez_buf_len(buf) == sizeof(req))
		memcpy(&req, ez_buf_data(buf), sizeof(req));
	ez_buf_release(buf);		/* copied out: the buffer can go back at once */

	if (req.type == ST_HELLO) {
		s->client_buf = req.rkey;
		s->have_buf = 1;
		return;
	}
	if (req.type != ST_WRITE && req.type != ST_READ) {
		d->errors++;
		return;
	}
	/* Check every field before touching memory: the peer is untrusted. */
	if (!s->have_buf || req.len < ST_MIN_BLOCK || req.len > ST_MAX_BLOCK ||
	    req.store_off > d->store_len || req.len > d->store_len - req.store_off) {
		reply(s, &req, -EINVAL, 0);
		return;
	}
	op = malloc(sizeof(*op));
	if (!op) {
		reply(s, &req, -ENOMEM, 0);
		return;
	}
	op->s = s;
	op->req = req;
	/* ez_read/ez_write check the remote range against the exported rkey. */
	if (req.type == ST_WRITE)
		ret = ez_read(conn, d->store_mr, req.store_off, req.len, &s->client_buf,
			      req.buf_off, on_rdma_done, op);
	else
		ret = ez_write(conn, d->store_mr, req.store_off, req.len, &s->client_buf,
			       req.buf_off, on_rdma_done, op);
	if (ret) {
		fprintf(stderr, "storage_daemon: %s\n", ez_errmsg());
		reply(s, &req, ret, 0);
		free(op);
	}
}

static void session_end(struct ez_conn *conn, int status, void *arg)
{
	struct session *s = arg;
	struct daemon *d = s->d;

	if (!d->stopping)
		ez_conn_close(conn);	/* once per handle; we did it already when stopping */
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	free(s);
	if (d->stopping && !d->sessions)
		ev_break(d->loop, EVBREAK_ALL);
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct session *s = arg;

	if (status)
		session_end(conn, status, arg);
	else
		s->d->conns++;
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct daemon *d = arg;
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = session_end };
	/* Every request can have an RDMA op and a reply in flight. */
	struct ez_conn_opts o = { .max_msg_size = sizeof(struct st_msg), .send_depth = 128 };
	struct session *s = calloc(1, sizeof(*s));

	if (!s || ez_accept(req, &o, &cbs, s, &s->conn)) {
		fprintf(stderr, "storage_daemon: accept: %s\n", s ? ez_errmsg() : "no memory");
		free(s);
		return;
	}
	s->d = d;
	s->next = d->sessions;
	if (s->next)
		s->next->pprev = &s->next;
	s->pprev = &d->sessions;
	d->sessions = s;
}

/* The daemon's own watchers, beside the library's on the same loop. */
static void on_stats(struct ev_loop *loop, ev_timer *w, int revents)
{
	print_stats(w->data, "stats");
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct daemon *d = w->data;

	if (w->signum == SIGUSR1) {
		print_stats(d, "stats");
		return;
	}
	if (d->stopping++)
		return;
	ev_timer_stop(loop, &d->stats);
	ez_listener_close(d->listener);
	if (!d->sessions)
		ev_break(loop, EVBREAK_ALL);
	for (struct session *s = d->sessions; s; s = s->next)
		ez_conn_close(s->conn);	/* in-flight ops end with -ECANCELED */
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7473", *device = NULL;
	double interval = 10;
	struct daemon d = { .store_len = 64u << 20 };
	int opt, ret;

	while ((opt = getopt(argc, argv, "a:p:d:S:i:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'd': device = optarg; break;
		case 'p': port = optarg; break;
		case 'S': d.store_len = (size_t)atoi(optarg) << 20; break;
		case 'i': interval = atof(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a ADDRESS] [-p PORT] [-d DEVICE] [-S STORE_MiB] "
				"[-i STATS_SECONDS]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* The daemon's loop and its own watchers exist before easyrdma. */
	d.loop = EV_DEFAULT;
	ev_timer_init(&d.stats, on_stats, interval, interval);
	ev_signal_init(&d.sigint, on_signal, SIGINT);
	ev_signal_init(&d.sigterm, on_signal, SIGTERM);
	ev_signal_init(&d.sigusr1, on_signal, SIGUSR1);
	d.stats.data = d.sigint.data = d.sigterm.data = d.sigusr1.data = &d;
	ev_timer_start(d.loop, &d.stats);
	ev_signal_start(d.loop, &d.sigint);
	ev_signal_start(d.loop, &d.sigterm);
	ev_signal_start(d.loop, &d.sigusr1);	/* before anyone can learn our port */

	/* Then the library joins that loop, and the store is registered once:
	 * local access is enough, as the daemon itself issues the RDMA ops. An
	 * MR serves one device: the one clients reach ADDRESS through (-d). */
	d.store = calloc(1, d.store_len);
	if (!d.store || !d.store_len)
		return 1;
	ret = ez_ctx_new(d.loop, 0, &d.ctx);
	if (!ret)
		ret = ez_mr_reg(d.ctx, device, d.store, d.store_len, 0, &d.store_mr);
	if (!ret)
		ret = ez_listen(d.ctx, addr, port, NULL, on_request, &d, &d.listener);
	if (ret) {
		fprintf(stderr, "storage_daemon: %s\n", ez_errmsg());
		return 1;
	}
	printf("storage_daemon: %zu MiB store, listening on %s port %u\n", d.store_len >> 20,
	       addr ? addr : "*", ez_listener_port(d.listener));

	ev_run(d.loop, 0);

	ret = ez_mr_dereg(d.store_mr);
	if (!ret)
		ret = ez_ctx_free(d.ctx);
	if (ret)
		fprintf(stderr, "storage_daemon: teardown: %s\n", ez_errmsg());
	print_stats(&d, "summary");
	free(d.store);
	return ret ? 1 : 0;
}
