/* test_api.c: API misuse: NULL arguments, closed objects, double close, closing and re-entering from callbacks. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "easyrdma.h"
#include "fault.h"
#include "../checkmain.h"

/* The call returns code and ez_errmsg() contains part. */
#define ASSERT_ERR_HAS(call, code, part)                                                  \
	do {                                                                              \
		int r_ = (call);                                                          \
		ck_assert_msg(r_ == (code), "%s = %d (%s), want %d; message: %s", #call, r_, \
			      ez_strerror(r_), (code), ez_errmsg());                     \
		ck_assert_msg(strstr(ez_errmsg(), (part)), "message \"%s\" lacks \"%s\"",   \
			      ez_errmsg(), (part));                                      \
	} while (0)

/* The call returns code and ez_errmsg() is exactly msg. */
#define ASSERT_ERR(call, code, msg)                                                       \
	do {                                                                              \
		int r_ = (call);                                                          \
		ck_assert_msg(r_ == (code), "%s = %d (%s), want %d; message: %s", #call, r_, \
			      ez_strerror(r_), (code), ez_errmsg());                     \
		ck_assert_str_eq(ez_errmsg(), (msg));                                     \
	} while (0)

/* A connected pair on one bench: client c, server s.eps[0]. */
static void pair_up(struct fb *b, struct srv *s, struct ep *c, const struct ez_conn_opts *o)
{
	srv_start(b, s, 4);
	ck_assert_int_eq(ep_connect(b, c, s->port, o), 0);
	ck_assert_msg(fb_run(b, &c->connected, 1, 10), "no on_connect");
	ck_assert_msg(c->connect_status == 0, "connect: %d %s", c->connect_status, c->connect_msg);
	ck_assert(fb_run(b, &s->connected, 1, 5));
}

START_TEST(null_arguments)
{
	struct fb b;
	struct ez_conn *conn = NULL;
	struct ez_listener *l = NULL;
	struct ez_mr *mr = NULL;
	struct ez_rkey key;
	struct ez_conn_info info;
	struct ez_conn_stats st;
	char mem[64];

	ASSERT_ERR(ez_ctx_new(NULL, 0, NULL), -EINVAL, "ez_ctx_new: ctx pointer is NULL");
	fb_init(&b);
	ASSERT_ERR(ez_ctx_new(NULL, 0x80, &b.ctx), -EINVAL, "ez_ctx_new: unknown flags 0x80");
	ASSERT_ERR_HAS(ez_connect(NULL, test_addr(), "1", NULL, NULL, NULL, &conn), -EINVAL, "ez_connect: ctx (nil)");
	ASSERT_ERR_HAS(ez_connect(b.ctx, NULL, "1", NULL, NULL, NULL, &conn), -EINVAL, "host NULL");
	ASSERT_ERR_HAS(ez_connect(b.ctx, test_addr(), NULL, NULL, NULL, NULL, &conn), -EINVAL, "service NULL");
	ASSERT_ERR_HAS(ez_connect(b.ctx, test_addr(), "1", NULL, NULL, NULL, NULL), -EINVAL, "conn pointer (nil)");
	ck_assert_ptr_null(conn);
	ASSERT_ERR_HAS(ez_listen(b.ctx, test_addr(), "0", NULL, NULL, NULL, &l), -EINVAL, "on_request NULL");
	ASSERT_ERR_HAS(ez_listen(NULL, test_addr(), "0", NULL, NULL, NULL, &l), -EINVAL, "ez_listen: ctx (nil)");
	ck_assert_ptr_null(l);
	ASSERT_ERR_HAS(ez_accept(NULL, NULL, NULL, NULL, &conn), -EINVAL, "ez_accept: req (nil)");
	ASSERT_ERR_HAS(ez_reject(NULL, "x", 1), -EINVAL, "ez_reject: req is NULL");
	ASSERT_ERR(ez_send(NULL, "x", 1, NULL, NULL), -EINVAL, "ez_send: conn is NULL");
	ASSERT_ERR(ez_sendv(NULL, NULL, 0, NULL, NULL), -EINVAL, "ez_send: conn is NULL");
	ASSERT_ERR(ez_send_mr(NULL, NULL, 0, 1, NULL, NULL), -EINVAL, "ez_send_mr: conn is NULL");
	ASSERT_ERR(ez_write(NULL, NULL, 0, 1, &key, 0, NULL, NULL), -EINVAL, "ez_write: conn is NULL");
	ASSERT_ERR(ez_read(NULL, NULL, 0, 1, &key, 0, NULL, NULL), -EINVAL, "ez_read: conn is NULL");
	ASSERT_ERR_HAS(ez_mr_reg(NULL, NULL, mem, sizeof(mem), 0, &mr), -EINVAL, "ez_mr_reg: ctx (nil)");
	ASSERT_ERR_HAS(ez_mr_reg(b.ctx, NULL, NULL, 64, 0, &mr), -EINVAL, "addr (nil)");
	ASSERT_ERR_HAS(ez_mr_reg(b.ctx, NULL, mem, sizeof(mem), 0x10, &mr), -EINVAL,
		   "ez_mr_reg: unknown access bits 0x10");
	ASSERT_ERR_HAS(ez_mr_reg(b.ctx, "no-such-dev", mem, sizeof(mem), 0, &mr), -ENODEV,
		       "no RDMA device named no-such-dev (");
	ck_assert_ptr_null(mr);
	ASSERT_ERR_HAS(ez_mr_export(NULL, &key), -EINVAL, "ez_mr_export: mr (nil)");
	ASSERT_ERR_HAS(ez_conn_info(NULL, &info), -EINVAL, "ez_conn_info: conn (nil)");
	ASSERT_ERR_HAS(ez_conn_stats(NULL, &st), -EINVAL, "ez_conn_stats: conn (nil)");
	ASSERT_ERR_HAS(ez_ctx_process(NULL), -EINVAL, "ez_ctx_process: ctx is NULL");
	ASSERT_ERR(ez_srqpool_new(NULL, NULL, NULL, NULL), -EINVAL, "ez_srqpool_new: ctx (nil), pool pointer (nil)");
	ck_assert_int_eq(ez_ctx_fd(NULL), -EINVAL);
	ck_assert_int_eq(ez_ctx_timeout_ms(NULL), -1);
	/* The documented no-ops. */
	ez_conn_close(NULL);
	ez_listener_close(NULL);
	ck_assert_int_eq(ez_mr_dereg(NULL), 0);
	ck_assert_int_eq(ez_srqpool_free(NULL), 0);
	ck_assert_int_eq(ez_ctx_free(NULL), 0);
	ck_assert_str_eq(ez_conn_errmsg(NULL), "");
	ck_assert_ptr_null(ez_conn_arg(NULL));
	ck_assert_uint_eq(ez_listener_port(NULL), 0);
	ck_assert_ptr_null(ez_conn_req_peer(NULL));
	ck_assert_ptr_null(ez_mr_addr(NULL));
	ck_assert_uint_eq(ez_mr_len(NULL), 0);
	ck_assert_ptr_nonnull(ez_strerror(0));
	fb_fini(&b);
}
END_TEST

static void never_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	(void)l;
	(void)req;
	(void)arg;
	ck_abort_msg("no request can reach a listener that was refused");
}

/* A port above 65535 is refused by name, at ez_listen() and through
 * on_connect, and the context works on: a connection made after it is up.
 * (getaddrinfo() kept the low 16 bits, so 65536 was port 0.) */
START_TEST(port_out_of_range)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep bad = { 0 }, c = { 0 };
	struct ez_listener *l = NULL;

	fb_init(&b);
	ASSERT_ERR(ez_listen(b.ctx, test_addr(), "65536", NULL, never_request, NULL, &l), -EINVAL,
		   "ez_listen: port 65536 is out of range (0 to 65535)");
	ck_assert_ptr_null(l);
	ck_assert_int_eq(ep_connect(&b, &bad, "70000", NULL), 0);
	ck_assert(fb_run(&b, &bad.connected, 1, 5));
	ck_assert_int_eq(bad.connect_status, -EINVAL);
	ck_assert_msg(strstr(bad.connect_msg, "port 70000 is out of range (0 to 65535)"), "%s",
		      bad.connect_msg);
	ez_conn_close(bad.conn);
	srv_start(&b, &s, 2);
	ck_assert_int_eq(ep_connect(&b, &c, s.port, NULL), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "%s", c.connect_msg);
	ep_close(&c);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

START_TEST(send_before_connect)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct ez_conn_stats st;

	fb_init(&b);
	srv_start(&b, &s, 2);
	ck_assert_int_eq(ep_connect(&b, &c, s.port, NULL), 0);
	ASSERT_ERR(ez_send(c.conn, "x", 1, NULL, NULL), -ENOTCONN,
		   "ez_send: connection is not established (connecting)");
	ASSERT_ERR(ez_write(c.conn, NULL, 0, 1, NULL, 0, NULL, NULL), -ENOTCONN,
		   "ez_write: connection is not established (connecting)");
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_int_eq(c.connect_status, 0);
	ck_assert_int_eq(ez_conn_stats(c.conn, &st), 0);
	ck_assert_uint_eq(st.msgs_sent, 0);
	/* The connection is fine afterwards: one message each way. */
	ck_assert_int_eq(ep_send_seq(&c, 0), 0);
	ck_assert(fb_run(&b, &c.received, 1, 5));
	ck_assert_int_eq(c.bad_seq, 0);
	ep_close(&c);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

START_TEST(oversized_message)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct ez_conn_stats st;
	static uint8_t big[8192];
	struct iovec iov[3] = { { big, 2000 }, { big, 2000 }, { big, 97 } };
	int i;

	fb_init(&b);
	s.opts.max_msg_size = 1024;	/* the server takes smaller messages than we send */
	pair_up(&b, &s, &c, NULL);
	ASSERT_ERR(ez_send(c.conn, big, 1025, NULL, NULL), -EMSGSIZE,
		   "ez_send: 1025 bytes exceed the maximum message size 1024");
	ASSERT_ERR(ez_sendv(c.conn, iov, 3, NULL, NULL), -EMSGSIZE,
		   "ez_send: 4097 bytes exceed the maximum message size 1024");
	ASSERT_ERR(ez_send(c.conn, big, sizeof(big), NULL, NULL), -EMSGSIZE,
		   "ez_send: 8192 bytes exceed the maximum message size 1024");
	ck_assert_int_eq(ez_conn_stats(c.conn, &st), 0);
	ck_assert_uint_eq(st.msgs_sent, 0);	/* nothing posted */
	ck_assert_uint_eq(st.op_errors, 0);
	/* Every send slot is still free: send_depth (64) messages go. */
	for (i = 0; i < 64; i++)
		ck_assert_msg(ep_send_seq(&c, (uint64_t)i) == 0, "send %d: %s", i, ez_errmsg());
	ck_assert_msg(fb_run(&b, &c.received, 64, 10), "echoes: %d/64", c.received);
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(s.eps[0].received, 64);
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	/* And exactly the maximum passes. */
	ck_assert_int_eq(ez_send(c.conn, big, 1024, NULL, NULL), 0);
	ep_close(&c);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	ck_assert_int_eq(c.disconnect_status, 0);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* A message small enough to go inline is still bound by both sides'
 * maximum: ez_send()'s one-compare bound (small_send_max) takes the
 * smaller, so one byte over is refused, not posted into a receive buffer
 * it would overflow (which would end the connection at the peer). */
START_TEST(oversized_small_message)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 }, d = { 0 };
	struct ez_conn_opts small = { .max_msg_size = 40 };
	struct ez_conn_info info;
	struct ez_conn_stats st;
	uint8_t msg[48] = { 0 };	/* seq 0 in its first 8 bytes */

	fb_init(&b);
	s.opts.max_msg_size = 40;	/* the peer's limit */
	pair_up(&b, &s, &c, NULL);
	ck_assert_int_eq(ez_conn_info(c.conn, &info), 0);
	ck_assert_uint_ge(info.max_inline, 41);	/* 41 bytes would go inline */
	ASSERT_ERR(ez_send(c.conn, msg, 41, NULL, NULL), -EMSGSIZE,
		   "ez_send: 41 bytes exceed the maximum message size 40");
	ck_assert_int_eq(ez_send(c.conn, msg, 40, NULL, NULL), 0);
	ck_assert_msg(fb_run(&b, &c.received, 1, 10), "echo: %d/1", c.received);
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(s.eps[0].received, 1);
	ck_assert_int_eq(ez_conn_stats(c.conn, &st), 0);
	ck_assert_uint_eq(st.msgs_sent, 1);
	ck_assert_uint_eq(st.bytes_sent, 40);
	ck_assert_uint_eq(st.op_errors, 0);
	/* Our own limit the same way, the peer's being larger. */
	s.opts.max_msg_size = 0;
	ck_assert_int_eq(ep_connect(&b, &d, s.port, &small), 0);
	ck_assert(fb_run(&b, &d.connected, 1, 10));
	ASSERT_ERR(ez_send(d.conn, msg, 41, NULL, NULL), -EMSGSIZE,
		   "ez_send: 41 bytes exceed the maximum message size 40");
	ck_assert_int_eq(ez_send(d.conn, msg, 40, NULL, NULL), 0);
	ck_assert_msg(fb_run(&b, &d.received, 1, 10), "echo: %d/1", d.received);
	ep_close(&c);
	ep_close(&d);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	ck_assert(fb_run(&b, &d.disconnected, 1, 5));
	ck_assert_int_eq(c.disconnect_status, 0);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* The handle stays valid until its final callback has run; until then
 * every call on it reports the closed state. */
START_TEST(calls_on_closed_connection)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct ez_conn_info info;
	char mem[64];
	struct ez_mr *mr;
	struct ez_rkey key = { 0 };

	fb_init(&b);
	pair_up(&b, &s, &c, NULL);
	ck_assert_int_eq(ez_mr_reg(b.ctx, NULL, mem, sizeof(mem), 0, &mr), 0);
	ep_close(&c);
	ASSERT_ERR(ez_send(c.conn, "x", 1, NULL, NULL), -ENOTCONN,
		   "ez_send: connection is not established (closed)");
	ASSERT_ERR(ez_send_mr(c.conn, mr, 0, 8, NULL, NULL), -ENOTCONN,
		   "ez_send_mr: connection is not established (closed)");
	ASSERT_ERR(ez_read(c.conn, mr, 0, 8, &key, 0, NULL, NULL), -ENOTCONN,
		   "ez_read: connection is not established (closed)");
	ck_assert_str_eq(ez_conn_errmsg(c.conn), "closed by the application");
	/* Double close before the handle is gone: detected, ignored. */
	ez_conn_close(c.conn);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	ck_assert_int_eq(c.disconnect_status, 0);
	ck_assert_str_eq(c.disconnect_msg, "closed by the application");

	/* The server side: the peer went away, the handle is not closed yet. */
	ck_assert(fb_run(&b, &s.disconnected, 1, 5));
	ck_assert_int_eq(s.eps[0].disconnect_status, 0);
	ck_assert_ptr_nonnull(strstr(s.eps[0].disconnect_msg, "closed the connection"));
	fb_spin(&b, 0.2);
	ck_assert_int_eq(c.disconnected, 1);	/* once */
	ck_assert_int_eq(c.connected, 1);
	ck_assert_int_eq(ez_mr_dereg(mr), 0);
	srv_stop(&s);
	(void)info;
	fb_fini(&b);
}
END_TEST

/* A connection that ended by itself (peer closed) but that the application
 * has not closed: calls say "down", info says "closed". */
static void keep_on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;
	struct ez_conn_info info;

	e->disconnected++;
	e->disconnect_status = status;
	snprintf(e->disconnect_msg, sizeof(e->disconnect_msg), "%s", ez_conn_errmsg(conn));
	ck_assert_int_eq(ez_send(conn, "x", 1, NULL, NULL), -ENOTCONN);
	ck_assert_str_eq(ez_errmsg(), "ez_send: connection is not established (down)");
	ck_assert_int_eq(ez_conn_info(conn, &info), -ENOTCONN);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_info: the connection has no QP (closed)");
}

START_TEST(calls_on_ended_connection)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct ez_conn_cbs cbs = ep_cbs;

	fb_init(&b);
	srv_start(&b, &s, 2);
	cbs.on_disconnect = keep_on_disconnect;
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, NULL, &cbs, &c, &c.conn), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_int_eq(c.connect_status, 0);
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	s.eps[0].closed = 1;
	ez_conn_close(s.eps[0].conn);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	ck_assert_int_eq(c.disconnect_status, 0);
	ck_assert_str_eq(c.disconnect_msg, ez_conn_errmsg(c.conn));
	ck_assert_ptr_nonnull(strstr(c.disconnect_msg, "closed the connection"));
	/* Later, outside callbacks, the same. */
	ASSERT_ERR(ez_send(c.conn, "x", 1, NULL, NULL), -ENOTCONN,
		   "ez_send: connection is not established (down)");
	ez_conn_close(c.conn);	/* frees at once: the connection is dead */
	fb_spin(&b, 0.2);
	ck_assert_int_eq(c.disconnected, 1);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* ---- callbacks that close their own connection ------------------------ */

struct closer {
	struct ep e;
	int close_after;	/* close in on_recv after this many messages */
	int op_cbs, op_ok, op_canceled, op_other, op_after_disc;
	int send_in_disconnect;
	int send_in_connect;
	int ctx_free_in_cb;
	struct fb *b;
};

static void closer_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct closer *k = arg;

	if (k->e.closed)
		k->e.recv_after_close++;
	k->e.received++;
	ez_buf_release(buf);
	if (k->e.received == k->close_after) {
		k->e.closed = 1;
		ez_conn_close(conn);
		/* Re-entrant calls on the connection just closed. */
		ck_assert_int_eq(ez_send(conn, "x", 1, NULL, NULL), -ENOTCONN);
		ck_assert_str_eq(ez_errmsg(), "ez_send: connection is not established (closed)");
		ez_conn_close(conn);	/* double close inside a callback: ignored */
	}
}

static void closer_connect(struct ez_conn *conn, int status, void *arg)
{
	struct closer *k = arg;

	k->e.connected++;
	k->e.connect_status = status;
	if (status)
		return;
	if (k->send_in_connect)
		ck_assert_msg(ez_send(conn, "hello-from-on_connect", 22, NULL, NULL) == 0, "%s",
			      ez_errmsg());
	if (k->ctx_free_in_cb) {
		ck_assert_int_eq(ez_ctx_free(k->b->ctx), -EBUSY);
		ck_assert_str_eq(ez_errmsg(),
				 "ez_ctx_free: 2 connections, 1 listeners, 0 pools and 0 MRs still alive");
	}
}

static void closer_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct closer *k = arg;

	k->e.disconnected++;
	k->e.disconnect_status = status;
	if (k->send_in_disconnect) {
		ck_assert_int_eq(ez_send(conn, "x", 1, NULL, NULL), -ENOTCONN);
	}
	if (!k->e.closed) {
		k->e.closed = 1;
		ez_conn_close(conn);
	}
	ez_conn_close(conn);	/* a second close from on_disconnect: ignored */
}

static const struct ez_conn_cbs closer_cbs = { .on_connect = closer_connect, .on_recv = closer_recv, .on_disconnect = closer_disconnect };

START_TEST(close_own_connection_in_on_recv)
{
	struct fb b;
	struct srv s = { 0 };
	struct closer k = { .close_after = 3 };
	int i;

	fb_init(&b);
	srv_start(&b, &s, 2);
	s.opts.recv_depth = 64;
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, NULL, &closer_cbs, &k, &k.e.conn),
			 0);
	ck_assert(fb_run(&b, &k.e.connected, 1, 10));
	ck_assert_int_eq(k.e.connect_status, 0);
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	/* The server sends 20; the client closes in the 3rd on_recv. */
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(ez_send(s.eps[0].conn, &i, sizeof(i), NULL, NULL), 0);
	ck_assert(fb_run(&b, &k.e.disconnected, 1, 5));
	ck_assert_int_eq(k.e.received, 3);	/* nothing delivered after the close */
	ck_assert_int_eq(k.e.recv_after_close, 0);
	ck_assert_int_eq(k.e.disconnect_status, 0);
	ck_assert(fb_run(&b, &s.disconnected, 1, 5));
	fb_spin(&b, 0.2);
	ck_assert_int_eq(k.e.disconnected, 1);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

START_TEST(close_own_connection_in_on_disconnect)
{
	struct fb b;
	struct srv s = { 0 };
	struct closer k = { .send_in_disconnect = 1 };

	fb_init(&b);
	srv_start(&b, &s, 2);
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, NULL, &closer_cbs, &k, &k.e.conn),
			 0);
	ck_assert(fb_run(&b, &k.e.connected, 1, 10));
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	s.eps[0].closed = 1;
	ez_conn_close(s.eps[0].conn);
	ck_assert(fb_run(&b, &k.e.disconnected, 1, 5));
	ck_assert_int_eq(k.e.disconnect_status, 0);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(k.e.disconnected, 1);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* An op callback that closes the connection while other ops are outstanding:
 * every op's callback still runs exactly once. */
static void op_closer(struct ez_conn *conn, int status, void *arg)
{
	struct closer *k = arg;

	k->op_cbs++;
	if (k->e.disconnected)
		k->op_after_disc++;
	if (status == 0)
		k->op_ok++;
	else if (status == -ECANCELED)
		k->op_canceled++;
	else
		k->op_other++;
	if (!k->e.closed) {
		k->e.closed = 1;
		ez_conn_close(conn);
	}
}

START_TEST(close_own_connection_in_op_callback)
{
	struct fb b;
	struct srv s = { 0 };
	struct closer k = { 0 };
	int i, n = 0;

	fb_init(&b);
	s.opts.recv_depth = 4;	/* 3 credits: most sends wait in the library */
	srv_start(&b, &s, 2);
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, NULL, &closer_cbs, &k, &k.e.conn),
			 0);
	ck_assert(fb_run(&b, &k.e.connected, 1, 10));
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	for (i = 0; i < 30; i++, n++)
		ck_assert_int_eq(ez_send(k.e.conn, &i, sizeof(i), op_closer, &k), 0);
	ck_assert(fb_run(&b, &k.e.disconnected, 1, 10));
	ck_assert_int_eq(k.op_cbs, n);
	ck_assert_int_eq(k.op_after_disc, 0);
	ck_assert_int_eq(k.op_other, 0);
	ck_assert_int_ge(k.op_ok, 1);
	ck_assert_int_ge(k.op_canceled, 30 - 3);
	printf("op callback closed its connection: %d ops: %d ok, %d -ECANCELED\n", n, k.op_ok,
	       k.op_canceled);
	fb_spin(&b, 0.2);
	ck_assert_int_eq(k.op_cbs, n);
	ck_assert_int_eq(k.e.disconnected, 1);
	/* The server got exactly what was sent before the close, in order. */
	ck_assert_int_le(s.eps[0].received, k.op_ok);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* ---- re-entrancy ------------------------------------------------------ */

START_TEST(send_and_ctx_free_from_on_connect)
{
	struct fb b;
	struct srv s = { 0 };
	struct closer k = { .send_in_connect = 1, .ctx_free_in_cb = 1 };

	fb_init(&b);
	k.b = &b;
	srv_start(&b, &s, 2);
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, NULL, &closer_cbs, &k, &k.e.conn),
			 0);
	ck_assert(fb_run(&b, &k.e.connected, 1, 10));
	ck_assert_int_eq(k.e.connect_status, 0);
	ck_assert(fb_run(&b, &k.e.received, 1, 5));	/* the echo of the on_connect send */
	k.e.closed = 1;
	ez_conn_close(k.e.conn);
	ck_assert(fb_run(&b, &k.e.disconnected, 1, 5));
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* The listener closed from inside its own on_request, after accepting: the
 * accepted connection works; later requests find no listener. */
struct lclose {
	struct ez_listener *l;
	struct ep e;
	int requests;
	int close_in_connect;
};

static void lclose_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct lclose *x = arg;

	x->requests++;
	ck_assert_int_eq(ez_accept(req, NULL, &ep_cbs, &x->e, &x->e.conn), 0);
	x->e.echo = 1;
	if (!x->close_in_connect) {
		ez_listener_close(l);
		x->l = NULL;
	}
}

static struct lclose *g_lc;

static void lclose_on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct ep *e = arg;

	e->connected++;
	e->connect_status = status;
	if (g_lc && g_lc->l) {
		ez_listener_close(g_lc->l);
		g_lc->l = NULL;
	}
}

static void listener_close_case(int in_connect)
{
	struct fb b;
	struct lclose x = { .close_in_connect = in_connect };
	struct ep c = { 0 }, c2 = { 0 };
	struct ez_conn_cbs ccbs = ep_cbs;
	char port[8];

	fb_init(&b);
	ck_assert_int_eq(ez_listen(b.ctx, test_addr(), "0", NULL, lclose_request, &x, &x.l), 0);
	snprintf(port, sizeof(port), "%u", ez_listener_port(x.l));
	if (in_connect) {
		g_lc = &x;
		ccbs.on_connect = lclose_on_connect;
	}
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), port, NULL, &ccbs, &c, &c.conn), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "%s", c.connect_msg);
	ck_assert_ptr_null(x.l);
	ck_assert_int_eq(ep_send_seq(&c, 0), 0);
	ck_assert_int_eq(ep_send_seq(&c, 1), 0);
	ck_assert(fb_run(&b, &c.received, 2, 5));
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(x.e.received, 2);
	ck_assert_int_eq(ep_connect(&b, &c2, port, NULL), 0);
	ck_assert(fb_run(&b, &c2.connected, 1, 10));
	ck_assert_int_eq(c2.connect_status, -ECONNREFUSED);
	ck_assert_ptr_nonnull(strstr(c2.connect_msg, "no listener at the address and port"));
	ck_assert_int_eq(x.requests, 1);
	ez_conn_close(c2.conn);
	ep_close(&c);
	ck_assert(fb_run(&b, &x.e.disconnected, 1, 5));
	ep_close(&x.e);
	fb_spin(&b, 0.2);
	g_lc = NULL;
	fb_fini(&b);
}

START_TEST(listener_close_from_on_request)
{
	listener_close_case(0);
}
END_TEST

START_TEST(listener_close_from_on_connect)
{
	listener_close_case(1);
}
END_TEST

START_TEST(ctx_free_with_live_objects)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct ez_mr *mr;
	struct ez_srqpool *pool;
	char mem[128];

	fb_init(&b);
	pair_up(&b, &s, &c, NULL);
	ck_assert_int_eq(ez_mr_reg(b.ctx, NULL, mem, sizeof(mem), 0, &mr), 0);
	ck_assert_int_eq(ez_srqpool_new(b.ctx, NULL, NULL, &pool), 0);
	ASSERT_ERR(ez_ctx_free(b.ctx), -EBUSY,
		   "ez_ctx_free: 2 connections, 1 listeners, 1 pools and 1 MRs still alive");
	/* Nothing was freed: everything still works. */
	ck_assert_int_eq(ep_send_seq(&c, 0), 0);
	ck_assert(fb_run(&b, &c.received, 1, 5));
	ck_assert_int_eq(ez_srqpool_free(pool), 0);
	ck_assert_int_eq(ez_mr_dereg(mr), 0);
	ASSERT_ERR(ez_ctx_free(b.ctx), -EBUSY,
		   "ez_ctx_free: 2 connections, 1 listeners, 0 pools and 0 MRs still alive");
	ep_close(&c);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	ck_assert(fb_run(&b, &s.disconnected, 1, 5));
	fb_spin(&b, 0.2);
	ASSERT_ERR(ez_ctx_free(b.ctx), -EBUSY,
		   "ez_ctx_free: 0 connections, 1 listeners, 0 pools and 0 MRs still alive");
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_api");
	TCase *tc = tcase_create("misuse");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, null_arguments);
	tcase_add_test(tc, port_out_of_range);
	tcase_add_test(tc, send_before_connect);
	tcase_add_test(tc, oversized_message);
	tcase_add_test(tc, oversized_small_message);
	tcase_add_test(tc, calls_on_closed_connection);
	tcase_add_test(tc, calls_on_ended_connection);
	tcase_add_test(tc, close_own_connection_in_on_recv);
	tcase_add_test(tc, close_own_connection_in_on_disconnect);
	tcase_add_test(tc, close_own_connection_in_op_callback);
	tcase_add_test(tc, send_and_ctx_free_from_on_connect);
	tcase_add_test(tc, listener_close_from_on_request);
	tcase_add_test(tc, listener_close_from_on_connect);
	tcase_add_test(tc, ctx_free_with_live_objects);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
