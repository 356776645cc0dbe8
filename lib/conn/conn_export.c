/* conn_export.c: ez_conn_export/ez_conn_revoke: a region reachable through one connection only (a type-2 memory window bound to its QP); the QPs' remote access flags; a peer's refused RDMA request found and reported. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_export.h"
#include "conn_handle.h"
#include "conn_fsm.h"
#include "conn_pd.h"
#include "ctx.h"
#include "sendq.h"
#include "base/log.h"
#include "device/mr.h"
#include "peer_penalty.h"
#include "wire/exports.h"
#include "wire/handshake.h"

#define REMOTE (EZ_MR_REMOTE_READ | EZ_MR_REMOTE_WRITE | EZ_MR_REMOTE_ATOMIC)

/* One region exported to one connection: a window bound to its QP over a
 * registration of exactly the region (mw_alloc), or on a connection with
 * its own PD a registration of exactly the region there (copy). The window first
 * (the MR's list links it), the copy second (container_of). */
struct conn_export {
	struct mw w;
	struct mr_copy copy;
	struct ez_conn *conn;
	struct conn_export *next;	/* the connection's */
	struct ez_rkey key;
};

static int ibv_remote(unsigned int access)
{
	return ((access & EZ_MR_REMOTE_READ) ? IBV_ACCESS_REMOTE_READ : 0) |
	       ((access & EZ_MR_REMOTE_WRITE) ? IBV_ACCESS_REMOTE_WRITE : 0) |
	       ((access & EZ_MR_REMOTE_ATOMIC) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
}

int conn_access_flags(const struct ez_conn *conn)
{
	/* A keyed listener's connection before the proof: nothing at all. */
	if (conn->remote_closed)
		return 0;
	/* A connection with its own PD does not reach the context's shared
	 * MRs (they are on the device's PD): only what it was given. */
	if (conn->own_pd)
		return ibv_remote(conn->ex.access);
	return ibv_remote(conn->ex.access | conn->ctx->shared_access);
}

void conn_access_set_init(struct ez_conn *conn, int flags)
{
	for (uint32_t i = 0; i < conn->npaths; i++)
		conn->paths[i].qp_access = flags;
}

static struct qpfsm_qp_view *view_of(struct ez_conn *conn, struct conn_path *p)
{
	(void)conn;
	return &p->qpv;
}

int conn_access_apply(struct ez_conn *conn)
{
	int want = conn_access_flags(conn), ret;

	for (uint32_t i = 0; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];
		struct ibv_qp_attr a = { .qp_access_flags = (unsigned int)want };

		if (!p->qp || !p->live || p->qp_access == want ||
		    view_of(conn, p)->state != IBV_QPS_RTS)
			continue;
		ret = qpfsm_modify(p->qp, &conn->dev->lim, view_of(conn, p), &a,
				   IBV_QP_ACCESS_FLAGS);
		if (ret)
			return ezi_fail(ret, "QP %u (path %u): remote access 0x%x: %s", p->qpn, p->idx,
					want, ez_errmsg());
		p->qp_access = want;
	}
	return 0;
}

int conn_access_grant(struct ez_conn *conn, unsigned int access)
{
	if ((conn->ex.access | access) == conn->ex.access)
		return 0;
	conn->ex.access |= access;
	return conn_access_apply(conn);
}

void ctx_shared_access_add(struct ez_ctx *ctx, unsigned int access)
{
	if ((ctx->shared_access | access) == ctx->shared_access)
		return;
	ctx->shared_access |= access;
	for (struct ez_conn *c = ctx->conns; c; c = c->next)
		if (c->state == CS_CONNECTED && conn_access_apply(c))
			ezi_log_err("connection %s: shared MR access not applied: %s", c->host,
				    ez_errmsg());
}

static void export_unlink(struct conn_export *e)
{
	struct ez_conn *conn = e->conn;
	struct conn_export **pp;

	for (pp = &conn->ex.list; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			conn->ex.n--;
			break;
		}
}

static void export_free(struct conn_export *e)
{
	export_unlink(e);
	mw_free(&e->w);
	mr_copy_dereg(&e->copy);
	free(e);
}

/* ez_mr_dereg: the MR goes, and its windows with it. */
static void export_mr_gone(struct mw *w)
{
	export_free(container_of(w, struct conn_export, w));
}

/* The same for an export registered on the connection's own PD. */
static void export_copy_gone(struct mr_copy *c)
{
	export_free(container_of(c, struct conn_export, copy));
}

void conn_exports_drop(struct ez_conn *conn)
{
	while (conn->ex.list)
		export_free(conn->ex.list);
}

/* What an MR region must be to be exported, whoever asks (who: the
 * caller's words, "ez_conn_export", "ez_conn_opts.exports[2]"); the
 * device's part only once the connection has one. */
static int region_check(const struct ez_conn *conn, const char *who, const struct ez_mr *mr,
			uint64_t off, uint64_t len, unsigned int access)
{
	if (mr->dead)
		return ezi_fail(-EBADF, "%s: the MR at %p was deregistered", who, mr->addr);
	if (mr->ctx != conn->ctx)
		return ezi_fail(-EINVAL, "%s: the MR at %p belongs to another context", who,
				mr->addr);
	if (!access || (access & ~(unsigned int)REMOTE))
		return ezi_fail(-EINVAL, "%s: access 0x%x (EZ_MR_REMOTE_READ, EZ_MR_REMOTE_WRITE, EZ_MR_REMOTE_ATOMIC)",
				who, access);
	if (access & ~mr->access)
		return ezi_fail(-EPERM, "%s: access 0x%x exceeds the MR's registration (0x%x)", who,
				access, mr->access & REMOTE);
	if (!len || off > mr->len || len > mr->len - off)
		return ezi_fail(-EINVAL, "%s: [%llu, +%llu) is not inside the MR's %zu bytes", who,
				(unsigned long long)off, (unsigned long long)len, mr->len);
	if (!conn->dev)
		return 0;
	if (mr->dev != conn->dev)
		return ezi_fail(-EINVAL, "%s: MR is registered on %s, the connection runs on %s", who,
				mr->dev->name, conn->dev->name);
	/* Whether the connection has a PD of its own is settled with its
	 * pool: judged once it has a QP. */
	if (conn_qp0(conn) && !conn->own_pd && !device_has_mw2(conn->dev))
		return ezi_fail(-EOPNOTSUPP, "%s: device %s has no type-2 memory windows (device_cap_flags 0x%llx, max_mw %d) and the connection receives from a shared pool, so it has no PD of its own (EZ_EXPORT_PD needs a private pool): register with EZ_MR_SHARED and use ez_mr_export()",
				who, conn->dev->name, (unsigned long long)conn->dev->attr.device_cap_flags,
				conn->dev->attr.max_mw);
	return 0;
}

static int export_check(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
			unsigned int access, struct ez_rkey *out)
{
	int ret;

	if (!conn || !mr || !out)
		return ezi_fail(-EINVAL, "ez_conn_export: conn %p, mr %p, out %p", (void *)conn,
				(void *)mr, (void *)out);
	ret = conn_check_handle(conn, "ez_conn_export");
	if (ret)
		return ret;
	if (conn->state != CS_CONNECTED || conn->app_closed)
		return ezi_fail(-ENOTCONN, "ez_conn_export: connection is not established (%s)",
				conn->app_closed ? "closed" : conn->state < CS_CONNECTED ?
				"connecting" : "down");
	return region_check(conn, "ez_conn_export", mr, off, len, access);
}

/* The first live path: a type-2 window is bound to one QP. */
static struct conn_path *export_path(struct ez_conn *conn)
{
	for (uint32_t i = 0; i < conn->npaths; i++)
		if (conn->paths[i].live)
			return &conn->paths[i];
	return NULL;
}

/* The bind WR goes on the path's send queue as an op of its own
 * (signalled: a failed bind ends the connection like any failed WR). */
static int export_post(struct ez_conn *conn, struct conn_path *p, struct conn_export *e,
		       uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr *bad;
	struct op *op = conn_op_take(conn);
	int err;

	if (!op) {
		conn_sq_refused(conn);	/* on_send_ready when room is back */
		return ezi_fail(-ENOBUFS, "ez_conn_export: %u operations already outstanding (send_depth)",
				conn->o.send_depth);
	}
	conn_op_fill(op, OP_BIND, NULL, NULL);
	op->conn = conn;
	op->path = p;
	op->wr.send_flags = IBV_SEND_SIGNALED;
	/* The op last carried a send: a bind takes no immediate (rxe
	 * refuses one) and no data. */
	op->wr.imm_data = 0;
	op->sge.length = 0;
	mw_bind_wr(&e->w, addr, len, ibv_remote(access), &op->wr);
	op->mr = e->w.mr;
	op->mr->inflight++;
	err = conn_sq_post(p, &op->wr, &bad);
	if (err) {
		conn_op_put(conn, op);
		return ezi_fail(err, "ibv_post_send(IBV_WR_BIND_MW, QP %u): %s", p->qpn,
				ez_strerror(-err));
	}
	conn_sq_append(conn, op);
	return 0;
}

static void export_link(struct ez_conn *conn, struct conn_export *e, struct ez_rkey *out)
{
	e->next = conn->ex.list;
	conn->ex.list = e;
	conn->ex.n++;
	*out = e->key;
}

/* EZ_EXPORT_PD: the region registered on the connection's PD, which only
 * its QPs use: no window and no WR; every path's QP is on that PD, so the
 * key is bound to no path. */
static int export_on_own_pd(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
			    unsigned int access, struct conn_export *e, struct ez_rkey *out)
{
	int ret;

	e->conn = conn;
	conn->ex.access |= access;
	ret = conn_access_apply(conn);
	if (!ret)
		ret = conn_pd_export_reg(conn, mr, off, len, ibv_remote(access), &e->copy);
	if (ret) {
		free(e);
		return ret;
	}
	e->copy.on_src_gone = export_copy_gone;
	e->key = (struct ez_rkey){ .addr = (uintptr_t)mr->addr + off, .len = len,
				   .rkey = e->copy.mr->rkey };
	export_link(conn, e, out);
	return 0;
}

/* The export itself, its arguments checked: a window bound on the first
 * live path, or a registration on the connection's own PD. */
static int export_make(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		       unsigned int access, struct ez_rkey *out)
{
	struct conn_export *e;
	struct conn_path *p;
	uint64_t addr;
	int ret;

	p = export_path(conn);
	if (!p)
		return ezi_fail(-ENOTCONN, "ez_conn_export: no live path");
	e = calloc(1, sizeof(*e));
	if (!e)
		return ezi_fail(-ENOMEM, "ez_conn_export: out of memory");
	if (conn->own_pd)
		return export_on_own_pd(conn, mr, off, len, access, e, out);
	addr = (uintptr_t)mr->addr + off;
	/* The window over a registration of exactly [addr, +len) (mw_alloc):
	 * its range holds on a device that checks only the window's key. */
	ret = mw_alloc(mr, addr, len, ibv_remote(access), &e->w);
	if (ret) {
		free(e);
		return ret;
	}
	e->w.on_mr_gone = export_mr_gone;
	e->conn = conn;
	/* The QP admits the access before the window exists: the peer cannot
	 * use it before it has the key anyway. */
	conn->ex.access |= access;
	ret = conn_access_apply(conn);
	if (!ret)
		ret = export_post(conn, p, e, addr, len, access);
	if (ret) {
		mw_free(&e->w);
		free(e);
		return ret;
	}
	e->key = (struct ez_rkey){ .addr = addr, .len = len, .rkey = e->w.rkey,
				   .path_binding = EZ_RKEY_PATH_BOUND | p->idx };
	export_link(conn, e, out);
	return 0;
}

int ez_conn_export(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		   unsigned int access, struct ez_rkey *out)
{
	int ret = export_check(conn, mr, off, len, access, out);

	return ret ? ret : export_make(conn, mr, off, len, access, out);
}

int ez_conn_revoke(struct ez_conn *conn, const struct ez_rkey *rkey)
{
	struct conn_export *e;
	int ret;

	if (!conn || !rkey)
		return ezi_fail(-EINVAL, "ez_conn_revoke: conn %p, rkey %p", (void *)conn,
				(const void *)rkey);
	ret = conn_check_handle(conn, "ez_conn_revoke");
	if (ret)
		return ret;
	for (e = conn->ex.list; e; e = e->next)
		if (e->key.rkey == rkey->rkey && e->key.addr == rkey->addr)
			break;
	if (!e)
		return ezi_fail(-ENOENT, "ez_conn_revoke: rkey 0x%x at 0x%llx is not exported on this connection (revoked, deregistered or the connection ended)",
				rkey->rkey, (unsigned long long)rkey->addr);
	/* Deallocating the window invalidates it at once; no WR needed. */
	export_free(e);
	return 0;
}

uint32_t conn_exports_on_path(const struct ez_conn *conn, unsigned int idx)
{
	uint32_t n = 0;

	for (const struct conn_export *e = conn->ex.list; e; e = e->next)
		if (e->key.path_binding == (EZ_RKEY_PATH_BOUND | idx))
			n++;
	return n;
}

/* Whether a live QP of conn is in ERR with the library's view elsewhere. */
static struct conn_path *path_refused(struct ez_conn *conn)
{
	for (uint32_t i = 0; i < conn->npaths; i++) {
		struct conn_path *p = &conn->paths[i];
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (!p->qp || !p->live || view_of(conn, p)->state == IBV_QPS_ERR)
			continue;
		if (ibv_query_qp(p->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR)
			return p;
	}
	return NULL;
}

struct conn_path *conn_access_suspect(struct ez_conn *conn)
{
	/* A connection without its CM id has no QP a device could have moved
	 * (the data path's unit tests' fake has neither). */
	if (!conn->id || conn_is_ended(conn) || conn->state != CS_CONNECTED)
		return NULL;
	return path_refused(conn);
}

void conn_access_report(struct ez_conn *conn, const struct conn_path *p)
{
	char keys[64] = "";
	uint32_t fails;

	if (conn->ex.n)
		snprintf(keys, sizeof(keys), "; %u region(s) exported to it, last rkey 0x%x",
			 conn->ex.n, conn->ex.list->key.rkey);
	fails = peer_penalty_note(conn);
	conn_fail(conn, -EACCES, "peer %s: an RDMA request was refused by our responder (QP %u, path %u, to ERR by the device: a key not exported to this connection, an access it was not given, or outside the region%s)",
		  conn->host, p->qpn, p->idx, keys);
	ezi_log_warn("%s (%u such failures from this address lately)", conn->errmsg, fails);
}

int conn_access_check(struct ez_conn *conn)
{
	struct conn_path *p = conn_access_suspect(conn);

	if (!p)
		return 0;
	conn_access_report(conn, p);
	return 1;
}

/* ------------------------------------------------------------------ */
/* Regions given with the connection (ez_conn_opts.exports)            */
/* ------------------------------------------------------------------ */

static void given_unhold(struct ez_conn *conn)
{
	if (!conn->ex.held)
		return;
	for (unsigned int i = 0; i < conn->ex.ngive; i++)
		mr_unhold(conn->ex.give[i].mr);
	conn->ex.held = 0;
}

int conn_exports_take(struct ez_conn *conn, const struct ez_conn_opts *o)
{
	char who[40];
	int ret;

	if (!o->nexports)
		return 0;
	for (uint32_t i = 0; i < o->nexports; i++) {
		const struct ez_export *e = &o->exports[i];

		snprintf(who, sizeof(who), "ez_conn_opts.exports[%u]", i);
		ret = region_check(conn, who, e->mr, e->off, e->len, e->access);
		if (ret)
			return ret;
	}
	conn->ex.give = calloc(o->nexports, sizeof(*conn->ex.give));
	conn->ex.own = calloc(o->nexports, sizeof(*conn->ex.own));
	if (!conn->ex.give || !conn->ex.own) {
		free(conn->ex.give);
		free(conn->ex.own);
		conn->ex.give = NULL;
		conn->ex.own = NULL;
		return ezi_fail(-ENOMEM, "ez_conn_opts.exports: out of memory");
	}
	memcpy(conn->ex.give, o->exports, o->nexports * sizeof(*conn->ex.give));
	conn->ex.ngive = (uint8_t)o->nexports;
	/* ez_mr_dereg() refuses (-EBUSY) until they are bound or the
	 * connection ends: the copy points at them. */
	for (unsigned int i = 0; i < conn->ex.ngive; i++)
		mr_hold(conn->ex.give[i].mr);
	conn->ex.held = 1;
	return 0;
}

int conn_exports_check_device(struct ez_conn *conn)
{
	char who[40];
	int ret;

	for (unsigned int i = 0; i < conn->ex.ngive; i++) {
		const struct ez_export *e = &conn->ex.give[i];

		snprintf(who, sizeof(who), "ez_conn_opts.exports[%u]", i);
		ret = region_check(conn, who, e->mr, e->off, e->len, e->access);
		if (ret)
			return ret;
	}
	return 0;
}

void conn_exports_end(struct ez_conn *conn)
{
	given_unhold(conn);
}

void conn_exports_free(struct ez_conn *conn)
{
	given_unhold(conn);
	free(conn->ex.give);
	free(conn->ex.own);
	free(conn->ex.peer);
	conn->ex.give = NULL;
	conn->ex.own = NULL;
	conn->ex.peer = NULL;
	conn->ex.ngive = 0;
	conn->ex.npeer = 0;
}

void conn_exports_hs_caps(const struct ez_conn *conn, uint16_t *caps)
{
	*caps |= HS_CAP_EXPORTS;
	if (conn->ex.ngive)
		*caps |= HS_CAP_EXPORTS_SENT;
}

int conn_exports_peer_caps(struct ez_conn *conn, uint16_t caps)
{
	conn->ex.peer_takes = !!(caps & HS_CAP_EXPORTS);
	/* A peer that cannot read our message would refuse it as unknown
	 * immediate bits: say so before anything is made. */
	if (conn->ex.ngive && !conn->ex.peer_takes)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), -EPROTONOSUPPORT,
				     "%s(%s): the peer's easyrdma predates regions given with the connection (ez_conn_opts.exports, %u of them): give them with ez_conn_export() once connected",
				     conn->step, conn->host, conn->ex.ngive);
	conn->ex.peer_due = !!(caps & HS_CAP_EXPORTS_SENT);
	return 0;
}

/* Binds each region to this connection and posts their keys on path 0:
 * the first message of ours the peer receives there. */
static int exports_send(struct ez_conn *conn)
{
	uint8_t msg[EXPORTS_MAX_LEN];
	char who[40];
	size_t len;
	int ret;

	conn->ex.sent = 1;
	ret = conn_exports_check_device(conn);
	for (unsigned int i = 0; !ret && i < conn->ex.ngive; i++) {
		const struct ez_export *e = &conn->ex.give[i];

		snprintf(who, sizeof(who), "ez_conn_opts.exports[%u]", i);
		ret = export_make(conn, e->mr, e->off, e->len, e->access, &conn->ex.own[i]);
		if (ret)
			ret = ezi_fail(ret, "%s: %s", who, ez_errmsg());
	}
	if (ret) {
		conn_fail(conn, ret, "%s(%s): %s", conn->step, conn->host, ez_errmsg());
		return ret;
	}
	/* Bound: a window keeps its MR's dereg in order from here on, as for
	 * ez_conn_export(). */
	given_unhold(conn);
	len = exports_encode(conn->ex.own, conn->ex.ngive, msg, sizeof(msg));
	if (len > conn->peer_max_msg) {
		conn_fail(conn, -EMSGSIZE, "%s(%s): the keys of %u regions given with the connection take %zu bytes, more than the peer's max_msg_size %u",
			  conn->step, conn->host, conn->ex.ngive, len, conn->peer_max_msg);
		return -EMSGSIZE;
	}
	ret = conn_post_ctrl(conn, NULL, OP_EXPORTS, &conn->paths[0], IMM_EXPORTS_MSG, msg,
			     (uint32_t)len);
	if (ret) {
		conn_fail(conn, ret, "%s(%s): ibv_post_send(exports message, %zu bytes): %s",
			  conn->step, conn->host, len, ez_strerror(ret));
		return ret;
	}
	return 0;
}

void conn_up_after_exports(struct ez_conn *conn, enum conn_event ev)
{
	/* An event the state does not take (a second RTU) is ignored, and
	 * sends nothing. */
	if (!conn_fsm_row(conn->state, ev)->valid) {
		conn_fire(conn, ev, 0);
		return;
	}
	if (conn->ex.ngive && !conn->ex.sent && exports_send(conn))
		return;
	conn_fire(conn, conn->ex.peer_due ? CE_EXPORTS_DUE : ev, 0);
}

int conn_exports_on_msg(struct ez_conn *conn, const void *data, uint32_t len)
{
	struct ez_rkey keys[EZ_CONN_EXPORTS_MAX];
	enum exports_fault f;
	unsigned int n;

	conn->ex.peer_due = 0;
	f = exports_decode(data, len, conn->npaths, keys, &n);
	if (f) {
		conn_fail(conn, -EPROTO, "peer %s: its exports message (%u bytes) has %s", conn->host,
			  len, exports_fault_str(f));
		return -EPROTO;
	}
	conn->ex.peer = malloc(n * sizeof(*keys));
	if (!conn->ex.peer) {
		conn_fail(conn, -ENOMEM, "peer %s: keeping the %u regions it gave: out of memory",
			  conn->host, n);
		return -ENOMEM;
	}
	memcpy(conn->ex.peer, keys, n * sizeof(*keys));
	conn->ex.npeer = (uint8_t)n;
	return 0;
}

static const struct ez_rkey *keys_out(const struct ez_conn *conn, const char *fn,
				      const struct ez_rkey *keys, unsigned int count,
				      unsigned int *n)
{
	if (n)
		*n = 0;
	if (!conn || !n) {
		ezi_fail(-EINVAL, "%s: conn %p, n %p", fn, (const void *)conn, (void *)n);
		return NULL;
	}
	if (conn_check_handle(conn, fn))
		return NULL;
	if (conn->state < CS_CONNECTED && !conn_is_ended(conn)) {
		ezi_fail(-ENOTCONN, "%s: the connection is not up yet (keys from on_connect on)", fn);
		return NULL;
	}
	*n = count;
	return count ? keys : NULL;
}

const struct ez_rkey *ez_conn_peer_exports(const struct ez_conn *conn, unsigned int *n)
{
	return keys_out(conn, "ez_conn_peer_exports", conn ? conn->ex.peer : NULL,
			conn ? conn->ex.npeer : 0, n);
}

const struct ez_rkey *ez_conn_own_exports(const struct ez_conn *conn, unsigned int *n)
{
	/* Made only once ours went out: before that, none. */
	return keys_out(conn, "ez_conn_own_exports", conn ? conn->ex.own : NULL,
			conn && conn->ex.sent ? conn->ex.ngive : 0, n);
}
