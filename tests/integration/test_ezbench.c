/* test_ezbench.c: the benchmark program works end to end (every test prints its figure line and both sides exit 0). */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spawn.h"
#include "../checkmain.h"

static int start_server(struct child *srv, const char *poll)
{
	char *argv[] = { (char *)prog_path("tests/bench/ezbench"), "-s", "-a", (char *)test_addr(),
			 "-p", "0", "--poll", (char *)poll, "--timeout", "50", NULL };
	char line[256];
	int port = 0;

	ck_assert_int_eq(child_start(srv, argv), 0);
	ck_assert_msg(child_wait_line(srv, "listening on", line, sizeof(line), 20000) == 0,
		      "ezbench -s did not say it listens; output: %s", srv->buf);
	ck_assert_int_eq(sscanf(strstr(line, "port"), "port %d", &port), 1);
	ck_assert_int_gt(port, 0);
	return port;
}

/* Runs a client with args after "-c ADDR -p PORT"; returns its output. */
static const char *run_client(struct child *cl, int port, char **args, int nargs)
{
	char p[16];
	char *argv[32] = { (char *)prog_path("tests/bench/ezbench"), "-c", (char *)test_addr(),
			   "-p", p, "--timeout", "50" };
	int i, st;

	snprintf(p, sizeof(p), "%d", port);
	for (i = 0; i < nargs; i++)
		argv[7 + i] = args[i];
	argv[7 + nargs] = NULL;
	ck_assert_int_eq(child_start(cl, argv), 0);
	st = child_finish(cl, 55000);
	ck_assert_msg(st == 0, "client exited %d; output: %s", st, cl->buf);
	return cl->buf;
}

static double field(const char *out, const char *test, const char *key)
{
	const char *l = strstr(out, test), *k;
	char want[64];
	double v = -1;

	ck_assert_msg(l, "no '%s' line in: %s", test, out);
	snprintf(want, sizeof(want), " %s=", key);
	k = strstr(l, want);
	ck_assert_msg(k, "no %s in: %s", key, l);
	ck_assert_int_eq(sscanf(k + strlen(want), "%lf", &v), 1);
	return v;
}

static void server_exits_0(struct child *srv)
{
	int st = child_finish(srv, 20000);

	ck_assert_msg(st == 0, "server exited %d; output: %s", st, srv->buf);
}

/* 100 echoes of 64 B, each checked by sequence number in the client. */
START_TEST(lat_event)
{
	struct child srv, cl;
	char *args[] = { "--lat", "--iters", "100", "--warmup", "5", "--size", "64" };
	int port = start_server(&srv, "event");
	const char *out = run_client(&cl, port, args, 7);
	double typ = field(out, "test=lat", "typical");

	ck_assert_msg(strstr(out, "poll=event size=64 iters=100 "), "%s", out);
	ck_assert_msg(typ > 0 && typ < 100000, "typical %f us", typ);
	ck_assert(field(out, "test=lat", "min") <= typ);
	ck_assert(field(out, "test=lat", "max") >= typ);
	server_exits_0(&srv);
}
END_TEST

START_TEST(lat_spin_4k)
{
	struct child srv, cl;
	char *args[] = { "--lat", "--iters", "100", "--size", "4096", "--poll", "spin" };
	int port = start_server(&srv, "spin");
	const char *out = run_client(&cl, port, args, 7);

	ck_assert_msg(strstr(out, "poll=spin size=4096 iters=100 "), "%s", out);
	ck_assert(field(out, "test=lat", "typical") > 0);
	server_exits_0(&srv);
}
END_TEST

START_TEST(bw_write_and_send)
{
	struct child srv, cl;
	char *w[] = { "--bw", "--op", "write", "--size", "65536", "--iters", "40", "--warmup", "4" };
	char *s[] = { "--bw", "--op", "send", "--size", "65536", "--iters", "40", "--warmup", "4" };
	int port = start_server(&srv, "event");
	const char *out = run_client(&cl, port, w, 9);
	double bw;

	ck_assert_msg(strstr(out, "test=bw op=write"), "%s", out);
	/* rxe moves well under 10 GiB/s: more means the clock missed work. */
	bw = field(out, "test=bw", "bw");
	ck_assert_msg(bw > 0 && bw < 10240, "bw %f MiB/s", bw);
	server_exits_0(&srv);
	port = start_server(&srv, "event");
	out = run_client(&cl, port, s, 9);
	ck_assert_msg(strstr(out, "test=bw op=send"), "%s", out);
	bw = field(out, "test=bw", "bw");
	ck_assert_msg(bw > 0 && bw < 10240, "bw %f MiB/s", bw);
	server_exits_0(&srv);
}
END_TEST

START_TEST(rate_srq)
{
	struct child srv, cl;
	char *args[] = { "--rate", "--iters", "500", "--srq" };
	int port = start_server(&srv, "event");
	const char *out = run_client(&cl, port, args, 4);

	ck_assert_msg(strstr(out, "test=rate op=send poll=event srq=1 size=64 iters=500"), "%s", out);
	ck_assert(field(out, "test=rate", "rate") > 0);
	server_exits_0(&srv);
}
END_TEST

START_TEST(conn_async_and_mem)
{
	struct child srv, cl;
	/* 200 at once from one address: beyond the listener's default of 64
	 * handshakes per peer, which ezbench's server raises (without that,
	 * compare's conn_500_async rows were refused every round). */
	char *c[] = { "--conn", "200", "--async" };
	char *m[] = { "--mem", "4", "--send-depth", "8" };
	char line[512];
	int port = start_server(&srv, "event");
	const char *out = run_client(&cl, port, c, 3);

	ck_assert_msg(strstr(out, "test=conn mode=async conns=200 ok=200 "), "%s", out);
	ck_assert(field(out, "test=conn", "rate") > 0);
	server_exits_0(&srv);

	port = start_server(&srv, "event");
	out = run_client(&cl, port, m, 4);
	ck_assert_msg(strstr(out, "test=mem side=client mode=pool conns=4 ok=4"), "%s", out);
	ck_assert_msg(strstr(out, "test=mem side=client mode=per-conn conns=4 ok=4"), "%s", out);
	/* Per-connection queues: the client was advertised depth - 1 credits. */
	ck_assert_msg(strstr(out, "mode=per-conn conns=4 ok=4 peer_credits=63 max_msg_size=4096"),
		      "%s", out);
	ck_assert_int_eq(child_wait_line(&srv, "mode=per-conn", line, sizeof(line), 1000), 0);
	ck_assert_msg(strstr(srv.buf, "mode=pool conns=4 attached=4 bufs=256 buf_size=4096"),
		      "server: %s", srv.buf);
	ck_assert_msg(strstr(line, "conns=4 failed=0 depth=64 buf_size=4096 bytes_per_conn=262144"
				   " bytes_registered=1048576"), "server: %s", line);
	server_exits_0(&srv);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ezbench");
	TCase *tc = tcase_create("ezbench");

	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lat_event);
	tcase_add_test(tc, lat_spin_4k);
	tcase_add_test(tc, bw_write_and_send);
	tcase_add_test(tc, rate_srq);
	tcase_add_test(tc, conn_async_and_mem);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_VERBOSE);
}
