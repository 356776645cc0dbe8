/* spawn.h: run the sample programs as child processes and read their output (end-to-end tests). */
#ifndef EZ_TEST_SPAWN_H
#define EZ_TEST_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct child {
	pid_t pid;
	int out;		/* read end of the child's stdout and stderr */
	char buf[8192];		/* everything read so far */
	size_t len;
};

/* The address tests listen and connect on: $EZ_TEST_ADDR or 192.0.2.1. */
const char *test_addr(void);
/* Path of a built program: $EZ_BUILDDIR/<rel> or ./<rel> (tests run in the build dir). */
const char *prog_path(const char *rel);
/* Starts argv[0] with stdout to a pipe; 0 or -errno. */
int child_start(struct child *c, char *const argv[]);
/* Reads until a line containing needle arrives (the line is copied to line,
 * up to size bytes) or timeout_ms passes or the child closes stdout: 0, -ETIMEDOUT, -EPIPE. */
int child_wait_line(struct child *c, const char *needle, char *line, size_t size, int timeout_ms);
/* Reads the rest of stdout and reaps the child, killing it after timeout_ms.
 * Returns the exit status (0..255), 128+signal, or -ETIMEDOUT. */
int child_finish(struct child *c, int timeout_ms);

#endif
