/* test_qpfsm_ladder.c: RC, UC and UD QPs laddered to RTS with ez_qp_ladder() and exchanging checked data; refusals, query, SQD drain, RAW_PACKET. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "easyrdma.h"
#include "testdev.h"
#include "../checkmain.h"

#define MSG 512
#define GRH 40
#define ROUNDS 50
#define QKEY 0x11111111u /* the ladder's default UD Q_Key */

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[2][MSG + GRH]; /* [0] send, [1] receive */
};

static struct testdev dev;
static struct ibv_pd *pd;

static void setup(void)
{
	testdev_open(&dev);
	pd = ibv_alloc_pd(dev.ctx);
	ck_assert_ptr_nonnull(pd);
}

static void end_create(struct end *e, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = t,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int err;

	memset(e, 0, sizeof(*e));
	e->cq = ibv_create_cq(dev.ctx, 256, NULL, NULL, 0);
	ck_assert_ptr_nonnull(e->cq);
	ia.send_cq = ia.recv_cq = e->cq;
	err = ez_qp_create(pd, &ia, &e->qp);
	ck_assert_msg(err == 0, "ez_qp_create: %s", ez_errmsg());
	e->mr = ibv_reg_mr(pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(e->mr);
}

static void end_destroy(struct end *e)
{
	ck_assert_int_eq(ibv_destroy_qp(e->qp), 0);
	ck_assert_int_eq(ibv_dereg_mr(e->mr), 0);
	ck_assert_int_eq(ibv_destroy_cq(e->cq), 0);
}

static void teardown(void)
{
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	testdev_close(&dev);
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	ck_assert_int_eq(ez_qp_query(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* RC/UC: the caller gives only what it alone knows: the address and the
 * peer's QP number. The rest comes from the ladder's defaults. */
static void ladder_connected(struct end *e, uint32_t remote_qpn, uint32_t flow_label)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	testdev_self_ah(&dev, &a.ah_attr, flow_label);
	a.dest_qp_num = remote_qpn;
	ck_assert_msg(ez_qp_ladder(e->qp, IBV_QPS_RTS, &a, IBV_QP_AV | IBV_QP_DEST_QPN) == 0,
		      "ladder: %s", ez_errmsg());
	ck_assert_int_eq(state_of(e->qp), IBV_QPS_RTS);
}

static void post_recv(struct end *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf[1], .length = MSG + GRH, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	ck_assert_int_eq(ibv_post_recv(e->qp, &wr, &bad), 0);
}

static void post_send(struct end *e, struct ibv_ah *ah, uint32_t remote_qpn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf[0], .length = MSG, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = remote_qpn;
		wr.wr.ud.remote_qkey = QKEY;
	}
	ck_assert_int_eq(ibv_post_send(e->qp, &wr, &bad), 0);
}

static void wait_wc(struct end *e, enum ibv_wc_opcode op, struct ibv_wc *out)
{
	struct ibv_wc wc;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(e->cq, 1, &wc);

		ck_assert_int_ge(n, 0);
		if (n == 1) {
			ck_assert_msg(wc.status == IBV_WC_SUCCESS, "completion: %s",
				      ibv_wc_status_str(wc.status));
			ck_assert_int_eq(wc.opcode, op);
			if (out)
				*out = wc;
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10, "no completion within 10 s");
	}
}

static void fill(char *p, int seq, char tag)
{
	for (int i = 0; i < MSG; i++)
		p[i] = (char)(tag + seq * 13 + i);
}

static void check_payload(const char *p, int seq, char tag)
{
	char want[MSG];

	fill(want, seq, tag);
	ck_assert_msg(!memcmp(p, want, MSG), "payload of message %d (%c) differs", seq, tag);
}

/* ROUNDS messages each way; ah non-NULL for UD (payload after the GRH). */
static void exchange(struct end *a, struct end *b, struct ibv_ah *ah_ab, struct ibv_ah *ah_ba)
{
	int off = ah_ab ? GRH : 0;
	struct ibv_wc wc;

	for (int i = 0; i < ROUNDS; i++) {
		post_recv(b);
		post_recv(a);
		fill(a->buf[0], i, 'a');
		post_send(a, ah_ab, b->qp->qp_num);
		wait_wc(a, IBV_WC_SEND, NULL);
		wait_wc(b, IBV_WC_RECV, &wc);
		ck_assert_uint_eq(wc.byte_len, MSG + off);
		check_payload(b->buf[1] + off, i, 'a');
		if (ah_ab) {
			ck_assert_msg(wc.wc_flags & IBV_WC_GRH, "UD receive without a GRH");
			ck_assert_uint_eq(wc.src_qp, a->qp->qp_num);
		}
		fill(b->buf[0], i, 'b');
		post_send(b, ah_ba, a->qp->qp_num);
		wait_wc(b, IBV_WC_SEND, NULL);
		wait_wc(a, IBV_WC_RECV, &wc);
		ck_assert_uint_eq(wc.byte_len, MSG + off);
		check_payload(a->buf[1] + off, i, 'b');
	}
}

static void connected_pair(enum ibv_qp_type t)
{
	struct end a, b;
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;

	setup();
	end_create(&a, t);
	end_create(&b, t);
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_RESET);
	ladder_connected(&a, b.qp->qp_num, 0x12345);
	ladder_connected(&b, a.qp->qp_num, 0);
	exchange(&a, &b, NULL, NULL);

	/* The query reports what the ladder chose. */
	ck_assert_int_eq(ez_qp_query(a.qp, &q, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_PATH_MTU |
				     IBV_QP_SQ_PSN | IBV_QP_RQ_PSN | IBV_QP_AV | IBV_QP_TIMEOUT, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_RTS);
	ck_assert_uint_eq(q.dest_qp_num, b.qp->qp_num);
	ck_assert_int_eq(q.path_mtu, dev.port_attr.active_mtu);
	if (dev.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET)
		ck_assert_uint_eq(q.ah_attr.grh.flow_label, 0x12345);
	if (t == IBV_QPT_RC)
		ck_assert_int_eq(q.timeout, 14);
	else
		ck_assert_int_eq(q.timeout, 0); /* not an attribute of UC: cleared */
	printf("%s pair on %s: laddered to RTS, %d checked messages each way, "
	       "sq_psn 0x%x rq_psn 0x%x\n", ez_qp_type_str(t), dev.name, ROUNDS, q.sq_psn, q.rq_psn);

	/* RC: the default access flags let the peer write into our memory. */
	if (t == IBV_QPT_RC) {
		struct ibv_sge sge = { .addr = (uintptr_t)a.buf[0], .length = MSG, .lkey = a.mr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)b.buf[1], .rkey = b.mr->rkey },
		}, *bad;

		fill(a.buf[0], 999, 'w');
		ck_assert_int_eq(ibv_post_send(a.qp, &wr, &bad), 0);
		wait_wc(&a, IBV_WC_RDMA_WRITE, NULL);
		check_payload(b.buf[1], 999, 'w');
	}
	end_destroy(&a);
	end_destroy(&b);
	teardown();
}

START_TEST(rc_laddered_and_exchanging)
{
	connected_pair(IBV_QPT_RC);
}
END_TEST

START_TEST(uc_laddered_and_exchanging)
{
	connected_pair(IBV_QPT_UC);
}
END_TEST

START_TEST(ud_laddered_with_ah_and_grh)
{
	struct end a, b;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;

	setup();
	end_create(&a, IBV_QPT_UD);
	end_create(&b, IBV_QPT_UD);
	/* Nothing given: port, pkey index, Q_Key and PSN are defaults. */
	ck_assert_msg(ez_qp_ladder(a.qp, IBV_QPS_RTS, NULL, 0) == 0, "%s", ez_errmsg());
	ck_assert_msg(ez_qp_ladder(b.qp, IBV_QPS_RTS, NULL, 0) == 0, "%s", ez_errmsg());
	ck_assert_int_eq(ez_qp_query(a.qp, &q, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_AV, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_RTS);
	ck_assert_uint_eq(q.qkey, QKEY);
	testdev_self_ah(&dev, &aa, 0);
	aa.is_global = 1; /* a GRH on every UD packet, whatever the link layer */
	aa.grh.dgid = dev.gid;
	aa.grh.sgid_index = dev.gid_index;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	ck_assert_ptr_nonnull(ah);
	exchange(&a, &b, ah, ah);
	/* RoCEv2 over IPv4 puts the IPv4 header in the GRH's last 20 bytes. */
	if (!memcmp(dev.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		ck_assert_int_eq((unsigned char)a.buf[1][20], 0x45);
		ck_assert(!memcmp(a.buf[1] + 20 + 12, dev.gid.raw + 12, 4)); /* source address */
	} else {
		ck_assert(!memcmp(a.buf[1] + 8, dev.gid.raw, 16)); /* GRH SGID */
	}
	printf("UD pair on %s: laddered with defaults, %d messages each way through an AH with a GRH\n",
	       dev.name, ROUNDS);
	ck_assert_int_eq(ibv_destroy_ah(ah), 0);
	end_destroy(&a);
	end_destroy(&b);
	teardown();
}
END_TEST

/* A refused call leaves the QP as it was; a ladder stops at the step that failed. */
START_TEST(refusals_change_nothing)
{
	struct end a;
	struct ibv_qp_attr q;
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	setup();
	end_create(&a, IBV_QPT_RC);
	ck_assert_int_eq(ez_qp_ladder(a.qp, IBV_QPS_RTS, NULL, 0), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "RC INIT->RTR: IBV_QP_AV required");
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_INIT);

	memset(&q, 0, sizeof(q));
	q.qp_state = IBV_QPS_RTR;
	testdev_self_ah(&dev, &q.ah_attr, 0);
	q.dest_qp_num = a.qp->qp_num;
	q.max_dest_rd_atomic = 1;
	q.min_rnr_timer = 12;
	q.path_mtu = IBV_MTU_4096;
	if (dev.port_attr.active_mtu < IBV_MTU_4096) {
		char want[128];

		/* rxe itself accepts this (it checks its max_mtu, 4096). */
		snprintf(want, sizeof(want), "RC INIT->RTR: path_mtu 4096 above the port's active MTU %d",
			 128 << dev.port_attr.active_mtu);
		ck_assert_int_eq(ez_qp_modify(a.qp, &q, rtr), -EINVAL);
		ck_assert_str_eq(ez_errmsg(), want);
		ck_assert_int_eq(state_of(a.qp), IBV_QPS_INIT);
	}
	q.path_mtu = dev.port_attr.active_mtu;
	ck_assert_int_eq(ez_qp_modify(a.qp, &q, rtr & ~IBV_QP_AV), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "RC INIT->RTR: IBV_QP_AV required");
	ck_assert_int_eq(ez_qp_validate(a.qp, &q, rtr), 0);
	ck_assert_msg(ez_qp_modify(a.qp, &q, rtr) == 0, "%s", ez_errmsg());
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_RTR);

	memset(&q, 0, sizeof(q));
	q.qp_state = IBV_QPS_RTS;
	q.timeout = 32;
	q.retry_cnt = 7;
	q.rnr_retry = 7;
	q.max_rd_atomic = 1;
	ck_assert_int_eq(ez_qp_modify(a.qp, &q, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "RC RTR->RTS: timeout 32 out of range (0..31)");
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_RTR);
	q.qp_state = IBV_QPS_ERR;
	ck_assert_int_eq(ez_qp_modify(a.qp, &q, IBV_QP_STATE | IBV_QP_QKEY), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "RC RTR->ERR: IBV_QP_QKEY not allowed");
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_RTR);
	/* A ladder only climbs. */
	ck_assert_int_eq(ez_qp_ladder(a.qp, IBV_QPS_INIT, NULL, 0), -EINVAL);
	ck_assert_str_eq(ez_errmsg(), "RC RTR->INIT: a ladder only climbs; move the QP to RESET first");
	end_destroy(&a);
	teardown();
}
END_TEST

/* From ERR the ladder goes through RESET and the QP works again. */
START_TEST(ladder_recovers_from_error)
{
	struct end a, b;
	struct ibv_qp_attr q = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;

	setup();
	end_create(&a, IBV_QPT_RC);
	end_create(&b, IBV_QPT_RC);
	ladder_connected(&a, b.qp->qp_num, 0);
	ladder_connected(&b, a.qp->qp_num, 0);
	ck_assert_int_eq(ez_qp_modify(a.qp, &q, IBV_QP_STATE), 0);
	ck_assert_int_eq(ez_qp_modify(b.qp, &q, IBV_QP_STATE), 0);
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_ERR);
	/* Nothing to flush, but the CQ must hold nothing stale either. */
	ck_assert_int_eq(ibv_poll_cq(a.cq, 1, &wc), 0);
	ladder_connected(&a, b.qp->qp_num, 0);
	ladder_connected(&b, a.qp->qp_num, 0);
	exchange(&a, &b, NULL, NULL);
	end_destroy(&a);
	end_destroy(&b);
	teardown();
}
END_TEST

static void drained(struct ibv_qp *qp, void *arg)
{
	*(struct ibv_qp **)arg = qp;
}

/* RTS -> SQD with en_sqd_async_notify; IBV_EVENT_SQ_DRAINED reaches the hook
 * once every send posted before has completed. */
START_TEST(sqd_drain_event_reaches_the_hook)
{
	enum { N = 20 };
	struct end a, b;
	struct ibv_qp *hooked = NULL;
	struct ibv_async_event ev;
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	struct pollfd pfd;
	int flags, events = 0, sends = 0;
	struct timespec t0, t;

	setup();
	end_create(&a, IBV_QPT_RC);
	end_create(&b, IBV_QPT_RC);
	ladder_connected(&a, b.qp->qp_num, 0);
	ladder_connected(&b, a.qp->qp_num, 0);
	for (int i = 0; i < N; i++)
		post_recv(&b);
	for (int i = 0; i < N; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)a.buf[0], .length = 64, .lkey = a.mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		ck_assert_int_eq(ibv_post_send(a.qp, &wr, &bad), 0);
	}
	ck_assert_msg(ez_qp_drain_sq(a.qp, drained, &hooked) == 0, "%s", ez_errmsg());
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_SQD);

	flags = fcntl(dev.ctx->async_fd, F_GETFL);
	ck_assert_int_eq(fcntl(dev.ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
	pfd.fd = dev.ctx->async_fd;
	pfd.events = POLLIN;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!hooked) {
		struct ibv_wc wc;

		while (ibv_poll_cq(a.cq, 1, &wc) == 1) {
			ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
			sends++;
		}
		if (poll(&pfd, 1, 100) == 1 && ibv_get_async_event(dev.ctx, &ev) == 0) {
			printf("async event on %s: %s\n", dev.name, ibv_event_type_str(ev.event_type));
			events++;
			if (ev.event_type == IBV_EVENT_SQ_DRAINED) {
				ck_assert_ptr_eq(ev.element.qp, a.qp);
				ck_assert_int_eq(ez_qp_async_event(&ev), 1);
			} else {
				ck_assert_int_eq(ez_qp_async_event(&ev), 0);
			}
			ibv_ack_async_event(&ev);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10,
			      "%s: no IBV_EVENT_SQ_DRAINED within 10 s of RTS->SQD (%d other events, %d of %d sends completed)",
			      dev.name, events, sends, N);
	}
	ck_assert_ptr_eq(hooked, a.qp);
	ck_assert_int_eq(ez_qp_query(a.qp, &q, IBV_QP_STATE, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_SQD);
	ck_assert_int_eq(q.sq_draining, 0);
	/* Drained means every send posted before SQD completed. */
	{
		struct ibv_wc wc;

		while (ibv_poll_cq(a.cq, 1, &wc) == 1)
			sends++;
	}
	ck_assert_int_eq(sends, N);
	/* The hook is one-shot: a second event finds nobody. */
	ev.event_type = IBV_EVENT_SQ_DRAINED;
	ev.element.qp = a.qp;
	ck_assert_int_eq(ez_qp_async_event(&ev), 0);
	printf("SQD on %s: IBV_EVENT_SQ_DRAINED delivered to the hook after %d/%d sends completed\n",
	       dev.name, sends, N);

	/* And back to RTS: the QP still carries traffic. */
	ck_assert_msg(ez_qp_ladder(a.qp, IBV_QPS_RTS, NULL, 0) == 0, "%s", ez_errmsg());
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_RTS);
	/* b's N receive completions from before the drain. */
	{
		struct ibv_wc wc;
		int recvs = 0;

		while (ibv_poll_cq(b.cq, 1, &wc) == 1) {
			ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
			recvs++;
		}
		ck_assert_int_eq(recvs, N);
	}
	exchange(&a, &b, NULL, NULL);
	end_destroy(&a);
	end_destroy(&b);
	teardown();
}
END_TEST

/* IBTA: the SQ Drained event is raised only when en_sqd_async_notify asked
 * for it. rxe (6.1) raises it on every drain: its requester reports the end
 * of a drain without looking at the flag. The test pins down what each kind
 * of device does, so a change in rxe shows up here. */
START_TEST(sqd_without_notify)
{
	struct end a;
	struct ibv_qp_attr q = { .qp_state = IBV_QPS_SQD };
	struct ibv_async_event ev;
	struct pollfd pfd;
	int flags, drained = 0;

	setup();
	end_create(&a, IBV_QPT_UD);
	ck_assert_msg(ez_qp_ladder(a.qp, IBV_QPS_RTS, NULL, 0) == 0, "%s", ez_errmsg());
	ck_assert_int_eq(ez_qp_modify(a.qp, &q, IBV_QP_STATE), 0);
	flags = fcntl(dev.ctx->async_fd, F_GETFL);
	ck_assert_int_eq(fcntl(dev.ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
	pfd.fd = dev.ctx->async_fd;
	pfd.events = POLLIN;
	for (int i = 0; i < 20 && !drained; i++)
		if (poll(&pfd, 1, 100) == 1 && ibv_get_async_event(dev.ctx, &ev) == 0) {
			drained += ev.event_type == IBV_EVENT_SQ_DRAINED && ev.element.qp == a.qp;
			/* No hook: the event is not ours to take. */
			ck_assert_int_eq(ez_qp_async_event(&ev), 0);
			ibv_ack_async_event(&ev);
		}
	printf("SQD without en_sqd_async_notify on %s: IBV_EVENT_SQ_DRAINED %s\n", dev.name,
	       drained ? "raised anyway" : "not raised");
	if (!strncmp(dev.name, "rxe", 3))
		ck_assert_msg(drained, "rxe no longer raises SQ_DRAINED unasked: update the notes");
	else
		ck_assert_msg(!drained, "%s raised SQ_DRAINED without en_sqd_async_notify", dev.name);
	ck_assert_int_eq(state_of(a.qp), IBV_QPS_SQD);
	end_destroy(&a);
	teardown();
}
END_TEST

START_TEST(raw_packet_says_eopnotsupp)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_cq *cq;
	struct ibv_qp *qp = (struct ibv_qp *)1;
	int err;

	setup();
	cq = ibv_create_cq(dev.ctx, 8, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ia.send_cq = ia.recv_cq = cq;
	err = ez_qp_create(pd, &ia, &qp);
	if (!strncmp(dev.name, "rxe", 3)) {
		char want[160];

		snprintf(want, sizeof(want),
			 "RAW_PACKET QP on %s: the device does not offer RAW_PACKET QPs (ibv_create_qp: %s)",
			 dev.name, ez_strerror(EOPNOTSUPP));
		ck_assert_int_eq(err, -EOPNOTSUPP);
		ck_assert_ptr_null(qp);
		ck_assert_str_eq(ez_errmsg(), want);
		printf("%s\n", ez_errmsg());
	} else if (err == 0) {
		/* Hardware that has them: the ladder takes it to RTS. */
		ck_assert_msg(ez_qp_ladder(qp, IBV_QPS_RTS, NULL, 0) == 0, "%s", ez_errmsg());
		ck_assert_int_eq(state_of(qp), IBV_QPS_RTS);
		ck_assert_int_eq(ibv_destroy_qp(qp), 0);
	} else {
		ck_assert_msg(err == -EOPNOTSUPP || err == -EPERM, "%d: %s", err, ez_errmsg());
	}
	ck_assert_int_eq(ibv_destroy_cq(cq), 0);
	teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("qpfsm_ladder");
	TCase *tc = tcase_create("rxe");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rc_laddered_and_exchanging);
	tcase_add_test(tc, uc_laddered_and_exchanging);
	tcase_add_test(tc, ud_laddered_with_ah_and_grh);
	tcase_add_test(tc, refusals_change_nothing);
	tcase_add_test(tc, ladder_recovers_from_error);
	tcase_add_test(tc, sqd_drain_event_reaches_the_hook);
	tcase_add_test(tc, sqd_without_notify);
	tcase_add_test(tc, raw_packet_says_eopnotsupp);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
