/* testdev.h: opens the test RDMA device and picks its RoCEv2 GID, for integration tests. */
#ifndef EZ_TESTDEV_H
#define EZ_TESTDEV_H

#include <infiniband/verbs.h>

struct testdev {
	struct ibv_context *ctx;
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	uint8_t port;
	int gid_index;		/* RoCEv2 IPv4 GID when there is one, else 0 */
	union ibv_gid gid;
	char name[64];
};

/* Opens $EZ_DEVICE or the first device; fails the current test if none. */
void testdev_open(struct testdev *d);
void testdev_close(struct testdev *d);

/* Fills an address vector pointing at the device itself (loopback). */
void testdev_self_ah(const struct testdev *d, struct ibv_ah_attr *ah, uint32_t flow_label);

#endif
