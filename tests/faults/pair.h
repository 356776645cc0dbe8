/* pair.h: what the programs that run on several test-bed VMs at once share (pair.c): timestamps, a failure count, rendezvous files in $EZ_PAIR_DIR, a libev loop turned for a while or until a file appears. */
#ifndef EZ_TESTS_PAIR_H
#define EZ_TESTS_PAIR_H

#include <ev.h>

extern struct ev_loop *pair_loop;	/* set by the program */
extern int pair_failures;

/* pair_dir = $EZ_PAIR_DIR, the clock's zero; 0, or -1 without the directory. */
int pair_init(void);
double pair_now(void);
/* The host's clock (seconds), for ceilings that only catch a hang: a TCG
 * guest's clock may run several times fast on a loaded host. pair_now()
 * where there is no $EZ_PAIR_DIR. */
double pair_host_now(void);
/* printf to stdout, prefixed with the time since pair_init() and $EZ_HOST. */
void pair_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define PAIR_CHECK(cond, ...)                                                \
	do {                                                                 \
		if (!(cond)) {                                               \
			pair_say("FAIL %s:%d: %s", __FILE__, __LINE__, #cond); \
			pair_say(__VA_ARGS__);                               \
			pair_failures++;                                     \
		}                                                            \
	} while (0)

/* Files in $EZ_PAIR_DIR (uncached 9p: every VM sees them at once). */
void pair_put(const char *name, const char *text);
int pair_get(const char *name, char *buf, size_t len);
int pair_has(const char *name);
/* Turns pair_loop for secs, calling pair_on_spin (when set) first. */
void pair_spin(double secs);
/* A program's progress report, e.g. a line every 30 s while counts move: the
 * test bed's EZ_VM_IDLE_S stops a run in which no VM wrote anything, so a long
 * quiet phase on a loaded host must still say it is moving. */
extern void (*pair_on_spin)(void);
/* Turns pair_loop until the file exists or secs pass on the host's clock; whether it does. */
int pair_wait(const char *name, double secs);

#endif
