/* path.h: the paths (RC QPs) of a multi-path connection: the extra QPs, their ladder, the choice per op, a path's failure. */
#ifndef EZ_CONN_PATH_H
#define EZ_CONN_PATH_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "conn_types.h"
#include "wire/handshake.h"
#include "wire/settle.h"

/* Index of the path whose QP is qpn (0 if none). */
unsigned int path_index(const struct ez_conn *conn, uint32_t qpn);

/* The path array (o.paths entries; npaths of them in use), path 0 unbound. */
int path_alloc(struct ez_conn *conn);
void path_free(struct ez_conn *conn);
/* The paths a request asks for and the ones this side grants: min of both. */
void path_grant(struct ez_conn *conn, const struct hs_msg *peer);

/* QP 0, path 0's, created with ia (without inline data if the device
 * refuses that much: ia says what it got) and registered under ops0
 * (conn_qp.c's conn_qp_ops). 0 or -errno (ez_errmsg() says). */
int path_create_first(struct ez_conn *conn, struct ibv_qp_init_attr *ia,
		      const struct device_qp_ops *ops0);
/* QP 0 to ERR (the teardown): 0 once there, 1 with nothing to move (none,
 * or still in RESET), -errno (logged). */
int path_first_to_err(struct ez_conn *conn);
/* After QP 0 exists: binds path 0, creates paths 1..npaths-1 with ia and
 * registers each with the device under ops (conn_qp.c's path_qp_ops); a
 * path 0 made again is registered as QP 0 was, under ops0 (conn_qp_ops). */
int path_create(struct ez_conn *conn, struct ibv_qp_init_attr *ia,
		const struct device_qp_ops *ops, const struct device_qp_ops *ops0);
/* QP 0 just took these attributes to INIT, RTR or RTS: the extra paths follow
 * with their own remote QP, PSNs and port. */
int path_modify(struct ez_conn *conn, const struct ibv_qp_attr *a, int mask);
/* Path 0's RTS done: the mlx5 ports of the extra paths (QP in RTS). */
int path_after_rts(struct ez_conn *conn);
/* Active side, from the reply: npaths = what was granted; surplus QPs go. */
int path_take_reply(struct ez_conn *conn, const struct hs_msg *rep);
/* Our path block in a handshake (nothing for a single path). */
void path_hs_fill(const struct ez_conn *conn, struct hs_msg *m);

/* The live path with the least work outstanding; ties go round-robin. */
struct conn_path *path_pick(struct ez_conn *conn);

/* A send-queue completion with status != 0 on a multi-path connection.
 * Returns the status the op completes with; takes the path out when the
 * error is its own (not a flush of a close or of a path already down), and
 * returns 1 in *conn_fails when it was the last one. */
int path_on_error(struct ez_conn *conn, struct op *op, int status, int *conn_fails);
/* The peer took path idx out: so do we (its QP may never time out here).
 * count: with exact failover, the peer's count of receives on the path;
 * then the path, for the caller's settling (conn_settle_path()); else NULL. */
struct conn_path *path_on_peer_down(struct ez_conn *conn, unsigned int idx, uint32_t count);

/* How long after telling its count this side waits for the peer's (one
 * loop pass of the peer's after ours arrives; generous for a loaded host):
 * a peer that never tells would hold the failed path's ops for ever. */
#define PATH_COUNT_WAIT_MS 30000u

/* Our count of a failed path goes to the peer once the device has flushed
 * the path's receive side (IBV_EVENT_QP_LAST_WQE_REACHED: no receive
 * completes on it after that, so none the peer saw acknowledged can be
 * left out), or this long after the path went down where the device does
 * not send that event (Soft-RoCE 6.1, which completes nothing after the
 * move to ERR returns; as conn.c's DRAIN_FALLBACK_MS). */
#define PATH_LAST_WQE_WAIT_MS 100u

/* Exact failover (conn->paths_exact; wire/settle.h). A send-queue
 * completion in error: 1 when op is held on its failed path until the
 * peer's count settles it (the path taken down now if it was live); 0
 * when it completes as without exact failover (the connection ends). */
int path_park(struct ez_conn *conn, struct op *op, int status);
/* Settling p (the caller, msg.c, ends each op): 1 when the peer's count
 * is in and every WR of p completed, the count being true (else the
 * connection ends, -EPROTO, naming it); then path_settle_next() hands each
 * held op in posting order with its action (wire/settle.h) and the status
 * it ends with when that is SETTLE_FAIL, NULL after the last. */
int path_settle_begin(struct ez_conn *conn, struct conn_path *p);
struct op *path_settle_next(struct ez_conn *conn, struct conn_path *p, enum settle_action *a,
			    int *status);
/* The connection ends: the held ops, one by one, with the status each ends
 * with (its completion's); NULL after the last. */
struct op *path_unpark_next(struct ez_conn *conn, int *status);

/* n more WRs on p that take a receive at the peer. */
static inline void path_count_tx(struct conn_path *p, uint32_t n)
{
	p->fo.tx += n;
}

/* A receive completed on QP qpn of an exact-failover connection: counted
 * on its path; 1 when it must be dropped (our count for the path went to
 * the peer, which sends it again on another). */
static inline int path_rx_drop(struct ez_conn *conn, uint32_t qpn)
{
	struct conn_path *p = &conn->paths[path_index(conn, qpn)];

	if (p->fo.told) {
		p->fo.dropped++;
		return 1;
	}
	p->fo.rx++;
	return 0;
}
/* IBV_EVENT_QP_FATAL and kin on one of the connection's QPs; 1: the
 * connection must end (single path, or its last). */
int path_on_qp_event(struct ez_conn *conn, uint32_t qpn, int status);
/* IBV_EVENT_QP_LAST_WQE_REACHED on qpn: 1 once every QP has drained. */
int path_on_last_wqe(struct ez_conn *conn, uint32_t qpn);

/* A goodbye down every live path, behind its work; the count posted. */
int path_post_byes(struct ez_conn *conn);
/* Extra QPs to ERR (QP 0 is conn.c's). */
void path_teardown(struct ez_conn *conn);
/* Extra QPs destroyed (their completions already dispatched). */
/* Every path's QP destroyed, path 0's last; 1 when there was a QP 0 (its
 * receives flushed since the caller's last poll may be in the CQ). */
int path_destroy(struct ez_conn *conn);

void path_info(const struct ez_conn *conn, struct ez_conn_info *info);
/* Path i (< npaths) as ez_conn_path_info() reports it, but what only the
 * connection knows (path 0's peer QP and source port, the device, our
 * GID): the caller's. */
void path_info_one(const struct ez_conn *conn, uint32_t i, struct ez_path_info *out);

/* A failed path made again (exact failover; rebuild.c runs the exchange).
 * Whether p may be: down, its ops settled and both counts told. Path 0
 * too: its new QP is QP 0 from then on (conn_qp0()); the CM id keeps the
 * connection's identity (rdma_cm never owned the QP: the library made it
 * and walks it itself). */
int path_can_reopen(const struct ez_conn *conn, const struct conn_path *p);
/* Its old QP destroyed (the caller polled the receive CQ first, outside
 * any poll), a new one created as the first was and brought to INIT; the
 * path's counts start again. 0 or -errno (ez_errmsg() says); on an error
 * the path has no QP (path 0: nor the connection a QP 0) until the next
 * try. */
int path_reopen(struct ez_conn *conn, struct conn_path *p);
/* The new QP to RTR towards remote_qpn (its first PSN rq_psn) and RTS
 * (ours sq_psn), with the path's UDP source port. */
int path_reconnect(struct ez_conn *conn, struct conn_path *p, uint32_t remote_qpn,
		   uint32_t rq_psn, uint32_t sq_psn);
/* The path carries traffic again. */
void path_up(struct ez_conn *conn, struct conn_path *p);

/* Every live path taken down with status (the peer not told: a resume, or
 * a port or keepalive loss, says it); the last hands over to resume.c. */
void path_take_all_down(struct ez_conn *conn, int status);
/* A loss that would end the connection (its port down, keepalive): 1 when
 * the session resumes instead (every path taken down now, why logged) or
 * is resuming already, else 0 and the caller ends it. */
int path_lose_all(struct ez_conn *conn, int status, const char *why);

/* Session resume (resume.c runs the exchange; path 0 comes back on a new
 * QP, and the other paths are made again as after any failure):
 * whether path 0's old QP is done (no path live, its WRs all completed,
 * its receive side flushed or PATH_LAST_WQE_WAIT_MS past), so its count is
 * final (the caller polls the receive CQ first); */
int path_resume_ready(const struct ez_conn *conn, uint64_t now);
/* that count, which the resume message carries; */
uint32_t path_resume_count_of(const struct ez_conn *conn);
/* path 0's old QP destroyed and a new one at INIT, its old counts and held
 * ops kept (0 or -errno, ez_errmsg() says); */
int path_resume_reopen(struct ez_conn *conn);
/* the peer's count of the old QP, checked against what was sent there
 * (-EPROTO, the connection's errmsg saying why) and kept for the settle;
 * path 0's counts are the new QP's from here; */
int path_resume_count(struct ez_conn *conn, uint32_t peer_count);
/* path 0 live again (its new QP in RTS on both sides); */
void path_resume_up(struct ez_conn *conn);
/* then each op the old QP held, as path_settle_next(). */
struct op *path_resume_settle_next(struct ez_conn *conn, enum settle_action *a, int *status);

/* Test hook: moves the path's QP to ERR and handles it as the device's
 * IBV_EVENT_QP_FATAL on it (path down, or the connection's end for the last). */
int path_test_break(struct ez_conn *conn, unsigned int path);

/* Test hooks: the wait for the peer's count (wait_ms; 0: unchanged, for
 * every connection), and conn keeping its own counts (mute: a peer that
 * never tells). */
void path_test_count_wait(struct ez_conn *conn, uint32_t wait_ms, int mute);

#endif
