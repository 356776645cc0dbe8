/* addr.c: host and service strings to the socket address rdma_cm wants. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "base/error.h"

/* A service that is all digits: 0 and the port, or -ERANGE above 65535
 * (getaddrinfo() would keep the low 16 bits: 65536 would be port 0). -1 for
 * anything else, which is getaddrinfo's to read. */
static int parse_port(const char *service, uint16_t *port)
{
	unsigned long v = 0;
	const char *p;

	if (!service || !*service)
		return -1;
	for (p = service; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v <= 65535)
			v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v > 65535)
		return -ERANGE;
	*port = (uint16_t)v;
	return 0;
}

/* The common case, an IPv4 or IPv6 literal and a port number, without
 * getaddrinfo(): even its numeric path took ~0.1 ms a call under TCG (100
 * connections at once: 11 ms of the client's), once per ez_connect().
 * Anything else (a scope id, a name, a service name, no host) is
 * getaddrinfo's. */
static int resolve_literal(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	return -1;
}

/* A host that can only have been meant as a literal and is not a valid
 * one: all digits and dots (no host name is: RFC 1123 keeps a top-level
 * label from being all-numeric) that inet_aton() refuses (it takes the
 * short forms getaddrinfo() does, "10.1"), or with a ':' (no name has one)
 * that is no IPv6 address before its scope ("%eth0"). Such a host is an
 * error of the caller's, -EINVAL, not a name to look up: the lookup of
 * "300.1.2.3" ended in EAI_AGAIN where no DNS answers, and the caller was
 * told to try again. The family's name, or NULL. */
static const char *bad_literal(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	char buf[INET6_ADDRSTRLEN + 1];
	const char *p;
	size_t n;

	if (!host || !*host)
		return NULL;
	if (strchr(host, ':')) {
		n = strcspn(host, "%");
		if (n >= sizeof(buf))
			return "IPv6";
		memcpy(buf, host, n);
		buf[n] = '\0';
		return inet_pton(AF_INET6, buf, &a6) == 1 ? NULL : "IPv6";
	}
	for (p = host; *p; p++)
		if ((*p < '0' || *p > '9') && *p != '.')
			return NULL;
	return inet_aton(host, &a4) ? NULL : "IPv4";
}

int ezaddr_resolve(const char *host, const char *service, int flags,
		   struct sockaddr_storage *ss, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	uint16_t port;
	int rc;

	rc = parse_port(service, &port);
	if (rc == -ERANGE) {
		snprintf(err, errlen, "port %s is out of range (0 to 65535)", service);
		return -EINVAL;
	}
	if (rc == 0 && host && resolve_literal(host, port, ss) == 0)
		return 0;
	if (flags & EZADDR_PASSIVE)
		hints.ai_flags |= AI_PASSIVE;
	hints.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc == EAI_NONAME && bad_literal(host)) {
		snprintf(err, errlen, "%s is not a valid %s address", host, bad_literal(host));
		return -EINVAL;
	}
	if ((rc == EAI_NONAME || rc == EAI_SERVICE) && (flags & EZADDR_NUMERIC_ONLY))
		return -EAGAIN;
	if (rc == EAI_NONAME || rc == EAI_SERVICE) {
		hints.ai_flags &= ~(AI_NUMERICHOST | AI_NUMERICSERV);
		rc = getaddrinfo(host, service, &hints, &res);
	}
	if (rc) {
		snprintf(err, errlen, "getaddrinfo(%s, %s): %s (name lookup failed)",
			 host ? host : "*", service ? service : "0", gai_strerror(rc));
		return ezi_gai_errno(rc);
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

int ezaddr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
	if (!a || !b || a->sa_family != b->sa_family)
		return 0;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return 1;
}
