# samples/local.mk: sample programs (public header only), the ezrdma tool, and their end-to-end tests.

# The samples are built by `make` (the integration tier runs them) and their
# sources are installed as examples for users to copy.
noinst_PROGRAMS += samples/rpc_server samples/rpc_client
SAMPLE_LDADD = lib/libeasyrdma.la $(EV_LIBS) $(IBVERBS_LIBS)
# -no-install: real executables that find the library in the build tree; a
# libtool wrapper would relink on first run, which takes seconds in a VM.
samples_rpc_server_SOURCES = samples/rpc_server.c samples/rpc_proto.h
samples_rpc_server_LDADD = $(SAMPLE_LDADD)
samples_rpc_server_LDFLAGS = -no-install
samples_rpc_client_SOURCES = samples/rpc_client.c samples/rpc_proto.h
samples_rpc_client_LDADD = $(SAMPLE_LDADD)
samples_rpc_client_LDFLAGS = -no-install

examplesdir = $(docdir)/examples
dist_examples_DATA = samples/rpc_proto.h samples/rpc_server.c samples/rpc_client.c
dist_noinst_SCRIPTS += samples/rpc-demo.sh

if HAVE_CHECK
INTEGRATION_TESTS += tests/integration/test_samples_rpc
tests_integration_test_samples_rpc_SOURCES = tests/integration/test_samples_rpc.c \
	tests/integration/spawn.c tests/integration/spawn.h
tests_integration_test_samples_rpc_CFLAGS = $(TEST_CFLAGS)
tests_integration_test_samples_rpc_LDADD = $(TEST_LDADD)
endif
