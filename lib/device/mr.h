/* mr.h: registered memory of the connection layer, and the memory windows bound from it. */
#ifndef EZ_DEVICE_MR_H
#define EZ_DEVICE_MR_H

#include <infiniband/verbs.h>

#include "device.h"
#include "base/owner.h"

struct mw;
struct mr_copy;

struct ez_mr {
	struct ez_ctx *ctx;	/* set and counted by ez_mr_reg (lib/conn/ctx_objects.c) */
	struct device *dev;
	struct ibv_mr *mr;
	const struct ezi_owner *owner;	/* its context's thread (set by ez_mr_reg) */
	unsigned int access;	/* EZ_MR_* as registered */
	int inflight;		/* posted ops (sends, RDMA, window binds) that use it */
	int dead;		/* deregistered: the handle stays valid memory until ez_ctx_free */
	struct mw *windows;	/* memory windows bound from it, on connections */
	struct mr_copy *copies;	/* registrations of it on connections' own PDs */
	struct ez_mr *next_dead;	/* the context's deregistered handles */
	/* Kept from the live MR, for error messages and ez_mr_addr/len after dereg. */
	void *addr;
	size_t len;
};

/* One user more or fewer that ez_mr_dereg() waits for (-EBUSY): a posted
 * op, a window bound, or a call queued to be posted (a connection's op
 * queue, lib/conn/msg.c). */
static inline void mr_hold(struct ez_mr *mr)
{
	mr->inflight++;
}

static inline void mr_unhold(struct ez_mr *mr)
{
	mr->inflight--;
}

/* A type-2 memory window bound from an MR to one QP (the connection layer
 * embeds it, first, in its export). */
struct mw {
	struct ibv_mw *mw;
	struct ez_mr *mr;
	/* What the window is bound over: mr's memory registered again, exactly
	 * the window's range, with no remote access (mw_alloc). */
	struct ibv_mr *exact;
	struct mw *mr_next, *mr_prev;	/* the MR's windows */
	uint32_t rkey;		/* the key of its binding */
	/* The MR is deregistered: the owner unlinks and frees the window. */
	void (*on_mr_gone)(struct mw *w);
};

/* EZ_MR_* flags to verbs access flags: local write always (a READ lands in
 * it); remote access only for EZ_MR_SHARED; memory-window binding when a
 * remote access is asked and the device has type-2 windows. */
int mr_access_flags(const struct device *dev, unsigned int access);

/* Whether the device binds type-2 memory windows (IBV_DEVICE_MEM_WINDOW_TYPE_2B, max_mw > 0). */
int device_has_mw2(const struct device *dev);

/* Registers [addr, addr + len) on dev's PD; mr_dereg undoes it (the
 * struct stays: ez_mr_dereg keeps it until the context is freed). */
int mr_reg(struct device *dev, void *addr, size_t len, unsigned int access, struct ez_mr **out);
int mr_dereg(struct ez_mr *mr);

/* A type-2 window on mr's PD for [addr, +len) of mr's memory (inside it),
 * linked to mr, over a registration of exactly that range (w->exact:
 * IBV_ACCESS_MW_BIND, plus IBV_ACCESS_LOCAL_WRITE when access, the verbs
 * remote access it will be bound with, has a remote write or atomic; no
 * remote access, so its own key grants nothing remotely). The range a peer
 * reaches is then the registration's, which every device checks: Soft-RoCE
 * checks a type-2 window's key, but the address only against the MR the
 * window is bound over (rxe_resp.c check_rkey(), kernel 6.1), so a window
 * over the whole MR would grant the whole MR. mw_bind_wr() fills a bind WR
 * (a fresh key, ibv_inc_rkey) over the exact registration with the same
 * addr, len and access; mw_free() deallocates the window (which
 * invalidates its binding at once), deregisters the exact registration
 * and unlinks it. */
int mw_alloc(struct ez_mr *mr, uint64_t addr, uint64_t len, int access, struct mw *w);
void mw_bind_wr(struct mw *w, uint64_t addr, uint64_t len, int access, struct ibv_send_wr *wr);
void mw_free(struct mw *w);

/* The same memory registered again on another PD (a connection's own, where
 * exports are confined by PD rather than by memory window: EZ_EXPORT_PD):
 * for the connection's local use of the MR, or for one export. Linked to
 * the MR it copies, so that ez_mr_dereg() takes it along. */
struct mr_copy {
	struct ibv_mr *mr;
	struct ez_mr *src;
	struct mr_copy *src_next, *src_prev;
	/* The source MR is deregistered: the owner unlinks and frees the copy. */
	void (*on_src_gone)(struct mr_copy *c);
};

/* Registers src[off, +len) on pd with verbs access flags (local write
 * always) and links c to src. 0, or -errno naming the verb. */
int mr_copy_reg(struct ez_mr *src, struct ibv_pd *pd, size_t off, size_t len, int access,
		struct mr_copy *c);
/* Deregisters (which invalidates its keys at once) and unlinks. */
void mr_copy_dereg(struct mr_copy *c);

#endif
