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

/* The server pauses in the middle of each write: GETs of the key being
 * written meet an odd or changed version and read again; every value a GET
 * returns must be one a PUT wrote, whole. A GET meets a write only if the
 * client runs during the server's pause: on a loaded host a TCG guest's
 * vCPU can miss every 2 ms pause of a run (the whole integration tier on
 * Linux 6.12 under the host's other VMs: 0 torn reads in 150 puts; 25 alone
 * on a quiet one). So the run is done again with a longer pause until it
 * saw a torn read, 0.2 s at most: the event, not the speed, decides. */
START_TEST(stress_torn_reads_detected)
{
	static const struct { const char *pause_us, *n, *summary; unsigned long puts; } tries[] = {
		{ "2000", "150", "1 connections, 150 puts, 8 dels, 0 bad requests", 150 },
		{ "20000", "150", "1 connections, 150 puts, 8 dels, 0 bad requests", 150 },
		{ "200000", "30", "1 connections, 30 puts, 8 dels, 0 bad requests", 30 },
	};
	unsigned long puts, gets, torn = 0, dels, gone;

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]) && torn == 0; i++) {
		struct child srv;
		int port = start_server(&srv, tries[i].pause_us);
		const char *out = client(port, (char *[]){ "-n", (char *)tries[i].n, "stress", NULL }, 0), *l;

		l = strstr(out, "kvstore_client: ");
		ck_assert_msg(l && sscanf(l, "kvstore_client: %lu puts, %lu gets verified, %lu torn reads read again, %lu dels, %lu keys gone",
					  &puts, &gets, &torn, &dels, &gone) == 5, "output: %s", out);
		printf("pause %s us: %s", tries[i].pause_us, l);
		ck_assert_uint_eq(puts, tries[i].puts);
		ck_assert_uint_gt(gets, 10);
		ck_assert_uint_eq(dels, 8);
		ck_assert_uint_eq(gone, 8);
		stop_server(&srv, tries[i].summary);
	}
	ck_assert_msg(torn > 0, "no GET met a write under way, even with 0.2 s pauses");
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
