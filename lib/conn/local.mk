# lib/conn/local.mk: the conn layer's sources, tests and man pages.
lib_libezcore_la_SOURCES += \
	lib/conn/ctx.c lib/conn/ctx.h \
	lib/conn/device.c lib/conn/device.h \
	lib/conn/cq.c lib/conn/cq.h \
	lib/conn/listener.c lib/conn/listener.h \
	lib/conn/conn.c lib/conn/conn.h \
	lib/conn/msg.c \
	lib/conn/handshake.c lib/conn/handshake.h \
	lib/conn/opts.c lib/conn/opts.h \
	lib/conn/mr.c lib/conn/mr.h \
	lib/conn/pool.c lib/conn/pool.h

if HAVE_CHECK
UNIT_TESTS += tests/unit/test_handshake tests/unit/test_conn_opts
tests_unit_test_handshake_SOURCES = tests/unit/test_handshake.c
tests_unit_test_handshake_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_handshake_LDADD = $(TEST_LDADD)
tests_unit_test_conn_opts_SOURCES = tests/unit/test_conn_opts.c
tests_unit_test_conn_opts_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_conn_opts_LDADD = $(TEST_LDADD)

INTEGRATION_TESTS += tests/integration/test_conn
tests_integration_test_conn_SOURCES = tests/integration/test_conn.c
tests_integration_test_conn_CFLAGS = $(TEST_CFLAGS)
tests_integration_test_conn_LDADD = $(TEST_LDADD)
endif
