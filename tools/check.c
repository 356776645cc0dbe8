/* check.c: `ezrdma check`, the self-check a user runs on their own hardware: each device's capabilities as easyrdma sees them, then a loopback connection on each device that has an address, exercising messages, a large message, the SRQ limit event, an export per connection with RDMA READ, WRITE and atomics through it, and the export's confinement (nothing outside its range, nothing for another connection). A PASS, FAIL or SKIP line each. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <infiniband/verbs.h>
#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

#include <easyrdma.h>

#include "check.h"

/* A step not done in this long has failed. Only a hang reaches it: the
 * slowest step, a 4 MiB message each way, takes about a second on
 * Soft-RoCE in an emulated (TCG) virtual machine. */
#define STEP_S 60.0
#define NMSG 256		/* small messages echoed */
#define WINDOW 16		/* of them outstanding at once */
#define SMALL_MAX 4096		/* their largest size */
#define LARGE (4u << 20)	/* the large message, each way */
#define BURST 48		/* messages the SRQ step's server holds */
#define POOL_BUFS 64		/* ... in a shared pool of this many */
#define POOL_WATERMARK 32	/* ... armed at this srq_limit */
#define REGION (64u << 10)	/* the server's registered region */
#define EXPORT_OFF (16u << 10)	/* and the slice of it exported */
#define EXPORT_LEN (16u << 10)

static struct ev_loop *loop;
static struct ez_ctx *ctx;
static unsigned passed, failed, skipped;

/* The devices seen, and whether each has RDMA atomics. */
#define MAX_DEVS 32
static struct {
	char name[64];
	int atomics;
} devs[MAX_DEVS];
static int ndevs;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One verdict line: "  PASS  name: detail". */
static void verdict(const char *word, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (!strcmp(word, "PASS"))
		passed++;
	else if (!strcmp(word, "FAIL"))
		failed++;
	else
		skipped++;
	printf("  %s  %s: ", word, name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ------------------------------------------------------------------ */
/* Capabilities                                                        */
/* ------------------------------------------------------------------ */

static const char *atomic_str(enum ibv_atomic_cap c)
{
	return c == IBV_ATOMIC_HCA ? "yes (IBV_ATOMIC_HCA: atomic among this device's ops)" :
	       c == IBV_ATOMIC_GLOB ? "yes (IBV_ATOMIC_GLOB: atomic with the CPUs too)" :
	       "no (IBV_ATOMIC_NONE): ez_atomic_cas/fadd refuse with -EOPNOTSUPP";
}

/* The source-port mechanism the library will use on a port, as it decides
 * it: none without UDP, mlx5dv where the device has it, else the GRH flow
 * label (ez_conn_opts(3)). The loopback's connect line reports the one in
 * effect. */
static const char *sport_str(struct ibv_device *d, const struct ibv_port_attr *pa, int rocev2)
{
	int mlx5 = 0;

#ifdef HAVE_MLX5DV
	mlx5 = mlx5dv_is_supported(d);
#endif
	(void)d;
	if (pa->link_layer != IBV_LINK_LAYER_ETHERNET || !rocev2)
		return "none (no RoCEv2 GID: no UDP source port to choose)";
	return mlx5 ? "mlx5dv_modify_qp_udp_sport()" : "GRH flow label (RoCEv2)";
}

/* The port's first IPv4-mapped RoCEv2 GID as an address for the loopback,
 * else its first global IPv6 one; *rocev2 says whether it has any RoCEv2
 * GID. 0 when one was found. */
static int port_address(struct ibv_context *c, uint8_t port, const struct ibv_port_attr *pa,
			char *addr, size_t len, int *rocev2)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	int found = -1;

	*rocev2 = 0;
	for (int g = 0; g < pa->gid_tbl_len; g++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(c, port, (uint32_t)g, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		*rocev2 = 1;
		if (!memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
			inet_ntop(AF_INET, e.gid.raw + 12, addr, (socklen_t)len);
			return 0;
		}
		if (found && !(e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80)) {
			inet_ntop(AF_INET6, e.gid.raw, addr, (socklen_t)len);
			found = 0;
		}
	}
	return found;
}

/* Prints what the device offers the library; *addr gets the address of its
 * first active port that has one ("" if none), *why the reason when not. */
static int print_caps(struct ibv_device *d, char *addr, size_t len, char *why, size_t wlen)
{
	struct ibv_context *c = ibv_open_device(d);
	struct ibv_device_attr da;
	const char *name = ibv_get_device_name(d);
	int mw2;

	*addr = 0;
	if (!c || ibv_query_device(c, &da)) {
		verdict("FAIL", "open", "%s: ibv_open_device/ibv_query_device: %s", name, strerror(errno));
		if (c)
			ibv_close_device(c);
		return -1;
	}
	mw2 = (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da.max_mw > 0;
	if (ndevs < MAX_DEVS) {
		snprintf(devs[ndevs].name, sizeof(devs[ndevs].name), "%s", name);
		devs[ndevs++].atomics = da.atomic_cap != IBV_ATOMIC_NONE;
	}
	printf("%s: firmware %s, %u port(s)\n", name, da.fw_ver, da.phys_port_cnt);
	printf("  memory windows type 2: %s\n", mw2 ?
	       "yes: ez_conn_export() binds a window to the connection's QP (EZ_EXPORT_MW2)" :
	       "no: ez_conn_export() registers the region on the connection's own PD "
	       "(EZ_EXPORT_PD, connections on a private pool)");
	printf("  RDMA atomics: %s\n", atomic_str(da.atomic_cap));
	printf("  shared receive queues: max_srq %d, max_srq_wr %d (the limit event is tried below)\n",
	       da.max_srq, da.max_srq_wr);
	printf("  max_qp %d, max_qp_wr %d, max_cqe %d, max_mr_size %llu, max_qp_rd_atom %d\n",
	       da.max_qp, da.max_qp_wr, da.max_cqe, (unsigned long long)da.max_mr_size,
	       da.max_qp_rd_atom);
	snprintf(why, wlen, "no active port");
	for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
		struct ibv_port_attr pa;
		char a[INET6_ADDRSTRLEN] = "";
		int rocev2 = 0, have;

		if (ibv_query_port(c, p, &pa)) {
			printf("  port %u: ibv_query_port: %s\n", p, strerror(errno));
			continue;
		}
		have = !port_address(c, p, &pa, a, sizeof(a), &rocev2);
		printf("  port %u: %s, %s, source port: %s%s%s\n", p, ibv_port_state_str(pa.state),
		       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
		       sport_str(d, &pa, rocev2), have ? ", address " : "", a);
		if (pa.state != IBV_PORT_ACTIVE || *addr)
			continue;
		if (have)
			snprintf(addr, len, "%s", a);
		else
			snprintf(why, wlen, "port %u has no IP address in its GID table%s", p,
				 pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "" :
				 " (InfiniBand: give its IPoIB address with -a)");
	}
	ibv_close_device(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The loopback: one listener, up to three connections to it            */
/* ------------------------------------------------------------------ */

/* The connections, named by the byte the client sends in its handshake. */
enum { CONN_A, CONN_B, CONN_C, NCONN };	/* the main one; another; the SRQ step's */
static const char conn_tag[NCONN] = { 'A', 'B', 'C' };

/* One side of a loopback connection. */
struct end {
	struct ez_conn *conn;
	int up;			/* on_connect(0) seen */
	int gone;		/* its end seen (failed on_connect, on_disconnect) */
	int closed;		/* ez_conn_close() called */
	int status;		/* of that end */
	char why[256];		/* ez_conn_errmsg() at the end */
	/* Client: echoes that matched and that did not, messages sent, and
	 * the echoes counted before the last wait. */
	uint32_t echoed, bad, sent, mark;
	/* Server: hold what arrives (the SRQ step), and the held buffers. */
	int hold;
	struct ez_buf *held[BURST];
	uint32_t nheld;
	/* Server: a check message's verdict, 1 matched or -1 not. */
	int verdict;
};

struct loopback {
	const char *addr;
	char port[8];
	struct ez_listener *lis;
	struct ez_srqpool *pool;	/* the SRQ step's, shared by the listener's connection C */
	struct end cli[NCONN], srv[NCONN];
	uint8_t *region, *local;	/* the server's region; the client's buffer */
	struct ez_mr *region_mr, *local_mr;
	struct ez_rkey key;		/* region[EXPORT_OFF, +EXPORT_LEN) for connection A */
	int atomics;
};
static struct loopback L;

/* Message types (first byte). An echo or a held message carries its
 * 32-bit seed, then the seed's pattern; a check message a 64-bit value. */
enum {
	MSG_ECHO = 'E',		/* sent back whole */
	MSG_HOLD = 'H',		/* held (the SRQ step) */
	MSG_BYTES = 'V',	/* the export holds the pattern of this seed? */
	MSG_WORD = 'W',		/* the export's first word is this? */
};

static uint8_t pattern(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seed, i);
}

static int matches(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			return 0;
	return 1;
}

/* An echo message of seed: type, seed, then the pattern; 5..SMALL_MAX bytes. */
static size_t echo_len(uint32_t seed)
{
	return 5 + (seed * 37u) % (SMALL_MAX - 4);
}

static int send_tagged(struct ez_conn *conn, uint8_t type, uint32_t seed, uint8_t *buf,
		       size_t len)
{
	buf[0] = type;
	memcpy(buf + 1, &seed, 4);
	fill(buf + 5, len - 5, seed);
	return ez_send(conn, buf, len, NULL, NULL);
}

static void end_close(struct end *e)
{
	if (e->conn && !e->closed) {
		e->closed = 1;
		ez_conn_close(e->conn);
	}
}

static void end_gone(struct end *e, struct ez_conn *conn, int status)
{
	e->gone = 1;
	e->status = status;
	snprintf(e->why, sizeof(e->why), "%s", status ? ez_conn_errmsg(conn) : "closed");
	for (uint32_t i = 0; i < e->nheld; i++)
		ez_buf_release(e->held[i]);
	e->nheld = 0;
	end_close(e);
}

static void on_connect(struct ez_conn *conn, int status, void *arg)
{
	struct end *e = arg;

	if (status)
		end_gone(e, conn, status);
	else
		e->up = 1;
}

static void on_disconnect(struct ez_conn *conn, int status, void *arg)
{
	end_gone(arg, conn, status);
}

/* Server: echo, hold, or check the region against what the client says. */
static void srv_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct end *e = arg;
	const uint8_t *p = ez_buf_data(buf);
	size_t len = ez_buf_len(buf);
	uint64_t word = 0;

	if (len >= 9)
		memcpy(&word, p + 1, 8);
	if (e->hold && e->nheld < BURST) {
		e->held[e->nheld++] = buf;
		return;
	}
	if (len >= 5 && p[0] == MSG_ECHO && ez_send(conn, p, len, NULL, NULL))
		fprintf(stderr, "ezrdma check: server's echo: %s\n", ez_errmsg());
	if (len >= 9 && p[0] == MSG_BYTES)
		e->verdict = matches(L.region + EXPORT_OFF, EXPORT_LEN, (uint32_t)word) ? 1 : -1;
	if (len >= 9 && p[0] == MSG_WORD)
		e->verdict = *(volatile uint64_t *)(L.region + EXPORT_OFF) == word ? 1 : -1;
	ez_buf_release(buf);
}

/* Client: count the echoes that match what was sent (by their seed). */
static void cli_recv(struct ez_conn *conn, struct ez_buf *buf, void *arg)
{
	struct end *e = arg;
	const uint8_t *p = ez_buf_data(buf);
	size_t len = ez_buf_len(buf);
	uint32_t seed = 0;

	(void)conn;
	if (len >= 5)
		memcpy(&seed, p + 1, 4);
	if (len >= 5 && p[0] == MSG_ECHO &&
	    len == (seed == LARGE ? LARGE : echo_len(seed)) && matches(p + 5, len - 5, seed))
		e->echoed++;
	else
		e->bad++;
	ez_buf_release(buf);
}

static const struct ez_conn_cbs srv_cbs = { .on_connect = on_connect, .on_recv = srv_recv,
					    .on_disconnect = on_disconnect };
static const struct ez_conn_cbs cli_cbs = { .on_connect = on_connect, .on_recv = cli_recv,
					    .on_disconnect = on_disconnect };

static void on_request(struct ez_listener *l, struct ez_conn_req *req, void *arg)
{
	struct ez_conn_opts o = { .max_msg_size = LARGE };
	size_t len = 0;
	const char *d = ez_conn_req_data(req, &len);
	int i;

	for (i = 0; i < NCONN; i++)
		if (d && len == 1 && *d == conn_tag[i] && !L.srv[i].conn)
			break;
	if (i == NCONN) {
		static const char no[] = "not one of ezrdma check's connections";

		ez_reject(req, no, sizeof(no) - 1);
		return;
	}
	if (i == CONN_C) {
		o.srqpool = L.pool;
		o.max_msg_size = 64;
	}
	if (ez_accept(req, &o, &srv_cbs, &L.srv[i], &L.srv[i].conn)) {
		L.srv[i].gone = 1;
		snprintf(L.srv[i].why, sizeof(L.srv[i].why), "ez_accept: %s", ez_errmsg());
	}
}

/* Runs the loop until done(arg) or STEP_S pass; 0 or -ETIMEDOUT. */
static int wait_for(int (*done)(void *), void *arg)
{
	double end = now_ms() + STEP_S * 1e3;

	while (!done(arg)) {
		if (now_ms() > end)
			return -ETIMEDOUT;
		ev_run(loop, EVRUN_ONCE);
	}
	return 0;
}

/* A loop that must turn while nothing else is due: ev_run(ONCE) waits for
 * an event, and the steps poll a pool's counters that no watcher reports. */
static void tick(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l, (void)w, (void)revents;
}

static int both_settled(void *arg)
{
	struct end *c = arg, *s = &L.srv[c - L.cli];

	return c->gone || (c->up && (s->up || s->gone));
}

static int conn_gone(void *arg)
{
	return ((struct end *)arg)->gone;
}

/* Connects the client side of connection i; 0 when both sides are up. */
static int connect_one(int i, const struct ez_conn_opts *base)
{
	struct ez_conn_opts o = *base;
	struct end *c = &L.cli[i], *s = &L.srv[i];

	o.private_data = &conn_tag[i];
	o.private_data_len = 1;
	if (ez_connect(ctx, L.addr, L.port, &o, &cli_cbs, c, &c->conn)) {
		c->gone = 1;
		snprintf(c->why, sizeof(c->why), "ez_connect: %s", ez_errmsg());
		return -1;
	}
	if (wait_for(both_settled, c)) {
		snprintf(c->why, sizeof(c->why), "not connected in %.0f s", STEP_S);
		return -1;
	}
	if (c->gone || s->gone)
		return -1;
	return 0;
}

struct op {
	int done, status;
	uint64_t old;
};

static void op_done(struct ez_conn *conn, int status, void *arg)
{
	struct op *op = arg;

	(void)conn;
	op->done = 1;
	op->status = status;
}

static void atomic_done(struct ez_conn *conn, int status, uint64_t old, void *arg)
{
	struct op *op = arg;

	op->old = old;
	op_done(conn, status, arg);
}

static int op_settled(void *arg)
{
	return ((struct op *)arg)->done;
}

static int echoes_in(void *arg)
{
	struct end *e = arg;

	return e->gone || e->echoed + e->bad >= e->sent;
}

static int verdict_in(void *arg)
{
	struct end *e = arg;

	return e->gone || e->verdict;
}

static int burst_held(void *arg)
{
	struct end *e = arg;

	return e->gone || e->nheld == BURST;
}

static int limit_seen(void *arg)
{
	struct ez_srqpool_stats st;

	(void)arg;
	return ez_srqpool_stats(L.pool, &st) || st.limit_events > 0;
}

/* Waits for an op; "" when it ended with 0, else why not. */
static const char *op_wait(int ret, struct op *op, const char *what, char *why, size_t len)
{
	if (ret)
		snprintf(why, len, "%s: %s", what, ez_errmsg());
	else if (wait_for(op_settled, op))
		snprintf(why, len, "%s: no completion in %.0f s", what, STEP_S);
	else if (op->status)
		snprintf(why, len, "%s: %s (%s)", what, ez_strerror(-op->status),
			 ez_conn_errmsg(L.cli[CONN_A].conn));
	else
		*why = 0;
	return why;
}

/* ------------------------------------------------------------------ */
/* The steps                                                           */
/* ------------------------------------------------------------------ */

static const char *mech_str(uint32_t m)
{
	return m == EZ_EXPORT_MW2 ? "a type-2 memory window (EZ_EXPORT_MW2)" :
	       m == EZ_EXPORT_PD ? "the connection's own PD (EZ_EXPORT_PD)" : "none";
}

static const char *sport_mech_str(enum ez_sport_mech m)
{
	return m == EZ_SPORT_MECH_MLX5DV ? "mlx5dv" : m == EZ_SPORT_MECH_FLOW_LABEL ?
	       "flow label" : "none";
}

static int step_connect(void)
{
	struct ez_conn_opts o = { .max_msg_size = LARGE };
	struct ez_conn_info in;
	double t0 = now_ms();

	if (connect_one(CONN_A, &o)) {
		verdict("FAIL", "connect", "%s port %s: %s", L.addr, L.port,
			L.cli[CONN_A].why[0] ? L.cli[CONN_A].why : L.srv[CONN_A].why);
		return -1;
	}
	if (ez_conn_info(L.cli[CONN_A].conn, &in)) {
		verdict("FAIL", "connect", "ez_conn_info: %s", ez_errmsg());
		return -1;
	}
	verdict("PASS", "connect", "%s port %u to %s port %s in %.1f ms: QP %u to QP %u, path MTU %d, "
		"source port %u (%s), max inline %u, exports by %s", in.device, in.port, L.addr, L.port,
		now_ms() - t0, in.qp_num, in.remote_qp_num, 128 << in.path_mtu, in.udp_sport,
		sport_mech_str(in.sport_mech), in.max_inline, mech_str(in.export_mech));
	return 0;
}

static int more_echoes(void *arg)
{
	struct end *e = arg;

	return e->gone || e->echoed + e->bad > e->mark;
}

/* NMSG echoes of 5..SMALL_MAX bytes, WINDOW of them in flight. */
static void step_messages(void)
{
	static uint8_t out[SMALL_MAX];
	struct end *c = &L.cli[CONN_A];
	double t0 = now_ms();

	while (c->echoed + c->bad < NMSG && !c->gone) {
		while (c->sent < NMSG && c->sent - (c->echoed + c->bad) < WINDOW) {
			if (send_tagged(c->conn, MSG_ECHO, c->sent, out, echo_len(c->sent))) {
				verdict("FAIL", "messages", "ez_send of message %u: %s", c->sent + 1,
					ez_errmsg());
				return;
			}
			c->sent++;
		}
		c->mark = c->echoed + c->bad;
		if (wait_for(more_echoes, c)) {
			verdict("FAIL", "messages", "%u of %u echoes back in %.0f s", c->mark, c->sent,
				STEP_S);
			return;
		}
	}
	if (c->gone)
		verdict("FAIL", "messages", "%u of %u echoes back: %s", c->echoed + c->bad, NMSG, c->why);
	else if (c->bad)
		verdict("FAIL", "messages", "%u of %u echoes differed from what was sent", c->bad, NMSG);
	else
		verdict("PASS", "messages", "%u echoed (5..%u bytes, %u in flight), every byte as sent, "
			"%.1f ms", NMSG, SMALL_MAX, WINDOW, now_ms() - t0);
}

static void step_large(void)
{
	struct end *c = &L.cli[CONN_A];
	uint8_t *big = malloc(LARGE);
	uint32_t before = c->echoed;
	double t0 = now_ms();

	if (!big) {
		verdict("FAIL", "large message", "malloc(%u): out of memory", LARGE);
		return;
	}
	c->sent++;
	if (send_tagged(c->conn, MSG_ECHO, LARGE, big, LARGE))
		verdict("FAIL", "large message", "ez_send(%u bytes): %s", LARGE, ez_errmsg());
	else if (wait_for(echoes_in, c) || c->gone)
		verdict("FAIL", "large message", "no echo of %u bytes: %s", LARGE,
			c->gone ? c->why : "timed out");
	else if (c->echoed != before + 1)
		verdict("FAIL", "large message", "the echo of %u bytes differed from what was sent",
			LARGE);
	else
		verdict("PASS", "large message", "%u bytes each way (rendezvous), every byte as sent, "
			"%.1f ms", LARGE, now_ms() - t0);
	free(big);
}

/* Connection C receives from a shared pool armed at POOL_WATERMARK; the
 * server holds a burst, so fewer than that stay posted and the device must
 * raise IBV_EVENT_SRQ_LIMIT_REACHED, on which the pool lives. */
static void step_srq_limit(const char *dev)
{
	struct ez_srqpool_opts po = { .buf_size = 64, .nbufs = POOL_BUFS,
				      .low_watermark = POOL_WATERMARK, .expected_conns = 1 };
	struct ez_conn_opts o = { .max_msg_size = 64 };
	struct ez_srqpool_stats st;
	struct end *c = &L.cli[CONN_C], *s = &L.srv[CONN_C];
	uint8_t m[64];
	uint32_t n = 0;

	if (ez_srqpool_new(ctx, dev, &po, &L.pool)) {
		verdict("FAIL", "srq limit event", "ez_srqpool_new(%s): %s", dev, ez_errmsg());
		return;
	}
	if (connect_one(CONN_C, &o)) {
		verdict("FAIL", "srq limit event", "connect: %s", c->why[0] ? c->why : s->why);
		return;
	}
	s->hold = 1;
	while (n < BURST && !send_tagged(c->conn, MSG_HOLD, n, m, sizeof(m)))
		n++;
	if (n < BURST) {
		verdict("FAIL", "srq limit event", "ez_send %u of %u: %s", n + 1, BURST, ez_errmsg());
	} else if (wait_for(burst_held, s) || s->gone) {
		verdict("FAIL", "srq limit event", "%u of %u messages arrived: %s", s->nheld, BURST,
			s->gone ? s->why : "timed out");
	} else if (wait_for(limit_seen, NULL) || ez_srqpool_stats(L.pool, &st) || !st.limit_events) {
		ez_srqpool_stats(L.pool, &st);
		verdict("FAIL", "srq limit event", "no IBV_EVENT_SRQ_LIMIT_REACHED in %.0f s with %llu of "
			"%u buffers posted under srq_limit %u: the pool would refill only on release",
			STEP_S, (unsigned long long)st.posted, POOL_BUFS, POOL_WATERMARK);
	} else {
		verdict("PASS", "srq limit event", "%u messages held, %llu of %u buffers posted under "
			"srq_limit %u: %llu event(s), refills %llu", BURST,
			(unsigned long long)st.lowest_posted, POOL_BUFS, POOL_WATERMARK,
			(unsigned long long)st.limit_events, (unsigned long long)st.refills);
	}
	s->hold = 0;
	for (uint32_t i = 0; i < s->nheld; i++)
		ez_buf_release(s->held[i]);
	s->nheld = 0;
	end_close(c);
	wait_for(conn_gone, c);
	wait_for(conn_gone, s);
}

/* The server exports a slice of its region to connection A alone. */
static int step_export(const char *dev)
{
	unsigned int acc = EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE |
			   (L.atomics ? EZ_MR_REMOTE_ATOMIC : 0);
	struct ez_conn_info in = { 0 };

	L.region = calloc(1, REGION);
	L.local = calloc(1, EXPORT_LEN);
	if (!L.region || !L.local) {
		verdict("FAIL", "export", "calloc: out of memory");
		return -1;
	}
	fill(L.region, REGION, 7);
	if (ez_mr_reg(ctx, dev, L.region, REGION, acc, &L.region_mr) ||
	    ez_mr_reg(ctx, dev, L.local, EXPORT_LEN, 0, &L.local_mr)) {
		verdict("FAIL", "export", "ez_mr_reg(%s): %s", dev, ez_errmsg());
		return -1;
	}
	if (ez_conn_export(L.srv[CONN_A].conn, L.region_mr, EXPORT_OFF, EXPORT_LEN, acc, &L.key)) {
		verdict("FAIL", "export", "ez_conn_export: %s", ez_errmsg());
		return -1;
	}
	ez_conn_info(L.srv[CONN_A].conn, &in);
	verdict("PASS", "export", "[%u, +%u) of a %u-byte region to connection A alone, by %s, "
		"key 0x%x", EXPORT_OFF, EXPORT_LEN, REGION, mech_str(in.export_mech), L.key.rkey);
	return 0;
}

/* Sends a check message and waits for the server's verdict on it. */
static int server_agrees(uint8_t type, uint64_t v)
{
	struct end *s = &L.srv[CONN_A];
	uint8_t m[16] = { type };

	memcpy(m + 1, &v, 8);
	s->verdict = 0;
	if (ez_send(L.cli[CONN_A].conn, m, sizeof(m), NULL, NULL) || wait_for(verdict_in, s))
		return 0;
	return s->verdict == 1;
}

static void step_read_write(void)
{
	struct ez_conn *conn = L.cli[CONN_A].conn;
	struct op r = { 0 }, w = { 0 };
	char why[320];

	op_wait(ez_read(conn, L.local_mr, 0, EXPORT_LEN, &L.key, 0, op_done, &r), &r, "ez_read",
		why, sizeof(why));
	if (*why)
		verdict("FAIL", "rdma read", "%s", why);
	else if (memcmp(L.local, L.region + EXPORT_OFF, EXPORT_LEN))
		verdict("FAIL", "rdma read", "%u bytes read differ from the exported ones", EXPORT_LEN);
	else
		verdict("PASS", "rdma read", "%u bytes, every byte as exported", EXPORT_LEN);

	fill(L.local, EXPORT_LEN, 8);
	op_wait(ez_write(conn, L.local_mr, 0, EXPORT_LEN, &L.key, 0, op_done, &w), &w, "ez_write",
		why, sizeof(why));
	if (*why)
		verdict("FAIL", "rdma write", "%s", why);
	else if (!server_agrees(MSG_BYTES, 8))
		verdict("FAIL", "rdma write", "the server's region does not hold the %u bytes written",
			EXPORT_LEN);
	else
		verdict("PASS", "rdma write", "%u bytes, the server's region holds every byte",
			EXPORT_LEN);
}

static void step_atomics(void)
{
	struct ez_conn *conn = L.cli[CONN_A].conn;
	volatile uint64_t *word = (volatile uint64_t *)(L.region + EXPORT_OFF);
	struct op cas = { 0 }, add = { 0 };
	char why[320];

	if (!L.atomics) {
		verdict("SKIP", "atomics", "the device has no RDMA atomics (IBV_ATOMIC_NONE)");
		return;
	}
	*word = 41;
	op_wait(ez_atomic_cas(conn, &L.key, 0, 41, 1000, atomic_done, &cas), &cas,
		"ez_atomic_cas", why, sizeof(why));
	if (!*why)
		op_wait(ez_atomic_fadd(conn, &L.key, 0, 5, atomic_done, &add), &add,
			"ez_atomic_fadd", why, sizeof(why));
	if (*why)
		verdict("FAIL", "atomics", "%s", why);
	else if (cas.old != 41 || add.old != 1000)
		verdict("FAIL", "atomics", "old values %llu and %llu, not 41 and 1000",
			(unsigned long long)cas.old, (unsigned long long)add.old);
	else if (!server_agrees(MSG_WORD, 1005))
		verdict("FAIL", "atomics", "the server's word is %llu, not 1005",
			(unsigned long long)*word);
	else
		verdict("PASS", "atomics", "CAS 41 -> 1000 and FADD +5: old values 41 and 1000, the "
			"server's word 1005");
}

/* A read that must be refused; the line says whose RDMA request ended how. */
static void expect_refused(const char *name, int i, const struct ez_rkey *key, const char *what)
{
	struct end *c = &L.cli[i], *s = &L.srv[i];
	struct op r = { 0 };
	int ret = ez_read(c->conn, L.local_mr, 0, 4096, key, 0, op_done, &r);

	if (ret) {
		verdict("FAIL", name, "ez_read: %s", ez_errmsg());
		return;
	}
	if (wait_for(op_settled, &r)) {
		verdict("FAIL", name, "no completion in %.0f s", STEP_S);
		return;
	}
	wait_for(conn_gone, s);
	if (!r.status)
		verdict("FAIL", name, "%s SUCCEEDED: the device let it through, so regions exported "
			"with ez_conn_export() are not confined (see SECURITY in easyrdma(7); "
			"EZ_CTX_EXPORT_PD)", what);
	else
		verdict("PASS", name, "%s refused by the device (%s); the server ended that "
			"connection: %s", what, ez_strerror(-r.status), s->gone ? s->why : "(not yet)");
}

static void step_other_conn(void)
{
	struct ez_conn_opts o = { 0 };

	if (connect_one(CONN_B, &o)) {
		verdict("FAIL", "other connection refused", "connect: %s",
			L.cli[CONN_B].why[0] ? L.cli[CONN_B].why : L.srv[CONN_B].why);
		return;
	}
	expect_refused("other connection refused", CONN_B, &L.key,
		       "a READ of connection A's export from connection B");
}

/* A key that claims 4 KiB before the export too, as a hostile peer would
 * forge it: the library cannot know, the device must refuse. */
static void step_range(void)
{
	struct ez_rkey forged = L.key;

	forged.addr -= 4096;
	forged.len += 4096;
	expect_refused("outside the range refused", CONN_A, &forged,
		       "a READ of the 4 KiB before the export, with its key");
}

static void end_all(void)
{
	for (int i = 0; i < NCONN; i++) {
		end_close(&L.cli[i]);
		if (L.cli[i].conn)
			wait_for(conn_gone, &L.cli[i]);
		if (L.srv[i].conn)
			wait_for(conn_gone, &L.srv[i]);
	}
	if (L.lis)
		ez_listener_close(L.lis);
	if (L.pool && ez_srqpool_free(L.pool))
		verdict("FAIL", "teardown", "ez_srqpool_free: %s", ez_errmsg());
	if (L.region_mr && ez_mr_dereg(L.region_mr))
		verdict("FAIL", "teardown", "ez_mr_dereg: %s", ez_errmsg());
	if (L.local_mr && ez_mr_dereg(L.local_mr))
		verdict("FAIL", "teardown", "ez_mr_dereg: %s", ez_errmsg());
	free(L.region);
	free(L.local);
}

static void skip_rest(const char *why)
{
	static const char *const rest[] = { "messages", "large message", "export", "rdma read",
					     "rdma write", "atomics", "srq limit event",
					     "other connection refused", "outside the range refused" };

	for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
		verdict("SKIP", rest[i], "%s", why);
}

static int device_atomics(const char *name)
{
	for (int i = 0; i < ndevs; i++)
		if (!strcmp(devs[i].name, name))
			return devs[i].atomics;
	return 0;
}

/* One loopback on addr; the MRs and the pool go on the device the
 * connection landed on. */
static void loopback(const char *addr)
{
	struct ez_conn_info in;
	ev_timer t;

	memset(&L, 0, sizeof(L));
	L.addr = addr;
	ev_timer_init(&t, tick, 0.01, 0.01);
	ev_timer_start(loop, &t);
	printf("loopback on %s:\n", addr);
	if (ez_listen(ctx, addr, "0", NULL, on_request, NULL, &L.lis)) {
		verdict("FAIL", "listen", "%s: %s", addr, ez_errmsg());
		skip_rest("no listener");
		goto out;
	}
	snprintf(L.port, sizeof(L.port), "%u", ez_listener_port(L.lis));
	if (step_connect() || ez_conn_info(L.cli[CONN_A].conn, &in)) {
		skip_rest("not connected");
		goto out;
	}
	L.atomics = device_atomics(in.device);
	step_messages();
	step_large();
	if (step_export(in.device)) {
		verdict("SKIP", "rdma read", "nothing exported");
		verdict("SKIP", "rdma write", "nothing exported");
		verdict("SKIP", "atomics", "nothing exported");
	} else {
		step_read_write();
		step_atomics();
	}
	step_srq_limit(in.device);
	if (L.key.rkey) {
		step_other_conn();
		step_range();
	} else {
		verdict("SKIP", "other connection refused", "nothing exported");
		verdict("SKIP", "outside the range refused", "nothing exported");
	}
out:
	end_all();
	ev_timer_stop(loop, &t);
}

int ezrdma_check(int argc, char **argv)
{
	const char *only_dev = NULL, *only_addr = NULL;
	struct ibv_device **list;
	int n, opt, tried = 0;

	optind = 1;
	while ((opt = getopt(argc, argv, "d:a:")) != -1) {
		switch (opt) {
		case 'd': only_dev = optarg; break;
		case 'a': only_addr = optarg; break;
		default:
			fprintf(stderr, "usage: ezrdma check [-d DEVICE] [-a ADDRESS]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ezrdma check: easyrdma %s\n", ez_version());
	loop = EV_DEFAULT;
	list = ibv_get_device_list(&n);
	if (!list || !n) {
		verdict("FAIL", "devices", "ibv_get_device_list(): %s",
			list ? "no RDMA device" : strerror(errno));
		n = 0;
	}
	if (ez_ctx_new(loop, 0, &ctx)) {
		fprintf(stderr, "ezrdma check: ez_ctx_new: %s\n", ez_errmsg());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char addr[INET6_ADDRSTRLEN], why[128];

		if (only_dev && strcmp(only_dev, ibv_get_device_name(list[i])))
			continue;
		tried++;
		if (print_caps(list[i], addr, sizeof(addr), why, sizeof(why)) || only_addr)
			continue;
		if (*addr) {
			loopback(addr);
		} else {
			printf("loopback on %s:\n", ibv_get_device_name(list[i]));
			verdict("SKIP", "loopback", "%s", why);
		}
	}
	if (only_addr)
		loopback(only_addr);
	if (only_dev && !tried)
		verdict("FAIL", "devices", "no device named %s", only_dev);
	if (list)
		ibv_free_device_list(list);
	if (ez_ctx_free(ctx))
		verdict("FAIL", "teardown", "ez_ctx_free: %s", ez_errmsg());
	printf("ezrdma check: %u passed, %u failed, %u skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
