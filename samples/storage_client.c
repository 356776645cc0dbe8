/* storage_client.c: sample client of storage_daemon: writes blocks, reads them back, verifies checksums. */
/*
 * Usage: storage_client [-a HOST] [-p PORT] [-n BLOCKS] [-w WINDOW] [-o STORE_OFFSET_MiB]
 *
 * Registers one buffer (WINDOW slots of 1 MiB) the daemon may READ and WRITE,
 * exports it in an ST_HELLO message, then writes BLOCKS blocks of 4 KiB to
 * 1 MiB (sizes cycle) into the store at STORE_OFFSET, WINDOW at a time, and
 * reads them all back into zeroed slots. Each block's checksum is checked
 * twice: the daemon's, of what landed in the store, and ours, of what came
 * back. Any mismatch is an error: exit status 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <easyrdma.h>

#include "storage_proto.h"

static const uint32_t sizes[] = { 4096, 16384, 65536, 262144, 1048576, 8192 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct client {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_conn *conn;
	struct ez_mr *mr;	/* window x 1 MiB, remote read + write */
	uint8_t *buf;
	uint32_t n, window, next, done, reading;
	uint64_t base;		/* store offset of block 0 */
	uint64_t *csum;		/* per block: checksum of what we wrote */
	double t0, wsecs, rsecs;
	unsigned long long bytes;
	int failed, closing;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t blk_len(uint32_t i) { return sizes[i % NSIZES]; }
static uint64_t blk_off(struct client *c, uint32_t i) { return c->base + (uint64_t)i * ST_MAX_BLOCK; }
static uint8_t *slot(struct client *c, uint32_t i) { return c->buf + (size_t)(i % c->window) * ST_MAX_BLOCK; }

static void finish(struct client *c, int failed)
{
	c->failed |= failed;
	if (!c->closing) {
		c->closing = 1;
		ez_conn_close(c->conn);	/* on_disconnect() or on_connect() ends the loop */
	}
}

/* Sends the request of block i: the data is already in (or will come to) its slot. */
static void request(struct client *c, uint32_t i)
{
	struct st_msg m = { .type = c->reading ? ST_READ : ST_WRITE, .id = i,
			    .store_off = blk_off(c, i), .len = blk_len(i),
			    .buf_off = (uint64_t)(i % c->window) * ST_MAX_BLOCK };
	uint8_t *p = slot(c, i);

	if (c->reading) {
		memset(p, 0, m.len);	/* so stale bytes cannot pass the check */
	} else {
		uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1 + c->base);

		for (uint32_t k = 0; k < m.len; k += 8) {	/* xorshift: cheap, varied data */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			memcpy(p + k, &x, 8);
		}
		c->csum[i] = st_csum(p, m.len);
	}
	if (ez_send(c->conn, &m, sizeof(m), NULL, NULL)) {
		fprintf(stderr, "storage_client: ez_send: %s\n", ez_errmsg());
		finish(c, 1);
	}
}

static void start_phase(struct client *c)
{
	c->next = c->done = 0;
	c->t0 = now_s();
	while (c->next < c->n && c->next < c->window && !c->closing)
		request(c, c->next++);
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct client *c = arg;
	struct st_msg m = { 0 };

	if (ez_buf_len(buf) == sizeof(m))
		memcpy(&m, ez_buf_data(buf), sizeof(m));
	ez_buf_release(buf);
	if (c->closing)
		return;
	/* A refusal may overtake earlier replies (it needs no RDMA): check it first. */
	if (m.type == ST_DONE && m.status) {
		fprintf(stderr, "storage_client: block %u: daemon says %s\n", m.id,
			ez_strerror(m.status));
		finish(c, 1);
		return;
	}
	if (m.type != ST_DONE || m.id != c->done) {	/* RDMA ops complete in order */
		fprintf(stderr, "storage_client: unexpected message (type %u id %u)\n", m.type, m.id);
		finish(c, 1);
		return;
	}
	/* Writes: the daemon's checksum of the store; reads: ours of the slot. */
	uint64_t got = c->reading ? st_csum(slot(c, m.id), blk_len(m.id)) : m.csum;
	if (got != c->csum[m.id]) {
		fprintf(stderr, "storage_client: block %u (%u bytes): checksum %016llx, expected %016llx\n",
			m.id, blk_len(m.id), (unsigned long long)got, (unsigned long long)c->csum[m.id]);
		finish(c, 1);
		return;
	}
	c->bytes += blk_len(m.id);
	if (++c->done < c->n) {
		if (c->next < c->n)
			request(c, c->next++);	/* the slot of block done-1 is free again */
		return;
	}
	if (!c->reading) {
		c->wsecs = now_s() - c->t0;
		c->reading = 1;
		start_phase(c);
	} else {
		c->rsecs = now_s() - c->t0;
		finish(c, 0);
	}
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct client *c = arg;
	struct st_msg hello = { .type = ST_HELLO };

	if (status) {
		fprintf(stderr, "storage_client: connect: %s\n", ez_conn_errmsg(conn));
		finish(c, 1);
		ev_break(c->loop, EVBREAK_ALL);
		return;
	}
	/* Tell the daemon where it may READ and WRITE: our buffer, exported
	 * to this connection alone (a window bound to its QP; the send
	 * below goes after the bind, so the key works when it arrives). */
	if (ez_conn_export(conn, c->mr, 0, (size_t)c->window * ST_MAX_BLOCK,
			   EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE, &hello.rkey) ||
	    ez_send(conn, &hello, sizeof(hello), NULL, NULL)) {
		fprintf(stderr, "storage_client: hello: %s\n", ez_errmsg());
		finish(c, 1);
		return;
	}
	start_phase(c);
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct client *c = arg;

	if (!c->closing) {
		fprintf(stderr, "storage_client: daemon went away: %s\n",
			status ? ez_conn_errmsg(conn) : "closed");
		finish(c, 1);
	}
	ev_break(c->loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	const char *host = "192.0.2.1", *port = "7473";
	struct client c = { .n = 60, .window = 4 };
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv, .on_disconnect = on_disconnect };
	struct ez_conn_opts o = { .max_msg_size = sizeof(struct st_msg) };
	int opt, ret;

	while ((opt = getopt(argc, argv, "a:p:n:w:o:")) != -1) {
		switch (opt) {
		case 'a': host = optarg; break;
		case 'p': port = optarg; break;
		case 'n': c.n = (uint32_t)atoi(optarg); break;
		case 'w': c.window = (uint32_t)atoi(optarg); break;
		case 'o': c.base = (uint64_t)atoi(optarg) << 20; break;
		default:
			fprintf(stderr, "usage: %s [-a HOST] [-p PORT] [-n BLOCKS] [-w WINDOW] "
				"[-o STORE_OFFSET_MiB]\n", argv[0]);
			return 2;
		}
	}
	if (!c.n || !c.window || c.window > 64)
		return 2;
	c.loop = EV_DEFAULT;
	c.csum = calloc(c.n, sizeof(*c.csum));
	c.buf = aligned_alloc(4096, (size_t)c.window * ST_MAX_BLOCK);
	if (!c.csum || !c.buf)
		return 1;

	ret = ez_ctx_new(c.loop, 0, &c.ctx);
	/* Registered once, before any I/O; the daemon may read and write it. */
	if (!ret)
		ret = ez_mr_reg(c.ctx, NULL, c.buf, (size_t)c.window * ST_MAX_BLOCK,
				EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE, &c.mr);
	if (!ret)
		ret = ez_connect(c.ctx, host, port, &o, &cbs, &c, &c.conn);
	if (ret) {
		fprintf(stderr, "storage_client: %s\n", ez_errmsg());
		c.failed = 1;
	} else {
		ev_run(c.loop, 0);
	}
	if ((c.mr && ez_mr_dereg(c.mr)) || (c.ctx && ez_ctx_free(c.ctx)))
		fprintf(stderr, "storage_client: teardown: %s\n", ez_errmsg());
	if (!c.failed)
		printf("storage_client: %u blocks (%.1f MiB) written and read back, all checksums verified; "
		       "write %.1f MB/s, read %.1f MB/s\n", c.n, c.bytes / 2 / 1048576.0,
		       c.bytes / 2 / c.wsecs / 1e6, c.bytes / 2 / c.rsecs / 1e6);
	free(c.csum);
	free(c.buf);
	return c.failed ? 1 : 0;
}
