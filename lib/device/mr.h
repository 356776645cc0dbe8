/* mr.h: registered memory of the connection layer. */
#ifndef EZ_DEVICE_MR_H
#define EZ_DEVICE_MR_H

#include <infiniband/verbs.h>

#include "device.h"
#include "base/owner.h"

struct ez_mr {
	struct ez_ctx *ctx;	/* set and counted by ez_mr_reg (lib/conn/ctx_objects.c) */
	struct device *dev;
	struct ibv_mr *mr;
	unsigned int access;
	const struct ezi_owner *owner;	/* its context's thread (set by ez_mr_reg) */
};

/* EZ_MR_* flags to verbs access flags: local write always (a READ lands in
 * it), remote access only when asked. */
int mr_access_flags(unsigned int access);

/* Registers [addr, addr + len) on dev's PD; mr_dereg undoes it and frees mr
 * (which stays if the device refuses: an operation still uses it). */
int mr_reg(struct device *dev, void *addr, size_t len, unsigned int access, struct ez_mr **out);
int mr_dereg(struct ez_mr *mr);

#endif
