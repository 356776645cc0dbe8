/* conn_auth.c: a connection's shared-secret step: the sealed handshake, the client's proof on the QP and the server's verdict. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "conn_fsm.h"
#include "conn_types.h"
#include "sendq.h"
#include "conn_auth.h"
#include "conn_export.h"
#include "listener.h"
#include "path.h"
#include "base/log.h"

const struct auth_key *conn_auth_key(const struct ez_conn *conn)
{
	return conn->auth ? &conn->auth->key : NULL;
}

int conn_auth_new(struct ez_conn *conn, const void *key, uint32_t len)
{
	struct conn_auth *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	if (auth_key_set(&a->key, key, len)) {
		free(a);
		return -EINVAL;
	}
	conn->auth = a;
	return 0;
}

void conn_auth_free(struct ez_conn *conn)
{
	if (!conn->auth)
		return;
	OPENSSL_cleanse(conn->auth, sizeof(*conn->auth));
	free(conn->auth);
	conn->auth = NULL;
}

/* Once the proof is settled the key and the transcript are not needed. */
static void settle(struct ez_conn *conn)
{
	struct conn_auth *a = conn->auth;

	OPENSSL_cleanse(a, sizeof(*a));
}

int conn_auth_seal_req(struct ez_conn *conn, struct hs_msg *req)
{
	struct conn_auth *a = conn->auth;
	int ret = auth_req_seal(&a->key, req);

	if (ret)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), ret,
				     "shared secret: sealing the request: %s", ez_strerror(ret));
	a->req = *req;
	return 0;
}

int conn_auth_seal_rep(struct ez_conn *conn, struct hs_msg *rep)
{
	struct conn_auth *a = conn->auth;
	int ret = auth_rep_seal(&a->key, &a->req, rep, a->proof);

	if (ret)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), ret,
				     "shared secret: sealing the reply: %s", ez_strerror(ret));
	return 0;
}

int conn_auth_check_rep(struct ez_conn *conn, const struct hs_msg *rep)
{
	struct conn_auth *a = conn->auth;

	if (auth_rep_check(&a->key, &a->req, rep, a->proof)) {
		static const char why[] = "reply failed the client's shared-secret check";

		listener_reject_id(conn->id, HS_CAP_AUTH, why, sizeof(why) - 1);
		conn_fail(conn, -EACCES, "rdma_connect(%s): peer failed the shared-secret check%s",
			  conn->host, rep->caps & HS_CAP_AUTH ? "" : " (its reply carries no proof)");
		return -EACCES;
	}
	if (conn->peer_max_msg < AUTH_PROOF_LEN) {
		conn_fail(conn, -EPROTO, "rdma_connect(%s): peer's maximum message size %u cannot take the %d-byte shared-secret proof",
			  conn->host, conn->peer_max_msg, AUTH_PROOF_LEN);
		return -EPROTO;
	}
	return 0;
}

/* A library message on QP 0 from a free op (it returns to the free list on
 * its completion, like any send); on QP 0's list of posted WRs, so its
 * completion accounts for the WRs before it (selective signalling). */
static int post_auth(struct ez_conn *conn, uint32_t imm, const void *data, uint32_t len)
{
	return conn_post_ctrl(conn, NULL, OP_AUTH, &conn->paths[0], imm, data, len);
}

int conn_auth_send_proof(struct ez_conn *conn)
{
	int ret = post_auth(conn, IMM_AUTH_PROOF, conn->auth->proof, AUTH_PROOF_LEN);

	if (ret) {
		conn_fail(conn, ret, "rdma_connect(%s): ibv_post_send(shared-secret proof): %s",
			  conn->host, ez_strerror(ret));
		return ret;
	}
	conn_fire(conn, CE_PROOF_SENT, 0);
	return 0;
}

void conn_auth_refuse(struct ez_conn *conn, const char *fmt, ...)
{
	char msg[EZ_ERRMSG_MAX];
	int ret;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	settle(conn);
	/* The refusal goes out like a goodbye: the teardown waits for it. */
	if (conn_qp0(conn) && conn->state == CS_AWAITING_PROOF) {
		ret = conn_post_ctrl(conn, &conn->bye_op, OP_BYE, &conn->paths[0],
				     IMM_AUTH_REFUSED, NULL, 0);
		if (ret == 0) {
			conn->byes_left = 1;
			conn_fail_after_bye(conn, -EACCES, "%s", msg);
			return;
		}
		ezi_log_warn("ibv_post_send(shared-secret refusal): %s", ez_strerror(ret));
	}
	conn_fail(conn, -EACCES, "%s", msg);
}

/* The one place remote access opens on a keyed listener's connection:
 * the proof is verified, the verdict not yet posted (so the client, which
 * may write as soon as it reads the verdict, finds the QPs open). RTS ->
 * RTS with IBV_QP_ACCESS_FLAGS, QP 0 and then every other path, each
 * through the validator against the cached view. */
static int open_remote_access(struct ez_conn *conn)
{
	int ret;

	conn->remote_closed = 0;
	/* What the connection was given (the context's shared MRs; its own
	 * exports come later, once it is connected), on every live path. */
	ret = conn_access_apply(conn);
	if (ret)
		return ezi_fail_into(conn->errmsg, sizeof(conn->errmsg), ret,
				     "ez_accept(%s): opening remote access after the proof: %s",
				     conn->host, ez_errmsg());
	return 0;
}

static void server_on_recv(struct ez_conn *conn, struct ez_buf *buf, uint32_t imm, size_t len)
{
	int ok = imm == IMM_AUTH_PROOF && len == AUTH_PROOF_LEN &&
		 auth_memcmp(ez_buf_data(buf), conn->auth->proof, AUTH_PROOF_LEN) == 0;
	int ret;

	ez_buf_release(buf);
	if (!ok) {
		conn_auth_refuse(conn, "ez_accept(%s): the peer's shared-secret proof %s", conn->host,
				 imm == IMM_AUTH_PROOF ? "does not match" :
				 "is missing (another message came first)");
		return;
	}
	settle(conn);
	ret = open_remote_access(conn);
	if (ret) {
		char msg[EZ_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", conn->errmsg);
		conn_fail(conn, ret, "%s", msg);
		return;
	}
	ret = post_auth(conn, IMM_AUTH_OK, NULL, 0);
	if (ret) {
		conn_fail(conn, ret, "ez_accept(%s): ibv_post_send(shared-secret verdict): %s",
			  conn->host, ez_strerror(ret));
		return;
	}
	conn_up_after_exports(conn, CE_PROOF_OK);
}

static void client_on_recv(struct ez_conn *conn, struct ez_buf *buf, uint32_t imm)
{
	ez_buf_release(buf);
	if (imm == IMM_AUTH_OK) {
		settle(conn);
		conn_up_after_exports(conn, CE_PROOF_OK);
	} else if (imm == IMM_AUTH_REFUSED) {
		settle(conn);
		conn_fail(conn, -EACCES, "rdma_connect(%s): listener refused the shared-secret proof",
			  conn->host);
	} else {
		settle(conn);
		conn_fail(conn, -EPROTO, "rdma_connect(%s): a message came before the listener's shared-secret verdict",
			  conn->host);
	}
}

void conn_auth_on_recv(struct ez_conn *conn, struct ez_buf *buf, const struct ibv_wc *wc)
{
	uint32_t imm = (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;

	if (conn->state == CS_AWAITING_PROOF)
		server_on_recv(conn, buf, imm, wc->byte_len);
	else if (conn->state == CS_AUTHENTICATING)
		client_on_recv(conn, buf, imm);
	else
		ez_buf_release(buf);
}
