/* test_samples_storage.c: end-to-end run of samples/storage_daemon and samples/storage_client on a real device. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"
#include "../checkmain.h"

/* threads: NULL, or --threads' value (the store is then 64 MiB). */
static int start_daemon_threads(struct child *d, const char *threads)
{
	char *argv[] = { (char *)prog_path("samples/storage_daemon"), "-a", (char *)test_addr(),
			 "-p", "0", "-S", threads ? "64" : "32", "-i", "1",
			 threads ? "--threads" : NULL, (char *)threads, NULL };
	char line[256];
	int port = 0;

	ck_assert_int_eq(child_start(d, argv), 0);
	ck_assert_msg(child_wait_line(d, "listening on", line, sizeof(line), 90000) == 0,
		      "storage_daemon did not say it listens; output: %s", d->buf);
	ck_assert_int_eq(sscanf(strstr(line, "port"), "port %d", &port), 1);
	return port;
}

static int start_daemon(struct child *d)
{
	return start_daemon_threads(d, NULL);
}

static void start_client(struct child *c, int port, const char *n, const char *window,
			 const char *off_mib)
{
	char p[16];
	char *argv[] = { (char *)prog_path("samples/storage_client"), "-a", (char *)test_addr(),
			 "-p", p, "-n", (char *)n, "-w", (char *)window, "-o", (char *)off_mib,
			 NULL };

	snprintf(p, sizeof(p), "%d", port);
	ck_assert_int_eq(child_start(c, argv), 0);
}

/* Two clients on separate store regions: every block (4 KiB to 1 MiB) is
 * written by RDMA READ, read back by RDMA WRITE, and both checksums match
 * (the client exits 1 otherwise); the daemon's own timer printed stats and
 * its summary counts every block both ways. */
START_TEST(two_clients_blocks_verified)
{
	struct child d, c[2];
	char line[512];
	unsigned long conns, writes, reads, errors;
	unsigned long long wb, rb;
	int port = start_daemon(&d), i;

	start_client(&c[0], port, "12", "4", "0");
	start_client(&c[1], port, "12", "1", "16");
	for (i = 0; i < 2; i++) {
		int st = child_finish(&c[i], 120000);

		ck_assert_msg(st == 0, "client %d exited %d: %s", i, st, c[i].buf);
		ck_assert_msg(strstr(c[i].buf, "12 blocks (") &&
			      strstr(c[i].buf, "all checksums verified"), "client %d: %s", i,
			      c[i].buf);
	}
	/* -i 1: the daemon's own ev_timer has printed at least one stats line. */
	ck_assert_int_eq(child_wait_line(&d, "storage_daemon: stats:", line, sizeof(line), 5000), 0);
	kill(d.pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(&d, "summary:", line, sizeof(line), 10000), 0);
	ck_assert_int_eq(sscanf(strstr(line, "summary:"),
				"summary: %*d sessions (%lu total), %lu writes (%llu bytes), "
				"%lu reads (%llu bytes), %lu errors", &conns, &writes, &wb, &reads,
				&rb, &errors), 6);
	ck_assert_uint_eq(conns, 2);
	ck_assert_uint_eq(writes, 24);
	ck_assert_uint_eq(reads, 24);
	/* 12 blocks cycle 4K,16K,64K,256K,1M,8K twice: 2 x 1404928 bytes per client. */
	ck_assert_uint_eq(wb, 2ull * 2 * 1404928);
	ck_assert_uint_eq(rb, wb);
	ck_assert_uint_eq(errors, 0);
	ck_assert_int_eq(child_finish(&d, 10000), 0);
}
END_TEST

/* --threads 2, four clients on separate store regions: the listener hands
 * each connection to the worker with the fewest, every block of every
 * client is verified both ways, each worker served some sessions, and no
 * callback of any session ran off its worker's thread (each callback
 * compares pthread_self() with its worker's; the count is in each worker's
 * line and the summary, and the daemon exits 1 if it is not 0). */
START_TEST(threads_workers_blocks_verified)
{
	struct child d, c[4];
	static const char *off[4] = { "0", "16", "32", "48" };
	char line[512], tag[32];
	unsigned long conns, writes, reads, errors, cbs, off_thread, total = 0;
	unsigned long long wb, rb;
	int port, i;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	port = start_daemon_threads(&d, "2");

	for (i = 0; i < 4; i++)
		start_client(&c[i], port, "12", i % 2 ? "1" : "4", off[i]);
	for (i = 0; i < 4; i++) {
		int st = child_finish(&c[i], 180000);

		ck_assert_msg(st == 0, "client %d exited %d: %s; daemon: %s", i, st, c[i].buf, d.buf);
		ck_assert_msg(strstr(c[i].buf, "12 blocks (") &&
			      strstr(c[i].buf, "all checksums verified"), "client %d: %s", i,
			      c[i].buf);
	}
	/* -i 1: each worker's own ev_timer printed its stats line. */
	ck_assert_int_eq(child_wait_line(&d, "stats (worker 1):", line, sizeof(line), 5000), 0);
	kill(d.pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(&d, "summary:", line, sizeof(line), 20000), 0);
	ck_assert_int_eq(sscanf(strstr(line, "summary:"),
				"summary: %*d sessions (%lu total), %lu writes (%llu bytes), "
				"%lu reads (%llu bytes), %lu errors, %lu callbacks (%lu off-thread)",
				&conns, &writes, &wb, &reads, &rb, &errors, &cbs, &off_thread), 8);
	ck_assert_uint_eq(conns, 4);
	ck_assert_uint_eq(writes, 48);
	ck_assert_uint_eq(reads, 48);
	ck_assert_uint_eq(wb, 4ull * 2 * 1404928);
	ck_assert_uint_eq(rb, wb);
	ck_assert_uint_eq(errors, 0);
	ck_assert_uint_eq(off_thread, 0);
	/* Per request at least on_recv and on_rdma_done, per session 3 more. */
	ck_assert_uint_ge(cbs, 2 * 96 + 4 * 3);
	ck_assert_int_eq(child_finish(&d, 10000), 0);
	for (i = 0; i < 2; i++) {
		const char *w;
		unsigned long wc, woff;

		snprintf(tag, sizeof(tag), "worker %d: ", i);
		w = strstr(d.buf, tag);
		ck_assert_msg(w && sscanf(w + strlen(tag), "%*d sessions (%lu total), %*u writes "
					  "(%*u bytes), %*u reads (%*u bytes), %*u errors, %*u "
					  "callbacks (%lu off-thread)", &wc, &woff) == 2,
			      "no worker %d line: %s", i, d.buf);
		printf("storage_daemon --threads 2: worker %d served %lu sessions\n", i, wc);
		ck_assert_uint_gt(wc, 0);
		ck_assert_uint_eq(woff, 0);
		total += wc;
	}
	ck_assert_uint_eq(total, 4);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("storage --threads 2 x 4 clients: %.1f s\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}
END_TEST

/* A request outside the store is refused with an error reply, not served:
 * the client's blocks at a 31 MiB offset of a 32 MiB store do not fit. */
START_TEST(out_of_range_is_refused)
{
	struct child d, c;
	char line[512];
	int port = start_daemon(&d), st;

	start_client(&c, port, "6", "2", "31");
	st = child_finish(&c, 60000);
	ck_assert_msg(st == 1, "client exit %d (want 1): %s", st, c.buf);
	ck_assert_msg(strstr(c.buf, "block 1: daemon says Invalid argument"), "client: %s", c.buf);
	kill(d.pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(&d, "summary:", line, sizeof(line), 10000), 0);
	ck_assert_msg(strstr(line, " 0 errors") == NULL, "daemon counted no error: %s", line);
	ck_assert_int_eq(child_finish(&d, 10000), 0);
}
END_TEST

/* SIGUSR1 prints the stats line at once (the daemon's own signal watcher). */
START_TEST(sigusr1_prints_stats)
{
	struct child d;
	char line[512];

	start_daemon(&d);
	kill(d.pid, SIGUSR1);
	ck_assert_int_eq(child_wait_line(&d, "0 sessions (0 total), 0 writes", line, sizeof(line),
					 10000), 0);
	kill(d.pid, SIGINT);
	ck_assert_int_eq(child_wait_line(&d, "summary:", line, sizeof(line), 10000), 0);
	ck_assert_int_eq(child_finish(&d, 10000), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("samples_storage");
	TCase *tc = tcase_create("storage");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, two_clients_blocks_verified);
	tcase_add_test(tc, threads_workers_blocks_verified);
	tcase_add_test(tc, out_of_range_is_refused);
	tcase_add_test(tc, sigusr1_prints_stats);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_VERBOSE);
}
