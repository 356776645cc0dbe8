/* conn_pd.h: a connection's own protection domain (conn_pd.c), where the device cannot confine an export to one QP with a memory window (EZ_EXPORT_PD): its QPs, its receive pool, its send copies and its registrations of the application's MRs live on a PD no other connection's QP can reach. */
#ifndef EZ_CONN_CONN_PD_H
#define EZ_CONN_CONN_PD_H

#include "conn_types.h"
#include "device/mr.h"

/* 1 when conn on dev is to have a PD of its own: the context asked
 * (EZ_CTX_EXPORT_PD) or the device has no type-2 memory windows, and the
 * connection receives from a private pool (an SRQ belongs to one PD, so a
 * connection on a shared pool shares its PD). 0 when not; -EINVAL when the
 * context asked but the connection names a shared pool (conn->errmsg set). */
int conn_pd_choose(struct ez_conn *conn, struct device *dev);
/* Allocates the PD and its send-copy slab. 0, or -errno naming the verb. */
int conn_pd_open(struct ez_conn *conn, struct device *dev);
/* The PD the connection's QPs, pool and copies go on. */
struct ibv_pd *conn_pd_of(const struct ez_conn *conn);
/* The private pool was created on the PD and deallocates it when it goes
 * (after its SRQ, and later than the connection if the application still
 * holds its buffers). */
void conn_pd_handed_to_pool(struct ez_conn *conn);
/* The local key of mr for conn's ops: the MR's own, or on a connection with
 * its own PD a registration of the MR there (made on first use, kept until
 * the connection or the MR goes). 0, or -errno with the thread's error set. */
int conn_pd_lkey_slow(struct ez_conn *conn, struct ez_mr *mr, uint32_t *lkey);
static inline int conn_pd_lkey(struct ez_conn *conn, struct ez_mr *mr, uint32_t *lkey)
{
	if (!conn->own_pd) {
		*lkey = mr->mr->lkey;
		return 0;
	}
	return conn_pd_lkey_slow(conn, mr, lkey);
}
/* A copy slot of len bytes from the connection's own slab (own PD only). */
int conn_pd_slot_get(struct ez_conn *conn, size_t len, struct slab_slot **out);
void conn_pd_slot_put(struct ez_conn *conn, struct slab_slot *slot);
/* Registers mr[off, +len) on the connection's PD with verbs access flags
 * for one export (conn_export.c owns the copy). */
int conn_pd_export_reg(struct ez_conn *conn, struct ez_mr *mr, size_t off, size_t len,
		       int access, struct mr_copy *c);
/* Deregisters the connection's copies of the application's MRs and its
 * slab, and deallocates the PD unless the pool has it. After the QPs and
 * the exports are gone, before the pool is destroyed. Safe to call twice. */
void conn_pd_close(struct ez_conn *conn);

#endif
