# tests/faults/local.mk: the fault suite (integration tier): misuse, bad handshakes, killed peers, storms, exhaustion, leaks.

if HAVE_CHECK
FAULT_SRC = tests/faults/fault.c tests/faults/fault.h

INTEGRATION_TESTS += tests/faults/test_api
tests_faults_test_api_SOURCES = tests/faults/test_api.c $(FAULT_SRC)
tests_faults_test_api_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_api_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_handshake
tests_faults_test_handshake_SOURCES = tests/faults/test_handshake.c $(FAULT_SRC)
tests_faults_test_handshake_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_handshake_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_kill
tests_faults_test_kill_SOURCES = tests/faults/test_kill.c $(FAULT_SRC)
tests_faults_test_kill_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_kill_LDADD = $(TEST_LDADD)
endif

dist_noinst_SCRIPTS += tests/faults/run-asan.sh
EXTRA_DIST += tests/faults/lsan.supp
