/* test_ezrdma.c: end-to-end runs of the ezrdma tool (devices, ping, perf, stat, check) on a real device. */
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

#define EZRDMA prog_path("tools/ezrdma")

static int start_server(struct child *srv)
{
	char *argv[] = { (char *)EZRDMA, "ping", "-l", "-a", (char *)test_addr(), "-p", "0", NULL };
	char line[256];
	int port = 0;

	ck_assert_int_eq(child_start(srv, argv), 0);
	/* The first run from a build tree may relink through libtool: be patient. */
	ck_assert_msg(child_wait_line(srv, "listening on", line, sizeof(line), 90000) == 0,
		      "ezrdma ping -l did not say it listens; output: %s", srv->buf);
	ck_assert_int_eq(sscanf(strstr(line, "port"), "port %d", &port), 1);
	return port;
}

static void stop_server(struct child *srv)
{
	char line[128];

	kill(srv->pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(srv, "server stopped", line, sizeof(line), 10000), 0);
	ck_assert_int_eq(child_finish(srv, 10000), 0);
}

/* The test device is listed with an Ethernet port and the RoCEv2 GID of the
 * test address (IPv4-mapped). */
START_TEST(devices_lists_rxe_with_rocev2_gid)
{
	const char *dev = getenv("EZ_DEVICE") ? getenv("EZ_DEVICE") : "rxe0";
	char *argv[] = { (char *)EZRDMA, "devices", NULL };
	char want[128], line[256];
	struct child c;

	ck_assert_int_eq(child_start(&c, argv), 0);
	ck_assert_int_eq(child_finish(&c, 45000), 0);
	snprintf(want, sizeof(want), "%s: ", dev);
	ck_assert_msg(strstr(c.buf, want), "no '%s' in: %s", want, c.buf);
	ck_assert_msg(strstr(c.buf, "mlx5 sport control: "), "no mlx5 line in: %s", c.buf);
	ck_assert_msg(strstr(c.buf, "link layer Ethernet"), "no Ethernet port in: %s", c.buf);
	snprintf(want, sizeof(want), "::ffff:%s RoCEv2", test_addr());
	ck_assert_msg(strstr(c.buf, want), "no '%s' GID in: %s", want, c.buf);
	ck_assert_int_eq(child_wait_line(&c, "active MTU", line, sizeof(line), 0), 0);
}
END_TEST

/* ping -c 5 prints 5 reply lines with seq 1..5 and a loss-free summary. */
START_TEST(ping_five_replies)
{
	struct child srv, c;
	char port[16], want[64];
	char *argv[] = { (char *)EZRDMA, "ping", (char *)test_addr(), "-p", port, "-c", "5",
			 "-i", "0.2", NULL };
	const char *p;
	int i, lines = 0;

	snprintf(port, sizeof(port), "%d", start_server(&srv));
	ck_assert_int_eq(child_start(&c, argv), 0);
	ck_assert_int_eq(child_finish(&c, 30000), 0);
	for (p = c.buf; (p = strstr(p, " bytes from ")); p++)
		lines++;
	ck_assert_msg(lines == 5, "%d reply lines in: %s", lines, c.buf);
	for (i = 1; i <= 5; i++) {
		snprintf(want, sizeof(want), "seq=%d time=", i);
		ck_assert_msg(strstr(c.buf, want), "no '%s' in: %s", want, c.buf);
	}
	ck_assert_msg(strstr(c.buf, "5 messages sent, 5 received, 0% loss"), "summary: %s", c.buf);
	ck_assert_msg(strstr(c.buf, "rtt min/avg/max/mdev = "), "summary: %s", c.buf);
	stop_server(&srv);
}
END_TEST

/* `ezrdma stat PID` makes the server print one counter line per connection;
 * the counters moved. */
START_TEST(stat_prints_server_counters)
{
	struct child srv, c, st;
	char port[16], pid[16], line[512];
	char *argv[] = { (char *)EZRDMA, "ping", (char *)test_addr(), "-p", port, "-c", "100",
			 "-i", "0.05", NULL };
	char *sargv[] = { (char *)EZRDMA, "stat", pid, NULL };
	unsigned long long sent = 0;

	snprintf(port, sizeof(port), "%d", start_server(&srv));
	snprintf(pid, sizeof(pid), "%d", (int)srv.pid);
	ck_assert_int_eq(child_start(&c, argv), 0);
	ck_assert_int_eq(child_wait_line(&c, "seq=3 ", line, sizeof(line), 30000), 0);
	ck_assert_int_eq(child_start(&st, sargv), 0);
	ck_assert_int_eq(child_finish(&st, 20000), 0);
	ck_assert_int_eq(child_wait_line(&srv, "stat: qp", line, sizeof(line), 10000), 0);
	ck_assert_int_eq(sscanf(strstr(line, "sent"), "sent %llu msgs", &sent), 1);
	ck_assert_uint_ge(sent, 3);
	ck_assert_int_eq(child_finish(&c, 30000), 0);
	stop_server(&srv);
}
END_TEST

/* A short perf run of every test: exit 0 and a JSON summary with figures. */
START_TEST(perf_json_summary)
{
	struct child srv, c;
	char port[16];
	char *argv[] = { (char *)EZRDMA, "perf", (char *)test_addr(), "-p", port, "-n", "20",
			 "-b", "16384", "--json", NULL };
	double avg = 0, rate = 0, mbps = 0, conns = 0;
	const char *j;

	snprintf(port, sizeof(port), "%d", start_server(&srv));
	ck_assert_int_eq(child_start(&c, argv), 0);
	{
		int st = child_finish(&c, 120000);

		ck_assert_msg(st == 0, "perf exited %d: %s", st, c.buf);
	}
	j = strstr(c.buf, "{\"host\"");
	ck_assert_msg(j, "no JSON in: %s", c.buf);
	ck_assert_int_eq(sscanf(strstr(j, "\"avg\""), "\"avg\": %lf", &avg), 1);
	ck_assert_int_eq(sscanf(strstr(j, "\"msg_rate\""), "\"msg_rate\": %lf", &rate), 1);
	ck_assert_int_eq(sscanf(strstr(j, "\"write_MBps\""), "\"write_MBps\": %lf", &mbps), 1);
	ck_assert_int_eq(sscanf(strstr(j, "\"conn_per_s\""), "\"conn_per_s\": %lf", &conns), 1);
	ck_assert_msg(avg > 0 && rate > 0 && mbps > 0 && conns > 0, "figures: %s", j);
	stop_server(&srv);
}
END_TEST

/* perf -l -T 2 (two serving threads, each its own context) against perf -T 4
 * (four client threads, one connection each): the listener hands the
 * connections round-robin, two to each worker; every message of every
 * client is counted by the worker that owns its connection, and no server
 * callback ran off its worker's thread (the server exits 1 if one did). */
START_TEST(perf_server_threads)
{
	struct child srv, c;
	char port[16], line[256], tag[32];
	char *sargv[] = { (char *)EZRDMA, "perf", "-l", "-a", (char *)test_addr(), "-p", "0",
			  "-T", "2", NULL };
	char *argv[] = { (char *)EZRDMA, "perf", (char *)test_addr(), "-p", port, "-T", "4",
			 "-t", "lat,rate", "-n", "200", "--json", NULL };
	unsigned long conns, msgs, off, total_c = 0, total_m = 0;
	double rate = 0;
	const char *j;
	int p = 0, st, i;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);

	ck_assert_int_eq(child_start(&srv, sargv), 0);
	ck_assert_msg(child_wait_line(&srv, "listening on", line, sizeof(line), 90000) == 0,
		      "ezrdma perf -l -T 2 did not say it listens: %s", srv.buf);
	ck_assert_msg(strstr(line, ", 2 serving threads"), "listening line: %s", line);
	ck_assert_int_eq(sscanf(strstr(line, "port"), "port %d", &p), 1);
	snprintf(port, sizeof(port), "%d", p);
	ck_assert_int_eq(child_start(&c, argv), 0);
	st = child_finish(&c, 180000);
	ck_assert_msg(st == 0, "perf -T 4 exited %d: %s", st, c.buf);
	j = strstr(c.buf, "{\"host\"");
	ck_assert_msg(j && strstr(j, "\"threads\": 4"), "no JSON in: %s", c.buf);
	ck_assert_int_eq(sscanf(strstr(j, "\"msg_rate\""), "\"msg_rate\": %lf", &rate), 1);
	ck_assert_msg(rate > 0, "rate: %s", j);
	stop_server(&srv);
	for (i = 0; i < 2; i++) {
		const char *w;

		snprintf(tag, sizeof(tag), "worker %d: ", i);
		w = strstr(srv.buf, tag);
		ck_assert_msg(w && sscanf(w + strlen(tag), "%lu connections, %lu messages, %lu "
					  "callbacks off-thread", &conns, &msgs, &off) == 3,
			      "no worker %d line: %s", i, srv.buf);
		printf("ezrdma perf -l -T 2: worker %d: %lu connections, %lu messages\n", i, conns,
		       msgs);
		ck_assert_uint_eq(conns, 2);	/* round-robin */
		ck_assert_uint_eq(off, 0);
		total_c += conns, total_m += msgs;
	}
	ck_assert_uint_eq(total_c, 4);
	/* Each client thread: 200 ping-pongs and at least 200 streamed messages. */
	ck_assert_uint_ge(total_m, 4 * 400);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("perf -l -T 2 x perf -T 4: %.1f s\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}
END_TEST

/* A latency run of n ping-pongs with stderr on a terminal (script(1) gives
 * it a pty) or on a pipe; returns the seconds its ping-pongs took by the
 * tool's own count (n x its average), which its loop ran at least: the
 * progress timer is the loop's (1 s). The test's wall clock also holds the
 * start of script(1) and of the tool and the connect: a run of 1.6 s by it
 * once held 0.68 s of ping-pongs and no progress line. */
static double perf_lat_run(struct child *c, int on_terminal, const char *port, unsigned n)
{
	char cmd[256], ns[16], want[64];
	char *pargv[] = { (char *)EZRDMA, "perf", (char *)test_addr(), "-p", (char *)port, "-t",
			  "lat", "-n", ns, NULL };
	char *targv[] = { "/usr/bin/script", "-qec", cmd, "/dev/null", NULL };
	const char *res;
	double avg_us = 0;
	int st;

	snprintf(ns, sizeof(ns), "%u", n);
	snprintf(cmd, sizeof(cmd), "%s perf %s -p %s -t lat -n %u", EZRDMA, test_addr(), port, n);
	ck_assert_int_eq(child_start(c, on_terminal ? targv : pargv), 0);
	st = child_finish(c, 180000);
	ck_assert_msg(st == 0, "perf exited %d: %s", st, c->buf);
	snprintf(want, sizeof(want), "lat:  %u ping-pongs of ", n);
	res = strstr(c->buf, want);
	ck_assert_msg(res, "no result line in: %s", c->buf);
	res = strstr(res, "avg ");
	ck_assert_msg(res && sscanf(res, "avg %lf us", &avg_us) == 1 && avg_us > 0,
		      "no average in the result line: %s", c->buf);
	return n * avg_us / 1e6;
}

/* Progress on a terminal only: one line rewritten in place ("\r" and erase to
 * the end) and erased before the result; none at all when stderr is a pipe.
 * The run must last over a second: the count doubles until it does (a real
 * NIC is a hundred times faster than Soft-RoCE under TCG). */
START_TEST(perf_progress_on_terminal_only)
{
	struct child srv, c;
	char port[16];
	unsigned n = 2000;
	double s;
	const char *res;

	snprintf(port, sizeof(port), "%d", start_server(&srv));
	while ((s = perf_lat_run(&c, 1, port, n)) < 1.5 && n < 2000u << 8)
		n *= 2;
	printf("perf -t lat -n %u on a terminal: %.1f s\n", n, s);
	ck_assert_msg(s >= 1.5, "%u ping-pongs took %.2f s by the tool: too short to show progress", n, s);
	/* The first progress line has no erase before it (nothing to erase):
	 * a run of 1.5-2.5 s may show only that one (CI once: 2.3 s). */
	ck_assert_msg(strstr(c.buf, "perf: lat "), "no progress line on the terminal (%.1f s): %s",
		      s, c.buf);
	res = strstr(c.buf, "lat:  ");
	ck_assert_msg(res - c.buf >= 4 && !memcmp(res - 4, "\r\033[K", 4),
		      "the progress line was not erased before the result: %s", c.buf);
	/* The same count on a pipe may run faster than 1.2 s (a quiet host
	 * after a loaded one: 1.07 s once): it doubles too, for the absence of
	 * progress to mean something. */
	while ((s = perf_lat_run(&c, 0, port, n)) < 1.2 && n < 2000u << 9)
		n *= 2;
	printf("perf -t lat -n %u on a pipe: %.1f s\n", n, s);
	ck_assert_msg(s >= 1.2, "%u ping-pongs took %.2f s by the tool: too short to show progress", n, s);
	ck_assert_msg(!strstr(c.buf, "perf: ") && !strchr(c.buf, '\r'),
		      "progress written to a pipe (%.1f s): %s", s, c.buf);
	stop_server(&srv);
}
END_TEST

/* Nobody listening: ping says so and exits 1. */
START_TEST(ping_without_server_fails)
{
	struct child srv, c;
	char port[16];
	char *argv[] = { (char *)EZRDMA, "ping", (char *)test_addr(), "-p", port, "-c", "1", NULL };

	snprintf(port, sizeof(port), "%d", start_server(&srv));
	stop_server(&srv);
	ck_assert_int_eq(child_start(&c, argv), 0);
	ck_assert_int_eq(child_finish(&c, 30000), 1);
	ck_assert_ptr_null(strstr(c.buf, "bytes from"));
	ck_assert_msg(strstr(c.buf, "ezrdma: connect "), "ping said: %s", c.buf);
}
END_TEST

/* ezrdma check on the test device: its capabilities as the library uses
 * them, its address found in its GID table, and every step of the loopback
 * passed; the confinement steps say the device refused the reads. */
START_TEST(check_passes_on_the_test_device)
{
	static const char *const steps[] = { "connect", "messages", "large message", "export",
					     "rdma read", "rdma write", "atomics", "srq limit event",
					     "other connection refused",
					     "outside the range refused" };
	const char *dev = getenv("EZ_DEVICE") ? getenv("EZ_DEVICE") : "rxe0";
	char *argv[] = { (char *)EZRDMA, "check", "-d", (char *)dev, NULL };
	char want[128];
	struct child c;
	int st;

	ck_assert_int_eq(child_start(&c, argv), 0);
	st = child_finish(&c, 200000);
	printf("%s", c.buf);
	ck_assert_msg(st == 0, "ezrdma check exited %d: %s", st, c.buf);
	ck_assert_msg(strstr(c.buf, "memory windows type 2: yes"), "%s", c.buf);
	ck_assert_msg(strstr(c.buf, "RDMA atomics: yes"), "%s", c.buf);
	ck_assert_msg(strstr(c.buf, "source port: GRH flow label (RoCEv2), address "), "%s", c.buf);
	snprintf(want, sizeof(want), "loopback on %s:", test_addr());
	ck_assert_msg(strstr(c.buf, want), "no '%s' in: %s", want, c.buf);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(want, sizeof(want), "  PASS  %s: ", steps[i]);
		ck_assert_msg(strstr(c.buf, want), "no '%s' in: %s", want, c.buf);
	}
	ck_assert_msg(strstr(c.buf, "exports by a type-2 memory window (EZ_EXPORT_MW2)"), "%s",
		      c.buf);
	ck_assert_msg(strstr(c.buf, "refused by the device"), "%s", c.buf);
	ck_assert_msg(strstr(c.buf, "ezrdma check: 10 passed, 0 failed, 0 skipped"), "%s", c.buf);
}
END_TEST

/* On an address no device has, the listen step fails naming the address,
 * every later step is skipped as not run, and the exit status says so. */
START_TEST(check_fails_on_a_foreign_address)
{
	const char *dev = getenv("EZ_DEVICE") ? getenv("EZ_DEVICE") : "rxe0";
	char *argv[] = { (char *)EZRDMA, "check", "-d", (char *)dev, "-a", "198.51.100.7", NULL };
	struct child c;
	int st;

	ck_assert_int_eq(child_start(&c, argv), 0);
	st = child_finish(&c, 200000);
	printf("%s", c.buf);
	ck_assert_msg(st == 1, "ezrdma check exited %d: %s", st, c.buf);
	ck_assert_msg(strstr(c.buf, "loopback on 198.51.100.7:\n  FAIL  listen: 198.51.100.7: "),
		      "%s", c.buf);
	ck_assert_msg(strstr(c.buf, "  SKIP  outside the range refused: no listener"), "%s", c.buf);
	ck_assert_msg(strstr(c.buf, "ezrdma check: 0 passed, 1 failed, 9 skipped"), "%s", c.buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ezrdma");
	TCase *tc = tcase_create("tool");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, devices_lists_rxe_with_rocev2_gid);
	tcase_add_test(tc, ping_five_replies);
	tcase_add_test(tc, stat_prints_server_counters);
	tcase_add_test(tc, perf_json_summary);
	tcase_add_test(tc, perf_server_threads);
	tcase_add_test(tc, perf_progress_on_terminal_only);
	tcase_add_test(tc, ping_without_server_fails);
	tcase_add_test(tc, check_passes_on_the_test_device);
	tcase_add_test(tc, check_fails_on_a_foreign_address);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_VERBOSE);
}
