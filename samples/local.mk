# samples/local.mk: sample programs (public header only), the ezrdma tool, and their end-to-end tests.

# The samples are built by `make` (the integration tier runs them) and their
# sources are installed as examples for users to copy.
noinst_PROGRAMS += samples/rpc_server samples/rpc_client samples/storage_daemon \
	samples/storage_client
SAMPLE_LDADD = lib/libeasyrdma.la $(EV_LIBS) $(IBVERBS_LIBS)
# -no-install: real executables that find the library in the build tree; a
# libtool wrapper would relink on first run, which takes seconds in a VM.
samples_rpc_server_SOURCES = samples/rpc_server.c samples/rpc_proto.h
samples_rpc_server_LDADD = $(SAMPLE_LDADD) -lpthread
samples_rpc_server_CFLAGS = $(AM_CFLAGS) -pthread
samples_rpc_server_LDFLAGS = -no-install
samples_rpc_client_SOURCES = samples/rpc_client.c samples/rpc_proto.h
samples_rpc_client_LDADD = $(SAMPLE_LDADD)
samples_rpc_client_LDFLAGS = -no-install
samples_storage_daemon_SOURCES = samples/storage_daemon.c samples/storage_proto.h
samples_storage_daemon_LDADD = $(SAMPLE_LDADD) -lpthread
samples_storage_daemon_CFLAGS = $(AM_CFLAGS) -pthread
samples_storage_daemon_LDFLAGS = -no-install
samples_storage_client_SOURCES = samples/storage_client.c samples/storage_proto.h
samples_storage_client_LDADD = $(SAMPLE_LDADD)
samples_storage_client_LDFLAGS = -no-install
# Issue 24 (api): the key-value store (GET by RDMA READ, atomics, accept data).
noinst_PROGRAMS += samples/kvstore_server samples/kvstore_client
samples_kvstore_server_SOURCES = samples/kvstore_server.c samples/kvstore_proto.h
samples_kvstore_server_LDADD = $(SAMPLE_LDADD)
samples_kvstore_server_LDFLAGS = -no-install
samples_kvstore_client_SOURCES = samples/kvstore_client.c samples/kvstore_proto.h
samples_kvstore_client_LDADD = $(SAMPLE_LDADD)
samples_kvstore_client_LDFLAGS = -no-install

examplesdir = $(docdir)/examples
dist_examples_DATA = samples/rpc_proto.h samples/rpc_server.c samples/rpc_client.c \
	samples/storage_proto.h samples/storage_daemon.c samples/storage_client.c
dist_examples_DATA += samples/kvstore_proto.h samples/kvstore_server.c samples/kvstore_client.c
dist_noinst_SCRIPTS += samples/rpc-demo.sh

# The ezrdma tool is installed; its integration test runs it from the build tree.
bin_PROGRAMS += tools/ezrdma
tools_ezrdma_SOURCES = tools/ezrdma.c tools/check.c tools/check.h
tools_ezrdma_LDADD = lib/libeasyrdma.la $(EV_LIBS) $(IBVERBS_LIBS) $(MLX5_LIBS) -lm -lpthread
tools_ezrdma_CFLAGS = $(AM_CFLAGS) -pthread
dist_man1_MANS += doc/man1/ezrdma.1

# The quick start and the design are installed beside the examples.
dist_doc_DATA = doc/quickstart.md doc/design.md
