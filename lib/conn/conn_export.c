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
	return p->idx ? &p->qpv : &conn->qpv;
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
	if (mr->dead)
		return ezi_fail(-EBADF, "ez_conn_export: the MR at %p was deregistered", mr->addr);
	if (mr->dev != conn->dev)
		return ezi_fail(-EINVAL, "ez_conn_export: MR is registered on %s, the connection runs on %s",
				mr->dev->name, conn->dev->name);
	if (!access || (access & ~(unsigned int)REMOTE))
		return ezi_fail(-EINVAL, "ez_conn_export: access 0x%x (EZ_MR_REMOTE_READ, EZ_MR_REMOTE_WRITE, EZ_MR_REMOTE_ATOMIC)",
				access);
	if (access & ~mr->access)
		return ezi_fail(-EPERM, "ez_conn_export: access 0x%x exceeds the MR's registration (0x%x)",
				access, mr->access & REMOTE);
	if (!len || off > mr->len || len > mr->len - off)
		return ezi_fail(-EINVAL, "ez_conn_export: [%zu, +%zu) is not inside the MR's %zu bytes",
				off, len, mr->len);
	if (!conn->own_pd && !device_has_mw2(conn->dev))
		return ezi_fail(-EOPNOTSUPP, "ez_conn_export: device %s has no type-2 memory windows (device_cap_flags 0x%llx, max_mw %d) and the connection receives from a shared pool, so it has no PD of its own (EZ_EXPORT_PD needs a private pool): register with EZ_MR_SHARED and use ez_mr_export()",
				conn->dev->name, (unsigned long long)conn->dev->attr.device_cap_flags,
				conn->dev->attr.max_mw);
	return 0;
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

int ez_conn_export(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		   unsigned int access, struct ez_rkey *out)
{
	struct conn_export *e;
	struct conn_path *p;
	uint64_t addr;
	int ret = export_check(conn, mr, off, len, access, out);

	if (ret)
		return ret;
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
	if (!conn->qp || conn_is_ended(conn) || conn->state != CS_CONNECTED)
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
