# tests/faults/local.mk: the fault suite (integration tier): misuse, bad handshakes, killed peers, storms, exhaustion, leaks.

tests_libeztest_a_SOURCES += tests/faults/fault.c tests/faults/fault.h \
	tests/faults/rawcm.c tests/faults/rawcm.h

if HAVE_CHECK
FAULT_SRC = tests/faults/fault.c tests/faults/fault.h
RAWCM_SRC = tests/faults/rawcm.c tests/faults/rawcm.h

INTEGRATION_TESTS += tests/faults/test_api
tests_faults_test_api_SOURCES = tests/faults/test_api.c $(FAULT_SRC)
tests_faults_test_api_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_api_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_imm
tests_faults_test_hostile_imm_SOURCES = tests/faults/test_hostile_imm.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_imm_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_imm_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_rndv
tests_faults_test_rndv_SOURCES = tests/faults/test_rndv.c $(FAULT_SRC)
tests_faults_test_rndv_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_rndv_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_rndv
tests_faults_test_hostile_rndv_SOURCES = tests/faults/test_hostile_rndv.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_rndv_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_rndv_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_rndv_paths
tests_faults_test_rndv_paths_SOURCES = tests/faults/test_rndv_paths.c $(FAULT_SRC)
tests_faults_test_rndv_paths_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_rndv_paths_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_credits
tests_faults_test_hostile_credits_SOURCES = tests/faults/test_hostile_credits.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_credits_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_credits_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_handshake
tests_faults_test_handshake_SOURCES = tests/faults/test_handshake.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_handshake_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_handshake_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_auth
tests_faults_test_auth_SOURCES = tests/faults/test_auth.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_auth_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_auth_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_rkey
tests_faults_test_hostile_rkey_SOURCES = tests/faults/test_hostile_rkey.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_rkey_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_rkey_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_rkey_pd
tests_faults_test_hostile_rkey_pd_SOURCES = tests/faults/test_hostile_rkey.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_rkey_pd_CFLAGS = $(TEST_CFLAGS) -DEZ_TEST_EXPORT_PD
tests_faults_test_hostile_rkey_pd_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_replay
tests_faults_test_hostile_replay_SOURCES = tests/faults/test_hostile_replay.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_replay_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_replay_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_slowreader
tests_faults_test_hostile_slowreader_SOURCES = tests/faults/test_hostile_slowreader.c $(FAULT_SRC)
tests_faults_test_hostile_slowreader_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_slowreader_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_hostile_halfopen
tests_faults_test_hostile_halfopen_SOURCES = tests/faults/test_hostile_halfopen.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_hostile_halfopen_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_hostile_halfopen_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_causes
tests_faults_test_causes_SOURCES = tests/faults/test_causes.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_causes_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_causes_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_kill
tests_faults_test_kill_SOURCES = tests/faults/test_kill.c $(FAULT_SRC)
tests_faults_test_kill_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_kill_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_keepalive
tests_faults_test_keepalive_SOURCES = tests/faults/test_keepalive.c $(FAULT_SRC) $(RAWCM_SRC)
tests_faults_test_keepalive_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_keepalive_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_storm
tests_faults_test_storm_SOURCES = tests/faults/test_storm.c $(FAULT_SRC)
tests_faults_test_storm_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_storm_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_exhaust
tests_faults_test_exhaust_SOURCES = tests/faults/test_exhaust.c $(FAULT_SRC)
tests_faults_test_exhaust_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_exhaust_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_leak
tests_faults_test_leak_SOURCES = tests/faults/test_leak.c tests/faults/heaplive.c tests/faults/heaplive.h $(FAULT_SRC)
tests_faults_test_leak_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_leak_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_liveness
tests_faults_test_liveness_SOURCES = tests/faults/test_liveness.c $(FAULT_SRC)
tests_faults_test_liveness_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_liveness_LDADD = $(TEST_LDADD)
INTEGRATION_TESTS += tests/faults/test_scale
tests_faults_test_scale_SOURCES = tests/faults/test_scale.c $(FAULT_SRC)
tests_faults_test_scale_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_scale_LDADD = $(TEST_LDADD)
endif

# Two VMs (testbed pair): run by tests/faults/linkdown.sh, not by check-integration.
check_PROGRAMS += tests/faults/linkdown
tests_faults_linkdown_SOURCES = tests/faults/linkdown.c tests/faults/pair.c tests/faults/pair.h
tests_faults_linkdown_LDADD = lib/libezcore.la
check_PROGRAMS += tests/faults/deadpeer
tests_faults_deadpeer_SOURCES = tests/faults/deadpeer.c tests/faults/pair.c tests/faults/pair.h
tests_faults_deadpeer_LDADD = lib/libezcore.la
# Two VMs: a vanished peer's close and a connect storm from the other host
# (tests/faults/liveness-pair.sh).
check_PROGRAMS += tests/faults/liveness_pair
tests_faults_liveness_pair_SOURCES = tests/faults/liveness_pair.c tests/faults/pair.c tests/faults/pair.h
tests_faults_liveness_pair_LDADD = lib/libezcore.la

dist_noinst_SCRIPTS += tests/faults/liveness-pair.sh tests/faults/cluster.sh
dist_noinst_SCRIPTS += tests/faults/linkdown.sh tests/faults/deadpeer.sh tests/faults/linkdown-rping.sh tests/faults/hang-loop.sh
EXTRA_DIST += tests/lsan.supp

# Every allocation of ez_connect() failing in turn: calloc and free wrapped
# in the test's link (the library's objects come in statically here).
if HAVE_CHECK
INTEGRATION_TESTS += tests/faults/test_alloc
tests_faults_test_alloc_SOURCES = tests/faults/test_alloc.c $(FAULT_SRC)
tests_faults_test_alloc_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_alloc_LDADD = $(TEST_LDADD)
tests_faults_test_alloc_LDFLAGS = -Wl,--wrap=calloc,--wrap=free
endif

# A multi-path connection's ladder makes no QP query (wrapped at link time).
if HAVE_CHECK
INTEGRATION_TESTS += tests/faults/test_ladder
tests_faults_test_ladder_SOURCES = tests/faults/test_ladder.c $(FAULT_SRC)
tests_faults_test_ladder_CFLAGS = $(TEST_CFLAGS)
tests_faults_test_ladder_LDADD = $(TEST_LDADD)
tests_faults_test_ladder_LDFLAGS = -Wl,--wrap=ibv_query_qp
endif

# Calls from a thread that does not own the context, two threads in
# ez_ctx_process, stale buffer handles, ez_ctx_free with buffers held.
if HAVE_CHECK
INTEGRATION_TESTS += tests/faults/test_misuse
tests_faults_test_misuse_SOURCES = tests/faults/test_misuse.c $(FAULT_SRC)
tests_faults_test_misuse_CFLAGS = $(TEST_CFLAGS) -pthread
tests_faults_test_misuse_LDADD = $(TEST_LDADD) -lpthread
endif

# Many hosts on one switch (cluster.sh: `testbed cluster 4`).
check_PROGRAMS += tests/faults/cluster_hosts
tests_faults_cluster_hosts_SOURCES = tests/faults/cluster_hosts.c tests/faults/pair.c tests/faults/pair.h
tests_faults_cluster_hosts_LDADD = lib/libezcore.la
