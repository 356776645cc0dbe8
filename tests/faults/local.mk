# tests/faults/local.mk: the fault suite (integration tier): misuse, bad handshakes, killed peers, storms, exhaustion, leaks.

# A test is tests/faults/test_NAME.c and one line here,
# `INTEGRATION_TESTS += tests/faults/test_NAME`: it compiles with Check's flags
# and links the library's internals, Check and tests/libeztest.a (LDADD,
# Makefile.am), where fault.c (the bench, endpoints, a server) and rawcm.c
# (raw rdma_cm and verbs peers) are.
tests_libeztest_a_SOURCES += tests/faults/fault.c tests/faults/fault.h \
	tests/faults/rawcm.c tests/faults/rawcm.h

if HAVE_CHECK
INTEGRATION_TESTS += tests/faults/test_api
INTEGRATION_TESTS += tests/faults/test_hostile_imm
INTEGRATION_TESTS += tests/faults/test_rndv
INTEGRATION_TESTS += tests/faults/test_hostile_rndv
INTEGRATION_TESTS += tests/faults/test_rndv_paths
INTEGRATION_TESTS += tests/faults/test_op_queue
INTEGRATION_TESTS += tests/faults/test_hostile_credits
INTEGRATION_TESTS += tests/faults/test_handshake
INTEGRATION_TESTS += tests/faults/test_auth
INTEGRATION_TESTS += tests/faults/test_hostile_rkey
# The same source again, the server's exports in a PD of their own.
INTEGRATION_TESTS += tests/faults/test_hostile_rkey_pd
tests_faults_test_hostile_rkey_pd_SOURCES = tests/faults/test_hostile_rkey.c
tests_faults_test_hostile_rkey_pd_CPPFLAGS = $(AM_CPPFLAGS) -DEZ_TEST_EXPORT_PD
INTEGRATION_TESTS += tests/faults/test_hostile_replay
INTEGRATION_TESTS += tests/faults/test_hostile_resume
INTEGRATION_TESTS += tests/faults/test_hostile_slowreader
INTEGRATION_TESTS += tests/faults/test_hostile_halfopen
INTEGRATION_TESTS += tests/faults/test_causes
INTEGRATION_TESTS += tests/faults/test_kill
INTEGRATION_TESTS += tests/faults/test_keepalive
INTEGRATION_TESTS += tests/faults/test_storm
INTEGRATION_TESTS += tests/faults/test_exhaust
# heaplive.c defines malloc and its family: an object of this program only,
# never an archive member (any test's call to malloc would pull it in).
INTEGRATION_TESTS += tests/faults/test_leak
tests_faults_test_leak_SOURCES = tests/faults/test_leak.c tests/faults/heaplive.c tests/faults/heaplive.h
INTEGRATION_TESTS += tests/faults/test_liveness
INTEGRATION_TESTS += tests/faults/test_scale
# Every allocation of ez_connect() failing in turn: calloc and free wrapped
# in the test's link (the library's objects come in statically here).
INTEGRATION_TESTS += tests/faults/test_alloc
tests_faults_test_alloc_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=calloc,--wrap=free
# A multi-path connection's ladder makes no QP query (wrapped at link time).
INTEGRATION_TESTS += tests/faults/test_ladder
tests_faults_test_ladder_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=ibv_query_qp
# Calls from a thread that does not own the context, two threads in
# ez_ctx_process, stale buffer handles, ez_ctx_free with buffers held.
INTEGRATION_TESTS += tests/faults/test_misuse
endif

# Two VMs (testbed pair): run by tests/faults/linkdown.sh, not by check-integration.
MULTI_VM_TOOLS += tests/faults/linkdown
tests_faults_linkdown_SOURCES = tests/faults/linkdown.c tests/faults/pair.c tests/faults/pair.h
tests_faults_linkdown_LDADD = lib/libezcore.la
MULTI_VM_TOOLS += tests/faults/deadpeer
tests_faults_deadpeer_SOURCES = tests/faults/deadpeer.c tests/faults/pair.c tests/faults/pair.h
tests_faults_deadpeer_LDADD = lib/libezcore.la
# Two VMs: a vanished peer's close and a connect storm from the other host
# (tests/faults/liveness-pair.sh).
MULTI_VM_TOOLS += tests/faults/liveness_pair
tests_faults_liveness_pair_SOURCES = tests/faults/liveness_pair.c tests/faults/pair.c tests/faults/pair.h
tests_faults_liveness_pair_LDADD = lib/libezcore.la

# Two VMs on a link that drops packets (netem): large messages in chunks
# (tests/faults/lossy.sh).
MULTI_VM_TOOLS += tests/faults/lossy
tests_faults_lossy_SOURCES = tests/faults/lossy.c tests/faults/pair.c tests/faults/pair.h
tests_faults_lossy_LDADD = lib/libezcore.la

dist_noinst_SCRIPTS += tests/faults/liveness-pair.sh tests/faults/cluster.sh tests/faults/lossy.sh
dist_noinst_SCRIPTS += tests/faults/linkdown.sh tests/faults/deadpeer.sh tests/faults/linkdown-rping.sh tests/faults/hang-loop.sh
EXTRA_DIST += tests/lsan.supp

# Many hosts on one switch (cluster.sh: `testbed cluster 4`).
MULTI_VM_TOOLS += tests/faults/cluster_hosts
tests_faults_cluster_hosts_SOURCES = tests/faults/cluster_hosts.c tests/faults/pair.c tests/faults/pair.h
tests_faults_cluster_hosts_LDADD = lib/libezcore.la
