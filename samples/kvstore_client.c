/* kvstore_client.c: the key-value store's client: the table's shape from the accept data and its key given with the connection, GET by RDMA READ checked against the slot's version (read atomically before and after), PUT and DEL by message; a stress mode that verifies every value it reads. */
#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <easyrdma.h>

#include "kvstore_proto.h"

static struct ez_conn *conn;
static struct kv_hello hello;
static struct ez_rkey table;	/* given with the connection */
static struct ez_mr *copy_mr;
static struct kv_slot copy;	/* the slot as one GET read it */
static int failed, up;
static unsigned long torn;	/* reads that a write overlapped: done again */

/* ---- GET: three ops back to back on one QP: the version (a fetch-and-add
 * of 0 is an atomic read), the slot (RDMA READ), the version again. The
 * peer's responder runs one QP's reads and atomics in order, so the copy
 * is whole when both versions are equal and even. */

struct get {
	char key[KV_KEY_MAX];
	size_t klen;
	uint32_t probe;		/* slots tried */
	uint64_t v1, v2;
	int status;
	void (*done)(struct get *g, int found);
};

static void get_slot(struct get *g);

static void got_v1(struct ez_conn *c, int status, uint64_t old, void *arg)
{
	struct get *g = arg;

	(void)c;
	g->status = g->status ? g->status : status;
	g->v1 = old;
}

static void got_copy(struct ez_conn *c, int status, void *arg)
{
	struct get *g = arg;

	(void)c;
	g->status = g->status ? g->status : status;
}

static void got_v2(struct ez_conn *c, int status, uint64_t old, void *arg)
{
	struct get *g = arg;
	(void)c;
	g->status = g->status ? g->status : status;
	g->v2 = old;
	if (g->status) {
		fprintf(stderr, "kvstore_client: GET: %s (%s)\n", ez_strerror(g->status),
			ez_conn_errmsg(conn));
		failed = 1;
		ev_break(EV_DEFAULT, EVBREAK_ALL);
		return;
	}
	if ((g->v1 & 1) || g->v1 != g->v2) {
		torn++;		/* a PUT or DEL was under way: read it again */
		get_slot(g);
		return;
	}
	if (kv_key_is(&copy, g->key, g->klen)) {
		g->done(g, 1);
		return;
	}
	if (copy.state == KV_EMPTY || ++g->probe == KV_PROBE) {
		g->done(g, 0);
		return;
	}
	get_slot(g);
}

static void get_slot(struct get *g)
{
	uint64_t off = (uint64_t)((kv_hash(g->key, g->klen) + g->probe) % hello.nslots) *
		sizeof(struct kv_slot);
	int ret;

	g->status = 0;
	ret = ez_atomic_fadd(conn, &table, off, 0, got_v1, g);
	if (!ret)
		ret = ez_read(conn, copy_mr, 0, sizeof(copy), &table, off, got_copy, g);
	if (!ret)
		ret = ez_atomic_fadd(conn, &table, off, 0, got_v2, g);
	if (ret) {
		fprintf(stderr, "kvstore_client: GET: %s\n", ez_errmsg());
		failed = 1;
		ev_break(EV_DEFAULT, EVBREAK_ALL);
	}
}

static void get_start(struct get *g, const char *key, void (*done)(struct get *, int))
{
	g->klen = strlen(key) < KV_KEY_MAX ? strlen(key) : KV_KEY_MAX;
	memcpy(g->key, key, g->klen);
	g->probe = 0;
	g->done = done;
	get_slot(g);
}

/* ---- PUT and DEL: a message, a reply ---- */

static uint32_t next_id = 1, replies, wanted;
static int last_status;

static int send_req(int op, const char *key, const void *val, size_t vlen)
{
	struct kv_req r = { .op = (uint8_t)op, .id = next_id++ };

	r.klen = (uint8_t)(strlen(key) < KV_KEY_MAX ? strlen(key) : KV_KEY_MAX);
	memcpy(r.key, key, r.klen);
	r.vlen = (uint16_t)(vlen < KV_VAL_MAX ? vlen : KV_VAL_MAX);
	if (val)
		memcpy(r.val, val, r.vlen);
	return ez_send(conn, &r, sizeof(r), NULL, NULL);
}

/* ---- stress: PUTs of self-checking values to a few keys while GETs of
 * the key last written run; every value read must be one that was put ---- */

#define NKEYS 8
#define WINDOW 4
static unsigned long n_puts = 200, puts_sent, gets_ok, gets_missing, dels_done;
static int phase;	/* 0 put+get, 1 del, 2 get after del */
static char last_key[16];
static struct get stress_get;

static size_t value_of(unsigned long gen, char *val)
{
	size_t len = 16 + gen % (KV_VAL_MAX - 16);

	snprintf(val, 17, "g%015lu", gen);
	for (size_t i = 16; i < len; i++)
		val[i] = (char)('a' + (gen + i) % 26);
	return len;
}

static int value_ok(const struct kv_slot *s)
{
	char want[KV_VAL_MAX];
	unsigned long gen;

	if (s->vlen < 16 || sscanf(s->val, "g%15lu", &gen) != 1)
		return 0;
	return value_of(gen, want) == s->vlen && !memcmp(want, s->val, s->vlen);
}

static void stress_next(void);

static void stress_got(struct get *g, int found)
{
	(void)g;
	if (phase == 2) {
		if (found) {
			fprintf(stderr, "kvstore_client: %s still found after DEL\n", last_key);
			failed = 1;
			ev_break(EV_DEFAULT, EVBREAK_ALL);
			return;
		}
		gets_missing++;
		stress_next();
		return;
	}
	if (found && !value_ok(&copy)) {
		fprintf(stderr, "kvstore_client: GET %s: a value no PUT wrote (vlen %u, '%.16s')\n",
			last_key, copy.vlen, copy.val);
		failed = 1;
		ev_break(EV_DEFAULT, EVBREAK_ALL);
		return;
	}
	gets_ok += found;
	stress_next();
}

static void stress_put(void)
{
	char val[KV_VAL_MAX];
	size_t len = value_of(puts_sent, val);

	snprintf(last_key, sizeof(last_key), "key%lu", puts_sent % NKEYS);
	if (send_req(KV_PUT, last_key, val, len) == 0)
		puts_sent++;
}

static void stress_next(void)
{
	if (phase == 0) {
		while (puts_sent < n_puts && puts_sent - replies < WINDOW && !failed)
			stress_put();
		if (replies >= n_puts) {
			phase = 1;
			for (int k = 0; k < NKEYS; k++) {
				snprintf(last_key, sizeof(last_key), "key%d", k);
				send_req(KV_DEL, last_key, NULL, 0);
			}
			wanted = replies + NKEYS;
			return;
		}
		get_start(&stress_get, last_key, stress_got);
		return;
	}
	if (phase == 2) {
		if (gets_missing == NKEYS) {
			ev_break(EV_DEFAULT, EVBREAK_ALL);
			return;
		}
		snprintf(last_key, sizeof(last_key), "key%lu", gets_missing);
		get_start(&stress_get, last_key, stress_got);
	}
}

/* ---- the connection ---- */

static const char *cmd, *arg_key, *arg_val;

static void single_got(struct get *g, int found)
{
	(void)g;
	if (found)
		printf("%.*s\n", (int)copy.vlen, copy.val);
	else
		printf("(not found)\n");
	ev_break(EV_DEFAULT, EVBREAK_ALL);
}

static void on_recv(struct ez_conn *c, struct ez_buf *buf, void *arg)
{
	struct kv_rep rep;

	(void)c;
	(void)arg;
	if (ez_buf_len(buf) != sizeof(rep)) {
		ez_buf_release(buf);
		return;
	}
	memcpy(&rep, ez_buf_data(buf), sizeof(rep));
	ez_buf_release(buf);
	replies++;
	last_status = rep.status;
	if (strcmp(cmd, "stress") == 0) {
		if (rep.status) {
			fprintf(stderr, "kvstore_client: request %u: %s\n", rep.id,
				ez_strerror(rep.status));
			failed = 1;
			ev_break(EV_DEFAULT, EVBREAK_ALL);
			return;
		}
		if (phase == 1) {
			dels_done++;
			if (replies == wanted) {
				phase = 2;
				stress_next();
			}
		} else {
			/* Room in the window: the next PUT goes now; the GETs
			 * go on, one after the other (stress_got()). */
			while (puts_sent < n_puts && puts_sent - replies < WINDOW)
				stress_put();
		}
		return;
	}
	printf("%s: %s (slot %u, version %llu)\n", cmd, rep.status ? ez_strerror(rep.status) : "ok",
	       rep.slot, (unsigned long long)rep.version);
	ev_break(EV_DEFAULT, EVBREAK_ALL);
}

static void on_connect(struct ez_conn *c, int status, void *arg)
{
	static struct get single;
	const struct ez_rkey *k;
	const void *d;
	unsigned int nk;
	size_t len;

	(void)arg;
	if (status) {
		fprintf(stderr, "kvstore_client: connect: %s\n", ez_conn_errmsg(c));
		failed = 1;
		ev_break(EV_DEFAULT, EVBREAK_ALL);
		return;
	}
	/* The table's shape came with the reply and its key with the
	 * connection: no HELLO message, no wait. */
	d = ez_conn_accept_data(c, &len);
	k = ez_conn_peer_exports(c, &nk);
	if (!d || len != sizeof(hello) || (memcpy(&hello, d, sizeof(hello)), hello.magic != KV_MAGIC) ||
	    hello.nslots < KV_PROBE || nk != 1 ||
	    k[0].len < (uint64_t)hello.nslots * sizeof(struct kv_slot)) {
		fprintf(stderr, "kvstore_client: the server's accept data and regions are not a kvstore's\n");
		failed = 1;
		ev_break(EV_DEFAULT, EVBREAK_ALL);
		return;
	}
	table = k[0];
	up = 1;
	if (strcmp(cmd, "get") == 0)
		get_start(&single, arg_key, single_got);
	else if (strcmp(cmd, "put") == 0)
		send_req(KV_PUT, arg_key, arg_val, strlen(arg_val));
	else if (strcmp(cmd, "del") == 0)
		send_req(KV_DEL, arg_key, NULL, 0);
	else
		stress_next();
}

static void on_disconnect(struct ez_conn *c, int status, void *arg)
{
	(void)c;
	(void)arg;
	fprintf(stderr, "kvstore_client: disconnected: %s\n", ez_strerror(status));
	failed = 1;
	ev_break(EV_DEFAULT, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1", *port = "7472";
	struct ez_conn_cbs cbs = { .on_connect = on_connect, .on_recv = on_recv,
				   .on_disconnect = on_disconnect };
	static struct ez_ctx *ctx;
	int c;

	while ((c = getopt(argc, argv, "a:p:n:")) != -1) {
		if (c == 'a')
			addr = optarg;
		else if (c == 'p')
			port = optarg;
		else if (c == 'n')
			n_puts = strtoul(optarg, NULL, 0);
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	cmd = argv[optind];
	arg_key = optind + 1 < argc ? argv[optind + 1] : NULL;
	arg_val = optind + 2 < argc ? argv[optind + 2] : NULL;
	if (!(strcmp(cmd, "stress") == 0 || ((strcmp(cmd, "get") == 0 || strcmp(cmd, "del") == 0) && arg_key) ||
	      (strcmp(cmd, "put") == 0 && arg_val)))
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ez_ctx_new(EV_DEFAULT, 0, &ctx) ||
	    ez_mr_reg(ctx, NULL, &copy, sizeof(copy), 0, &copy_mr)) {
		fprintf(stderr, "kvstore_client: %s\n", ez_errmsg());
		return 1;
	}
	if (ez_connect(ctx, addr, port, NULL, &cbs, NULL, &conn)) {
		fprintf(stderr, "kvstore_client: ez_connect: %s\n", ez_errmsg());
		return 1;
	}
	ev_run(EV_DEFAULT, 0);
	if (!failed && strcmp(cmd, "stress") == 0)
		printf("kvstore_client: %lu puts, %lu gets verified, %lu torn reads read again, %lu dels, %lu keys gone after del\n",
		       n_puts, gets_ok, torn, dels_done, gets_missing);
	return failed;
usage:
	fprintf(stderr, "usage: kvstore_client [-a addr] [-p port] [-n puts] get KEY | put KEY VALUE | del KEY | stress\n");
	return 2;
}
