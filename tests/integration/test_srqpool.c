/* test_srqpool.c: the SRQ pool on a real device: RC QP pairs whose receivers share the pool, limit events handled as the ctx will. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "easyrdma.h"
#include "srqpool/srqpool.h"
#include "testdev.h"
#include "../checkmain.h"

#define MSG_MAX 256
#define BUF_SIZE 1024
#define DEADLINE_S 60

struct hdr {
	uint32_t conn;
	uint32_t seq;
};

struct bench {
	struct testdev dev;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;	/* both CQs: the test sleeps instead of spinning */
	struct ibv_cq *scq, *rcq;
	struct ez_srqpool *pool;
	int n;			/* QP pairs */
	struct ibv_qp **snd, **rcv;
	struct srqpool_acct *acct;	/* each receiver's credits in the pool */
	struct ibv_mr *smr;
	char *sbuf;
	uint32_t slots;		/* send slots per connection */
	uint32_t *sent, *recvd;	/* per connection */
	uint64_t total_recvd, send_done, send_posted;
	/* What the async handler saw. */
	uint64_t events, event_refills, event_growths;
	int event_err;
	char event_msg[256];
	/* Buffers held instead of released at once. */
	struct ez_buf **held;
	uint32_t nheld, held_cap;
	uint32_t release_at;	/* with hold: release them all once this many are held */
	int hold;
	int64_t rnr0;		/* device's RNR NAKs sent when the bench opened */
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint32_t msg_len(uint32_t seq)
{
	return 64 + (seq % 7) * 32;	/* 64..256: byte_len is checked too */
}

static void fill(char *p, uint32_t conn, uint32_t seq)
{
	struct hdr h = { conn, seq };
	uint32_t len = msg_len(seq);

	memcpy(p, &h, sizeof(h));
	for (uint32_t i = sizeof(h); i < len; i++)
		p[i] = (char)(conn * 31 + seq * 7 + i);
}

static void check_msg(const char *p, uint32_t len, uint32_t conn, uint32_t seq)
{
	struct hdr h;

	ck_assert_uint_eq(len, msg_len(seq));
	memcpy(&h, p, sizeof(h));
	ck_assert_msg(h.conn == conn && h.seq == seq,
		      "conn %u expected message %u, got conn %u message %u (lost, duplicated or reordered)",
		      conn, seq, h.conn, h.seq);
	/* One assertion a message: each ck_assert is a write to the test's
	 * log pipe (Check's mark point), a syscall, which a byte at a time cost
	 * 18 ms a message in a TCG guest (400 messages: 7.5 s, 25 s under ASan). */
	for (uint32_t i = sizeof(h); i < len; i++)
		if (p[i] != (char)(conn * 31 + seq * 7 + i))
			ck_abort_msg("conn %u message %u: payload byte %u differs", conn, seq, i);
}

static void qp_connect(struct bench *b, struct ibv_qp *qp, uint32_t remote_qpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = b->dev.port,
	};

	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = b->dev.port_attr.active_mtu;
	a.dest_qp_num = remote_qpn;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 1;
	/* 10.24 ms: on a slow VM a shorter timer turns an empty SRQ into an RNR NAK
	 * storm that starves the receiver which would refill it. */
	a.min_rnr_timer = 20;
	testdev_self_ah(&b->dev, &a.ah_attr, 0);
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;	/* infinite: an empty SRQ must slow the sender, never fail it */
	a.sq_psn = 100;
	a.max_rd_atomic = 1;
	ck_assert_int_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static void bench_open(struct bench *b, int n, const struct ez_srqpool_opts *opts, uint32_t slots)
{
	uint32_t init;
	int flags;

	memset(b, 0, sizeof(*b));
	testdev_open(&b->dev);
	flags = fcntl(b->dev.ctx->async_fd, F_GETFL);
	ck_assert_int_eq(fcntl(b->dev.ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
	b->pd = ibv_alloc_pd(b->dev.ctx);
	ck_assert_ptr_nonnull(b->pd);
	b->ch = ibv_create_comp_channel(b->dev.ctx);
	ck_assert_ptr_nonnull(b->ch);
	b->scq = ibv_create_cq(b->dev.ctx, 4096, NULL, b->ch, 0);
	b->rcq = ibv_create_cq(b->dev.ctx, 4096, NULL, b->ch, 0);
	ck_assert_ptr_nonnull(b->scq);
	ck_assert_ptr_nonnull(b->rcq);
	ck_assert_msg(srqpool_create(b->pd, opts, &b->pool) == 0, "srqpool_create: %s", ez_errmsg());
	ck_assert_ptr_eq(srqpool_srq(b->pool)->srq_context, b->pool);

	b->n = n;
	b->slots = slots;
	b->snd = calloc(n, sizeof(*b->snd));
	b->rcv = calloc(n, sizeof(*b->rcv));
	b->sent = calloc(n, sizeof(*b->sent));
	b->recvd = calloc(n, sizeof(*b->recvd));
	b->acct = calloc(n, sizeof(*b->acct));
	b->sbuf = calloc((size_t)n * slots, MSG_MAX);
	ck_assert(b->snd && b->rcv && b->sent && b->recvd && b->acct && b->sbuf);
	b->smr = ibv_reg_mr(b->pd, b->sbuf, (size_t)n * slots * MSG_MAX, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(b->smr);
	for (int i = 0; i < n; i++) {
		struct ibv_qp_init_attr sa = {
			.send_cq = b->scq, .recv_cq = b->scq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = slots, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibv_qp_init_attr ra = {
			.send_cq = b->rcq, .recv_cq = b->rcq, .qp_type = IBV_QPT_RC,
			.srq = srqpool_srq(b->pool),
			.cap = { .max_send_wr = 1, .max_send_sge = 1 },
		};

		b->snd[i] = ibv_create_qp(b->pd, &sa);
		ck_assert_msg(b->snd[i], "ibv_create_qp (sender %d): %s", i, strerror(errno));
		b->rcv[i] = ibv_create_qp(b->pd, &ra);
		ck_assert_msg(b->rcv[i], "ibv_create_qp (receiver %d on the SRQ): %s", i, strerror(errno));
		ck_assert_int_eq(srqpool_attach(b->pool, &b->acct[i], 0, &init), 0);
		ck_assert_uint_ge(init, 1);
	}
	{
		struct ez_srqpool_stats st;

		ck_assert_int_eq(ez_srqpool_stats(b->pool, &st), 0);
		b->rnr0 = st.rnr_naks_sent;
	}
	for (int i = 0; i < n; i++) {
		qp_connect(b, b->snd[i], b->rcv[i]->qp_num);
		qp_connect(b, b->rcv[i], b->snd[i]->qp_num);
	}
}

static void bench_close(struct bench *b)
{
	for (int i = 0; i < b->n; i++) {
		ck_assert_int_eq(ibv_destroy_qp(b->snd[i]), 0);
		ck_assert_int_eq(ibv_destroy_qp(b->rcv[i]), 0);
		srqpool_detach(b->pool, &b->acct[i]);
	}
	for (uint32_t i = 0; i < b->nheld; i++)
		ez_buf_release(b->held[i]);
	b->nheld = 0;
	ck_assert_msg(srqpool_destroy(b->pool) == 0, "srqpool_destroy: %s", ez_errmsg());
	ck_assert_int_eq(ibv_dereg_mr(b->smr), 0);
	ck_assert_int_eq(ibv_destroy_cq(b->scq), 0);
	ck_assert_int_eq(ibv_destroy_cq(b->rcq), 0);
	ck_assert_int_eq(ibv_destroy_comp_channel(b->ch), 0);
	/* Every MR and the SRQ came back, or this is EBUSY. */
	ck_assert_int_eq(ibv_dealloc_pd(b->pd), 0);
	testdev_close(&b->dev);
	free(b->snd);
	free(b->rcv);
	free(b->sent);
	free(b->recvd);
	free(b->acct);
	free(b->sbuf);
	free(b->held);
}

static int find_conn(const struct bench *b, uint32_t qpn)
{
	for (int i = 0; i < b->n; i++)
		if (b->rcv[i]->qp_num == qpn)
			return i;
	return -1;
}

static void post_sends(struct bench *b, int conn, uint32_t count)
{
	for (uint32_t k = 0; k < count; k++) {
		uint32_t seq = b->sent[conn];
		char *p = b->sbuf + ((size_t)conn * b->slots + seq % b->slots) * MSG_MAX;
		struct ibv_sge sge = { .addr = (uintptr_t)p, .length = msg_len(seq), .lkey = b->smr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = ((uint64_t)conn << 32) | seq, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		fill(p, conn, seq);
		ck_assert_int_eq(ibv_post_send(b->snd[conn], &wr, &bad), 0);
		b->sent[conn]++;
		b->send_posted++;
	}
}

/* What the ctx will do: read the device's async events, hand SRQ limit
 * events to the pool (found through srq_context), ack every event. */
static void pump_async(struct bench *b)
{
	struct ibv_async_event ev;

	while (ibv_get_async_event(b->dev.ctx, &ev) == 0) {
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
			struct ez_srqpool *pool = ev.element.srq->srq_context;
			struct ez_srqpool_stats s0, s1;
			int rc;

			ck_assert_ptr_eq(pool, b->pool);
			ck_assert_int_eq(ez_srqpool_stats(pool, &s0), 0);
			rc = srqpool_on_limit_event(pool);
			ck_assert_int_eq(ez_srqpool_stats(pool, &s1), 0);
			b->events++;
			b->event_refills += s1.refills - s0.refills;
			b->event_growths += s1.growths - s0.growths;
			if (getenv("EZ_TEST_TRACE"))
				printf("  limit event: rc %d, posted %llu -> %llu, free %llu, in_use %llu, "
				       "total %llu, srq_max_wr %u, growths %llu\n", rc,
				       (unsigned long long)s0.posted, (unsigned long long)s1.posted,
				       (unsigned long long)s1.free, (unsigned long long)s1.in_use,
				       (unsigned long long)s1.total, s1.srq_max_wr,
				       (unsigned long long)s1.growths);
			if (rc) {
				b->event_err = rc;
				snprintf(b->event_msg, sizeof(b->event_msg), "%s", ez_srqpool_errmsg(pool));
			}
		} else if (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED) {
			ck_abort_msg("unexpected async event %s", ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
	ck_assert_int_eq(errno, EAGAIN);
}

static void hold_buffers(struct bench *b, uint32_t cap)
{
	free(b->held);
	b->held = calloc(cap, sizeof(*b->held));
	ck_assert_ptr_nonnull(b->held);
	b->held_cap = cap;
	b->hold = 1;
}

static void release_held(struct bench *b)
{
	for (uint32_t i = 0; i < b->nheld; i++)
		ez_buf_release(b->held[i]);
	b->nheld = 0;
}

/* Polls both CQs dry; returns how many completions were handled. */
static int drain_cqs(struct bench *b)
{
	struct ibv_wc wc[32];
	int n, done = 0;

	while ((n = ibv_poll_cq(b->rcq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct ez_buf *buf;
			int conn;

			ck_assert_msg(wc[i].status == IBV_WC_SUCCESS, "receive completion: %s",
				      ibv_wc_status_str(wc[i].status));
			ck_assert_int_eq(wc[i].opcode, IBV_WC_RECV);
			buf = srqpool_take(b->pool, wc[i].wr_id, wc[i].byte_len);
			ck_assert_msg(buf, "srqpool_take: %s", ez_srqpool_errmsg(b->pool));
			conn = find_conn(b, wc[i].qp_num);
			ck_assert_int_ge(conn, 0);
			check_msg(ez_buf_data(buf), (uint32_t)ez_buf_len(buf), conn, b->recvd[conn]);
			b->recvd[conn]++;
			b->total_recvd++;
			if (b->hold) {
				ck_assert_uint_lt(b->nheld, b->held_cap);
				b->held[b->nheld++] = buf;
				if (b->release_at && b->nheld >= b->release_at)
					release_held(b);
			} else {
				ez_buf_release(buf);
			}
		}
		done += n;
	}
	ck_assert_int_ge(n, 0);
	while ((n = ibv_poll_cq(b->scq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			ck_assert_msg(wc[i].status == IBV_WC_SUCCESS, "send completion of conn %u msg %u: %s",
				      (unsigned)(wc[i].wr_id >> 32), (unsigned)wc[i].wr_id,
				      ibv_wc_status_str(wc[i].status));
			b->send_done++;
		}
		done += n;
	}
	ck_assert_int_ge(n, 0);
	return done;
}

/* One turn of the loop, as the ctx will run it: completions first (so the
 * pool's count is current), then async events; with nothing to do, sleep on
 * both fds (the VM's CPUs are better spent on rxe than on spinning). */
static void pump(struct bench *b)
{
	struct pollfd pfd[2] = {
		{ .fd = b->ch->fd, .events = POLLIN },
		{ .fd = b->dev.ctx->async_fd, .events = POLLIN },
	};

	if (drain_cqs(b)) {
		pump_async(b);
		return;
	}
	pump_async(b);
	ck_assert_int_eq(ibv_req_notify_cq(b->rcq, 0), 0);
	ck_assert_int_eq(ibv_req_notify_cq(b->scq, 0), 0);
	if (drain_cqs(b))	/* arrived between the poll and the request */
		return;
	if (poll(pfd, 2, 50) > 0 && (pfd[0].revents & POLLIN)) {
		struct ibv_cq *cq;
		void *ctx;

		ck_assert_int_eq(ibv_get_cq_event(b->ch, &cq, &ctx), 0);
		ibv_ack_cq_events(cq, 1);
	}
}

/* Pumps until total_recvd and send_done reach the targets, or fails. */
static void wait_for(struct bench *b, uint64_t recvd, uint64_t sent, const char *what)
{
	double t0 = now_ms();
	uint64_t moved = b->total_recvd + b->send_done;

	for (;;) {
		struct ez_srqpool_stats s;

		pump(b);
		if (b->total_recvd >= recvd && b->send_done >= sent)
			return;
		/* A hang is DEADLINE_S without one message moving: the whole
		 * run is not bounded (400 messages through RNR back-pressure took
		 * 10-45 s under ASan on a quiet TCG guest, and more than 60 s
		 * at load 15, where 232 had come and the rest were coming). */
		if (b->total_recvd + b->send_done != moved) {
			moved = b->total_recvd + b->send_done;
			t0 = now_ms();
		}
		if (now_ms() - t0 < DEADLINE_S * 1000.0)
			continue;
		ck_assert_int_eq(ez_srqpool_stats(b->pool, &s), 0);
		ck_abort_msg("%s: %llu of %llu messages received, %llu of %llu sends completed, none more in %d s "
			     "(pool: posted %llu free %llu in_use %llu total %llu, %llu events, "
			     "%llu growths; %s)", what, (unsigned long long)b->total_recvd,
			     (unsigned long long)recvd, (unsigned long long)b->send_done,
			     (unsigned long long)sent, DEADLINE_S, (unsigned long long)s.posted,
			     (unsigned long long)s.free, (unsigned long long)s.in_use,
			     (unsigned long long)s.total, (unsigned long long)s.limit_events,
			     (unsigned long long)s.growths, ez_srqpool_errmsg(b->pool));
	}
}

/* The event may still be on its way when the last completion is seen. */
static void drain_async(struct bench *b, int ms)
{
	double t0 = now_ms();

	while (now_ms() - t0 < ms) {
		struct pollfd pfd = { .fd = b->dev.ctx->async_fd, .events = POLLIN };

		if (poll(&pfd, 1, 5) > 0)
			pump_async(b);
	}
}

static void stats(struct bench *b, struct ez_srqpool_stats *s)
{
	ck_assert_int_eq(ez_srqpool_stats(b->pool, s), 0);
}

/* (a) The limit event arrives and refills: 64 buffers, watermark 16, 480
 * messages in bursts of 60 (1,000 until CI's time ran short: the same rules). The receiver holds each burst's buffers until the
 * burst is in (the SRQ drops to 4, below the watermark), then releases them;
 * the last 16 wait on the free list for the next burst's limit event. */
START_TEST(limit_event_refills)
{
	struct ez_srqpool_opts o = { .buf_size = BUF_SIZE, .nbufs = 64, .low_watermark = 16 };
	struct ez_srqpool_stats s;
	struct ibv_srq_attr sa;
	struct bench b;
	double t0, ms;
	uint32_t total = 480, burst = 60;	/* 8 bursts: 8 limit events and more */

	bench_open(&b, 1, &o, burst);
	stats(&b, &s);
	ck_assert_uint_eq(s.posted, 64);
	ck_assert_uint_eq(s.low_watermark, 16);
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &sa), 0);
	ck_assert_uint_eq(sa.srq_limit, 16);
	ck_assert_uint_ge(sa.max_wr, 64);
	hold_buffers(&b, burst);

	t0 = now_ms();
	while (b.sent[0] < total) {
		uint32_t k = total - b.sent[0] < burst ? total - b.sent[0] : burst;

		double t1 = now_ms();

		post_sends(&b, 0, k);
		wait_for(&b, b.sent[0], b.sent[0], "burst");
		release_held(&b);
		if (getenv("EZ_TEST_TRACE"))
			printf("  burst to %u: %.1f ms, %llu events\n", b.sent[0], now_ms() - t1,
			       (unsigned long long)b.events);
	}
	ms = now_ms() - t0;
	drain_async(&b, 50);
	stats(&b, &s);
	printf("srqpool (a) on %s: %u messages in bursts of %u through 64 buffers (watermark 16) "
	       "in %.0f ms: limit_events %llu (refills by the event %llu), refills %llu, "
	       "lowest_posted %llu, growths %llu, RNR NAKs sent %lld\n",
	       b.dev.name, total, burst, ms, (unsigned long long)s.limit_events,
	       (unsigned long long)b.event_refills, (unsigned long long)s.refills,
	       (unsigned long long)s.lowest_posted, (unsigned long long)s.growths,
	       (long long)(s.rnr_naks_sent - b.rnr0));
	ck_assert_uint_eq(b.recvd[0], total);
	ck_assert_uint_eq(b.total_recvd, total);
	ck_assert_int_eq(b.event_err, 0);
	ck_assert_uint_gt(s.limit_events, 0);
	ck_assert_uint_eq(s.limit_events, b.events);
	ck_assert_uint_gt(b.event_refills, 0);	/* the event itself posted buffers */
	ck_assert_uint_gt(s.refills, b.event_refills);
	ck_assert_uint_le(s.lowest_posted, 4);	/* 64 - 60 */
	ck_assert_uint_eq(s.growths, 0);
	ck_assert_uint_eq(s.total, 64);
	ck_assert_uint_eq(s.in_use, 0);
	ck_assert_uint_eq(s.posted + s.free, 64);
	/* Re-armed after every event (rxe leaves the limit at 0 once it fires). */
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &sa), 0);
	ck_assert_uint_eq(sa.srq_limit, 16);
	bench_close(&b);
}
END_TEST

/* (b) 50 connections share 256 buffers; each sends bursts of its credit share. */
START_TEST(fifty_conns_share_one_pool)
{
	struct ez_srqpool_opts o = { .buf_size = BUF_SIZE, .nbufs = 256 };
	struct ez_srqpool_stats s;
	struct bench b;
	const int n = 50, rounds = 4;
	uint32_t credits;
	double t0, ms, worst = 0;

	bench_open(&b, n, &o, 16);
	/* 32 buffers (an eighth) stay back for credit-only messages. */
	credits = srqpool_credit_share(b.pool);
	ck_assert_uint_eq(credits, (256 - 32) / 50);
	stats(&b, &s);
	ck_assert_uint_eq(s.attached, 50);

	t0 = now_ms();
	for (int r = 0; r < rounds; r++) {
		double r0 = now_ms();

		for (int c = 0; c < n; c++)
			post_sends(&b, c, credits);
		wait_for(&b, b.send_posted, b.send_posted, "round");
		/* Nobody starved: every connection got its whole burst this round. */
		for (int c = 0; c < n; c++)
			ck_assert_msg(b.recvd[c] == (uint32_t)(r + 1) * credits,
				      "round %d: conn %d has %u of %u messages", r, c, b.recvd[c],
				      (r + 1) * credits);
		if (getenv("EZ_TEST_TRACE"))
			printf("  round %d: %.1f ms, %llu events\n", r, now_ms() - r0,
			       (unsigned long long)b.events);
		if (now_ms() - r0 > worst)
			worst = now_ms() - r0;
	}
	ms = now_ms() - t0;
	drain_async(&b, 20);
	stats(&b, &s);
	printf("srqpool (b) on %s: %d connections x %d rounds x %u messages = %llu through one pool "
	       "of 256 x %u B in %.0f ms (slowest round %.1f ms): bytes_registered %llu "
	       "(vs %d x 256-deep receive queues = %llu), limit_events %llu, refills %llu, "
	       "lowest_posted %llu, RNR NAKs sent %lld\n",
	       b.dev.name, n, rounds, credits, (unsigned long long)b.total_recvd, BUF_SIZE, ms, worst,
	       (unsigned long long)s.bytes_registered, n, (unsigned long long)n * 256 * BUF_SIZE,
	       (unsigned long long)s.limit_events, (unsigned long long)s.refills,
	       (unsigned long long)s.lowest_posted, (long long)(s.rnr_naks_sent - b.rnr0));
	for (int c = 0; c < n; c++)
		ck_assert_uint_eq(b.recvd[c], rounds * credits);
	ck_assert_uint_eq(b.total_recvd, (uint64_t)n * rounds * credits);
	ck_assert_uint_eq(s.bytes_registered, 256ull * BUF_SIZE);
	ck_assert_uint_eq(s.total, 256);
	ck_assert_uint_eq(s.growths, 0);
	ck_assert_uint_eq(s.in_use, 0);
	ck_assert_int_eq(b.event_err, 0);
	bench_close(&b);
}
END_TEST

/* (c) A burst bigger than the pool, all held by the receiver: the pool must grow. */
START_TEST(grows_under_a_burst)
{
	struct ez_srqpool_opts o = { .buf_size = BUF_SIZE, .nbufs = 64, .low_watermark = 16,
				     .max_bufs = 512 };
	struct ez_srqpool_stats s;
	struct ibv_srq_attr sa;
	struct bench b;
	const uint32_t burst = 200;
	double t0, ms;

	bench_open(&b, 1, &o, burst);
	hold_buffers(&b, burst);
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &sa), 0);
	printf("srqpool (c) on %s: IBV_DEVICE_SRQ_RESIZE %s, max_srq_wr %d, SRQ of 64 asked "
	       "holds max_wr %u\n", b.dev.name,
	       b.dev.dev_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE ? "yes" : "no",
	       b.dev.dev_attr.max_srq_wr, sa.max_wr);
	if (!(b.dev.dev_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
		/* Growth beyond the SRQ's room is refused clearly; the pool keeps its size. */
		ck_assert_int_eq(srqpool_grow(b.pool, sa.max_wr), -EOPNOTSUPP);
		ck_assert_msg(strstr(ez_srqpool_errmsg(b.pool), "IBV_DEVICE_SRQ_RESIZE"), "%s",
			      ez_srqpool_errmsg(b.pool));
		stats(&b, &s);
		ck_assert_uint_eq(s.total, 64);
		b.hold = 0;
	}
	t0 = now_ms();
	post_sends(&b, 0, burst);
	wait_for(&b, burst, burst, "burst larger than the pool");
	ms = now_ms() - t0;
	stats(&b, &s);
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &sa), 0);
	printf("srqpool (c) on %s: a burst of %u held through a pool of 64 (cap 512) in %.0f ms: "
	       "growths %llu, total %llu, bytes_registered %llu, SRQ max_wr %u, limit_events %llu, "
	       "refills %llu (growths by the event handler %llu), RNR NAKs sent %lld, event error %d\n",
	       b.dev.name, burst, ms,
	       (unsigned long long)s.growths, (unsigned long long)s.total,
	       (unsigned long long)s.bytes_registered, sa.max_wr,
	       (unsigned long long)s.limit_events, (unsigned long long)s.refills,
	       (unsigned long long)b.event_growths, (long long)(s.rnr_naks_sent - b.rnr0), b.event_err);
	ck_assert_uint_eq(b.recvd[0], burst);
	if (b.dev.dev_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE) {
		ck_assert_int_eq(b.event_err, 0);
		ck_assert_uint_gt(s.growths, 0);
		/* Grown by the event handler, or by the take that followed an event
		 * handled before its completions were polled. */
		ck_assert_uint_gt(s.limit_events, 0);
		ck_assert_uint_ge(s.total, burst);
		ck_assert_uint_le(s.total, 512);
		ck_assert_uint_eq(s.bytes_registered, s.total * BUF_SIZE);
		ck_assert_uint_eq(s.in_use, burst);
		ck_assert_uint_ge(sa.max_wr, s.total);	/* IBV_SRQ_MAX_WR raised */
		ck_assert_uint_eq(s.srq_max_wr, sa.max_wr);
	}
	release_held(&b);
	stats(&b, &s);
	ck_assert_uint_eq(s.in_use, 0);
	bench_close(&b);
}
END_TEST

/* One run of n messages on one connection; returns ms and the RNR NAK deltas.
 * With hold_at, the receiver is away for away_ms first, then holds buffers
 * and releases them hold_at at a time (an application slower than its peer). */
static double capped_run(const struct ez_srqpool_opts *o, uint32_t n, uint32_t hold_at, int away_ms,
			 struct ez_srqpool_stats *out, int64_t *rnr_sent, int64_t *rnr_rcvd,
			 char *devname, size_t namelen)
{
	struct ez_srqpool_stats s0;
	struct bench b;
	double t0, ms;

	bench_open(&b, 1, o, n);
	snprintf(devname, namelen, "%s", b.dev.name);
	if (hold_at) {
		hold_buffers(&b, hold_at);
		b.release_at = hold_at;
	}
	stats(&b, &s0);
	t0 = now_ms();
	post_sends(&b, 0, n);
	if (away_ms)
		usleep(away_ms * 1000);
	wait_for(&b, n, n, "capped pool");
	ms = now_ms() - t0;
	drain_async(&b, 20);
	release_held(&b);
	stats(&b, out);
	ck_assert_uint_eq(b.recvd[0], n);
	ck_assert_int_eq(b.event_err, 0);
	*rnr_sent = s0.rnr_naks_sent < 0 ? -1 : out->rnr_naks_sent - s0.rnr_naks_sent;
	*rnr_rcvd = s0.rnr_naks_received < 0 ? -1 : out->rnr_naks_received - s0.rnr_naks_received;
	if (o->max_bufs) {
		/* At the cap, growth is refused with -ENOSPC and a reason. */
		ck_assert_int_eq(srqpool_grow(b.pool, 0), -ENOSPC);
		ck_assert_msg(strstr(ez_srqpool_errmsg(b.pool), "at its cap of 128"), "%s",
			      ez_srqpool_errmsg(b.pool));
	}
	bench_close(&b);
	return ms;
}

/* (d) At the cap the sender sees RNR back-pressure, never a loss: 400 messages
 * into a pool of 64 that may grow to 128, while the receiver is away 20 ms and
 * then holds 120 buffers at a time. A pool of 512 is the baseline. */
START_TEST(cap_means_rnr_not_loss)
{
	struct ez_srqpool_opts big = { .buf_size = BUF_SIZE, .nbufs = 512 };
	struct ez_srqpool_opts capped = { .buf_size = BUF_SIZE, .nbufs = 64, .low_watermark = 16,
					  .max_bufs = 128 };
	struct ez_srqpool_stats s0, s1;
	int64_t sent0, rcvd0, sent1, rcvd1;
	const uint32_t n = 400;
	char name[64];
	double ms0, ms1;

	ms0 = capped_run(&big, n, 0, 0, &s0, &sent0, &rcvd0, name, sizeof(name));
	ms1 = capped_run(&capped, n, 120, 20, &s1, &sent1, &rcvd1, name, sizeof(name));
	printf("srqpool (d) on %s: %u messages; pool of 512, receiver at once: %.0f ms, RNR NAKs "
	       "sent %lld received %lld; pool of 64 capped at 128, receiver away 20 ms then holding "
	       "120 at a time: %.0f ms, growths %llu, total %llu, RNR NAKs sent %lld received %lld, "
	       "limit_events %llu, lowest_posted %llu\n",
	       name, n, ms0, (long long)sent0, (long long)rcvd0, ms1, (unsigned long long)s1.growths,
	       (unsigned long long)s1.total, (long long)sent1, (long long)rcvd1,
	       (unsigned long long)s1.limit_events, (unsigned long long)s1.lowest_posted);
	ck_assert_uint_eq(s0.growths, 0);
	ck_assert_uint_eq(s1.total, 128);	/* grew to the cap, not past it */
	ck_assert_uint_eq(s1.growths, 1);
	ck_assert_uint_eq(s1.bytes_registered, 128 * BUF_SIZE);
	ck_assert_uint_eq(s1.lowest_posted, 0);
	ck_assert_uint_gt(s1.limit_events, 1);
	if (sent0 >= 0)
		ck_assert_int_eq(sent0, 0);	/* the baseline never ran dry */
	/* rxe reports both counters; elsewhere they may be -1 (see ez_srqpool_stats(3)). */
	if (!strncmp(name, "rxe", 3))
		ck_assert_msg(sent1 > 0 && rcvd1 > 0, "RNR NAK counters did not move: sent %lld "
			      "received %lld", (long long)sent1, (long long)rcvd1);
}
END_TEST

/* (e) Destruction with connections attached or buffers held is refused and frees nothing. */
START_TEST(destroy_refused_while_busy)
{
	struct ez_srqpool_opts o = { .buf_size = BUF_SIZE, .nbufs = 32, .low_watermark = 8 };
	struct ez_srqpool_stats s0, s1;
	struct bench b;

	bench_open(&b, 2, &o, 8);
	stats(&b, &s0);
	ck_assert_int_eq(srqpool_destroy(b.pool), -EBUSY);
	ck_assert_msg(strstr(ez_errmsg(), "2 connection(s) still attached"), "%s", ez_errmsg());
	ck_assert_str_eq(ez_srqpool_errmsg(b.pool), ez_errmsg());
	stats(&b, &s1);
	ck_assert_uint_eq(s1.total, s0.total);
	ck_assert_uint_eq(s1.posted, 32);
	ck_assert_uint_eq(s1.bytes_registered, 32 * BUF_SIZE);
	/* Still working: the SRQ and slab are there. */
	post_sends(&b, 0, 3);
	post_sends(&b, 1, 3);
	wait_for(&b, 6, 6, "after a refused destroy");

	/* Detached but a buffer held: still refused. */
	hold_buffers(&b, 4);
	post_sends(&b, 1, 1);
	wait_for(&b, 7, 7, "one held");
	ck_assert_uint_eq(b.nheld, 1);
	for (int i = 0; i < b.n; i++)
		srqpool_detach(b.pool, &b.acct[i]);
	ck_assert_int_eq(srqpool_destroy(b.pool), -EBUSY);
	ck_assert_msg(strstr(ez_errmsg(), "still holds 1 buffer(s)"), "%s", ez_errmsg());
	/* Put them back for bench_close (it detaches again). */
	for (int i = 0; i < b.n; i++) {
		uint32_t init;

		ck_assert_int_eq(srqpool_attach(b.pool, &b.acct[i], 0, &init), 0);
	}
	bench_close(&b);
}
END_TEST

/* (f) ibv_modify_srq rules on the device: invalid attributes change nothing. */
START_TEST(modify_rules_on_device)
{
	struct ez_srqpool_opts o = { .buf_size = BUF_SIZE, .nbufs = 64, .low_watermark = 16 };
	struct ibv_srq_attr a, q0, q1;
	struct bench b;

	bench_open(&b, 1, &o, 8);
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &q0), 0);
	memset(&a, 0, sizeof(a));
	a.srq_limit = 8;
	ck_assert_int_eq(srqpool_modify(b.pool, &a, IBV_SRQ_LIMIT | (1 << 7)), -EINVAL);
	ck_assert_msg(strstr(ez_errmsg(), "only IBV_SRQ_MAX_WR and IBV_SRQ_LIMIT"), "%s", ez_errmsg());
	a.srq_limit = q0.max_wr;
	ck_assert_int_eq(srqpool_modify(b.pool, &a, IBV_SRQ_LIMIT), -EINVAL);
	a.srq_limit = 8;
	a.max_wr = 32;	/* below the 64 registered */
	ck_assert_int_eq(srqpool_modify(b.pool, &a, IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR), -EINVAL);
	ck_assert_msg(strstr(ez_errmsg(), "below the 64 buffers registered"), "%s", ez_errmsg());
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &q1), 0);
	ck_assert_uint_eq(q1.max_wr, q0.max_wr);
	ck_assert_uint_eq(q1.srq_limit, 16);
	/* The device itself refuses a limit above max_wr and keeps the old one. */
	a.srq_limit = q0.max_wr + 1000;
	ck_assert_int_ne(ibv_modify_srq(srqpool_srq(b.pool), &a, IBV_SRQ_LIMIT), 0);
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &q1), 0);
	ck_assert_uint_eq(q1.srq_limit, 16);
	/* A valid change is applied and becomes the pool's watermark. */
	a.srq_limit = 8;
	ck_assert_int_eq(srqpool_modify(b.pool, &a, IBV_SRQ_LIMIT), 0);
	ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &q1), 0);
	ck_assert_uint_eq(q1.srq_limit, 8);
	if (b.dev.dev_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE) {
		a.max_wr = q0.max_wr + 100;
		ck_assert_int_eq(srqpool_modify(b.pool, &a, IBV_SRQ_MAX_WR), 0);
		ck_assert_int_eq(ibv_query_srq(srqpool_srq(b.pool), &q1), 0);
		ck_assert_uint_ge(q1.max_wr, q0.max_wr + 100);
		ck_assert_uint_eq(q1.srq_limit, 8);
	} else {
		a.max_wr = q0.max_wr + 100;
		ck_assert_int_eq(srqpool_modify(b.pool, &a, IBV_SRQ_MAX_WR), -EOPNOTSUPP);
	}
	bench_close(&b);
}
END_TEST

int main(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} tests[] = {
		{ "a_limit_event", limit_event_refills },
		{ "b_fifty_conns", fifty_conns_share_one_pool },
		{ "c_growth", grows_under_a_burst },
		{ "d_cap_rnr", cap_means_rnr_not_loss },
		{ "e_destroy_busy", destroy_refused_while_busy },
		{ "f_modify_rules", modify_rules_on_device },
	};
	Suite *s = suite_create("srqpool");

	/* One case per test, so CK_RUN_CASE=c_growth runs one alone. */
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, tests[i].test);
		suite_add_tcase(s, tc);
	}
	return check_run_suite(s, CK_VERBOSE);
}
