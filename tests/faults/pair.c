/* pair.c: rendezvous files, timestamps and checks for the programs that run on several test-bed VMs (pair.h). */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pair.h"

struct ev_loop *pair_loop;
int pair_failures;
static const char *pair_dir;
static double pair_t0;

double pair_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The host's clock, read through a file of $EZ_PAIR_DIR whose modification
 * time the host sets to its "now" (9p: the host's file server applies
 * UTIME_NOW). A TCG guest's own clock was seen running 1.9x and 5.7x the
 * host's on a loaded host (a TSC calibrated while the vCPU was starved), so
 * hang ceilings read from it fired after a fraction of their time; the
 * host's clock is the one the test bed's own timeout counts in.
 */
double pair_host_now(void)
{
	static char path[512];
	struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	struct stat st;
	int fd;

	if (!pair_dir)
		return pair_now();
	if (!path[0]) {
		snprintf(path, sizeof(path), "%s/clock.%s.%ld", pair_dir,
			 getenv("EZ_HOST") ? getenv("EZ_HOST") : "x", (long)getpid());
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
	}
	if (utimensat(AT_FDCWD, path, now, 0) || stat(path, &st))
		return pair_now();
	return (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
}

int pair_init(void)
{
	pair_t0 = pair_now();
	pair_dir = getenv("EZ_PAIR_DIR");
	return pair_dir ? 0 : -1;
}

void pair_say(const char *fmt, ...)
{
	va_list ap;

	printf("%7.3f %s: ", pair_now() - pair_t0, getenv("EZ_HOST"));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void pair_put(const char *name, const char *text)
{
	char path[512], tmp[520];
	FILE *f;

	/* Written whole, then renamed: a reader never sees half of it. */
	snprintf(path, sizeof(path), "%s/%s", pair_dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fputs(text, f);
	if (fclose(f) == 0)
		rename(tmp, path);
}

int pair_get(const char *name, char *buf, size_t len)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", pair_dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n > 0;
}

int pair_has(const char *name)
{
	char buf[64];

	return pair_get(name, buf, sizeof(buf));
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
}

void (*pair_on_spin)(void);

void pair_spin(double secs)
{
	/* EVRUN_ONCE must come back now and then to look at the clock. */
	static ev_timer tick;
	double end = pair_now() + secs;

	if (!ev_is_active(&tick)) {
		ev_timer_init(&tick, on_tick, 0.02, 0.02);
		ev_timer_start(pair_loop, &tick);
	}
	if (pair_on_spin)
		pair_on_spin();
	while (pair_now() < end)
		ev_run(pair_loop, EVRUN_ONCE);
}

int pair_wait(const char *name, double secs)
{
	double end = pair_host_now() + secs;

	while (!pair_has(name) && pair_host_now() < end)
		pair_spin(0.02);
	return pair_has(name);
}
