/* test_causes.c: errors keep their cause: a failed op's message names it before its callback, on_disconnect keeps the first cause after a close in response, a clean close reads as clean on the peer, a connect timeout names the step it waited for. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fault.h"
#include "rawcm.h"
#include "wire/handshake.h"
#include "conn/conn_types.h"
#include "../checkmain.h"

#define XLEN 4096

/* A client whose op callback records what it saw, ez_conn_errmsg()
 * included, and (close_in_op) closes the connection there. */
struct cli {
	struct ep e;
	int ops, op_status, close_in_op, closed_in_op;
	char op_msg[256];
	int msg_at_op_was_ended;	/* ez_send in the callback said "(down)" */
};

static void cli_op_done(struct ez_conn *conn, int status, void *arg)
{
	struct cli *c = arg;

	c->ops++;
	c->op_status = status;
	snprintf(c->op_msg, sizeof(c->op_msg), "%s", ez_conn_errmsg(conn));
	if (status && ez_send(conn, "x", 1, NULL, NULL) == -ENOTCONN &&
	    strcmp(ez_errmsg(), "ez_send: connection is not established (down)") == 0)
		c->msg_at_op_was_ended = 1;
	if (c->close_in_op && !c->e.closed) {
		c->e.closed = 1;
		c->closed_in_op = 1;
		ez_conn_close(conn);
	}
}

/* A connected pair with region X (XLEN bytes) exported to the client's
 * connection for read and write; the client's QP number in *cqpn, the
 * server's in *sqpn. */
struct bed {
	struct fb b;
	struct srv s;
	struct cli c;
	uint8_t x[XLEN], mem[XLEN];
	struct ez_mr *xmr, *lmr;
	struct ez_rkey key;
	uint32_t cqpn, sqpn;
};

static void bed_up(struct bed *t)
{
	struct ez_conn_info in;
	uint64_t seq = 0;

	memset(t, 0, sizeof(*t));
	fb_init(&t->b);
	srv_start(&t->b, &t->s, 4);
	ck_assert_int_eq(ez_mr_reg(t->b.ctx, NULL, t->x, XLEN, EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE,
				   &t->xmr), 0);
	ck_assert_int_eq(ez_mr_reg(t->b.ctx, NULL, t->mem, XLEN, 0, &t->lmr), 0);
	ck_assert_int_eq(ez_connect(t->b.ctx, test_addr(), t->s.port, NULL, &ep_cbs, &t->c.e,
				    &t->c.e.conn), 0);
	ck_assert(fb_run(&t->b, &t->c.e.connected, 1, 10));
	ck_assert_msg(t->c.e.connect_status == 0, "%s", t->c.e.connect_msg);
	ck_assert(fb_run(&t->b, &t->s.connected, 1, 5));
	/* A message each way first (a bind must not reuse a send's op that
	 * carried credits in its immediate: test_hostile_rkey.c). */
	ck_assert_int_eq(ep_send_seq(&t->c.e, 0), 0);
	ck_assert(fb_run(&t->b, &t->s.eps[0].received, 1, 5));
	ck_assert(fb_run(&t->b, &t->c.e.received, 1, 5));
	ck_assert_int_eq(ez_send(t->s.eps[0].conn, &seq, sizeof(seq), NULL, NULL), 0);
	ck_assert(fb_run(&t->b, &t->c.e.received, 2, 5));
	t->c.e.next_seq = 0;	/* the server's own message reused seq 0 */
	ck_assert_int_eq(ez_conn_export(t->s.eps[0].conn, t->xmr, 0, XLEN,
					EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE, &t->key), 0);
	ck_assert_int_eq(ez_conn_info(t->c.e.conn, &in), 0);
	t->cqpn = in.qp_num;
	ck_assert_int_eq(ez_conn_info(t->s.eps[0].conn, &in), 0);
	t->sqpn = in.qp_num;
	/* The right key works. */
	memset(t->x, 'X', XLEN);
	ck_assert_int_eq(ez_read(t->c.e.conn, t->lmr, 0, XLEN, &t->key, 0, cli_op_done, &t->c), 0);
	ck_assert(fb_run(&t->b, &t->c.ops, 1, 5));
	ck_assert_int_eq(t->c.op_status, 0);
	ck_assert_int_eq(t->mem[XLEN - 1], 'X');
	t->c.ops = 0;
}

static void bed_down(struct bed *t)
{
	ep_close(&t->c.e);
	fb_spin(&t->b, 0.1);
	ck_assert_int_eq(ez_mr_dereg(t->lmr), 0);
	srv_stop(&t->s);
	ck_assert_int_eq(ez_mr_dereg(t->xmr), 0);
	fb_fini(&t->b);
}

/* A wrong key: the op's callback sees the connection's message naming
 * the op, the key, the range and the status; the callback closes; the
 * client's on_disconnect still carries that first cause, and the server
 * names the refusal its responder made. */
static void wrong_rkey(enum ibv_wr_opcode opcode)
{
	struct bed t;
	struct ez_rkey bad;
	char want[320], swant[512];
	const char *what = opcode == IBV_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE";
	size_t n;

	bed_up(&t);
	bad = t.key;
	bad.rkey ^= 0x80;	/* the key byte: the same window index, another key */
	t.c.close_in_op = 1;
	memset(t.mem, 'm', XLEN);
	if (opcode == IBV_WR_RDMA_READ)
		ck_assert_int_eq(ez_read(t.c.e.conn, t.lmr, 0, 256, &bad, 64, cli_op_done, &t.c), 0);
	else
		ck_assert_int_eq(ez_write(t.c.e.conn, t.lmr, 0, 256, &bad, 64, cli_op_done, &t.c), 0);
	ck_assert(fb_run(&t.b, &t.c.ops, 1, 5));
	snprintf(want, sizeof(want), "%s of rkey 0x%x [0x%llx, +256): remote access error (QP %u, vendor error 0x",
		 what, bad.rkey, (unsigned long long)(bad.addr + 64), t.cqpn);
	n = strlen(want);
	ck_assert_int_eq(t.c.op_status, -EACCES);
	ck_assert_msg(strncmp(t.c.op_msg, want, n) == 0 && t.c.op_msg[strlen(t.c.op_msg) - 1] == ')',
		      "in the op callback: \"%s\", want \"%s...)\"", t.c.op_msg, want);
	ck_assert_int_eq(t.c.msg_at_op_was_ended, 1);
	ck_assert_int_eq(t.c.closed_in_op, 1);
	ck_assert(fb_run(&t.b, &t.c.e.disconnected, 1, 5));
	ck_assert_int_eq(t.c.e.disconnect_status, -EACCES);
	ck_assert_str_eq(t.c.e.disconnect_msg, t.c.op_msg);
	ck_assert_int_eq(t.mem[0], 'm');
	ck_assert_int_eq(t.x[64], 'X');
	ck_assert(fb_run(&t.b, &t.s.disconnected, 1, 5));
	snprintf(swant, sizeof(swant), "peer %s: an RDMA request was refused by our responder (QP %u, path 0, to ERR by the device: a key not exported to this connection, an access it was not given, or outside the region; 1 region(s) exported to it, last rkey 0x%x)",
		 test_addr(), t.sqpn, t.key.rkey);
	ck_assert_int_eq(t.s.eps[0].disconnect_status, -EACCES);
	ck_assert_str_eq(t.s.eps[0].disconnect_msg, swant);
	printf("wrong rkey, %s: client op and on_disconnect(-EACCES) \"%s\"; server on_disconnect(-EACCES) \"%s\"\n",
	       what, t.c.op_msg, t.s.eps[0].disconnect_msg);
	bed_down(&t);
}

START_TEST(wrong_rkey_read)
{
	wrong_rkey(IBV_WR_RDMA_READ);
}
END_TEST

START_TEST(wrong_rkey_write)
{
	wrong_rkey(IBV_WR_RDMA_WRITE);
}
END_TEST

/* Clean closes, from inside callbacks (an op's, on_recv, on_connect) and
 * outside, many times over: the
 * closing side says "closed by the application", the peer on_disconnect(0)
 * "peer ... closed the connection", never "without closing". */
enum close_from { FROM_OP, FROM_RECV, FROM_OUTSIDE, FROM_CONNECT, FROM_COUNT };

struct closer {
	struct ep e;
	enum close_from from;
	int ops;
};

static void closer_op(struct ez_conn *conn, int status, void *arg)
{
	struct closer *k = arg;

	k->ops++;
	if (status == 0 && k->from == FROM_OP && !k->e.closed) {
		k->e.closed = 1;
		ez_conn_close(conn);
	}
}

static void closer_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct closer *k = arg;

	k->e.received++;
	ez_buf_release(buf);
	if (k->from == FROM_RECV && !k->e.closed) {
		k->e.closed = 1;
		ez_conn_close(conn);
	}
}

static void closer_connect(struct ez_conn *conn, int status, void *arg)
{
	struct closer *k = arg;

	k->e.connected++;
	k->e.connect_status = status;
	if (status == 0 && k->from == FROM_CONNECT) {
		k->e.closed = 1;
		ez_conn_close(conn);
	}
}

static void closer_disconnect(struct ez_conn *conn, int status, void *arg)
{
	struct closer *k = arg;

	k->e.disconnected++;
	k->e.disconnect_status = status;
	snprintf(k->e.disconnect_msg, sizeof(k->e.disconnect_msg), "%s", ez_conn_errmsg(conn));
}

static const struct ez_conn_cbs closer_cbs = { .on_connect = closer_connect, .on_recv = closer_recv,
					       .on_disconnect = closer_disconnect };

#define CLEAN_ROUNDS 10

START_TEST(clean_close_is_clean)
{
	struct fb b;
	struct srv s = { 0 };
	char want[128];
	int i, j;

	fb_init(&b);
	srv_start(&b, &s, FROM_COUNT * CLEAN_ROUNDS + 2);
	snprintf(want, sizeof(want), "peer %s closed the connection", test_addr());
	for (i = 0; i < FROM_COUNT * CLEAN_ROUNDS; i++) {
		struct closer k = { .from = (enum close_from)(i % FROM_COUNT) };
		struct ep *se;
		int disc = s.disconnected;

		ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, NULL, &closer_cbs, &k,
					    &k.e.conn), 0);
		ck_assert(fb_run(&b, &k.e.connected, 1, 10));
		ck_assert_msg(k.e.connect_status == 0, "%d", k.e.connect_status);
		ck_assert(fb_run(&b, &s.connected, i + 1, 5));
		se = &s.eps[s.neps - 1];
		/* Traffic in flight when the close comes: 8 sends, echoed. */
		for (j = 0; k.from != FROM_CONNECT && j < 8; j++)
			ck_assert_int_eq(ez_send(k.e.conn, &j, sizeof(j), closer_op, &k), 0);
		if (k.from == FROM_OUTSIDE) {
			ck_assert(fb_run(&b, &k.ops, 8, 5));
			k.e.closed = 1;
			ez_conn_close(k.e.conn);
		}
		ck_assert(fb_run(&b, &k.e.disconnected, 1, 10));
		ck_assert(fb_run(&b, &s.disconnected, disc + 1, 10));
		ck_assert_int_eq(k.e.disconnect_status, 0);
		ck_assert_str_eq(k.e.disconnect_msg, "closed by the application");
		ck_assert_msg(se->disconnect_status == 0 && strcmp(se->disconnect_msg, want) == 0,
			      "round %d (close from %s): the peer saw on_disconnect(%d) \"%s\"", i,
			      k.from == FROM_OP ? "an op callback" : k.from == FROM_RECV ? "on_recv" :
			      k.from == FROM_CONNECT ? "on_connect" : "outside",
			      se->disconnect_status, se->disconnect_msg);
	}
	printf("clean close: %d rounds (from an op callback, on_recv, outside, on_connect): the peer saw on_disconnect(0) \"%s\" each time\n",
	       FROM_COUNT * CLEAN_ROUNDS, want);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* ---- connect timeouts name the step ----------------------------------- */

static void want_timeout(const struct ep *e, const char *step, const char *host,
			 unsigned int ms, const char *awaits)
{
	char want[320];

	snprintf(want, sizeof(want), "%s(%s): connection not established after %u ms: waiting for %s",
		 step, host, ms, awaits);
	ck_assert_int_eq(e->connect_status, -ETIMEDOUT);
	ck_assert_str_eq(e->connect_msg, want);
}

/* A raw rdma_cm listener that takes the request and never answers. */
START_TEST(timeout_cm_reply)
{
	struct fb b;
	struct raw r = { 0 };
	struct ep c = { 0 };
	struct ez_conn_opts o = { .connect_timeout_ms = 1000 };
	struct rdma_cm_id *id;
	char port[8], host[80];
	double t0, dt;

	fb_init(&b);
	raw_listen(&r, port, sizeof(port));
	t0 = now_s();
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), port, &o, &ep_cbs, &c, &c.conn), 0);
	raw_expect(&b, &r, RDMA_CM_EVENT_CONNECT_REQUEST, &id);
	ck_assert(fb_run(&b, &c.connected, 1, 5));
	dt = now_s() - t0;
	snprintf(host, sizeof(host), "%s:%s", test_addr(), port);
	want_timeout(&c, "rdma_connect", host, 1000,
		     "the peer's CM reply (no listener answered the request)");
	printf("CM reply never sent: on_connect(-ETIMEDOUT) after %.2f s: \"%s\"\n", dt, c.connect_msg);
	/* Never before the deadline (the design's bound); after it, by as much as
	 * the host delays the guest's timers: the upper margin only tells "at
	 * this deadline" from "never" (the message names the step). */
	ck_assert_msg(dt > 0.9 && dt < 1.0 + TIMER_LATE_S, "%.2f s", dt);
	ez_conn_close(c.conn);
	rdma_destroy_id(id);
	raw_free(&r);
	fb_fini(&b);
}
END_TEST

/* The passive side: a raw client whose request is accepted and that never
 * sends the RTU; the accept's connect timeout (1000 ms) before the
 * listener's deadline (5000 ms). */
START_TEST(timeout_rtu)
{
	struct fb b;
	struct srv s = { .lopts = { .handshake_timeout_ms = 5000 } };
	struct rflood f;
	uint8_t req[HS_REQ_MAX];
	int n;
	double t0, dt;

	fb_init(&b);
	s.opts.connect_timeout_ms = 1000;
	srv_start(&b, &s, 2);
	n = raw_ez_req(req, 8, 4096);
	rflood_init(&f, req, n);
	t0 = now_s();
	rflood_send(&f, NULL, test_addr(), s.port);
	while (f.replied + f.rejected + f.other == 0 && now_s() < t0 + 5) {
		rflood_poll(&f);
		fb_spin(&b, 0.005);
	}
	ck_assert_int_eq(f.replied, 1);
	ck_assert(fb_run(&b, &s.connect_failed, 1, 5));
	dt = now_s() - t0;
	want_timeout(&s.eps[0], "rdma_accept", test_addr(), 1000,
		     "the peer's RTU (the CM's ready-to-use)");
	printf("RTU never sent: the server's on_connect(-ETIMEDOUT) after %.2f s: \"%s\"\n", dt,
	       s.eps[0].connect_msg);
	ck_assert_msg(dt > 0.9 && dt < 2.0 + TIMER_LATE_S, "%.2f s", dt);
	rflood_free(&f);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* An address on a netdev that does ARP (a dummy with ARP on) where nothing
 * answers: the address never resolves. The netdev is made here and
 * deleted afterwards (later tests must not see it). */
#define ARP_DEV "ezarp0"
#define ARP_SELF "198.51.100.1"
#define ARP_DEAD "198.51.100.2"

static void arp_dev_del(void)
{
	if (system("ip link del " ARP_DEV " 2>/dev/null"))
		return;
}

/* A connect to ARP_DEAD with timeout ms: its on_connect(-ETIMEDOUT) names
 * the step at about ms, after attempts rdma_resolve_addr() calls. */
static void address_never_resolves(unsigned int ms, int attempts)
{
	struct fb b;
	struct ep c = { 0 };
	struct ez_conn_opts o = { .connect_timeout_ms = ms };
	double t0, dt;

	arp_dev_del();
	ck_assert_int_eq(system("ip link add " ARP_DEV " type dummy && ip link set " ARP_DEV " arp on &&"
				" ip addr add " ARP_SELF "/24 dev " ARP_DEV " && ip link set " ARP_DEV " up"), 0);
	fb_init(&b);
	t0 = now_s();
	ck_assert_int_eq(ez_connect(b.ctx, ARP_DEAD, "7471", &o, &ep_cbs, &c, &c.conn), 0);
	ck_assert(fb_run(&b, &c.connected, 1, ms / 1000.0 + 5));
	dt = now_s() - t0;
	want_timeout(&c, "rdma_resolve_addr", ARP_DEAD ":7471", ms,
		     "address resolution (no ARP/ND reply, or no RDMA device on the route)");
	printf("address never resolved (no ARP reply), connect_timeout_ms %u: on_connect(-ETIMEDOUT) "
	       "after %.2f s, %d rdma_resolve_addr() calls: \"%s\"\n", ms, dt,
	       c.conn->resolve_attempts, c.connect_msg);
	ck_assert_msg(dt > ms / 1000.0 - 0.1 && dt < ms / 1000.0 + TIMER_LATE_S, "%.2f s", dt);
	/* Handle still held (closed below): its count of attempts. */
	ck_assert_int_eq(c.conn->resolve_attempts, attempts);
	ez_conn_close(c.conn);
	fb_spin(&b, 0.1);
	fb_fini(&b);
	arp_dev_del();
}

/* One attempt with the kernel's deadline past ours (1000 ms). */
START_TEST(timeout_address)
{
	address_never_resolves(1000, 1);
}
END_TEST

/* 3500 ms: attempts of 1 s while more than 2 s is left (a kernel request
 * whose neighbour update came too early is looked at again), then the last
 * one, which our deadline ends with the same message: 3 calls. Without the
 * retry the first attempt's -ETIMEDOUT would end the connect at 1 s with
 * "rdma_resolve_addr(...): Connection timed out". */
START_TEST(timeout_address_retried)
{
	address_never_resolves(3500, 3);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_causes");
	TCase *tc = tcase_create("causes");

	tcase_set_timeout(tc, 30);
	/* In the parent: the netdev goes even when the test fails. */
	tcase_add_unchecked_fixture(tc, NULL, arp_dev_del);
	tcase_add_test(tc, wrong_rkey_read);
	tcase_add_test(tc, wrong_rkey_write);
	tcase_add_test(tc, clean_close_is_clean);
	tcase_add_test(tc, timeout_cm_reply);
	tcase_add_test(tc, timeout_rtu);
	tcase_add_test(tc, timeout_address);
	tcase_add_test(tc, timeout_address_retried);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
