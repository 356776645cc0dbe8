# lib/local.mk: the library as shipped (the layers add their sources in lib/*/local.mk).

# The static library leaves with its ez_* names only (lib/localize-archive.sh);
# the stamp reruns it whenever libtool has written the archive again.
# make install copies the rewritten lib/.libs/libeasyrdma.a.
all-local: lib/libeasyrdma.localized
lib/libeasyrdma.localized: lib/libeasyrdma.la $(srcdir)/lib/localize-archive.sh
	@if test -f lib/.libs/libeasyrdma.a; then \
	  echo "  LOCALIZE lib/.libs/libeasyrdma.a"; \
	  LD='$(LD)' NM='$(NM)' OBJCOPY='$(OBJCOPY)' AR='$(AR)' RANLIB='$(RANLIB)' \
	    $(SHELL) $(srcdir)/lib/localize-archive.sh lib/.libs/libeasyrdma.a || exit 1; \
	fi
	@touch $@
CLEANFILES += lib/libeasyrdma.localized
dist_noinst_SCRIPTS += lib/localize-archive.sh

# Only ez_* leaves libeasyrdma.a and .so, and the objects hide the rest.
TESTS += tests/check-exports.sh
dist_noinst_SCRIPTS += tests/check-exports.sh
