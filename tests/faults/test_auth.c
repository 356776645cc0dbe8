/* test_auth.c: the handshake's shared-secret check on a device: right key, wrong key, no key, a forged reply, a replayed request (once: the proof fails; again: refused before on_request). */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "easyrdma.h"
#include "fault.h"
#include "rawcm.h"
#include "wire/auth.h"
#include "wire/handshake.h"
#include "wire/imm.h"
#include "../checkmain.h"

static const char KEY[] = "easyrdma test key: 32 bytes long";
static const char WRONG[] = "easyrdma test key: 32 bytes lonG";

static struct ez_conn_opts keyed(const char *key)
{
	struct ez_conn_opts o = { .auth_key = key, .auth_key_len = (uint32_t)strlen(key) };

	return o;
}

static void keyed_srv(struct fb *b, struct srv *s, int cap)
{
	s->auth_key = KEY;
	s->auth_key_len = (uint32_t)strlen(KEY);
	srv_start(b, s, cap);
}

static void want_msg(const struct ep *e, const char *port, const char *what)
{
	char want[256];

	snprintf(want, sizeof(want), "rdma_connect(%s:%s): %s", test_addr(), port, what);
	ck_assert_str_eq(e->connect_msg, want);
}

/* A client with the key connects, exchanges messages and closes. */
static void good_client(struct fb *b, struct srv *s, const char *key)
{
	struct ez_conn_opts o = key ? keyed(key) : (struct ez_conn_opts){ 0 };
	struct ep c = { 0 };
	int before = s->connected, i;

	ck_assert_int_eq(ep_connect(b, &c, s->port, &o), 0);
	ck_assert(fb_run(b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "good client: %d %s", c.connect_status, c.connect_msg);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(ep_send_seq(&c, (uint64_t)i), 0);
	ck_assert(fb_run(b, &c.received, 3, 5));
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(s->connected, before + 1);
	ep_close(&c);
	ck_assert(fb_run(b, &c.disconnected, 1, 5));
	ck_assert_int_eq(c.disconnect_status, 0);
}

/* A client that must be refused before the listener's application hears of it. */
static void refused_client(struct fb *b, struct srv *s, const char *key, const char *what)
{
	struct ez_conn_opts o = key ? keyed(key) : (struct ez_conn_opts){ 0 };
	struct ep c = { 0 };
	int requests = s->requests;

	ck_assert_int_eq(ep_connect(b, &c, s->port, &o), 0);
	ck_assert(fb_run(b, &c.connected, 1, 10));
	ck_assert_int_eq(c.connect_status, -EACCES);
	want_msg(&c, s->port, what);
	printf("refused: on_connect(%d) \"%s\"\n", c.connect_status, c.connect_msg);
	ck_assert_int_eq(s->requests, requests);	/* on_request never ran */
	ck_assert_int_eq(c.received, 0);
	ep_close(&c);
	fb_spin(b, 0.1);
	ck_assert_int_eq(c.disconnected, 0);	/* no on_disconnect after a failed connect */
}

/* ---- a listener that records what on_request saw ---------------------- */

struct peek {
	int requests;
	uint8_t data[64];
	size_t len;
	struct ep ep;
};

static void peek_on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct peek *p = arg;
	const void *d = ez_conn_req_data(req, &p->len);
	static const char reply[EZ_ACCEPT_DATA_MAX_AUTH] = "accepted";
	struct ez_conn_opts o = { .private_data = reply, .private_data_len = sizeof(reply) };

	(void)l;
	p->requests++;
	memcpy(p->data, d, p->len);
	p->ep.echo = 1;
	ck_assert_msg(ez_accept(req, &o, &ep_cbs, &p->ep, &p->ep.conn) == 0, "ez_accept: %s",
		      ez_errmsg());
}

/* Right key: the application data on both sides of the auth blocks arrives
 * whole, and messages flow; a key on ez_accept is refused (the listener's
 * key is the one). */
START_TEST(right_key_connects)
{
	struct fb b;
	struct peek pk = { 0 };
	struct ez_listener *l;
	struct ez_listen_opts lo = { .auth_key = KEY, .auth_key_len = sizeof(KEY) - 1 };
	struct ez_conn_opts o = keyed(KEY);
	struct ep c = { 0 };
	struct ez_conn_info info;
	char port[8];
	int i;

	fb_init(&b);
	ck_assert_int_eq(ez_listen(b.ctx, test_addr(), "0", &lo, peek_on_request, &pk, &l), 0);
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	o.private_data = "12345678";
	o.private_data_len = EZ_CONNECT_DATA_MAX_AUTH;
	ck_assert_int_eq(ep_connect(&b, &c, port, &o), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "%d %s", c.connect_status, c.connect_msg);
	ck_assert_int_eq(pk.requests, 1);
	ck_assert_uint_eq(pk.len, 8);
	ck_assert_mem_eq(pk.data, "12345678", 8);
	/* The server reported the connection once it had the proof: by the
	 * time the client hears "connected" the server has too. */
	ck_assert_int_eq(pk.ep.connected, 1);
	ck_assert_int_eq(pk.ep.connect_status, 0);
	ck_assert_int_eq(ez_conn_info(c.conn, &info), 0);
	ck_assert_uint_gt(info.send_credits, 0);
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(ep_send_seq(&c, (uint64_t)i), 0);
	ck_assert(fb_run(&b, &c.received, 20, 10));
	ck_assert_int_eq(c.bad_seq, 0);
	ck_assert_int_eq(pk.ep.received, 20);
	ck_assert_int_eq(pk.ep.bad_seq, 0);
	printf("right key: connected, 20 messages echoed, request data \"%.*s\"\n", (int)pk.len,
	       (const char *)pk.data);
	ep_close(&c);
	ck_assert(fb_run(&b, &pk.ep.disconnected, 1, 5));
	ck_assert_int_eq(pk.ep.disconnect_status, 0);
	ez_conn_close(pk.ep.conn);
	ez_listener_close(l);
	fb_spin(&b, 0.3);
	fb_fini(&b);
}
END_TEST

/* A key and several paths: the path block rides after the auth block, under
 * its MAC; 3 paths fit the 8 bytes a keyed request has left, 4 do not. */
START_TEST(keyed_multipath)
{
	struct fb b;
	struct srv s = { .opts = { .paths = 3 } };
	struct ez_conn_opts o = keyed(KEY);
	struct ez_conn_info info;
	struct ez_conn *conn;
	struct ep c = { 0 };
	int i;

	fb_init(&b);
	keyed_srv(&b, &s, 4);
	o.paths = 4;
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), s.port, &o, &ep_cbs, NULL, &conn), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.paths 4: 10 bytes of QP numbers do not fit the 8 a "
			 "connect request has left with a shared secret (at most 3 paths then)");
	o.paths = 3;
	ck_assert_int_eq(ep_connect(&b, &c, s.port, &o), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "%d %s", c.connect_status, c.connect_msg);
	ck_assert_int_eq(ez_conn_info(c.conn, &info), 0);
	ck_assert_uint_eq(info.paths, 3);
	ck_assert_uint_eq(info.paths_live, 3);
	/* One at a time: ordering holds per path only. */
	for (i = 0; i < 12; i++) {
		ck_assert_int_eq(ep_send_seq(&c, (uint64_t)i), 0);
		ck_assert(fb_run(&b, &c.received, i + 1, 5));
	}
	ck_assert_int_eq(c.bad_seq, 0);
	printf("keyed, 3 paths: QPs %u %u %u, ports 0x%x 0x%x 0x%x, 12 messages echoed\n",
	       info.path_qp_num[0], info.path_qp_num[1], info.path_qp_num[2],
	       info.path_udp_sport[0], info.path_udp_sport[1], info.path_udp_sport[2]);
	ep_close(&c);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	ck_assert_int_eq(c.disconnect_status, 0);
	/* The wrong key is still refused with paths asked. */
	refused_client(&b, &s, WRONG, "listener refused the shared-secret proof");
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

START_TEST(options_checked)
{
	struct fb b;
	struct ez_listener *l;
	struct ez_listen_opts lo = { .auth_key = KEY, .auth_key_len = 15 };
	struct ez_conn_opts o = keyed(KEY);
	struct ez_conn *conn;

	fb_init(&b);
	ck_assert_int_eq(ez_listen(b.ctx, test_addr(), "0", &lo, peek_on_request, NULL, &l), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_listen_opts.auth_key: bad length (auth_key_len 15; 16..64 bytes)");
	lo.auth_key = NULL;
	lo.auth_key_len = 16;
	ck_assert_int_eq(ez_listen(b.ctx, test_addr(), "0", &lo, peek_on_request, NULL, &l), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_listen_opts.auth_key: NULL (auth_key_len 16; 16..64 bytes)");
	o.private_data = "123456789";
	o.private_data_len = 9;
	ck_assert_int_eq(ez_connect(b.ctx, test_addr(), "1", &o, &ep_cbs, NULL, &conn), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "ez_conn_opts.private_data_len 9 exceeds 8 for a connect with a shared secret");
	fb_fini(&b);
}
END_TEST

/* Wrong key: refused before on_request; the listener then takes a good client. */
START_TEST(wrong_key_refused)
{
	struct fb b;
	struct srv s = { 0 };

	fb_init(&b);
	keyed_srv(&b, &s, 4);
	refused_client(&b, &s, WRONG, "listener refused the shared-secret proof");
	refused_client(&b, &s, WRONG, "listener refused the shared-secret proof");
	ck_assert_int_eq(s.requests, 0);
	good_client(&b, &s, KEY);
	ck_assert_int_eq(s.requests, 1);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

START_TEST(no_key_to_keyed_listener_refused)
{
	struct fb b;
	struct srv s = { 0 };

	fb_init(&b);
	keyed_srv(&b, &s, 4);
	refused_client(&b, &s, NULL, "listener requires a shared secret");
	good_client(&b, &s, KEY);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* The client asked for mutual proof; a listener without a key cannot give
 * it, so it refuses (rather than connect unauthenticated). */
START_TEST(key_to_plain_listener_refused)
{
	struct fb b;
	struct srv s = { 0 };

	fb_init(&b);
	srv_start(&b, &s, 4);
	refused_client(&b, &s, KEY, "listener has no shared secret");
	good_client(&b, &s, NULL);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* The wire's values, written out (lib/wire/imm.h must agree: a change of
 * these is a protocol change): the server's refusal is credit-only | bye |
 * auth, the client's proof and the server's acceptance credit-only | auth. */
#define IMM_REFUSED 0xd0000000u
#define IMM_PROOF 0x90000000u
#define IMM_OK 0x90000000u
_Static_assert(IMM_REFUSED == IMM_AUTH_REFUSED && IMM_PROOF == IMM_AUTH_PROOF && IMM_OK == IMM_AUTH_OK,
	       "lib/wire/imm.h changed the auth messages' immediate data");

/* A key holder's request, captured off the wire by a raw listener. */
static void capture_request(struct fb *b, uint8_t *req, int *len)
{
	struct raw r;
	struct ep c = { 0 };
	struct ez_conn_opts o = keyed(KEY);
	char port[8];

	raw_listen(&r, port, sizeof(port));
	ck_assert_int_eq(ep_connect(b, &c, port, &o), 0);
	raw_expect(b, &r, RDMA_CM_EVENT_CONNECT_REQUEST, &r.conn_id);
	ck_assert_int_ge(r.pdata_len, HS_HDR_LEN + HS_AUTH_REQ_LEN);
	memcpy(req, r.pdata, (size_t)r.pdata_len);
	*len = r.pdata_len;
	rdma_reject(r.conn_id, NULL, 0);
	ck_assert(fb_run(b, &c.connected, 1, 10));
	ck_assert_int_eq(c.connect_status, -ECONNREFUSED);
	ez_conn_close(c.conn);
	raw_free(&r);
}

/* One replay of the captured request: the server's on_request sees it (the
 * request MAC is genuine), but the reply carries a fresh nonce and whatever
 * the replayer sends as proof is refused; its server connection never
 * reports success. */
static void replay(struct fb *b, struct srv *s, const uint8_t *req, int len, int mode,
		   const char *why)
{
	struct raw r;
	struct hs_msg rq, rp;
	char text[160], want[256];
	int failed = s->connect_failed, requests = s->requests;
	struct ep *e;

	raw_connect(b, &r, s->port, req, len);
	ck_assert_int_eq(s->requests, requests + 1);
	ck_assert_int_eq(hs_decode(req, (size_t)len, HS_REQ, &rq, text, sizeof(text)), 0);
	ck_assert_int_eq(hs_decode(r.pdata, (size_t)r.pdata_len, HS_REP, &rp, text, sizeof(text)), 0);
	ck_assert(rp.caps & HS_CAP_AUTH);
	if (mode == 0) {
		/* The proof of an earlier session on the same request (what a
		 * recording of that session holds): its server nonce was another. */
		struct auth_key k;
		struct hs_msg old = { .kind = HS_REP, .caps = rp.caps & ~HS_CAP_AUTH,
				      .credits = rp.credits, .max_msg = rp.max_msg };
		uint8_t proof[AUTH_PROOF_LEN];

		ck_assert_int_eq(auth_key_set(&k, KEY, sizeof(KEY) - 1), 0);
		ck_assert_int_eq(auth_rep_seal(&k, &rq, &old, proof), 0);
		ck_assert_int_ne(memcmp(old.auth, rp.auth, AUTH_NONCE_LEN), 0);
		raw_send(&r, IMM_PROOF, proof, AUTH_PROOF_LEN);
	} else if (mode == 1) {
		uint64_t seq = 0;

		raw_send(&r, 0, &seq, sizeof(seq));	/* data instead of a proof */
	}			/* mode 2: nothing; the server's deadline */
	ck_assert_uint_eq(raw_recv_imm(b, &r, mode == 2 ? 5 : 3), IMM_REFUSED);
	raw_expect(b, &r, RDMA_CM_EVENT_DISCONNECTED, NULL);
	ck_assert(fb_run(b, &s->connect_failed, failed + 1, 5));
	e = &s->eps[s->neps - 1];
	ck_assert_int_eq(e->connect_status, -EACCES);
	snprintf(want, sizeof(want), "ez_accept(%s): %s", test_addr(), why);
	ck_assert_str_eq(e->connect_msg, want);
	ck_assert_int_eq(e->received, 0);
	printf("replayed request, mode %d: server on_connect(%d) \"%s\"\n", mode, e->connect_status,
	       e->connect_msg);
	raw_free(&r);
}

/* A request the listener has let through before: rejected with the reason,
 * on_request never called, and the listener goes on (a good client after). */
static void replay_again(struct fb *b, struct srv *s, const uint8_t *req, int len)
{
	struct raw r;
	struct hs_msg rej;
	char why[160];
	int requests = s->requests, failed = s->connect_failed;
	static const char want[] = "listener has seen this request before (a replay)";

	memset(&r, 0, sizeof(r));
	ck_assert_int_ne(raw_connect_result(b, &r, s->port, req, len), -1);
	ck_assert_int_eq(r.last, RDMA_CM_EVENT_REJECTED);
	ck_assert_int_eq(hs_decode(r.pdata, (size_t)r.pdata_len, HS_REJ, &rej, why, sizeof(why)), 0);
	ck_assert(rej.caps & HS_CAP_AUTH);
	ck_assert_uint_eq(rej.user_len, sizeof(want) - 1);
	ck_assert_mem_eq(rej.user, want, sizeof(want) - 1);
	fb_spin(b, 0.2);
	ck_assert_int_eq(s->requests, requests);
	ck_assert_int_eq(s->connect_failed, failed);
	printf("same request replayed again: rejected, \"%.*s\"\n", (int)rej.user_len, rej.user);
	raw_free(&r);
}

START_TEST(replayed_request_cannot_complete)
{
	struct fb b;
	struct srv s = { 0 };
	uint8_t req[256];
	int len;

	fb_init(&b);
	s.opts.connect_timeout_ms = 1000;
	keyed_srv(&b, &s, 8);
	/* Each recording is new to the listener: it reaches on_request and
	 * then fails the proof. */
	capture_request(&b, req, &len);
	replay(&b, &s, req, len, 0, "the peer's shared-secret proof does not match");
	capture_request(&b, req, &len);
	replay(&b, &s, req, len, 1, "the peer's shared-secret proof is missing (another message came first)");
	capture_request(&b, req, &len);
	replay(&b, &s, req, len, 2, "no shared-secret proof from the peer within 1000 ms");
	/* The same recording again: refused before the application sees it. */
	replay_again(&b, &s, req, len);
	ck_assert_int_eq(s.connected, 0);
	good_client(&b, &s, KEY);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* A server without the key (a raw rdma_cm listener forging the reply with
 * another key, or sending none): the client refuses it and says so. */
static void forged_reply(struct fb *b, const char *key, const char *what)
{
	struct raw r;
	struct ep c = { 0 };
	struct ez_conn_opts o = keyed(KEY);
	struct hs_msg req, rep = { .kind = HS_REP, .caps = HS_CAP_CREDITS, .credits = 1,
				   .max_msg = 4096 };
	uint8_t wire[HS_REP_MAX], proof[AUTH_PROOF_LEN];
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;
	char port[8], why[160];
	int n, rejected = 0, i;

	raw_listen(&r, port, sizeof(port));
	ck_assert_int_eq(ep_connect(b, &c, port, &o), 0);
	raw_expect(b, &r, RDMA_CM_EVENT_CONNECT_REQUEST, &r.conn_id);
	ck_assert_int_eq(hs_decode(r.pdata, (size_t)r.pdata_len, HS_REQ, &req, why, sizeof(why)), 0);
	if (key) {
		struct auth_key k;

		ck_assert_int_eq(auth_key_set(&k, key, (uint32_t)strlen(key)), 0);
		ck_assert_int_eq(auth_rep_seal(&k, &req, &rep, proof), 0);
	}
	n = hs_encode(&rep, wire, sizeof(wire));
	ck_assert_int_gt(n, 0);
	raw_qp(&r, r.conn_id);
	p.private_data = wire;
	p.private_data_len = (uint8_t)n;
	ck_assert_int_eq(rdma_accept(r.conn_id, &p), 0);
	ck_assert(fb_run(b, &c.connected, 1, 10));
	ck_assert_int_eq(c.connect_status, -EACCES);
	want_msg(&c, port, what);
	for (i = 0; i < 3 && !rejected; i++) {
		if (raw_event(b, &r, &ev, 3))
			break;
		if (ev->event == RDMA_CM_EVENT_REJECTED) {
			rejected = 1;
			r.pdata_len = ev->param.conn.private_data_len;
			if (r.pdata_len)
				memcpy(r.pdata, ev->param.conn.private_data, (size_t)r.pdata_len);
		}
		rdma_ack_cm_event(ev);
	}
	ck_assert_msg(rejected, "the raw server got no REJECT");
	ck_assert_int_eq(hs_decode(r.pdata, (size_t)r.pdata_len, HS_REJ, &rep, why, sizeof(why)), 0);
	ck_assert(rep.caps & HS_CAP_AUTH);
	ck_assert_mem_eq(rep.user, "reply failed the client's shared-secret check", rep.user_len);
	printf("forged reply: on_connect(%d) \"%s\"\n", c.connect_status, c.connect_msg);
	ez_conn_close(c.conn);
	fb_spin(b, 0.1);
	raw_free(&r);
}

/* A raw server that knows the key: the client's proof arrives on the QP and
 * is the one HMAC says, and the client reports nothing until the verdict,
 * which decides what on_connect says (verdict 0: none comes, the client's
 * connect deadline of 1.5 s ends it). */
static void raw_verdict(struct fb *b, uint32_t verdict)
{
	struct raw r;
	struct ep c = { 0 };
	struct ez_conn_opts o = keyed(KEY);
	struct hs_msg req, rep = { .kind = HS_REP, .caps = HS_CAP_CREDITS, .credits = 1,
				   .max_msg = 4096 };
	uint8_t wire[HS_REP_MAX], proof[AUTH_PROOF_LEN];
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct auth_key k;
	char want[128];
	char port[8], why[160];
	int n;

	raw_listen(&r, port, sizeof(port));
	if (!verdict)
		o.connect_timeout_ms = 1500;
	ck_assert_int_eq(ep_connect(b, &c, port, &o), 0);
	raw_expect(b, &r, RDMA_CM_EVENT_CONNECT_REQUEST, &r.conn_id);
	ck_assert_int_eq(hs_decode(r.pdata, (size_t)r.pdata_len, HS_REQ, &req, why, sizeof(why)), 0);
	ck_assert_int_eq(auth_key_set(&k, KEY, sizeof(KEY) - 1), 0);
	ck_assert_int_eq(auth_req_check(&k, &req), 0);
	ck_assert_int_eq(auth_rep_seal(&k, &req, &rep, proof), 0);
	n = hs_encode(&rep, wire, sizeof(wire));
	raw_qp(&r, r.conn_id);
	p.private_data = wire;
	p.private_data_len = (uint8_t)n;
	ck_assert_int_eq(rdma_accept(r.conn_id, &p), 0);
	ck_assert_uint_eq(raw_recv_imm(b, &r, 5), IMM_PROOF);
	ck_assert_uint_eq(r.recv_len, AUTH_PROOF_LEN);
	ck_assert_mem_eq(r.buf + 128, proof, AUTH_PROOF_LEN);
	fb_spin(b, 0.2);
	ck_assert_int_eq(c.connected, 0);	/* nothing before the verdict */
	if (verdict)
		raw_send(&r, verdict, NULL, 0);
	ck_assert(fb_run(b, &c.connected, 1, 5));
	if (verdict == IMM_OK) {
		ck_assert_msg(c.connect_status == 0, "%d %s", c.connect_status, c.connect_msg);
	} else if (!verdict) {
		ck_assert_int_eq(c.connect_status, -ETIMEDOUT);
		snprintf(want, sizeof(want), "no shared-secret verdict from the listener within %u ms",
			 o.connect_timeout_ms);
		want_msg(&c, port, want);
	} else {
		ck_assert_int_eq(c.connect_status, -EACCES);
		want_msg(&c, port, "listener refused the shared-secret proof");
	}
	printf("raw verdict 0x%08x: client on_connect(%d) \"%s\"\n", verdict, c.connect_status,
	       c.connect_msg);
	ez_conn_close(c.conn);
	/* A connected one says goodbye first (the raw peer has no receive
	 * left for it: the goodbye's wait runs out). */
	if (verdict == IMM_OK)
		ck_assert(fb_run(b, &c.disconnected, 1, 5));
	fb_spin(b, 0.2);
	raw_free(&r);
}

START_TEST(client_waits_for_the_verdict)
{
	struct fb b;

	fb_init(&b);
	raw_verdict(&b, IMM_REFUSED);
	raw_verdict(&b, IMM_OK);
	raw_verdict(&b, 0);
	fb_fini(&b);
}
END_TEST

START_TEST(forged_reply_refused)
{
	struct fb b;

	fb_init(&b);
	forged_reply(&b, WRONG, "peer failed the shared-secret check");
	forged_reply(&b, NULL, "peer failed the shared-secret check (its reply carries no proof)");
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_auth");
	TCase *tc = tcase_create("auth");

	tcase_set_timeout(tc, 40);
	tcase_add_test(tc, right_key_connects);
	tcase_add_test(tc, options_checked);
	tcase_add_test(tc, wrong_key_refused);
	tcase_add_test(tc, no_key_to_keyed_listener_refused);
	tcase_add_test(tc, key_to_plain_listener_refused);
	tcase_add_test(tc, replayed_request_cannot_complete);
	tcase_add_test(tc, forged_reply_refused);
	tcase_add_test(tc, client_waits_for_the_verdict);
	tcase_add_test(tc, keyed_multipath);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
