/* addr.h: host and service strings to the socket address rdma_cm wants. */
#ifndef EZ_WIRE_ADDR_H
#define EZ_WIRE_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* An IPv4 or IPv6 literal with a port number is parsed here; anything else
 * goes to getaddrinfo(), numeric first, then a (blocking) name lookup, or
 * -EAGAIN instead of the lookup with EZADDR_NUMERIC_ONLY. 0, or -EINVAL (bad
 * service, or a host that can only be a literal and is not a valid one:
 * "300.1.2.3", "fe80::zz") / -ENXIO (no such host; ezi_gai_errno()) with
 * the reason in err. */
enum { EZADDR_PASSIVE = 1, EZADDR_NUMERIC_ONLY = 2 };
int ezaddr_resolve(const char *host, const char *service, int flags,
		   struct sockaddr_storage *ss, char *err, size_t errlen);
/* The same peer: address family and address, whatever the port (AF_IB and
 * kin: one bucket). A NULL is nobody's. */
int ezaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);

#endif
