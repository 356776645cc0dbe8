# lib/srqpool/local.mk: the srqpool layer's sources, tests and man pages.
lib_libezcore_la_SOURCES += lib/srqpool/srqpool.h lib/srqpool/pool.h \
	lib/srqpool/params.c lib/srqpool/freelist.c lib/srqpool/srqpool.c \
	lib/srqpool/buf.c lib/srqpool/desc.c lib/srqpool/hwcounters.c lib/srqpool/share.c

if HAVE_CHECK
INTEGRATION_TESTS += tests/integration/test_srqpool
tests_integration_test_srqpool_SOURCES = tests/integration/test_srqpool.c \
	tests/integration/testdev.c tests/integration/testdev.h
tests_integration_test_srqpool_CFLAGS = $(TEST_CFLAGS)
tests_integration_test_srqpool_LDADD = $(TEST_LDADD)

INTEGRATION_TESTS += tests/integration/test_pool_share
tests_integration_test_pool_share_SOURCES = tests/integration/test_pool_share.c tests/integration/testenv.h
tests_integration_test_pool_share_CFLAGS = $(TEST_CFLAGS)
tests_integration_test_pool_share_LDADD = $(TEST_LDADD)
endif

dist_man3_MANS += doc/man3/ez_srqpool_stats.3 doc/man3/ez_srqpool_errmsg.3 \
	doc/man3/ez_buf_data.3 doc/man3/ez_buf_len.3 doc/man3/ez_buf_release.3
