/* spawn.c: run the sample programs as child processes and read their output (end-to-end tests). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "spawn.h"

const char *test_addr(void)
{
	const char *a = getenv("EZ_TEST_ADDR");

	return a && *a ? a : "192.0.2.1";
}

const char *prog_path(const char *rel)
{
	static char paths[8][512];
	static int next;
	const char *dir = getenv("EZ_BUILDDIR"), *slash = strrchr(rel, '/');
	char *p = paths[next++ % 8];

	if (!dir || !*dir)
		dir = ".";
	/* An installed program (linked to the shared library) is a libtool
	 * wrapper script in the build tree; starting the real binary directly
	 * saves seconds per start in a slow VM. */
	if (slash) {
		snprintf(p, sizeof(paths[0]), "%s/%.*s/.libs/%s", dir, (int)(slash - rel), rel,
			 slash + 1);
		if (access(p, X_OK) == 0) {
			char lib[600];
			const char *old = getenv("LD_LIBRARY_PATH");

			snprintf(lib, sizeof(lib), "%s/lib/.libs%s%s", dir, old ? ":" : "",
				 old ? old : "");
			setenv("LD_LIBRARY_PATH", lib, 1);
			return p;
		}
	}
	snprintf(p, sizeof(paths[0]), "%s/%s", dir, rel);
	return p;
}

int child_start(struct child *c, char *const argv[])
{
	int fds[2];

	memset(c, 0, sizeof(*c));
	if (pipe(fds))
		return -errno;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return -err;
	}
	if (c->pid == 0) {
		/* A test that fails mid-way must not leave a server running. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	c->out = fds[0];
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Reads what is there within ms; 1 data, 0 timeout, -EPIPE end of file. */
static int child_read(struct child *c, int ms)
{
	struct pollfd p = { .fd = c->out, .events = POLLIN };
	ssize_t n;

	if (c->out < 0)
		return -EPIPE;
	if (poll(&p, 1, ms < 0 ? 0 : ms) <= 0)
		return 0;
	if (c->len + 1 >= sizeof(c->buf))	/* keep the newest output */
		c->len = 0;
	n = read(c->out, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	if (n <= 0) {
		close(c->out);
		c->out = -1;
		return -EPIPE;
	}
	c->len += (size_t)n;
	c->buf[c->len] = 0;
	return 1;
}

int child_wait_line(struct child *c, const char *needle, char *line, size_t size, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	for (;;) {
		char *hit = strstr(c->buf, needle), *eol;

		if (hit && (eol = strchr(hit, '\n'))) {
			char *bol = hit;

			while (bol > c->buf && bol[-1] != '\n')
				bol--;
			snprintf(line, size, "%.*s", (int)(eol - bol), bol);
			return 0;
		}
		if (now_ms() >= end)
			return -ETIMEDOUT;
		if (child_read(c, (int)(end - now_ms())) == -EPIPE)
			return -EPIPE;
	}
}

int child_finish(struct child *c, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;
	int status;

	for (;;) {
		pid_t r = waitpid(c->pid, &status, WNOHANG);

		if (r == c->pid)
			break;
		if (now_ms() >= end) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &status, 0);
			return -ETIMEDOUT;
		}
		if (child_read(c, 50) == -EPIPE)
			usleep(10000);
	}
	while (child_read(c, 0) == 1)
		;
	if (c->out >= 0)
		close(c->out);
	c->out = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
