/* test_samples_rpc.c: end-to-end run of samples/rpc_server and samples/rpc_client on a real device. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "spawn.h"
#include "../checkmain.h"

/* Starts rpc_server on a free port of the test address; returns the port. */
static int start_server_threads(struct child *srv, const char *threads)
{
	/* -H: the handshake's deadline is a hang catcher here (tests/waits.h):
	 * this test is about the sample's replies, not about deadlines. */
	char *argv[] = { (char *)prog_path("samples/rpc_server"), "-a", (char *)test_addr(),
			 "-p", "0", "-H", "60000", threads ? "--threads" : NULL, (char *)threads,
			 NULL };
	char line[256];
	int port = 0;

	ck_assert_int_eq(child_start(srv, argv), 0);
	ck_assert_msg(child_wait_line(srv, "listening on", line, sizeof(line), 90000) == 0,
		      "rpc_server did not say it listens; output: %s", srv->buf);
	ck_assert_int_eq(sscanf(strstr(line, "port"), "port %d", &port), 1);
	ck_assert_int_gt(port, 0);
	return port;
}

static int start_server(struct child *srv)
{
	return start_server_threads(srv, NULL);
}

static void start_client(struct child *c, int port, const char *n, const char *window,
			 const char *payload)
{
	char p[16];
	/* -C: the connect timeout (5 s by default) is a hang catcher here: a CI
	 * run on a loaded host saw a client's connect end at 5 s. */
	char *argv[] = { (char *)prog_path("samples/rpc_client"), "-a", (char *)test_addr(),
			 "-p", p, "-n", (char *)n, "-w", (char *)window, "-s", (char *)payload,
			 "-C", "60000", NULL };

	snprintf(p, sizeof(p), "%d", port);
	ck_assert_int_eq(child_start(c, argv), 0);
}

/* Three clients at once with different windows and payloads: every reply is
 * verified by the client (it exits 1 on a wrong id or payload), and the
 * server's summary counts every request and all three connections. The
 * window of 128 is wider than the client's send_depth (16): the library's
 * op queue held the rest (112 at the start at least), with no -ENOBUFS. */
START_TEST(three_clients_all_replies_verified)
{
	struct child srv, cl[3];
	const char *win[3] = { "128", "8", "1" }, *size[3] = { "64", "1000", "4080" };
	char line[512], want[128];
	int port = start_server(&srv), i;

	for (i = 0; i < 3; i++)
		start_client(&cl[i], port, "1500", win[i], size[i]);
	for (i = 0; i < 3; i++) {
		int st = child_finish(&cl[i], 120000);

		ck_assert_msg(st == 0, "client %d exited %d; output: %s", i, st, cl[i].buf);
		snprintf(want, sizeof(want), "rpc_client: 1500 replies verified");
		ck_assert_msg(strstr(cl[i].buf, want), "client %d: no '%s' in: %s", i, want,
			      cl[i].buf);
		ck_assert_msg(strstr(cl[i].buf, "round trips/s") && strstr(cl[i].buf, "p99"),
			      "client %d printed no figures: %s", i, cl[i].buf);
	}
	{
		const char *q = strstr(cl[0].buf, "sends queued by the library: ");
		unsigned long long n = 0, most = 0;

		ck_assert_msg(q && sscanf(q, "sends queued by the library: %llu (most at once %llu)",
					  &n, &most) == 2, "client 0: %s", cl[0].buf);
		ck_assert_uint_ge(most, 112);
		ck_assert_uint_ge(n, most);
	}
	kill(srv.pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(&srv, "requests", line, sizeof(line), 120000), 0);
	ck_assert_msg(strstr(line, "3 connections, 4500 requests (echo 2250, sum 2250, bad 0)"),
		      "server summary: %s", line);
	ck_assert_msg(strstr(line, " 0 send errors"), "server summary: %s", line);
	ck_assert_int_eq(child_finish(&srv, 120000), 0);
}
END_TEST

/* SIGTERM while a client is busy: the server closes the connection, prints
 * its summary and exits 0; the client sees the server go away and exits 1. */
START_TEST(sigterm_with_busy_client)
{
	struct child srv, cl;
	char line[512];
	int port = start_server(&srv), st;
	unsigned long conns, reqs;

	start_client(&cl, port, "100000000", "4", "64");
	/* Requests are flowing once the client says it is connected. */
	ck_assert_msg(child_wait_line(&cl, "rpc_client: connected", line, sizeof(line), 90000) == 0,
		      "client did not connect: %s", cl.buf);
	sleep(1);
	ck_assert_msg(waitpid(cl.pid, NULL, WNOHANG) == 0, "client ended early: %s", cl.buf);
	kill(srv.pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(&srv, "requests", line, sizeof(line), 120000), 0);
	ck_assert_int_eq(sscanf(line, "rpc_server: %lu connections, %lu requests", &conns, &reqs), 2);
	ck_assert_uint_eq(conns, 1);
	ck_assert_uint_gt(reqs, 0);
	ck_assert_int_eq(child_finish(&srv, 120000), 0);
	st = child_finish(&cl, 120000);
	ck_assert_msg(st == 1, "client exit status %d (want 1: server went away)", st);
}
END_TEST

/* --threads 2: the listener hands each connection to one of two worker
 * threads; every reply verified, the summary adds the workers' counts. */
START_TEST(threads_two_workers)
{
	struct child srv, cl[4];
	char line[512];
	int port = start_server_threads(&srv, "2"), i;
	unsigned long c0 = 0, c1 = 0, r0 = 0, r1 = 0;
	char *w;

	for (i = 0; i < 4; i++)
		start_client(&cl[i], port, "500", "8", "256");
	for (i = 0; i < 4; i++) {
		int st = child_finish(&cl[i], 120000);

		ck_assert_msg(st == 0, "client %d exited %d; output: %s", i, st, cl[i].buf);
		ck_assert_msg(strstr(cl[i].buf, "rpc_client: 500 replies verified"), "client %d: %s",
			      i, cl[i].buf);
	}
	kill(srv.pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(&srv, "requests (", line, sizeof(line), 120000), 0);
	ck_assert_msg(strstr(line, "4 connections, 2000 requests (echo 1000, sum 1000, bad 0)"),
		      "server summary: %s", line);
	ck_assert_int_eq(child_finish(&srv, 120000), 0);
	w = strstr(srv.buf, "worker 0: ");
	ck_assert_msg(w && sscanf(w, "worker 0: %lu connections, %lu requests", &c0, &r0) == 2,
		      "no worker 0 line: %s", srv.buf);
	w = strstr(srv.buf, "worker 1: ");
	ck_assert_msg(w && sscanf(w, "worker 1: %lu connections, %lu requests", &c1, &r1) == 2,
		      "no worker 1 line: %s", srv.buf);
	printf("rpc_server --threads 2: worker 0 %lu connections, worker 1 %lu\n", c0, c1);
	ck_assert_uint_eq(c0 + c1, 4);
	ck_assert_uint_eq(r0 + r1, 2000);
	ck_assert_uint_gt(c0, 0);
	ck_assert_uint_gt(c1, 0);
}
END_TEST

/* No server: the client reports the refused connection and exits 1. */
START_TEST(client_without_server_fails)
{
	struct child srv, cl;
	int port = start_server(&srv), st;

	kill(srv.pid, SIGTERM);		/* a port that was just free and is closed now */
	ck_assert_int_eq(child_finish(&srv, 120000), 0);
	start_client(&cl, port, "10", "1", "64");
	st = child_finish(&cl, 20000);
	ck_assert_msg(st == 1, "client exit status %d (want 1: refused)", st);
	ck_assert_ptr_null(strstr(cl.buf, "verified"));
	ck_assert_msg(strstr(cl.buf, "rpc_client: connect: "), "client said: %s", cl.buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("samples_rpc");
	TCase *tc = tcase_create("rpc");

	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, three_clients_all_replies_verified);
	tcase_add_test(tc, sigterm_with_busy_client);
	tcase_add_test(tc, client_without_server_fails);
	tcase_add_test(tc, threads_two_workers);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_VERBOSE);
}
