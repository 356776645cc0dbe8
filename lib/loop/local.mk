# lib/loop/local.mk: the event loop layer: epoll set, watches, timers, deferred work, name lookup off the loop.
lib_libezcore_la_SOURCES += lib/loop/loop.c lib/loop/loop.h lib/loop/lookup.c lib/loop/lookup.h \
	lib/loop/mailbox.c lib/loop/mailbox.h

if HAVE_CHECK
UNIT_TESTS += tests/unit/test_loop
tests_unit_test_loop_SOURCES = tests/unit/test_loop.c
tests_unit_test_loop_CFLAGS = $(TEST_CFLAGS)
tests_unit_test_loop_LDADD = $(TEST_LDADD)
endif
if HAVE_CHECK
UNIT_TESTS += tests/unit/test_mailbox
tests_unit_test_mailbox_SOURCES = tests/unit/test_mailbox.c
tests_unit_test_mailbox_CFLAGS = $(TEST_CFLAGS) -pthread
tests_unit_test_mailbox_LDADD = $(TEST_LDADD) -lpthread
endif
