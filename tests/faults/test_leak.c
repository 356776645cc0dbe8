/* test_leak.c: connect/transfer/close cycles leave no fds, heap or device resources (rdma res) behind. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "easyrdma.h"
#include "fault.h"
#include "heaplive.h"
#include "conn/conn_handle.h"
#include "../checkmain.h"

enum { MAX_LANES = 32, MSGS = 3 };

/* Connections cycling at once (EZ_LEAK_LANES changes it). */
static int LANES = 8;
enum phase { IDLE, CONNECTING, XFER, CLOSING };

struct lane {
	struct ep e;
	enum phase ph;
	double t;	/* when the phase began */
};

/* Seconds spent in each phase, summed over lanes and cycles (the profile). */
static double phase_s[4];

static void lane_to(struct lane *l, enum phase ph)
{
	double t = now_s();

	if (l->ph != IDLE)
		phase_s[l->ph] += t - l->t;
	l->ph = ph;
	l->t = t;
}

static const struct ez_conn_opts opts = { .send_depth = 8, .recv_depth = 8, .max_msg_size = 512,
					  .connect_timeout_ms = 60000 };

/* A hang, not a slow host: no cycle ended for this long (a cycle took
 * 0.74 s of lane time at load 8, 8 lanes at once). */
#define HANG_S 120.0

/* Runs cycles on LANES connections at a time until total cycles are done;
 * returns the cycles done. Fails when none ends for HANG_S (a hang). */
static int run_cycles(struct fb *b, struct srv *s, struct lane *ln, int total, int *started)
{
	int done = 0, i, m;
	double hang = now_s() + HANG_S;

	while (done < total) {
		int busy = 0;

		for (i = 0; i < LANES; i++) {
			struct lane *l = &ln[i];

			switch (l->ph) {
			case IDLE:
				if (*started >= total)
					break;
				memset(&l->e, 0, sizeof(l->e));
				ck_assert_msg(ep_connect(b, &l->e, s->port, &opts) == 0, "%s",
					      ez_errmsg());
				(*started)++;
				lane_to(l, CONNECTING);
				break;
			case CONNECTING:
				if (!l->e.connected)
					break;
				ck_assert_msg(l->e.connect_status == 0, "cycle %d: %s", *started,
					      l->e.connect_msg);
				for (m = 0; m < MSGS; m++)
					ck_assert_int_eq(ep_send_seq(&l->e, (uint64_t)m), 0);
				lane_to(l, XFER);
				break;
			case XFER:
				if (l->e.received < MSGS)
					break;
				ck_assert_int_eq(l->e.bad_seq, 0);
				ep_close(&l->e);
				lane_to(l, CLOSING);
				break;
			case CLOSING:
				if (!l->e.disconnected)
					break;
				ck_assert_int_eq(l->e.disconnect_status, 0);
				done++;
				hang = now_s() + HANG_S;
				lane_to(l, IDLE);
				break;
			}
			busy += l->ph != IDLE;
		}
		if (!busy && *started >= total)
			break;
		ck_assert_msg(now_s() < hang, "no cycle ended in %.0f s (%d done, %d started): a hang",
			      HANG_S, done, *started);
		ev_run(b->loop, EVRUN_ONCE);
	}
	return done;
}

struct snap {
	int fds, threads, qp, cq, mr, pd, cm_id;
	size_t heap;	/* the live allocations (heaplive.h), or mallinfo2's in-use */
	size_t mi;	/* mallinfo2's in-use (its caches included), for the record */
	long rss;
	size_t kept;	/* the library's quarantine of freed connections, discounted */
};

/* The quarantine as heap_live() counts it: each connection's allocation
 * by its usable size (its size rounded up to malloc's chunk, 4,696 bytes
 * for 4,688 on x86_64 glibc). */
static size_t kept_live_bytes(void)
{
	size_t n = conn_quarantine_bytes() / sizeof(struct ez_conn), u;
	void *p = malloc(sizeof(struct ez_conn));

	ck_assert_ptr_nonnull(p);
	u = malloc_usable_size(p);
	free(p);
	return n * u;
}

/* Threads of the process: what glibc's per-thread caches (tcache) and
 * arenas are bounded by, which mallinfo2 counts as in use. */
static int count_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

static void snap_take(struct fb *b, struct snap *s, int epoch)
{
	size_t heap, kept;
	long live;

	fb_spin(b, 0.5);	/* the server's handles go after their disconnects */
	s->fds = count_fds();
	s->threads = count_threads();
	/* The quarantine fills once (to 1,024 freed connections, 4.5 MiB)
	 * during the cycles: a bound, not a leak; the rest must not grow.
	 * (Under ASan, malloc's counters may not see the library's memory,
	 * and heap_live() is not counted: both read 0.) */
	live = heap_live();
	heap = heap_in_use();
	s->kept = kept_void_bytes();
	s->mi = heap > s->kept ? heap - s->kept : 0;
	if (live >= 0) {
		kept = kept_live_bytes();
		s->heap = (size_t)live > kept ? (size_t)live - kept : 0;
	} else {
		s->heap = s->mi;
	}
	if (epoch > 1)
		heap_live_sites(epoch == 2 ? "heap, first half" : "heap, second half");
	heap_live_epoch(epoch);
	s->rss = rss_kb() - (long)(s->kept / 1024);
	s->qp = rdma_res_count("qp");
	s->cq = rdma_res_count("cq");
	s->mr = rdma_res_count("mr");
	s->pd = rdma_res_count("pd");
	s->cm_id = rdma_res_count("cm_id");
}

START_TEST(cycles_without_growth)
{
	struct fb b;
	struct srv s = { 0 };
	struct lane ln[MAX_LANES];
	struct snap a, m, z;
	const char *env = getenv("EZ_LEAK_CYCLES");
	/* A fixed number of cycles, however long they take: 1,000 took ~14 s
	 * in a quiet TCG guest and would take ~310 s at load 8 (365 in 113 s
	 * there: a count-in-80-s verdict failed a loaded README run). Under
	 * ASan, several times slower, 250: LeakSanitizer at exit is the
	 * point of that run. */
#ifdef __SANITIZE_ADDRESS__
	int want = env && atoi(env) > 0 ? atoi(env) : 250, started = 0, warm, done;
#else
	int want = env && atoi(env) > 0 ? atoi(env) : 1000, started = 0, warm, done;
#endif
	double t0;

	if (getenv("EZ_LEAK_LANES") && atoi(getenv("EZ_LEAK_LANES")) > 0)
		LANES = atoi(getenv("EZ_LEAK_LANES")) < MAX_LANES ? atoi(getenv("EZ_LEAK_LANES")) : MAX_LANES;
	memset(ln, 0, sizeof(ln));
	fb_init(&b);
	s.opts = opts;
	/* The handshake deadline only catches a hang here: the listener's
	 * default 2 s ended cycle 83's handshake in a README run on a host at
	 * load 15 ("handshake not completed within 2000 ms"); leaks are this
	 * test's subject, deadlines test_hostile_halfopen's. */
	s.lopts.handshake_timeout_ms = 60000;
	srv_start(&b, &s, want + 64);
	/* Warm-up: the device is opened, caches and pools settle. */
	warm = run_cycles(&b, &s, ln, 2 * LANES, &started);
	ck_assert_int_eq(warm, 2 * LANES);
	snap_take(&b, &a, 1);
	memset(phase_s, 0, sizeof(phase_s));
	t0 = now_s();
	started = 0;
	done = run_cycles(&b, &s, ln, want / 2, &started);
	snap_take(&b, &m, 2);
	started = 0;
	done += run_cycles(&b, &s, ln, want - done, &started);
	snap_take(&b, &z, 3);
	printf("%d connect/transfer/close cycles (%d lanes, %d messages each way) in %.1f s\n"
	       "  fds %d -> %d, threads %d -> %d; heap %zu -> %zu -> %zu B (start, half-way, end); RSS %ld -> %ld KiB\n"
	       "  (both without the quarantine of freed connections: %zu -> %zu B)\n"
	       "  malloc's in-use by mallinfo2, its per-thread caches included: %zu -> %zu -> %zu B\n"
	       "  rdma res: qp %d -> %d, cq %d -> %d, mr %d -> %d, pd %d -> %d, cm_id %d -> %d\n",
	       done, LANES, MSGS, now_s() - t0, a.fds, z.fds, a.threads, z.threads, a.heap, m.heap, z.heap, a.rss, z.rss,
	       a.kept, z.kept, a.mi, m.mi, z.mi, a.qp,
	       z.qp, a.cq, z.cq, a.mr, z.mr, a.pd, z.pd, a.cm_id, z.cm_id);
	printf("  per cycle: connect %.1f ms, transfer %.1f ms, close %.1f ms (lane time; %.1f cycles/s)\n",
	       1e3 * phase_s[CONNECTING] / done, 1e3 * phase_s[XFER] / done,
	       1e3 * phase_s[CLOSING] / done, done / (now_s() - t0));
	fflush(stdout);
	/* Every cycle is counted once, when its client's on_disconnect(0)
	 * has run: connected, MSGS echoed in order, closed. */
	ck_assert_int_eq(done, want);
	ck_assert_int_eq(s.connected, warm + done);
	ck_assert_int_eq(s.disconnected, warm + done);
	ck_assert_int_eq(z.fds, a.fds);
	ck_assert_int_eq(z.threads, a.threads);
	ck_assert_int_eq(z.qp, a.qp);
	ck_assert_int_eq(z.cq, a.cq);
	ck_assert_int_eq(z.mr, a.mr);
	ck_assert_int_eq(z.pd, a.pd);
	ck_assert_int_eq(z.cm_id, a.cm_id);
	ck_assert_int_ge(a.cm_id, 1);	/* the listener: the counter works */
	/* The heap is the live allocations' bytes (heap_live(): every caller
	 * of malloc, the libraries below us included), not mallinfo2's in-use,
	 * which counts the chunks glibc's per-thread caches (tcache) hold as
	 * in use: merged with the connections' quarantine, that figure grew
	 * 15-36 KiB in the second half in 5 of 6 runs, while the live
	 * allocations were byte for byte the same (+0 B at every call site,
	 * EZ_LEAK_SITES; 2026-12-06: mallinfo2 +21,056 B, live 0 B; the same
	 * run with GLIBC_TUNABLES=glibc.malloc.tcache_count=0: mallinfo2 -16 B,
	 * live -16 B). Without the quarantine the live heap grew 0 B in the
	 * first half too (before: 40-68 KiB by mallinfo2 at ed8d7e0).
	 * Slack for what grows once, not per cycle (the tables of the
	 * libraries below us): 128 KiB overall. The second half of the cycles
	 * must not grow the heap like the first did: that is the per-cycle
	 * leak check (16 KiB over 500 cycles, 32 B a cycle). EZ_LEAK_SITES=1
	 * prints what grew by call site. */
	ck_assert_msg(z.heap <= a.heap + 128 * 1024, "heap grew %zu -> %zu", a.heap, z.heap);
	ck_assert_msg(z.heap <= m.heap + 16 * 1024, "heap grew %zu -> %zu in the second half "
		      "(EZ_LEAK_SITES=1 names the call sites)", m.heap, z.heap);
#ifndef __SANITIZE_ADDRESS__
	/* (ASan's quarantine keeps freed memory resident; LeakSanitizer checks
	 * the heap at exit instead.) */
	ck_assert_msg(z.rss <= a.rss + 4096, "RSS grew %ld -> %ld KiB", a.rss, z.rss);
#endif
	srv_stop(&s);
	fb_fini(&b);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("faults_leak");
	TCase *tc = tcase_create("leak");

	/* Check's own limit only catches what run_cycles() cannot (a hang
	 * outside it): the cycles take what the host gives them. */
	tcase_set_timeout(tc, 3600);
	tcase_add_test(tc, cycles_without_growth);
	suite_add_tcase(su, tc);
	return check_run_suite(su, CK_NORMAL);
}
