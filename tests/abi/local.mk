# tests/abi/local.mk: the ABI tests (integration tier): a program of the first header on this library, a program of a later one.

if HAVE_CHECK
# Built against the frozen v0 header, never include/, and linked to the
# shared library, as an application built before would be.
INTEGRATION_TESTS += tests/abi/test_abi_v0
tests_abi_test_abi_v0_SOURCES = tests/abi/test_abi_v0.c tests/abi/abibench.h
tests_abi_test_abi_v0_CPPFLAGS = -I$(top_srcdir)/tests/abi/v0
tests_abi_test_abi_v0_CFLAGS = $(TEST_CFLAGS)
tests_abi_test_abi_v0_LDADD = lib/libeasyrdma.la $(CHECK_LIBS) $(EV_LIBS)

INTEGRATION_TESTS += tests/abi/test_abi_future
tests_abi_test_abi_future_SOURCES = tests/abi/test_abi_future.c tests/abi/abibench.h
tests_abi_test_abi_future_CFLAGS = $(TEST_CFLAGS)
tests_abi_test_abi_future_LDADD = lib/libeasyrdma.la $(CHECK_LIBS) $(EV_LIBS)
endif
EXTRA_DIST += tests/abi/v0/easyrdma.h

# Unit tier: every function of easyrdma.h is exported (the map lists names, no wildcards).
TESTS += tests/abi/check-exports.sh
dist_noinst_SCRIPTS += tests/abi/check-exports.sh
