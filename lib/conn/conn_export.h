/* conn_export.h: per-connection remote access (conn_export.c): regions exported to one connection as memory windows bound to its QP, the QPs' remote access flags, the report of a peer's refused RDMA request. */
#ifndef EZ_CONN_CONN_EXPORT_H
#define EZ_CONN_CONN_EXPORT_H

#include "conn_fsm.h"
#include "conn_types.h"

/* The IBV_ACCESS_REMOTE_* a QP of conn may have now: what was exported to
 * it and what the context's shared MRs grant. The one gate of remote
 * access: a keyed listener's "nothing before the proof" joins it here. */
int conn_access_flags(const struct ez_conn *conn);
/* Brings every live path's QP (in RTS) to conn_access_flags(): an RTS->RTS
 * modify of IBV_QP_ACCESS_FLAGS through qpfsm, only when they differ.
 * 0, or -errno with conn->errmsg set. */
int conn_access_apply(struct ez_conn *conn);
/* Adds access (EZ_MR_REMOTE_*) to what the connection's QPs admit, through
 * windows bound to them only (a large message's window: rndv.c), and
 * applies it; 0 when they admitted it already. */
int conn_access_grant(struct ez_conn *conn, unsigned int access);
/* Records the flags a path's QP was given at INIT. */
void conn_access_set_init(struct ez_conn *conn, int flags);
/* A shared MR with access was registered: every connected QP admits it. */
void ctx_shared_access_add(struct ez_ctx *ctx, unsigned int access);
/* Frees every window exported to conn (at its teardown, before its QPs
 * are destroyed: a bound type-2 window holds its QP). */
void conn_exports_drop(struct ez_conn *conn);
/* The windows exported on conn that are bound to path idx's QP. While
 * any is, the path is not made again after a failure (rebuild.c): the
 * peer's key names the path, and its ops would reach a new QP the window
 * is not bound to, which the responder refuses as an access violation. */
uint32_t conn_exports_on_path(const struct ez_conn *conn, unsigned int idx);
/* The connection is ending or a send was flushed: if a live QP is in ERR
 * although the library never moved it there, the responder refused one of
 * the peer's RDMA requests (bad key, another connection's window, an
 * access it was not given, outside the region): the connection ends with
 * -EACCES naming the peer, which is logged and counted against its
 * address. Returns 1 when it did. */
int conn_access_check(struct ez_conn *conn);
/* The two halves of conn_access_check(), for a caller that must drain the
 * CQs between them: conn_access_suspect() returns the first live path of
 * a connected conn whose QP is in ERR where the library's view is not
 * (NULL when none); conn_access_report() ends conn with that -EACCES. */
struct conn_path *conn_access_suspect(struct ez_conn *conn);
void conn_access_report(struct ez_conn *conn, const struct conn_path *p);

/* Regions given with the connection (ez_conn_opts.exports, wire/exports.h).
 * At ez_connect()/ez_accept(): checks each region against its MR (range,
 * access, context), copies the array and holds the MRs (ez_mr_dereg()
 * refuses until they are bound or the connection ends). 0 or -errno. */
int conn_exports_take(struct ez_conn *conn, const struct ez_conn_opts *o);
/* The same checks once the connection has its device (and, with a QP,
 * the device's means of confining them). 0 or -errno. */
int conn_exports_check_device(struct ez_conn *conn);
/* The connection ended: the MRs not yet bound are let go. */
void conn_exports_end(struct ez_conn *conn);
/* The handle is freed: the copies and keys go. */
void conn_exports_free(struct ez_conn *conn);
/* Our handshake's bits: HS_CAP_EXPORTS always, HS_CAP_EXPORTS_SENT when
 * we give regions. */
void conn_exports_hs_caps(const struct ez_conn *conn, uint16_t *caps);
/* The peer's handshake bits: whether its exports message is due; a peer
 * that cannot take ours is -EPROTONOSUPPORT (conn->errmsg set). */
int conn_exports_peer_caps(struct ez_conn *conn, uint16_t caps);
/* In place of conn_fire(conn, ev) where ev brings the connection up on
 * this side (REPLY_OK, RTU, PROOF_OK): binds and posts ours first (once),
 * then fires ev, or CE_EXPORTS_DUE while the peer's have not come. */
void conn_up_after_exports(struct ez_conn *conn, enum conn_event ev);
/* The peer's exports message (recv.c, after rx_check()): its keys kept
 * for ez_conn_peer_exports(). 0, or the connection ended (-EPROTO naming
 * the fault, -ENOMEM). The caller fires CE_EXPORTS_IN. */
int conn_exports_on_msg(struct ez_conn *conn, const void *data, uint32_t len);

#endif
