# tests/unit/local.mk: the unit tier (no device; `make check` runs it).
# A test is tests/unit/test_NAME.c and one line here,
# `UNIT_TESTS += tests/unit/test_NAME`: it compiles with Check's flags and
# links the library's internals, Check and tests/libeztest.a (LDADD,
# Makefile.am).

# A connection's data path on a fake device (test_datapath and any test of it).
tests_libeztest_a_SOURCES += tests/unit/fakeverbs.c tests/unit/fakeverbs.h

if HAVE_CHECK
UNIT_TESTS += tests/unit/test_addr
UNIT_TESTS += tests/unit/test_assert
UNIT_TESTS += tests/unit/test_auth
UNIT_TESTS += tests/unit/test_budget
UNIT_TESTS += tests/unit/test_conn_fsm
UNIT_TESTS += tests/unit/test_conn_handle
UNIT_TESTS += tests/unit/test_conn_opts
UNIT_TESTS += tests/unit/test_credit_share
# The data path (msg.c, sendq.c) without a device: a fake ibv_context
# whose post_send, post_srq_recv and poll_cq are the test's (fakeverbs.c).
UNIT_TESTS += tests/unit/test_datapath
UNIT_TESTS += tests/unit/test_error
UNIT_TESTS += tests/unit/test_exports
UNIT_TESTS += tests/unit/test_flow
UNIT_TESTS += tests/unit/test_handshake
UNIT_TESTS += tests/unit/test_heap
UNIT_TESTS += tests/unit/test_imm
UNIT_TESTS += tests/unit/test_loop
UNIT_TESTS += tests/unit/test_mailbox
UNIT_TESTS += tests/unit/test_op_queue
UNIT_TESTS += tests/unit/test_penalty
UNIT_TESTS += tests/unit/test_qpfsm
UNIT_TESTS += tests/unit/test_rate
UNIT_TESTS += tests/unit/test_replay
UNIT_TESTS += tests/unit/test_resume
UNIT_TESTS += tests/unit/test_rx_check
UNIT_TESTS += tests/unit/test_settle
UNIT_TESTS += tests/unit/test_sendslab
UNIT_TESTS += tests/unit/test_session_index
UNIT_TESTS += tests/unit/test_session_route
UNIT_TESTS += tests/unit/test_srqpool
endif
