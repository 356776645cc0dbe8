# tests/integration/local.mk: the integration tier (a device; `make check-integration`).
# A test is tests/integration/test_NAME.c and one line here,
# `INTEGRATION_TESTS += tests/integration/test_NAME`: it compiles with Check's
# flags and links the library's internals, Check and tests/libeztest.a (LDADD,
# Makefile.am), which holds testdev.c (below) and the fault suite's helpers.

if HAVE_CHECK
INTEGRATION_TESTS += tests/integration/test_qpfsm_ladder
INTEGRATION_TESTS += tests/integration/test_qpfsm_diff
INTEGRATION_TESTS += tests/integration/test_srqpool
INTEGRATION_TESTS += tests/integration/test_pool_share
INTEGRATION_TESTS += tests/integration/test_conn
INTEGRATION_TESTS += tests/integration/test_flow_policy
# Issue 24 (api): send readiness, accept data, atomics.
INTEGRATION_TESTS += tests/integration/test_api24
# Regions given with the connection (issue 42).
INTEGRATION_TESTS += tests/integration/test_conn_exports
INTEGRATION_TESTS += tests/integration/test_multipath
# Connection requests handed to worker threads' contexts (issue 21).
INTEGRATION_TESTS += tests/integration/test_workers
INTEGRATION_TESTS += tests/integration/test_verbs_pingpong

# Tests that start the built programs (the samples, ezrdma, ezbench): last in
# the tier (Makefile.am appends them after the fault and ABI tests). spawn.c
# is their own source, not in tests/libeztest.a: it defines test_addr() as
# fault.c does, and an archive of both gives a fault test two definitions.
SPAWN_SRC = tests/integration/spawn.c tests/integration/spawn.h
INTEGRATION_TESTS_LAST += tests/integration/test_samples_rpc
tests_integration_test_samples_rpc_SOURCES = tests/integration/test_samples_rpc.c $(SPAWN_SRC)
INTEGRATION_TESTS_LAST += tests/integration/test_samples_storage
tests_integration_test_samples_storage_SOURCES = tests/integration/test_samples_storage.c $(SPAWN_SRC)
INTEGRATION_TESTS_LAST += tests/integration/test_samples_kvstore
tests_integration_test_samples_kvstore_SOURCES = tests/integration/test_samples_kvstore.c $(SPAWN_SRC)
INTEGRATION_TESTS_LAST += tests/integration/test_ezrdma
tests_integration_test_ezrdma_SOURCES = tests/integration/test_ezrdma.c $(SPAWN_SRC)
INTEGRATION_TESTS_LAST += tests/integration/test_ezbench
tests_integration_test_ezbench_SOURCES = tests/integration/test_ezbench.c $(SPAWN_SRC)
endif
tests_libeztest_a_SOURCES += tests/integration/testdev.c tests/integration/testdev.h
EXTRA_DIST += tests/integration/testenv.h

# The flow tests' peer program, driven by tests/integration/two_host_flows.sh
# in the two-VM test bed (testbed pair).
noinst_PROGRAMS += tests/integration/flowpeer tests/integration/flowcheck
tests_integration_flowcheck_SOURCES = tests/integration/flowcheck.c
# Links nothing (without a _LDADD it would link the tests' LDADD).
tests_integration_flowcheck_LDADD =
tests_integration_flowpeer_SOURCES = tests/integration/flowpeer.c
tests_integration_flowpeer_LDADD = lib/libeasyrdma.la $(EV_LIBS) $(IBVERBS_LIBS)
tests_integration_flowpeer_LDFLAGS = -no-install
dist_noinst_SCRIPTS += tests/integration/two_host_flows.sh
# Two VMs on a virtual wire; not part of `make check` (it boots two guests).
check-flows-pair: tests/integration/flowpeer tests/integration/flowcheck
	$(top_srcdir)/tests/testbed/testbed pair --timeout 900 --cwd $(abs_builddir) -- \
		$(abs_top_srcdir)/tests/integration/two_host_flows.sh
# The multi-path case alone (a 4-path connection moving 64 MiB).
check-mpath-pair: tests/integration/flowpeer tests/integration/flowcheck
	$(top_srcdir)/tests/testbed/testbed pair --timeout 600 --cwd $(abs_builddir) -- \
		env EZ_FLOW_CASES=mpath $(abs_top_srcdir)/tests/integration/two_host_flows.sh
.PHONY: check-flows-pair check-mpath-pair
