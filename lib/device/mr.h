/* mr.h: registered memory of the connection layer. */
#ifndef EZ_DEVICE_MR_H
#define EZ_DEVICE_MR_H

#include <infiniband/verbs.h>

#include "device.h"

struct ez_mr {
	struct ez_ctx *ctx;
	struct device *dev;
	struct ibv_mr *mr;
	unsigned int access;
};

/* EZ_MR_* flags to verbs access flags: local write always (a READ lands in
 * it), remote access only when asked. */
int mr_access_flags(unsigned int access);

#endif
