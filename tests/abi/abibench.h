/* abibench.h: one context that listens and connects to itself, for the ABI tests (compiled against the v0 header or the current one). */
#ifndef EZ_ABIBENCH_H
#define EZ_ABIBENCH_H

#include <check.h>
#include <ev.h>
#include <stdio.h>
#include <string.h>

#include "../integration/testenv.h"

#define CANARY 0xa5

struct abench {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	struct ez_listener *listener;
	char port[8];
	ev_timer tick;
	struct ez_conn *cli, *srv;
	int cli_up, srv_up, cli_down, srv_down, requests, received;
	int cli_status, srv_status;
	char got[64];
	size_t got_len;
	void *opaque;		/* the test's own state */
};

/* Each test answers the listener's request its way (ez_accept or a sized call). */
static int ab_accept(struct abench *b, struct ez_conn_req *req, const struct ez_conn_cbs *cbs);

static inline void ab_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;
}

static inline void ab_on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct abench *b = arg;

	if (conn == b->cli) {
		b->cli_up++;
		b->cli_status = status;
	} else {
		b->srv_up++;
		b->srv_status = status;
	}
}

static inline void ab_on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct abench *b = arg;

	(void)status;
	if (conn == b->cli)
		b->cli_down++;
	else
		b->srv_down++;
}

static inline void ab_on_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct abench *b = arg;

	(void)conn;
	b->got_len = ez_buf_len(buf) < sizeof(b->got) ? ez_buf_len(buf) : sizeof(b->got);
	memcpy(b->got, ez_buf_data(buf), b->got_len);
	ez_buf_release(buf);
	b->received++;
}

static inline void ab_on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	/* Positional, as programs of the first header initialize it. */
	struct ez_conn_cbs cbs = { ab_on_connect, ab_on_recv, ab_on_disconnect, NULL, NULL };
	struct abench *b = arg;

	(void)l;
	b->requests++;
	ck_assert_msg(ab_accept(b, req, &cbs) == 0, "accept: %s", ez_errmsg());
}

static inline void ab_init(struct abench *b)
{
	memset(b, 0, sizeof(*b));
	b->loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(b->loop);
	ck_assert_int_eq(ez_ctx_new(b->loop, 0, &b->ctx), 0);
	ev_timer_init(&b->tick, ab_tick, 0.02, 0.02);
	ev_timer_start(b->loop, &b->tick);
}

static inline void ab_listened(struct abench *b)
{
	snprintf(b->port, sizeof(b->port), "%u", ez_listener_port(b->listener));
	ck_assert_str_ne(b->port, "0");
}

/* Runs the loop until *flag >= want or secs pass. */
static inline int ab_run(struct abench *b, const int *flag, int want, double secs)
{
	double end = now_s() + secs;

	while (*flag < want && now_s() < end)
		ev_run(b->loop, EVRUN_ONCE);
	return *flag >= want;
}

/* Both ends up (after the client's ez_connect), one message across. */
static inline void ab_exchange(struct abench *b, const char *msg)
{
	ck_assert_msg(ab_run(b, &b->cli_up, 1, 20), "no on_connect on the client");
	ck_assert_msg(b->cli_status == 0, "connect: %d %s", b->cli_status, ez_conn_errmsg(b->cli));
	ck_assert_msg(ab_run(b, &b->srv_up, 1, 10), "no on_connect on the server");
	ck_assert_int_eq(b->srv_status, 0);
	ck_assert_int_eq(ez_send(b->cli, msg, strlen(msg), NULL, NULL), 0);
	ck_assert_msg(ab_run(b, &b->received, 1, 10), "the message did not arrive");
	ck_assert_uint_eq(b->got_len, strlen(msg));
	ck_assert_int_eq(memcmp(b->got, msg, b->got_len), 0);
}

/* Closes both connections (waiting for their ends), the listener, the context. */
static inline void ab_fini(struct abench *b)
{
	ez_conn_close(b->cli);
	ck_assert_msg(ab_run(b, &b->cli_down, 1, 10), "no on_disconnect on the client");
	ck_assert_msg(ab_run(b, &b->srv_down, 1, 10), "no on_disconnect on the server");
	ez_conn_close(b->srv);
	ez_listener_close(b->listener);
}

static inline void ab_free(struct abench *b)
{
	ck_assert_msg(ez_ctx_free(b->ctx) == 0, "ez_ctx_free: %s", ez_errmsg());
	ev_timer_stop(b->loop, &b->tick);
	ev_loop_destroy(b->loop);
}

/* n bytes at p are all still CANARY. */
static inline void canary_intact(const unsigned char *p, size_t n, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_msg(p[i] == CANARY, "%s: byte %zu past the caller's struct was written (0x%02x)",
			      what, i, p[i]);
}

#endif
