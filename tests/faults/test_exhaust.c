/* test_exhaust.c: resource exhaustion: the device's CQ capacity, QP limits, memory registration failures, an SRQ pool at its cap, send slots released after a burst. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <infiniband/verbs.h>

#include "easyrdma.h"
#include "conn/ctx.h"
#include "device/device.h"
#include "device/sendslab.h"
#include "fault.h"
#include "../checkmain.h"

static int device_attr(struct ibv_device_attr *attr, char *name, size_t len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *v;
	const char *want = getenv("EZ_DEVICE");
	int i, ret = -1;

	for (i = 0; list && list[i]; i++) {
		if (want && strcmp(want, ibv_get_device_name(list[i])))
			continue;
		v = ibv_open_device(list[i]);
		if (v) {
			ret = ibv_query_device(v, attr);
			snprintf(name, len, "%s", ibv_get_device_name(list[i]));
			ibv_close_device(v);
		}
		break;
	}
	if (list)
		ibv_free_device_list(list);
	return ret;
}

/* Connections with deep send queues: one CQ (max_cqe) holds three of them,
 * so they spread over new CQs (the cap of issue 22 was this one CQ), every
 * one works, and the CQs go again when they close. What one claim cannot
 * have on any CQ (a pool larger than max_cqe) fails with the limit named. */
START_TEST(cq_room_beyond_one_cq)
{
	struct fb b;
	struct srv s = { 0 };
	struct ibv_device_attr attr;
	char dev[64], want[200];
	struct ez_conn_opts deep = { .send_depth = 10000, .recv_depth = 2, .max_msg_size = 64 };
	enum { MAXC = 16 };
	struct ep c[MAXC + 1];
	struct device *d;
	int i, need;

	memset(c, 0, sizeof(c));
	ck_assert_int_eq(device_attr(&attr, dev, sizeof(dev)), 0);
	printf("device %s: max_qp %d, max_cqe %d, max_cq %d, max_mr %d, max_srq %d, max_pd %d\n",
	       dev, attr.max_qp, attr.max_cqe, attr.max_cq, attr.max_mr, attr.max_srq, attr.max_pd);
	fb_init(&b);
	s.opts.recv_depth = 2;
	s.opts.send_depth = 2;
	s.opts.max_msg_size = 64;
	srv_start(&b, &s, MAXC + 2);
	for (i = 0; i < MAXC; i++) {
		ck_assert_int_eq(ep_connect(&b, &c[i], s.port, &deep), 0);
		ck_assert(fb_run(&b, &c[i].connected, 1, 10));
		ck_assert_msg(c[i].connect_status == 0, "connection %d: %s", i, c[i].connect_msg);
	}
	d = b.ctx->devices.list;
	/* Each takes 10,004 for its sends (10,000 + a credit message and a
	 * goodbye + keepalive's 2) on some CQ; the server's 16 small ones and
	 * the pools fit beside them. */
	need = (MAXC * 10004 + attr.max_cqe - 1) / attr.max_cqe;
	printf("%d connections of send_depth 10000: %d CQs (at most %d; %d completions taken)\n",
	       MAXC, d->ncq, d->ncq_max, d->cq_reserved);
	ck_assert_int_ge(d->ncq, need);
	ck_assert_int_le(d->ncq, MAXC / 3 + 2);
	for (i = 0; i < MAXC; i++)
		ck_assert_int_eq(ep_send_seq(&c[i], 0), 0);
	for (i = 0; i < MAXC; i++)
		ck_assert(fb_run(&b, &c[i].received, 1, 5));
	/* The server takes deep connections too. */
	{
		struct ep x = { 0 };

		s.opts.send_depth = 12000;
		ck_assert_int_eq(ep_connect(&b, &x, s.port, NULL), 0);
		ck_assert(fb_run(&b, &x.connected, 1, 10));
		ck_assert_msg(x.connect_status == 0, "send_depth 12000 accepted: %s (accept said %s)",
			      x.connect_msg, s.accept_msg);
		ck_assert_int_eq(s.accept_errors, 0);
		ep_close(&x);
		ck_assert(fb_run(&b, &x.disconnected, 1, 5));
		s.opts.send_depth = 2;
	}
	/* A pool whose buffers no CQ can hold. */
	if ((uint32_t)attr.max_cqe < (uint32_t)attr.max_srq_wr) {
		struct ez_srqpool_opts po = { .buf_size = 64, .nbufs = 64,
					      .max_bufs = (uint32_t)attr.max_cqe + 1 };
		struct ez_srqpool *p = NULL;

		ck_assert_int_eq(ez_srqpool_new(b.ctx, dev, &po, &p), -ENOSPC);
		snprintf(want, sizeof(want), "CQ of %s: %d completions outstanding would exceed max_cqe %d",
			 dev, attr.max_cqe + 1, attr.max_cqe);
		ck_assert_str_eq(ez_errmsg(), want);
		ck_assert_ptr_null(p);
		printf("a pool of max_bufs %d: %s\n", attr.max_cqe + 1, ez_errmsg());
	}
	for (i = 0; i < MAXC; i++)
		ep_close(&c[i]);
	for (i = 0; i < MAXC; i++)
		ck_assert(fb_run(&b, &c[i].disconnected, 1, 5));
	fb_spin(&b, 0.5);
	printf("closed: %d CQ left (%llu made, %llu freed), %d completions taken\n", d->ncq,
	       (unsigned long long)d->cqs_made, (unsigned long long)d->cqs_freed, d->cq_reserved);
	ck_assert_int_eq(d->ncq, 1);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* A busy-polling context on the application's own loop (no libev): */
static int busy_sent;

static void busy_count_sent(struct ez_conn *conn, int status, void *arg)
{
	(void)conn;
	(void)arg;
	ck_assert_msg(status == 0, "send completed with %d", status);
	busy_sent++;
}

/* Runs the server's libev loop and the busy context's passes until
 * *flag >= want or secs pass. */
static int busy_run(struct fb *b, struct ez_ctx *cctx, const volatile int *flag, int want,
		    double secs)
{
	double end = now_s() + secs;

	while (*flag < want && now_s() < end) {
		int n = ez_ctx_process(cctx);

		ck_assert_msg(n >= 0, "ez_ctx_process: %d %s", n, ez_errmsg());
		ev_run(b->loop, EVRUN_NOWAIT);
	}
	return *flag >= want;
}

static void busy_send(struct fb *b, struct ez_ctx *cctx, struct ep *e, uint64_t seq)
{
	int want = busy_sent + 1;

	ck_assert_int_eq(ez_send(e->conn, &seq, sizeof(seq), busy_count_sent, NULL), 0);
	ck_assert_msg(busy_run(b, cctx, &busy_sent, want, 10), "send %llu: no completion",
		      (unsigned long long)seq);
	ck_assert_msg(busy_run(b, cctx, &e->received, (int)seq + 1, 10), "echo %llu not received",
		      (unsigned long long)seq);
	ck_assert_int_eq(e->bad_seq, 0);
}

/* ez_ctx_process()'s short pass, of a context without a libev loop, polls
 * the set's one CQ (device_set.only): with one CQ the passes skip the loop's
 * work (loop.passes counts only the full ones, one in 32); once deep
 * connections spread over several CQs every CQ is polled (a stale one-CQ
 * choice would leave the other CQs' send completions unpolled, and these
 * sends' callbacks would never run); when they close and their CQs go, the
 * one CQ left is polled again. */
START_TEST(busy_poll_over_cqs)
{
	struct fb b;
	struct srv s = { 0 };
	struct ez_ctx *cctx = NULL;
	struct ez_conn_opts deep = { .send_depth = 10000, .recv_depth = 2, .max_msg_size = 64 };
	enum { DEEP = 4, PASSES = 3200 };
	struct ep x = { 0 }, c[DEEP];
	struct device *d;
	uint64_t p0;
	int i, k, closed = 0;
	double end;

	memset(c, 0, sizeof(c));
	fb_init(&b);
	s.opts.recv_depth = 2;
	s.opts.send_depth = 2;
	s.opts.max_msg_size = 64;
	srv_start(&b, &s, DEEP + 2);
	ck_assert_int_eq(ez_ctx_new(NULL, EZ_CTX_NO_LOOP | EZ_CTX_BUSY_POLL, &cctx), 0);
	ck_assert_int_eq(ez_connect(cctx, test_addr(), s.port, NULL, &ep_cbs, &x, &x.conn), 0);
	ck_assert(busy_run(&b, cctx, &x.connected, 1, 10));
	ck_assert_msg(x.connect_status == 0, "%s", x.connect_msg);
	d = cctx->devices.list;
	ck_assert_int_eq(d->ncq, 1);
	ck_assert_ptr_eq(cctx->devices.only, d->cqs);
	busy_send(&b, cctx, &x, 0);
	/* Nothing to do: all but one pass in BUSY_FD_EVERY (32) are short. */
	p0 = cctx->loop.passes;
	for (k = 0; k < PASSES; k++)
		ck_assert_int_ge(ez_ctx_process(cctx), 0);
	printf("busy poll: %d idle passes: loop.passes +%llu (two per full pass)\n", PASSES,
	       (unsigned long long)(cctx->loop.passes - p0));
	/* A full pass counts twice (its busy poll's deferred work, then
	 * loop_process()'s); without the short pass every pass would count. */
	ck_assert_uint_le(cctx->loop.passes - p0, 2 * (PASSES / 32) + 8);
	ck_assert_uint_ge(cctx->loop.passes - p0, 2 * (PASSES / 32) - 2);

	for (i = 0; i < DEEP; i++) {
		ck_assert_int_eq(ez_connect(cctx, test_addr(), s.port, &deep, &ep_cbs, &c[i], &c[i].conn), 0);
		ck_assert(busy_run(&b, cctx, &c[i].connected, 1, 10));
		ck_assert_msg(c[i].connect_status == 0, "deep %d: %s", i, c[i].connect_msg);
	}
	printf("busy poll: %d connections of send_depth 10000 and one more: %d CQs\n", DEEP, d->ncq);
	ck_assert_int_ge(d->ncq, 2);
	ck_assert_ptr_null(cctx->devices.only);
	for (k = 0; k < 3; k++) {
		for (i = 0; i < DEEP; i++)
			busy_send(&b, cctx, &c[i], (uint64_t)k);
		busy_send(&b, cctx, &x, (uint64_t)k + 1);
	}

	for (i = 0; i < DEEP; i++)
		ep_close(&c[i]);
	for (i = 0; i < DEEP; i++)
		ck_assert(busy_run(&b, cctx, &c[i].disconnected, 1, 10));
	/* The emptied CQs go from deferred work (on_cq_reap). */
	end = now_s() + 5;
	while (d->ncq > 1 && now_s() < end)
		busy_run(&b, cctx, &closed, 1, 0.05);
	ck_assert_int_eq(d->ncq, 1);
	ck_assert_ptr_eq(cctx->devices.only, d->cqs);
	busy_send(&b, cctx, &x, 4);
	ck_assert_int_eq(busy_sent, 1 + 3 * (DEEP + 1) + 1);

	ep_close(&x);
	ck_assert(busy_run(&b, cctx, &x.disconnected, 1, 10));
	ck_assert_int_eq(ez_ctx_free(cctx), 0);
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

/* Registration of memory that is not there, or not accessible. */
START_TEST(mr_registration_failures)
{
	struct fb b;
	struct ez_mr *mr = NULL;
	char dev[64], want[160];
	struct ibv_device_attr attr;
	void *none;
	static char ok[4096];

	ck_assert_int_eq(device_attr(&attr, dev, sizeof(dev)), 0);
	fb_init(&b);
	/* An address range with nothing mapped. */
	none = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(none, MAP_FAILED);
	ck_assert_int_eq(munmap(none, 1 << 20), 0);
	ck_assert_int_eq(ez_mr_reg(b.ctx, NULL, none, 1 << 20, 0, &mr), -EFAULT);
	snprintf(want, sizeof(want), "ibv_reg_mr(%s, 1048576 bytes, access 0x1): Bad address", dev);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_ptr_null(mr);
	printf("unmapped range: %s\n", ez_errmsg());
	/* Mapped but PROT_NONE: the pages cannot be pinned. */
	none = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(none, MAP_FAILED);
	ck_assert_int_eq(ez_mr_reg(b.ctx, NULL, none, 1 << 16, EZ_MR_REMOTE_WRITE, &mr), -EFAULT);
	/* EZ_MR_REMOTE_WRITE registers local write + IBV_ACCESS_MW_BIND (0x11):
	 * remote access goes through windows bound per connection. */
	snprintf(want, sizeof(want), "ibv_reg_mr(%s, 65536 bytes, access 0x11): Bad address", dev);
	ck_assert_str_eq(ez_errmsg(), want);
	printf("PROT_NONE range: %s\n", ez_errmsg());
	munmap(none, 1 << 16);
	/* A length that wraps the address space. */
	{
		int r = ez_mr_reg(b.ctx, NULL, ok, SIZE_MAX - 4096, 0, &mr);

		printf("length SIZE_MAX-4096: %d %s\n", r, ez_errmsg());
		ck_assert_int_lt(r, 0);
		ck_assert_ptr_nonnull(strstr(ez_errmsg(), "ibv_reg_mr("));
		ck_assert_ptr_null(mr);
	}
	/* Nothing leaked in the context; a good registration still works. */
	ck_assert_int_eq(ez_mr_reg(b.ctx, NULL, ok, sizeof(ok), 0, &mr), 0);
	ck_assert_int_eq(ez_mr_dereg(mr), 0);
	fb_fini(&b);	/* 0 MRs alive, or ez_ctx_free() says -EBUSY */
}
END_TEST

/* Drops CAP_IPC_LOCK from this process (Check runs each test in its own),
 * so that RLIMIT_MEMLOCK applies to root too. */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	ck_assert_int_eq(syscall(SYS_capget, &h, d), 0);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	ck_assert_int_eq(syscall(SYS_capset, &h, d), 0);
}

/* The memlock limit reached: a registration fails with -ENOMEM and a
 * message. Connections register nothing at setup; a send whose copy needs
 * a new chunk of slots past the limit fails with the reason, and what was
 * accepted before it still arrives, in order. */
/* The process's pinned memory (VmPin, kB): what ibv_reg_mr() holds. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	ck_assert_int_ge(kb, 0);
	return kb;
}

static int trim_lines;

static void count_trim_lines(enum ez_log_level level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	if (strstr(msg, "idle send-slot chunks deregistered"))
		trim_lines++;
}

/* A burst of 48 copied 64 KiB sends grows the device's send slots to six
 * chunks (4 MiB pinned); once the burst is delivered and the connection is
 * idle, the trim timer deregisters all but the first within two periods,
 * and a second burst registers again and arrives intact. */
START_TEST(send_slot_chunks_released_when_idle)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct ez_conn_opts o = { .send_depth = 64, .recv_depth = 8, .max_msg_size = 65536 };
	uint8_t *msg = calloc(1, 65536);
	long pin0, pin1, pin2;
	uint64_t seq;
	int n;

	ck_assert_ptr_nonnull(msg);
	ez_set_log(count_trim_lines, NULL, EZ_LOG_DEBUG);
	fb_init(&b);
	s.opts = o;
	s.no_echo = 1;
	srv_start(&b, &s, 2);
	ck_assert_int_eq(ep_connect(&b, &c, s.port, &o), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "%s", c.connect_msg);
	ck_assert(fb_run(&b, &s.connected, 1, 5));
	pin0 = vm_pin_kb();
	for (n = 0; n < 48; n++) {
		seq = (uint64_t)n;
		memcpy(msg, &seq, sizeof(seq));
		memset(msg + sizeof(seq), n, 65536 - sizeof(seq));
		ck_assert_int_eq(ez_send(c.conn, msg, 65536, NULL, NULL), 0);
	}
	pin1 = vm_pin_kb();
	ck_assert(fb_run(&b, &s.eps[0].received, 48, 30));
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	printf("VmPin: %ld kB connected, %ld kB with 48 x 64 KiB copies held\n", pin0, pin1);
	/* 1 + 2 + 4 + 8 + 16 + 32 slots of 64 KiB: 4,032 KiB of chunks. */
	ck_assert_int_ge(pin1 - pin0, 4032);
	ck_assert_int_eq(trim_lines, 0);
	fb_spin(&b, 2.0 * SLAB_TRIM_MS / 1000 + 1);
	pin2 = vm_pin_kb();
	printf("VmPin: %ld kB after %.0f s idle (%d trim lines)\n", pin2,
	       2.0 * SLAB_TRIM_MS / 1000 + 1, trim_lines);
	ck_assert_int_ge(trim_lines, 1);
	/* All but the first chunk (64 KiB) are gone: 4,032 - 64 KiB. */
	ck_assert_int_ge(pin1 - pin2, 3968);
	/* The next burst registers again and arrives in order. */
	for (n = 48; n < 64; n++) {
		seq = (uint64_t)n;
		memcpy(msg, &seq, sizeof(seq));
		ck_assert_int_eq(ez_send(c.conn, msg, 65536, NULL, NULL), 0);
	}
	ck_assert(fb_run(&b, &s.eps[0].received, 64, 30));
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	ck_assert_int_gt(vm_pin_kb(), pin2);
	ez_set_log(NULL, NULL, EZ_LOG_WARN);
	ep_close(&c);
	ck_assert(fb_run(&b, &c.disconnected, 1, 5));
	srv_stop(&s);
	fb_fini(&b);
	free(msg);
}
END_TEST

START_TEST(mr_memlock_limit)
{
	struct fb b;
	struct srv s = { 0 };
	struct ep c = { 0 };
	struct rlimit rl = { 2 << 20, 2 << 20 };
	struct ez_mr *mr = NULL;
	struct ez_conn_opts big_msgs = { .send_depth = 64, .recv_depth = 2, .max_msg_size = 65536 };
	size_t len = 8 << 20;
	char dev[64], want[160];
	struct ibv_device_attr attr;
	void *big = aligned_alloc(4096, len);
	uint64_t seq;
	int r, n;

	ck_assert_ptr_nonnull(big);
	memset(big, 1, len);
	ck_assert_int_eq(device_attr(&attr, dev, sizeof(dev)), 0);
	/* Before any RDMA fd is opened: the kernel refuses commands on an fd
	 * opened with other credentials (ib_safe_file_access: EACCES). */
	drop_ipc_lock();
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	fb_init(&b);
	s.opts = big_msgs;
	s.no_echo = 1;
	srv_start(&b, &s, 4);
	r = ez_mr_reg(b.ctx, NULL, big, len, 0, &mr);
	printf("8 MiB with RLIMIT_MEMLOCK 2 MiB: %d %s\n", r, ez_errmsg());
	ck_assert_int_eq(r, -ENOMEM);
	snprintf(want, sizeof(want), "ibv_reg_mr(%s, 8388608 bytes, access 0x1): Cannot allocate memory",
		 dev);
	ck_assert_str_eq(ez_errmsg(), want);
	ck_assert_ptr_null(mr);
	/* 64 x 64 KiB of send depth: nothing is registered to connect. */
	ck_assert_int_eq(ep_connect(&b, &c, s.port, &big_msgs), 0);
	ck_assert(fb_run(&b, &c.connected, 1, 10));
	ck_assert_msg(c.connect_status == 0, "on_connect(%d, \"%s\")", c.connect_status,
		      c.connect_msg);
	/* Two credits: the rest wait in the library, each holding its copy,
	 * until a slot chunk cannot be registered. */
	for (n = 0; n < 64; n++) {
		seq = (uint64_t)n;
		memcpy(big, &seq, sizeof(seq));
		r = ez_send(c.conn, big, 65536, NULL, NULL);
		if (r)
			break;
	}
	printf("64 KiB copies under RLIMIT_MEMLOCK 2 MiB: %d accepted, then %d \"%s\"\n", n, r,
	       ez_errmsg());
	ck_assert_int_eq(r, -ENOMEM);
	ck_assert_msg(strncmp(ez_errmsg(), "ibv_reg_mr(send slots, ", 23) == 0 &&
		      strstr(ez_errmsg(), "bytes, local read): Cannot allocate memory"), "%s",
		      ez_errmsg());
	ck_assert_int_ge(n, 2);
	ck_assert(fb_run(&b, &s.connected, 1, 10));
	ck_assert_msg(fb_run(&b, &s.eps[0].received, n, 20), "%d of %d arrived",
		      s.eps[0].received, n);
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	/* The connection goes on: with the copies done, their slots serve again. */
	seq = (uint64_t)n;
	memcpy(big, &seq, sizeof(seq));
	ck_assert_int_eq(ez_send(c.conn, big, 65536, NULL, NULL), 0);
	ck_assert(fb_run(&b, &s.eps[0].received, n + 1, 10));
	ck_assert_int_eq(s.eps[0].bad_seq, 0);
	ck_assert_int_eq(c.disconnected, 0);
	ez_conn_close(c.conn);
	fb_spin(&b, 0.2);
	srv_stop(&s);
	fb_fini(&b);
	free(big);
}
END_TEST

/* ---- a shared pool at its cap under a burst --------------------------- */

struct holder {
	struct ep e;
	struct ez_buf *held[4096];
	int nheld;
	int max_held;
};

static void hold_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct holder *h = arg;
	uint64_t seq = UINT64_MAX;

	(void)conn;
	if (ez_buf_len(buf) >= sizeof(seq))
		memcpy(&seq, ez_buf_data(buf), sizeof(seq));
	if (seq != h->e.next_seq)
		h->e.bad_seq++;
	h->e.next_seq = seq + 1;
	h->e.received++;
	h->held[h->nheld++] = buf;
	if (h->nheld > h->max_held)
		h->max_held = h->nheld;
}

static void release_all(struct holder *h)
{
	while (h->nheld)
		ez_buf_release(h->held[--h->nheld]);
}

struct burst {
	struct ep e;
	uint64_t next;
	int total;
	int enobufs;
	int op_ok, op_err;
};

static void burst_op(struct ez_conn *conn, int status, void *arg)
{
	struct burst *u = arg;

	(void)conn;
	if (status)
		u->op_err++;
	else
		u->op_ok++;
}

/* Sends until the library says -ENOBUFS (back-pressure) or all are out. */
static void burst_push(struct burst *u)
{
	while ((int)u->next < u->total) {
		int r = ez_send(u->e.conn, &u->next, sizeof(u->next), burst_op, u);

		if (r == -ENOBUFS) {
			u->enobufs++;
			return;
		}
		ck_assert_msg(r == 0, "ez_send: %d %s", r, ez_errmsg());
		u->next++;
	}
}

struct pool_srv {
	struct holder h[2];
	int n;
	struct ez_srqpool *pool;
};

static void pool_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct pool_srv *ps = arg;
	struct ez_conn_opts o = { .srqpool = ps->pool };
	struct ez_conn_cbs cbs = ep_cbs;
	struct holder *h = &ps->h[ps->n++];

	(void)l;
	cbs.on_recv = hold_recv;
	ck_assert_msg(ez_accept(req, &o, &cbs, h, &h->e.conn) == 0, "%s", ez_errmsg());
}

START_TEST(srqpool_at_cap_under_burst)
{
	struct fb b;
	struct pool_srv ps;
	struct ez_srqpool_opts po = { .buf_size = 256, .nbufs = 32, .max_bufs = 32,
				      .low_watermark = 8 };
	struct ez_srqpool_stats st;
	struct ez_listener *l;
	struct burst u[2];
	struct ez_conn_opts co = { .send_depth = 64, .max_msg_size = 256 };
	char port[8];
	enum { PER = 1000 };
	int i, rounds = 0;
	double t0 = now_s();

	memset(&ps, 0, sizeof(ps));
	memset(u, 0, sizeof(u));
	fb_init(&b);
	ck_assert_int_eq(ez_srqpool_new(b.ctx, NULL, &po, &ps.pool), 0);
	ck_assert_int_eq(ez_listen(b.ctx, test_addr(), "0", NULL, pool_request, &ps, &l), 0);
	snprintf(port, sizeof(port), "%u", ez_listener_port(l));
	for (i = 0; i < 2; i++) {
		u[i].total = PER;
		ck_assert_int_eq(ep_connect(&b, &u[i].e, port, &co), 0);
		ck_assert(fb_run(&b, &u[i].e.connected, 1, 10));
		ck_assert_msg(u[i].e.connect_status == 0, "%s", u[i].e.connect_msg);
	}
	ck_assert(fb_run(&b, &ps.h[1].e.connected, 1, 5));
	/* The application holds every buffer it gets and gives them back in
	 * batches: the pool sits at its cap, senders see -ENOBUFS. */
	while ((ps.h[0].e.received < PER || ps.h[1].e.received < PER) && now_s() - t0 < 45) {
		burst_push(&u[0]);
		burst_push(&u[1]);
		fb_spin(&b, 0.01);
		ck_assert_int_eq(ez_srqpool_stats(ps.pool, &st), 0);
		ck_assert_uint_le(st.total, 32);	/* never above the cap */
		if (++rounds % 3 == 0) {
			release_all(&ps.h[0]);
			release_all(&ps.h[1]);
		}
	}
	release_all(&ps.h[0]);
	release_all(&ps.h[1]);
	ck_assert_int_eq(ez_srqpool_stats(ps.pool, &st), 0);
	printf("srqpool at cap 32: %d + %d messages in %.1f s; senders saw -ENOBUFS %d + %d "
	       "times; held at most %d + %d; pool: lowest posted %llu, limit events %llu, "
	       "growths %llu, RNR NAKs sent %lld\n",
	       ps.h[0].e.received, ps.h[1].e.received, now_s() - t0, u[0].enobufs, u[1].enobufs,
	       ps.h[0].max_held, ps.h[1].max_held, (unsigned long long)st.lowest_posted,
	       (unsigned long long)st.limit_events, (unsigned long long)st.growths,
	       (long long)st.rnr_naks_sent);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(ps.h[i].e.received, PER);	/* nothing lost */
		ck_assert_int_eq(ps.h[i].e.bad_seq, 0);		/* in order */
		ck_assert(fb_run(&b, &u[i].op_ok, PER, 5));
		ck_assert_int_eq(u[i].op_err, 0);
	}
	ck_assert_uint_eq(st.total, 32);
	ck_assert_uint_eq(st.growths, 0);
	ck_assert_int_gt(u[0].enobufs + u[1].enobufs, 0);
	for (i = 0; i < 2; i++) {
		ep_close(&u[i].e);
		ck_assert(fb_run(&b, &ps.h[i].e.disconnected, 1, 5));
		ez_conn_close(ps.h[i].e.conn);
	}
	fb_spin(&b, 0.3);
	ez_listener_close(l);
	ck_assert_int_eq(ez_srqpool_free(ps.pool), 0);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_exhaust");
	TCase *tc = tcase_create("exhaust");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cq_room_beyond_one_cq);
	tcase_add_test(tc, busy_poll_over_cqs);
	tcase_add_test(tc, mr_registration_failures);
	tcase_add_test(tc, mr_memlock_limit);
	tcase_add_test(tc, send_slot_chunks_released_when_idle);
	tcase_add_test(tc, srqpool_at_cap_under_burst);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
