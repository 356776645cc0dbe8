/* test_verbs_pingpong.c: a raw-verbs RC QP pair laddered by hand, 1,000 checked round trips. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testdev.h"
#include "../checkmain.h"

#define MSG_SIZE 256
#define ROUND_TRIPS 1000

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[2][MSG_SIZE]; /* [0] send, [1] receive */
};

static struct testdev dev;
static struct ibv_pd *pd;

static void end_create(struct end *e)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	e->cq = ibv_create_cq(dev.ctx, 16, NULL, NULL, 0);
	ck_assert_ptr_nonnull(e->cq);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &ia);
	ck_assert_ptr_nonnull(e->qp);
	e->mr = ibv_reg_mr(pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(e->mr);
}

/* Reset -> Init -> RTR -> RTS with the attribute sets ibv_modify_qp(3) requires. */
static void end_connect(struct end *e, uint32_t remote_qpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = dev.port,
		.qp_access_flags = 0,
	};
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;

	ck_assert_int_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = dev.port_attr.active_mtu;
	a.dest_qp_num = remote_qpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	testdev_self_ah(&dev, &a.ah_attr, 0);
	ck_assert_int_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 100;
	a.max_rd_atomic = 1;
	ck_assert_int_eq(ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
	ck_assert_int_eq(ibv_query_qp(e->qp, &q, IBV_QP_STATE, &qi), 0);
	ck_assert_int_eq(q.qp_state, IBV_QPS_RTS);
}

static void post_recv(struct end *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf[1], .length = MSG_SIZE, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	ck_assert_int_eq(ibv_post_recv(e->qp, &wr, &bad), 0);
}

static void post_send(struct end *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf[0], .length = MSG_SIZE, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	ck_assert_int_eq(ibv_post_send(e->qp, &wr, &bad), 0);
}

/* Waits for one completion of the given opcode, bounded so a lost message fails. */
static void wait_wc(struct end *e, enum ibv_wc_opcode op, uint32_t *byte_len)
{
	struct ibv_wc wc;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(e->cq, 1, &wc);

		ck_assert_int_ge(n, 0);
		if (n == 1) {
			ck_assert_msg(wc.status == IBV_WC_SUCCESS, "completion error: %s",
				      ibv_wc_status_str(wc.status));
			ck_assert_int_eq(wc.opcode, op);
			if (byte_len)
				*byte_len = wc.byte_len;
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		ck_assert_msg(t.tv_sec - t0.tv_sec < 10, "no completion within 10 s");
	}
}

static void fill(char *p, int seq, char tag)
{
	for (int i = 0; i < MSG_SIZE; i++)
		p[i] = (char)(tag + seq * 7 + i);
}

static void check_payload(const char *p, int seq, char tag)
{
	char want[MSG_SIZE];

	fill(want, seq, tag);
	ck_assert_msg(!memcmp(p, want, MSG_SIZE), "payload of message %d (%c) differs", seq, tag);
}

START_TEST(rc_pair_pingpong_1000)
{
	struct end a, b;
	struct timespec t0, t1;
	uint32_t len;
	double us;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	testdev_open(&dev);
	pd = ibv_alloc_pd(dev.ctx);
	ck_assert_ptr_nonnull(pd);
	end_create(&a);
	end_create(&b);
	end_connect(&a, b.qp->qp_num);
	end_connect(&b, a.qp->qp_num);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < ROUND_TRIPS; i++) {
		post_recv(&b);
		post_recv(&a);
		fill(a.buf[0], i, 'p');
		post_send(&a);
		wait_wc(&a, IBV_WC_SEND, NULL);
		wait_wc(&b, IBV_WC_RECV, &len);
		ck_assert_uint_eq(len, MSG_SIZE);
		check_payload(b.buf[1], i, 'p');
		fill(b.buf[0], i, 'q');
		post_send(&b);
		wait_wc(&b, IBV_WC_SEND, NULL);
		wait_wc(&a, IBV_WC_RECV, &len);
		ck_assert_uint_eq(len, MSG_SIZE);
		check_payload(a.buf[1], i, 'q');
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / ROUND_TRIPS;
	printf("verbs pingpong on %s: %d round trips of %d B, %.1f us per round trip\n",
	       dev.name, ROUND_TRIPS, MSG_SIZE, us);

	/* Every object comes back: a leak would make dealloc_pd return EBUSY. */
	struct end *ends[] = { &a, &b };
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ibv_destroy_qp(ends[i]->qp), 0);
		ck_assert_int_eq(ibv_dereg_mr(ends[i]->mr), 0);
		ck_assert_int_eq(ibv_destroy_cq(ends[i]->cq), 0);
	}
	ck_assert_int_eq(ibv_dealloc_pd(pd), 0);
	testdev_close(&dev);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verbs_pingpong");
	TCase *tc = tcase_create("rc");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rc_pair_pingpong_1000);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
