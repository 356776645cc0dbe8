/* rawcm.c: a raw rdma_cm peer for the fault suite: listen, connect, a QP, one send and one receive, in plain rdma_cm and verbs. */
#include "config.h"

#include <arpa/inet.h>
#include "../checkmain.h"	/* check.h, passing assertions silent */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rawcm.h"
#include "wire/handshake.h"

int raw_event(struct fb *b, struct raw *r, struct rdma_cm_event **ev, double secs)
{
	struct pollfd pf = { .fd = r->ch->fd, .events = POLLIN };
	double end = now_s() + secs;

	while (poll(&pf, 1, 0) == 0) {
		if (now_s() > end)
			return -ETIMEDOUT;
		fb_spin(b, 0.005);
	}
	return rdma_get_cm_event(r->ch, ev) ? -errno : 0;
}

/* Waits for an event of type want, keeping its private data. */
void raw_expect(struct fb *b, struct raw *r, enum rdma_cm_event_type want,
		struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;

	ck_assert_int_eq(raw_event(b, r, &ev, 10), 0);
	r->last = ev->event;
	ck_assert_msg(ev->event == want, "raw peer got %s, wanted %s", rdma_event_str(ev->event),
		      rdma_event_str(want));
	r->pdata_len = ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;
	if (r->pdata_len)
		memcpy(r->pdata, ev->param.conn.private_data, (size_t)r->pdata_len);
	if (id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
}

void raw_qp(struct raw *r, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 2, .max_recv_wr = 2,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	r->pd = ibv_alloc_pd(id->verbs);
	ck_assert_ptr_nonnull(r->pd);
	r->cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	ck_assert_ptr_nonnull(r->cq);
	r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(r->mr);
	ia.send_cq = ia.recv_cq = r->cq;
	ck_assert_int_eq(rdma_create_qp(id, r->pd, &ia), 0);
	sge = (struct ibv_sge){ (uintptr_t)r->buf + 128, 128, r->mr->lkey };
	ck_assert_int_eq(ibv_post_recv(id->qp, &wr, &bad), 0);
}

void raw_free(struct raw *r)
{
	struct rdma_cm_id *qid = r->conn_id ? r->conn_id : r->id;

	if (qid && qid->qp)
		rdma_destroy_qp(qid);
	if (r->conn_id)
		rdma_destroy_id(r->conn_id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->xmr)
		ibv_dereg_mr(r->xmr);
	free(r->xbuf);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	rdma_destroy_event_channel(r->ch);
	memset(r, 0, sizeof(*r));
}

void raw_listen(struct raw *r, char *port, size_t len)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP, .ai_flags = RAI_PASSIVE }, *ai;

	memset(r, 0, sizeof(*r));
	r->ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(r->ch);
	ck_assert_int_eq(rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_getaddrinfo(test_addr(), "0", &hints, &ai), 0);
	ck_assert_int_eq(rdma_bind_addr(r->id, ai->ai_src_addr), 0);
	rdma_freeaddrinfo(ai);
	ck_assert_int_eq(rdma_listen(r->id, 4), 0);
	snprintf(port, len, "%u", ntohs(rdma_get_src_port(r->id)));
}

void raw_start_connect(struct fb *b, struct raw *r, const char *port, const void *pdata, int len)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7 };

	memset(r, 0, sizeof(*r));
	r->ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(r->ch);
	ck_assert_int_eq(rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_getaddrinfo(test_addr(), port, &hints, &ai), 0);
	ck_assert_int_eq(rdma_resolve_addr(r->id, NULL, ai->ai_dst_addr, 2000), 0);
	rdma_freeaddrinfo(ai);
	raw_expect(b, r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	ck_assert_int_eq(rdma_resolve_route(r->id, 2000), 0);
	raw_expect(b, r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	raw_qp(r, r->id);
	p.private_data = pdata;
	p.private_data_len = (uint8_t)len;
	ck_assert_msg(rdma_connect(r->id, &p) == 0, "rdma_connect: %s", strerror(errno));
}

void raw_connect(struct fb *b, struct raw *r, const char *port, const void *pdata, int len)
{
	raw_start_connect(b, r, port, pdata, len);
	raw_expect(b, r, RDMA_CM_EVENT_ESTABLISHED, NULL);
}

int raw_connect_result(struct fb *b, struct raw *r, const char *port, const void *pdata, int len)
{
	struct rdma_cm_event *ev;

	raw_start_connect(b, r, port, pdata, len);
	r->status = -1;
	ck_assert_int_eq(raw_event(b, r, &ev, 10), 0);
	r->last = ev->event;
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		r->status = ev->status;
		r->pdata_len = ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;
		if (r->pdata_len)
			memcpy(r->pdata, ev->param.conn.private_data, (size_t)r->pdata_len);
	}
	rdma_ack_cm_event(ev);
	return r->status;
}

void raw_send(struct raw *r, uint32_t imm, const void *data, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)r->buf, len, r->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = len ? 1 : 0,
				  .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(imm) }, *bad;

	if (len)
		memcpy(r->buf, data, len);
	ck_assert_int_eq(ibv_post_send(r->conn_id ? r->conn_id->qp : r->id->qp, &wr, &bad), 0);
}

/* The first receive completion on the raw QP: its immediate value (its
 * bytes are at r->buf + 128, r->recv_len of them). */
uint32_t raw_recv_imm(struct fb *b, struct raw *r, double secs)
{
	struct ibv_wc wc;
	double end = now_s() + secs;

	while (now_s() < end) {
		int n = ibv_poll_cq(r->cq, 1, &wc);

		ck_assert_int_ge(n, 0);
		if (n && wc.opcode & IBV_WC_RECV) {
			ck_assert_msg(wc.status == IBV_WC_SUCCESS, "raw receive: %s",
				      ibv_wc_status_str(wc.status));
			ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
			r->recv_len = wc.byte_len;
			return ntohl(wc.imm_data);
		}
		if (!n)
			fb_spin(b, 0.005);
	}
	ck_abort_msg("raw peer: no message within %.0f s", secs);
	return 0;
}

static int raw_post_recv(struct raw *r)
{
	struct ibv_sge sge = { (uintptr_t)r->buf + 128, 128, r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

int raw_repost_recv(struct raw *r)
{
	return raw_post_recv(r);
}

/* A QP of depth WRs each way, with depth receives of 128 bytes (they all
 * land at r->buf + 128: only their immediates matter) and a send buffer. */
static void raw_ez_qp(struct raw *r, int depth, uint32_t len)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = (uint32_t)depth,
						.max_recv_wr = (uint32_t)depth,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	uint32_t i;

	r->pd = ibv_alloc_pd(r->id->verbs);
	ck_assert_ptr_nonnull(r->pd);
	r->cq = ibv_create_cq(r->id->verbs, 2 * depth + 8, NULL, NULL, 0);
	ck_assert_ptr_nonnull(r->cq);
	r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(r->mr);
	r->xlen = len ? len : 1;
	r->xbuf = malloc(r->xlen);
	ck_assert_ptr_nonnull(r->xbuf);
	for (i = 0; i < r->xlen; i++)
		r->xbuf[i] = (uint8_t)i;
	r->xmr = ibv_reg_mr(r->pd, r->xbuf, r->xlen, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(r->xmr);
	ia.send_cq = ia.recv_cq = r->cq;
	ck_assert_int_eq(rdma_create_qp(r->id, r->pd, &ia), 0);
	for (i = 0; i < (uint32_t)depth; i++)
		ck_assert_int_eq(raw_post_recv(r), 0);
	r->depth = depth;
}

uint16_t raw_ez_caps = HS_CAP_CREDITS;
uint8_t raw_ez_rndv_shift;

void raw_ez_connect(struct fb *b, struct raw *r, const char *port, uint16_t credits,
		    uint32_t max_msg, int depth, uint32_t len)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7 };
	struct hs_msg req = { .version = HS_VERSION, .kind = HS_REQ, .caps = raw_ez_caps,
			      .credits = credits, .max_msg = max_msg,
			      .rndv_shift = raw_ez_rndv_shift }, rep;
	uint8_t wire[HS_REQ_MAX];
	char why[160];
	int n;

	n = hs_encode(&req, wire, sizeof(wire));
	ck_assert_int_gt(n, 0);
	memset(r, 0, sizeof(*r));
	r->ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(r->ch);
	ck_assert_int_eq(rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP), 0);
	ck_assert_int_eq(rdma_getaddrinfo(test_addr(), port, &hints, &ai), 0);
	ck_assert_int_eq(rdma_resolve_addr(r->id, NULL, ai->ai_dst_addr, 2000), 0);
	rdma_freeaddrinfo(ai);
	raw_expect(b, r, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	ck_assert_int_eq(rdma_resolve_route(r->id, 2000), 0);
	raw_expect(b, r, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	raw_ez_qp(r, depth, len);
	p.private_data = wire;
	p.private_data_len = (uint8_t)n;
	ck_assert_msg(rdma_connect(r->id, &p) == 0, "rdma_connect: %s", strerror(errno));
	raw_expect(b, r, RDMA_CM_EVENT_ESTABLISHED, NULL);
	ck_assert_msg(hs_decode(r->pdata, (size_t)r->pdata_len, HS_REP, &rep, why, sizeof(why)) == 0,
		      "raw peer: the listener's reply: %s", why);
	r->rep_credits = rep.credits;
	r->rep_max_msg = rep.max_msg;
	r->rep_caps = rep.caps;
}

int raw_ez_send(struct raw *r, uint32_t imm, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)r->xbuf, len, r->xmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = len ? 1 : 0,
				  .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(imm) }, *bad;
	int ret;

	ck_assert_uint_le(len, r->xlen);
	ret = ibv_post_send(r->id->qp, &wr, &bad);
	if (!ret) {
		r->sent++;
		r->sends_out++;
	}
	return ret;
}

static void raw_ez_cm(struct raw *r)
{
	struct pollfd pf = { .fd = r->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pf, 1, 0) != 1 || rdma_get_cm_event(r->ch, &ev))
		return;
	r->last = ev->event;
	rdma_ack_cm_event(ev);
	if (r->last == RDMA_CM_EVENT_DISCONNECTED && !r->disconnected) {
		r->disconnected = 1;
		rdma_disconnect(r->id);
	}
}

int raw_ez_poll(struct raw *r)
{
	struct ibv_wc wc[32];
	int n, i;

	raw_ez_cm(r);
	n = ibv_poll_cq(r->cq, 32, wc);
	ck_assert_int_ge(n, 0);
	for (i = 0; i < n; i++) {
		/* An error completion's opcode means nothing: the wr_id tells. */
		if (wc[i].wr_id == 1) {
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;
			r->recvs++;
			if (wc[i].wc_flags & IBV_WC_WITH_IMM)
				r->credits_in += ntohl(wc[i].imm_data) & 0xffffu;
			ck_assert_int_eq(raw_post_recv(r), 0);
			continue;
		}
		r->sends_out--;
		if (wc[i].status == IBV_WC_SUCCESS)
			r->sends_ok++;
		else if (!r->send_err)
			r->send_err = wc[i].status;
	}
	return n;
}

int raw_ez_req(uint8_t *p, uint16_t credits, uint32_t max_msg)
{
	static const uint32_t magic = 0x455a5244u;

	memset(p, 0, 16);
	p[0] = magic >> 24;
	p[1] = (magic >> 16) & 0xff;
	p[2] = (magic >> 8) & 0xff;
	p[3] = magic & 0xff;
	p[4] = 1;	/* version */
	p[5] = 1;	/* a request */
	p[9] = 1;	/* caps: credits */
	p[10] = credits >> 8;
	p[11] = credits & 0xff;
	p[12] = max_msg >> 24;
	p[13] = max_msg >> 16;
	p[14] = max_msg >> 8;
	p[15] = max_msg & 0xff;
	return 16;
}

void raw_ez_dial(struct fb *b, struct raw *r, const char *port)
{
	uint8_t p[16];

	raw_connect(b, r, port, p, raw_ez_req(p, 2, 128));
}

int raw_ez_dial_result(struct fb *b, struct raw *r, const char *port)
{
	uint8_t p[16];

	return raw_connect_result(b, r, port, p, raw_ez_req(p, 2, 128));
}

enum ibv_wc_status raw_rdma(struct fb *b, struct raw *r, enum ibv_wr_opcode opcode, uint32_t off,
			    uint32_t len, uint64_t raddr, uint32_t rkey, double secs)
{
	struct ibv_sge sge = { (uintptr_t)r->buf + off, len, r->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x5a, .sg_list = &sge, .num_sge = 1, .opcode = opcode,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	double end = now_s() + secs;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ck_assert_int_eq(ibv_post_send(r->conn_id ? r->conn_id->qp : r->id->qp, &wr, &bad), 0);
	while (now_s() < end) {
		int n = ibv_poll_cq(r->cq, 1, &wc);

		ck_assert_int_ge(n, 0);
		if (n && wc.wr_id == 0x5a)
			return wc.status;
		if (!n)
			fb_spin(b, 0.002);
	}
	ck_abort_msg("raw peer: no completion of its RDMA op within %.0f s", secs);
	return IBV_WC_GENERAL_ERR;
}

const char *raw_reject_reason(const struct raw *r, char *text, size_t size)
{
	int n;

	text[0] = '\0';
	if (r->pdata_len < 16)
		return text;
	n = r->pdata[6];
	if (16 + n > r->pdata_len)
		n = r->pdata_len - 16;
	snprintf(text, size, "%.*s", n, (const char *)r->pdata + 16);
	return text;
}

void raw_expect_penalized(struct fb *b, const char *port, int failures, char *why, size_t size)
{
	struct raw r;
	char want[200];
	int status = raw_ez_dial_result(b, &r, port);

	ck_assert_msg(status == 28, "connect after %d failures: %s (status %d)", failures,
		      rdma_event_str(r.last), status);
	raw_reject_reason(&r, why, size);
	snprintf(want, sizeof(want),
		 "refused: %d failures (refused RDMA requests, protocol violations) from %s; try again in ",
		 failures, test_addr());
	ck_assert_msg(strncmp(why, want, strlen(want)) == 0, "reject reason: \"%s\"", why);
	raw_free(&r);
}

int raw_rdma_try(struct fb *b, struct raw *r, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
	     uint32_t len, double secs)
{
	struct ibv_sge sge = { (uintptr_t)r->buf, len, r->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	double end = now_s() + secs;

	ck_assert_uint_le(len, 128);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ck_assert_int_eq(ibv_post_send(r->conn_id ? r->conn_id->qp : r->id->qp, &wr, &bad), 0);
	while (now_s() < end) {
		int n = ibv_poll_cq(r->cq, 1, &wc);

		ck_assert_int_ge(n, 0);
		if (n && wc.wr_id == 7)
			return wc.status;
		if (!n)
			fb_spin(b, 0.002);
	}
	return -ETIMEDOUT;
}

void rflood_init(struct rflood *f, const void *pdata, int len)
{
	memset(f, 0, sizeof(*f));
	f->ch = rdma_create_event_channel();
	ck_assert_ptr_nonnull(f->ch);
	ck_assert_int_eq(fcntl(f->ch->fd, F_SETFL, fcntl(f->ch->fd, F_GETFL) | O_NONBLOCK), 0);
	memcpy(f->pdata, pdata, (size_t)len);
	f->pdata_len = len;
}

/* Names resolve once (rdma_getaddrinfo is slow under TCG); later sends
 * to the same names reuse the addresses. */
static void rflood_resolve(struct rflood *f, const char *src, const char *dst, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;

	if (!strcmp(f->dst_name, dst) && !strcmp(f->port, port) &&
	    !strcmp(f->src_name, src ? src : ""))
		return;
	ck_assert_int_eq(rdma_getaddrinfo(dst, port, &hints, &ai), 0);
	memcpy(&f->dst, ai->ai_dst_addr, ai->ai_dst_len);
	rdma_freeaddrinfo(ai);
	memset(&f->src, 0, sizeof(f->src));
	if (src) {
		struct rdma_addrinfo sh = { .ai_port_space = RDMA_PS_TCP, .ai_flags = RAI_PASSIVE };

		ck_assert_int_eq(rdma_getaddrinfo(src, NULL, &sh, &ai), 0);
		memcpy(&f->src, ai->ai_src_addr, ai->ai_src_len);
		rdma_freeaddrinfo(ai);
	}
	snprintf(f->dst_name, sizeof(f->dst_name), "%s", dst);
	snprintf(f->src_name, sizeof(f->src_name), "%s", src ? src : "");
	snprintf(f->port, sizeof(f->port), "%s", port);
}

/* rdma_resolve_addr(), once more for up to 5 s on EADDRNOTAVAIL: binding
 * to a given source address failed so once in CI's ASan tier, right after
 * a test whose exited process still had 1,000 ids being torn down by the
 * kernel; said on stderr when it happens. */
static int rflood_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst)
{
	int tries = 0;

	while (rdma_resolve_addr(id, src, dst, 2000)) {
		if (errno != EADDRNOTAVAIL || ++tries > 50)
			return -1;
		if (tries == 1)
			fprintf(stderr, "rflood: rdma_resolve_addr: %s; trying again for 5 s\n",
				strerror(errno));
		usleep(100 * 1000);
	}
	if (tries)
		fprintf(stderr, "rflood: rdma_resolve_addr worked after %d more tries\n", tries);
	return 0;
}

void rflood_send(struct rflood *f, const char *src, const char *dst, const char *port)
{
	struct rdma_cm_id *id;

	ck_assert_int_lt(f->n, RFLOOD_MAX);
	rflood_resolve(f, src, dst, port);
	ck_assert_int_eq(rdma_create_id(f->ch, &id, &f->replied_to[f->n], RDMA_PS_TCP), 0);
	ck_assert_msg(rflood_resolve_addr(id, src ? (struct sockaddr *)&f->src : NULL,
					  (struct sockaddr *)&f->dst) == 0,
		      "rdma_resolve_addr(%s -> %s): %s", src ? src : "any", dst, strerror(errno));
	f->ids[f->n++] = id;
}

static void rflood_rejected(struct rflood *f, const struct rdma_cm_event *ev)
{
	const uint8_t *p = ev->param.conn.private_data;
	size_t len = p ? ev->param.conn.private_data_len : 0;
	char text[160] = "", why[160];
	struct hs_msg m;

	if (len && hs_decode(p, len, HS_REJ, &m, why, sizeof(why)) == 0 &&
	    m.user_len < sizeof(text))
		memcpy(text, m.user, m.user_len);
	if (strcmp(text, f->last_reason)) {
		snprintf(f->last_reason, sizeof(f->last_reason), "%s", text);
		f->reason_count = 0;
	}
	f->reason_count++;
	if (f->want_reason[0] && strcmp(text, f->want_reason))
		f->other_reasons++;
	f->rejected++;
}

void rflood_poll(struct rflood *f)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7, .srq = 0 };

	while (rdma_get_cm_event(f->ch, &ev) == 0) {
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_resolve_route(ev->id, 2000))
				f->other++;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			p.private_data = f->pdata;
			p.private_data_len = (uint8_t)f->pdata_len;
			/* No QP: the request names one that does not exist. */
			p.qp_num = 0x100000u - 1u - (uint32_t)f->sent;
			if (rdma_connect(ev->id, &p))
				f->other++;
			else
				f->sent++;
			break;
		case RDMA_CM_EVENT_CONNECT_RESPONSE:
			f->replied++;	/* and never an RTU */
			*(uint8_t *)ev->id->context = 1;
			break;
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_DISCONNECTED:
			if (*(uint8_t *)ev->id->context)
				f->ended++;
			else if (ev->event == RDMA_CM_EVENT_REJECTED)
				rflood_rejected(f, ev);
			else
				f->other++;
			break;
		default:
			f->other++;
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

void rflood_free(struct rflood *f)
{
	int i;

	rflood_poll(f);
	for (i = 0; i < f->n; i++)
		rdma_destroy_id(f->ids[i]);
	rdma_destroy_event_channel(f->ch);
	f->ch = NULL;
}

void hbench_start(struct hbench *t, uint32_t mms, int cap)
{
	hbench_start_penalized(t, mms, cap, 0, 0);
}

void hbench_start_penalized(struct hbench *t, uint32_t mms, int cap, uint32_t fail_limit,
			    uint32_t ban_ms)
{
	struct ez_srqpool_opts po = { .buf_size = 4096, .nbufs = 128 };

	memset(t, 0, sizeof(*t));
	fb_init(&t->b);
	ck_assert_int_eq(ez_srqpool_new(t->b.ctx, NULL, &po, &t->pool), 0);
	t->s.opts.srqpool = t->pool;
	t->s.opts.max_msg_size = mms;
	t->s.access_fail_limit = fail_limit;
	t->s.access_ban_ms = ban_ms;
	srv_start(&t->b, &t->s, cap);
	ck_assert_int_eq(ep_connect(&t->b, &t->honest, t->s.port, NULL), 0);
	ck_assert(fb_run(&t->b, &t->honest.connected, 1, 10));
	ck_assert_int_eq(t->honest.connect_status, 0);
	ck_assert(fb_run(&t->b, &t->s.connected, 1, 5));
}

void hbench_echo(struct hbench *t, int n)
{
	int want = t->honest.received + n, i;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(ep_send_seq(&t->honest, t->seq++), 0);
	ck_assert(fb_run(&t->b, &t->honest.received, want, 10));
	ck_assert_int_eq(t->honest.bad_seq, 0);
	ck_assert_int_eq(t->honest.disconnected, 0);
	ck_assert_int_eq(t->s.eps[0].disconnected, 0);
}

void hbench_stop(struct hbench *t)
{
	ep_close(&t->honest);
	ck_assert(fb_run(&t->b, &t->honest.disconnected, 1, 5));
	srv_stop(&t->s);
	ck_assert_int_eq(ez_srqpool_free(t->pool), 0);
	fb_fini(&t->b);
}

void raw_ez_wait_disconnect(struct fb *b, struct raw *r, double secs)
{
	for (double end = now_s() + secs; now_s() < end && !r->disconnected;) {
		raw_ez_poll(r);
		fb_spin(b, 0.01);
	}
	ck_assert_msg(r->disconnected, "raw peer: no DISCONNECTED (last event %s)",
		      rdma_event_str(r->last));
}
