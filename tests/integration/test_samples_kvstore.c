/* test_samples_kvstore.c: end-to-end run of samples/kvstore_server and kvstore_client on a real device: PUT/GET/DEL by hand, and a stress run whose every GET is checked, with torn reads forced and detected. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"
#include "../checkmain.h"

static int start_server(struct child *srv, const char *pause_us)
{
	char *argv[] = { (char *)prog_path("samples/kvstore_server"), "-a", (char *)test_addr(),
			 "-p", "0", "-n", "256", "-s", (char *)pause_us, NULL };
	char line[256];
	int port = 0;

	ck_assert_int_eq(child_start(srv, argv), 0);
	ck_assert_msg(child_wait_line(srv, "listening on", line, sizeof(line), 90000) == 0,
		      "kvstore_server did not say it listens; output: %s", srv->buf);
	ck_assert_int_eq(sscanf(strstr(line, "port"), "port %d", &port), 1);
	return port;
}

/* Runs one client command; returns its output (static) after checking its status. */
static const char *client(int port, char *const *words, int want_status)
{
	static struct child c;
	char p[16], *argv[12];
	int n = 0, st;

	snprintf(p, sizeof(p), "%d", port);
	argv[n++] = (char *)prog_path("samples/kvstore_client");
	argv[n++] = "-a";
	argv[n++] = (char *)test_addr();
	argv[n++] = "-p";
	argv[n++] = p;
	while (*words && n < 11)
		argv[n++] = *words++;
	argv[n] = NULL;
	ck_assert_int_eq(child_start(&c, argv), 0);
	st = child_finish(&c, 120000);
	ck_assert_msg(st == want_status, "kvstore_client %s exited %d; output: %s", argv[5], st,
		      c.buf);
	return c.buf;
}

static void stop_server(struct child *srv, const char *want)
{
	char line[256];

	kill(srv->pid, SIGTERM);
	ck_assert_int_eq(child_wait_line(srv, "connections", line, sizeof(line), 10000), 0);
	ck_assert_msg(strstr(line, want), "server summary: %s (want %s)", line, want);
	ck_assert_int_eq(child_finish(srv, 10000), 0);
}

START_TEST(put_get_del_by_hand)
{
	struct child srv;
	int port = start_server(&srv, "0");
	const char *out;

	out = client(port, (char *[]){ "get", "colour", NULL }, 0);
	ck_assert_msg(strstr(out, "(not found)"), "%s", out);
	out = client(port, (char *[]){ "put", "colour", "blue as the sky", NULL }, 0);
	ck_assert_msg(strstr(out, "put: ok"), "%s", out);
	out = client(port, (char *[]){ "get", "colour", NULL }, 0);
	ck_assert_msg(strstr(out, "blue as the sky\n"), "%s", out);
	out = client(port, (char *[]){ "put", "colour", "green", NULL }, 0);
	out = client(port, (char *[]){ "get", "colour", NULL }, 0);
	ck_assert_msg(strstr(out, "green\n") && !strstr(out, "blue"), "%s", out);
	out = client(port, (char *[]){ "del", "colour", NULL }, 0);
	ck_assert_msg(strstr(out, "del: ok"), "%s", out);
	out = client(port, (char *[]){ "del", "colour", NULL }, 0);
	ck_assert_msg(strstr(out, "del: No such file or directory"), "%s", out);
	out = client(port, (char *[]){ "get", "colour", NULL }, 0);
	ck_assert_msg(strstr(out, "(not found)"), "%s", out);
	stop_server(&srv, "8 connections, 2 puts, 1 dels, 0 bad requests");
}
END_TEST

/* The server pauses in the middle of each write (2 ms): GETs of the key
 * being written meet an odd or changed version and read again; every value
 * a GET returns must be one a PUT wrote, whole. */
START_TEST(stress_torn_reads_detected)
{
	struct child srv;
	int port = start_server(&srv, "2000");
	unsigned long puts, gets, torn, dels, gone;
	const char *out = client(port, (char *[]){ "-n", "150", "stress", NULL }, 0), *l;

	l = strstr(out, "kvstore_client: ");
	ck_assert_msg(l && sscanf(l, "kvstore_client: %lu puts, %lu gets verified, %lu torn reads read again, %lu dels, %lu keys gone",
				  &puts, &gets, &torn, &dels, &gone) == 5, "output: %s", out);
	printf("%s", l);
	ck_assert_uint_eq(puts, 150);
	ck_assert_uint_gt(gets, 10);
	ck_assert_uint_gt(torn, 0);
	ck_assert_uint_eq(dels, 8);
	ck_assert_uint_eq(gone, 8);
	stop_server(&srv, "1 connections, 150 puts, 8 dels, 0 bad requests");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("samples_kvstore");
	TCase *tc = tcase_create("kvstore");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, put_get_del_by_hand);
	tcase_add_test(tc, stress_torn_reads_detected);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
