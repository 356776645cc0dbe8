/* kvstore_server.c: a key-value store whose table clients read with RDMA READ: PUT and DEL arrive as messages, the table's key is given with each connection (to it alone), each slot's version is a sequence lock. */
#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <easyrdma.h>

#include "kvstore_proto.h"

static struct kv_slot *table;
static uint32_t nslots = 1024;
static unsigned int slow_us;	/* test aid: pause mid-write, so readers meet torn slots */
static struct kv_hello hello;
static struct ez_mr *table_mr;
static unsigned long n_puts, n_dels, conns, bad;

/* The slot holding key, or (want_free) the first free one on its probe. */
static struct kv_slot *find(const char *key, size_t klen, int want_free)
{
	struct kv_slot *free_slot = NULL;
	uint32_t h = kv_hash(key, klen);

	for (uint32_t i = 0; i < KV_PROBE; i++) {
		struct kv_slot *s = &table[(h + i) % nslots];

		if (kv_key_is(s, key, klen))
			return s;
		if (s->state != KV_USED && !free_slot)
			free_slot = s;
		if (s->state == KV_EMPTY)
			break;	/* the key is not further on */
	}
	return want_free ? free_slot : NULL;
}

/* Sequence lock, writer side: odd while the slot changes. The stores are
 * ordered by release fences; readers see them through the device. */
static void slot_begin(struct kv_slot *s)
{
	__atomic_store_n(&s->version, s->version + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void slot_end(struct kv_slot *s)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->version, s->version + 1, __ATOMIC_RELEASE);
}

static int do_put(const struct kv_req *r, struct kv_slot **out)
{
	struct kv_slot *s = find(r->key, r->klen, 1);

	if (!s)
		return -ENOSPC;
	slot_begin(s);
	s->state = KV_USED;
	s->klen = r->klen;
	s->vlen = r->vlen;
	memcpy(s->key, r->key, r->klen);
	memcpy(s->val, r->val, r->vlen / 2);
	if (slow_us)
		usleep(slow_us);
	memcpy(s->val + r->vlen / 2, r->val + r->vlen / 2, r->vlen - r->vlen / 2);
	slot_end(s);
	n_puts++;
	*out = s;
	return 0;
}

static int do_del(const struct kv_req *r, struct kv_slot **out)
{
	struct kv_slot *s = find(r->key, r->klen, 0);

	if (!s)
		return -ENOENT;
	slot_begin(s);
	s->state = KV_DELETED;	/* a tombstone: probing goes on past it */
	s->klen = 0;
	s->vlen = 0;
	slot_end(s);
	n_dels++;
	*out = s;
	return 0;
}

static void on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct kv_rep rep = { 0 };
	struct kv_req r;
	struct kv_slot *s = NULL;

	(void)arg;
	/* The message is the peer's: every size in it is checked. */
	if (ez_buf_len(buf) != sizeof(r)) {
		bad++;
		ez_buf_release(buf);
		return;
	}
	memcpy(&r, ez_buf_data(buf), sizeof(r));
	ez_buf_release(buf);
	rep.id = r.id;
	if (!r.klen || r.klen > KV_KEY_MAX || r.vlen > KV_VAL_MAX)
		rep.status = -EINVAL;
	else if (r.op == KV_PUT)
		rep.status = do_put(&r, &s);
	else if (r.op == KV_DEL)
		rep.status = do_del(&r, &s);
	else
		rep.status = -EINVAL;
	if (rep.status == -EINVAL)
		bad++;
	if (s) {
		rep.slot = (uint32_t)(s - table);
		rep.version = s->version;
	}
	if (ez_send(conn, &rep, sizeof(rep), NULL, NULL))
		fprintf(stderr, "kvstore_server: reply: %s\n", ez_errmsg());
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	(void)arg;
	if (status) {
		fprintf(stderr, "kvstore_server: connection failed: %s\n", ez_conn_errmsg(conn));
		ez_conn_close(conn);
		return;
	}
	conns++;
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	(void)status;
	(void)arg;
	ez_conn_close(conn);
}

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	/* The table's shape goes in the reply and its key with the
	 * connection, for this client alone: it can GET at once. */
	struct ez_export table_ex = { .mr = table_mr, .len = (uint64_t)nslots * sizeof(*table),
				      .access = EZ_MR_REMOTE_READ | EZ_MR_REMOTE_ATOMIC };
	struct ez_conn_opts o = { .private_data = &hello, .private_data_len = sizeof(hello),
				  .exports = &table_ex, .nexports = 1 };
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv,
				   .on_disconnect = on_disconnect };
	struct ez_conn *conn;

	(void)l;
	(void)arg;
	if (ez_accept(req, &o, &cbs, NULL, &conn))
		fprintf(stderr, "kvstore_server: ez_accept: %s\n", ez_errmsg());
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7472";
	struct ev_loop *loop = EV_DEFAULT;
	/* static: what the process still holds at exit stays reachable */
	static struct ez_listener *l;
	static struct ez_ctx *ctx;
	ev_signal sigterm, sigint;
	int c;

	while ((c = getopt(argc, argv, "a:p:n:s:")) != -1) {
		if (c == 'a')
			addr = optarg;
		else if (c == 'p')
			port = optarg;
		else if (c == 'n')
			nslots = (uint32_t)strtoul(optarg, NULL, 0);
		else if (c == 's')
			slow_us = (unsigned int)strtoul(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: kvstore_server [-a addr] [-p port] [-n slots] [-s pause_us]\n");
			return 2;
		}
	}
	if (nslots < KV_PROBE || nslots > (1u << 20)) {
		fprintf(stderr, "kvstore_server: -n %u: %d..%u slots\n", nslots, KV_PROBE, 1u << 20);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	table = aligned_alloc(4096, (size_t)nslots * sizeof(*table));
	if (!table)
		return 1;
	memset(table, 0, (size_t)nslots * sizeof(*table));
	if (ez_ctx_new(loop, 0, &ctx)) {
		fprintf(stderr, "kvstore_server: ez_ctx_new: %s\n", ez_errmsg());
		return 1;
	}
	/* Every client reads the table (and reads the versions atomically),
	 * each through a key of its own connection's (on_request): a client
	 * that leaves takes its key with it, and no other peer of the
	 * context reaches the table. */
	if (ez_mr_reg(ctx, NULL, table, (size_t)nslots * sizeof(*table),
		      EZ_MR_REMOTE_READ | EZ_MR_REMOTE_ATOMIC, &table_mr)) {
		fprintf(stderr, "kvstore_server: table: %s\n", ez_errmsg());
		return 1;
	}
	hello.magic = KV_MAGIC;
	hello.nslots = nslots;
	if (ez_listen(ctx, addr, port, NULL, on_request, NULL, &l)) {
		fprintf(stderr, "kvstore_server: ez_listen: %s\n", ez_errmsg());
		return 1;
	}
	printf("kvstore_server: listening on %s port %u, %u slots\n", addr ? addr : "*",
	       ez_listener_port(l), nslots);
	ev_signal_init(&sigterm, on_signal, SIGTERM);
	ev_signal_init(&sigint, on_signal, SIGINT);
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sigint);
	ev_run(loop, 0);
	printf("kvstore_server: %lu connections, %lu puts, %lu dels, %lu bad requests\n", conns,
	       n_puts, n_dels, bad);
	/* Connections still open end with the process; the loop is not run
	 * again, so only the listener is closed here. */
	ez_listener_close(l);
	return 0;
}
