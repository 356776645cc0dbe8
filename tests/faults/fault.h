/* fault.h: the fault suite's bench: a loop, a context, echo servers, counting clients, resource counters. */
#ifndef EZ_FAULT_H
#define EZ_FAULT_H

#include <stddef.h>
#include <stdint.h>
#include <ev.h>

#include "easyrdma.h"

const char *test_addr(void);
/* How late a loaded host may run a guest's timer, for the upper side of a
 * timeout's bound: a deadline's lower side is the design's and exact; its
 * upper side tells "fired at its deadline" from "never" or "at another
 * one". Quiet-host lateness is tens of ms; 2 s was exceeded on a loaded CI
 * host (15x slower than quiet: 500 connects in 25.2 s against 1.6 s). */
#define TIMER_LATE_S 4.0

double now_s(void);

struct fb {
	struct ev_loop *loop;
	struct ez_ctx *ctx;
	ev_timer tick;
};

/* ez_ctx_new() flags of every fb_init() context (0 unless a test sets it). */
extern unsigned int fb_ctx_flags;
void fb_init(struct fb *b);
/* Runs the loop until *flag >= want or secs pass; returns *flag >= want. */
int fb_run(struct fb *b, const volatile int *flag, int want, double secs);
/* Runs the loop for secs whatever happens. */
void fb_spin(struct fb *b, double secs);
void fb_fini(struct fb *b);

/* One side of a connection, counting what its callbacks saw. */

struct ep {
	struct ez_conn *conn;
	int connected, connect_status;
	char connect_msg[256];
	int disconnected, disconnect_status;
	char disconnect_msg[256];
	int received;
	uint64_t next_seq;	/* messages carry a sequence number: none lost, none reordered */
	int bad_seq;
	int recv_after_close;
	int closed;
	int echo;		/* send every message back */
	/* Echoes the send window (send_depth) could not take yet, in order:
	 * holding their buffers holds the peer's credits, which is the
	 * backpressure a streaming peer gets. Sent as echoes complete. */
	struct ez_buf **held;	/* allocated only while something is held */
	int nheld, held_cap, held_max;
	int close_on_disconnect;
	/* Keeps the last message's buffer in kept (not echoed, and not
	 * released at the end: the test releases it). */
	int keep_buf;
	struct ez_buf *kept;
	void *user;
};

extern const struct ez_conn_cbs ep_cbs;

/* A server that accepts every request as an ep (echoing) with opts. */
struct srv {
	struct fb *b;
	struct ez_listener *l;
	char port[8];
	int requests;
	struct ez_conn_opts opts;
	const void *auth_key;	/* ez_listen_opts.auth_key, set before srv_start */
	uint32_t auth_key_len;
	int no_echo;		/* accepted eps only count what they receive */
	int reject_all;		/* every request is counted and rejected ("no") */
	int hold;		/* requests are kept in held[] unanswered */
	struct ez_conn_req *held[64];
	int nheld;
	int any_addr;		/* listen on every address (NULL), IPv4 and IPv6 */
	int keep_ended;		/* accepted eps are not closed at their end: the test closes them */
	int keep_bufs;		/* accepted eps keep their last buffer (ep.keep_buf) */
	struct ez_listen_opts lopts;	/* more listener options (the key comes from the fields above) */
	struct ep *eps;
	int neps, cap;
	int accept_errors;
	int accept_status;	/* the last ez_accept() error */
	char accept_msg[256];
	int connected;		/* server eps that reached on_connect(0) */
	int disconnected;
	int connect_failed;	/* accepted, then on_connect(< 0) */
	/* ez_listen_opts.access_fail_limit / access_ban_ms, set before srv_start. */
	uint32_t access_fail_limit, access_ban_ms;
};

void srv_start(struct fb *b, struct srv *s, int cap);
/* ez_accept() of req (a held one) as the next of s->eps; its return. */
int srv_accept(struct srv *s, struct ez_conn_req *req);
void srv_stop(struct srv *s);

/* ez_connect() of an ep to the server's port. */
int ep_connect(struct fb *b, struct ep *e, const char *port, const struct ez_conn_opts *o);
/* Sends a message carrying the ep's next outgoing sequence number. */
int ep_send_seq(struct ep *e, uint64_t seq);
void ep_close(struct ep *e);

/* The loop's longest gap while started: a 10 ms timer on b's loop notes
 * the time between its runs, on the wall clock and in the loop thread's
 * CPU. The CPU figure is the library's (a TCG vCPU the host does not run
 * shows as wall time only); a wall gap of seconds is a wait on the network
 * (the transport's retries, a CM reply), which the loop must never make. */
struct loop_gap {
	ev_timer t;
	double last, last_cpu;
	double max_s, max_cpu_s;	/* the longest gap, and the loop's CPU in it */
};
void loop_gap_start(struct fb *b, struct loop_gap *g);
/* The longest gap measured again from now (the timer keeps running). */
void loop_gap_reset(struct loop_gap *g);
void loop_gap_stop(struct fb *b, struct loop_gap *g);

/* Resource counters. */
int count_fds(void);
long rss_kb(void);
size_t heap_in_use(void);
/* Memory the library keeps on purpose for handles the application may still
 * hold: freed connections in its quarantine (lib/conn/conn_handle.h), which
 * grows once to a bound and then stays. Growth checks discount it. */
size_t kept_void_bytes(void);
/* `rdma res show <what>` lines (qp, cq, mr, pd, cm_id) for this process; -1 if unknown. */
int rdma_res_count(const char *what);

#endif
