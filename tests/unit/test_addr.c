/* test_addr.c: address strings to socket addresses: literals parsed without getaddrinfo() give what it gives; scope ids, names, service names and bad ports go the other ways. */
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

#include "wire/addr.h"
#include "base/error.h"
#include "../checkmain.h"

/* What getaddrinfo() itself makes of a numeric host and port. */
static void gai_numeric(const char *host, const char *service, int passive, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;

	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	ck_assert_int_eq(getaddrinfo(host, service, &hints, &res), 0);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

static const struct { const char *host, *service; int family; } literals[] = {
	{ "192.0.2.1", "7471", AF_INET },
	{ "0.0.0.0", "0", AF_INET },
	{ "255.255.255.255", "65535", AF_INET },
	{ "2001:db8::1", "7471", AF_INET6 },
	{ "::", "0", AF_INET6 },
	{ "::ffff:192.0.2.7", "00080", AF_INET6 },
};

START_TEST(literal_as_getaddrinfo)
{
	struct sockaddr_storage got, want;
	char err[128] = "";
	int i = _i;

	memset(&got, 0xa5, sizeof(got));
	ck_assert_int_eq(ezaddr_resolve(literals[i].host, literals[i].service, EZADDR_NUMERIC_ONLY,
					 &got, err, sizeof(err)), 0);
	gai_numeric(literals[i].host, literals[i].service, 0, &want);
	ck_assert_int_eq(got.ss_family, literals[i].family);
	ck_assert_mem_eq(&got, &want, sizeof(got));
	ck_assert_str_eq(err, "");
}
END_TEST

/* A scope id is not a literal inet_pton() reads: getaddrinfo() has it. */
START_TEST(scope_id_goes_to_getaddrinfo)
{
	struct sockaddr_storage got;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&got;
	char err[128];

	ck_assert_int_eq(ezaddr_resolve("fe80::1%lo", "9", EZADDR_NUMERIC_ONLY, &got, err, sizeof(err)), 0);
	ck_assert_int_eq(sin6->sin6_family, AF_INET6);
	ck_assert_uint_eq(sin6->sin6_scope_id, if_nametoindex("lo"));
	ck_assert_uint_ne(sin6->sin6_scope_id, 0);
	ck_assert_uint_eq(ntohs(sin6->sin6_port), 9);
}
END_TEST

/* Forms getaddrinfo() accepts and inet_pton() does not still resolve. */
START_TEST(short_ipv4_goes_to_getaddrinfo)
{
	struct sockaddr_storage got;
	struct sockaddr_in *sin = (struct sockaddr_in *)&got;
	char err[128];

	ck_assert_int_eq(ezaddr_resolve("127.1", "7", EZADDR_NUMERIC_ONLY, &got, err, sizeof(err)), 0);
	ck_assert_int_eq(sin->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0x7f000001u);
	ck_assert_uint_eq(ntohs(sin->sin_port), 7);
}
END_TEST

/* A name or a service name needs a lookup: numeric-only says so. */
START_TEST(names_need_a_lookup)
{
	struct sockaddr_storage got;
	char err[128];

	ck_assert_int_eq(ezaddr_resolve("ez-no-such-host.invalid", "7471", EZADDR_NUMERIC_ONLY,
					 &got, err, sizeof(err)), -EAGAIN);
	ck_assert_int_eq(ezaddr_resolve("192.0.2.1", "ez-no-such-service", EZADDR_NUMERIC_ONLY,
					 &got, err, sizeof(err)), -EAGAIN);
	ck_assert_int_eq(ezaddr_resolve("192.0.2.1", "ez-no-such-service", 0, &got, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "ez-no-such-service"));
}
END_TEST

/* getaddrinfo() would make port 65536 into 0; here it is an error. */
START_TEST(port_out_of_range)
{
	static const char *const bad[] = { "65536", "99999", "18446744073709551617" };
	struct sockaddr_storage got;
	char err[128];

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_int_eq(ezaddr_resolve("192.0.2.1", bad[i], 0, &got, err, sizeof(err)), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, bad[i]));
		ck_assert_ptr_nonnull(strstr(err, "out of range"));
		ck_assert_int_eq(ezaddr_resolve("ez-no-such-host.invalid", bad[i], EZADDR_NUMERIC_ONLY,
						 &got, err, sizeof(err)), -EINVAL);
	}
}
END_TEST

/* Issue 42: "300.1.2.3" was looked up as a name, and where no DNS answers
 * the caller got -EAGAIN (try again). A host that can only be a literal
 * and is not a valid one is the caller's error: -EINVAL, said so, with or
 * without the lookup allowed. A name, or an IPv4 short form, still goes on. */
START_TEST(invalid_literal_is_einval)
{
	static const struct { const char *host, *msg; } bad[] = {
		{ "300.1.2.3", "300.1.2.3 is not a valid IPv4 address" },
		{ "1.2.3.4.5", "1.2.3.4.5 is not a valid IPv4 address" },
		{ "192.0.2.", "192.0.2. is not a valid IPv4 address" },
		{ "fe80::zz", "fe80::zz is not a valid IPv6 address" },
		{ "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8:9 is not a valid IPv6 address" },
	};
	struct sockaddr_storage got;
	char err[128];

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int flags = 0; flags <= EZADDR_NUMERIC_ONLY; flags += EZADDR_NUMERIC_ONLY) {
			err[0] = '\0';
			ck_assert_int_eq(ezaddr_resolve(bad[i].host, "7471", flags, &got, err,
							 sizeof(err)), -EINVAL);
			ck_assert_str_eq(err, bad[i].msg);
		}
	ck_assert_int_eq(ezaddr_resolve("ez-no-such-host.invalid", "7471", EZADDR_NUMERIC_ONLY, &got,
					 err, sizeof(err)), -EAGAIN);
	ck_assert_int_eq(ezaddr_resolve("10.1", "7471", EZADDR_NUMERIC_ONLY, &got, err, sizeof(err)),
			 0);
}
END_TEST

/* A listener's wildcard, with and without a host. */
START_TEST(passive_wildcard)
{
	struct sockaddr_storage got, want;
	char err[128];

	ck_assert_int_eq(ezaddr_resolve("::", "0", EZADDR_PASSIVE, &got, err, sizeof(err)), 0);
	gai_numeric("::", "0", 1, &want);
	ck_assert_mem_eq(&got, &want, sizeof(got));
	ck_assert_int_eq(ezaddr_resolve(NULL, "7471", EZADDR_PASSIVE, &got, err, sizeof(err)), 0);
	ck_assert(got.ss_family == AF_INET || got.ss_family == AF_INET6);
}
END_TEST

/* A lookup failure has a code of its own, not a route's EHOSTUNREACH. */
START_TEST(lookup_failure_codes)
{
	ck_assert_int_eq(ezi_gai_errno(0), 0);
	ck_assert_int_eq(ezi_gai_errno(EAI_NONAME), -ENXIO);
	ck_assert_int_eq(ezi_gai_errno(EAI_FAIL), -ENXIO);
	ck_assert_int_eq(ezi_gai_errno(EAI_SERVICE), -EINVAL);
	ck_assert_int_eq(ezi_gai_errno(EAI_AGAIN), -EAGAIN);
	ck_assert_int_eq(ezi_gai_errno(EAI_MEMORY), -ENOMEM);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("addr");
	TCase *tc = tcase_create("resolve");

	tcase_add_loop_test(tc, literal_as_getaddrinfo, 0, sizeof(literals) / sizeof(literals[0]));
	tcase_add_test(tc, scope_id_goes_to_getaddrinfo);
	tcase_add_test(tc, short_ipv4_goes_to_getaddrinfo);
	tcase_add_test(tc, names_need_a_lookup);
	tcase_add_test(tc, port_out_of_range);
	tcase_add_test(tc, invalid_literal_is_einval);
	tcase_add_test(tc, passive_wildcard);
	tcase_add_test(tc, lookup_failure_codes);
	suite_add_tcase(s, tc);
	return check_run_suite(s, CK_NORMAL);
}
