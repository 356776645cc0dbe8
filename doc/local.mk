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
