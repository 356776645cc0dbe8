# doc/local.mk: man pages of the library-wide functions, and the check that every
# public function has one.
dist_man3_MANS += doc/man3/ez_strerror.3 doc/man3/ez_errmsg.3 doc/man3/ez_set_log.3 \
	doc/man3/ez_version.3
# The library's model and its security model (what a peer can reach).
dist_man7_MANS += doc/man7/easyrdma.7
TESTS += doc/check-man-pages.sh
dist_noinst_SCRIPTS += doc/check-man-pages.sh
# Issue 24 (api): every man page through man -l from any directory, every C
# block of README.md and doc/quickstart.md through the compiler.
TESTS += doc/check-doc-examples.sh
dist_noinst_SCRIPTS += doc/check-doc-examples.sh
# Connection requests handed to other threads' contexts (issue 21).
dist_man3_MANS += doc/man3/ez_handoff.3 doc/man3/ez_ctx_take_requests.3
# The ABI policy, the benchmark data behind doc/performance.md and its pictures
# (tests/check-dist.sh: the tarball holds every tracked file).
EXTRA_DIST += doc/abi.md doc/performance-bigmsg.json doc/performance-cdf.json \
	doc/performance-conn-2026-12-05.json doc/performance-insn-stream.json \
	doc/performance-wallclock-2026-12-05.json doc/plots/conn_setup.svg doc/plots/insn.svg \
	doc/plots/lat_cdf.svg doc/plots/rate_bw.svg
# The Debian packaging (a native package: the tarball is its source) and the
# packages tier's programs (tests/tiers/packages.sh).
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/easyrdma-tools.install debian/libeasyrdma-dev.install \
	debian/libeasyrdma1.install debian/libeasyrdma1.symbols \
	tests/packaging/cmake-hello/CMakeLists.txt tests/faults/README.md
dist_noinst_SCRIPTS += tests/packaging/build-debs.sh tests/packaging/check-installed.sh \
	tests/packaging/extract-hello.sh
