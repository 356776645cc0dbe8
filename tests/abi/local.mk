# tests/abi/local.mk: the ABI tests (integration tier): a program of the first header on this library, a program of a later one.

if HAVE_CHECK
# Linked to the shared library, as an application is, not to the library's
# internals: each names its own _LDADD.
ABI_LDADD = lib/libeasyrdma.la $(CHECK_LIBS) $(EV_LIBS)
# Built against the frozen v0 header, never include/.
INTEGRATION_TESTS += tests/abi/test_abi_v0
tests_abi_test_abi_v0_CPPFLAGS = -I$(top_srcdir)/tests/abi/v0
tests_abi_test_abi_v0_LDADD = $(ABI_LDADD)
INTEGRATION_TESTS += tests/abi/test_abi_future
tests_abi_test_abi_future_LDADD = $(ABI_LDADD)
endif
EXTRA_DIST += tests/abi/v0/easyrdma.h tests/abi/abibench.h

# Unit tier: every function of easyrdma.h is exported (the map lists names, no wildcards).
TESTS += tests/abi/check-exports.sh
dist_noinst_SCRIPTS += tests/abi/check-exports.sh
