# tests/local.mk: the two tiers. `make check` runs the unit tier and a probe
# that says whether a device is there; `make check-integration` runs the
# integration tier and fails when there is no RDMA device.

# The helpers several tests share, compiled once: each folder adds its own
# (tests/unit, tests/integration, tests/faults local.mk). Every Check test links
# the archive (LDADD, Makefile.am) and so takes the objects it calls, no more.
if HAVE_CHECK
check_LIBRARIES += tests/libeztest.a
endif
tests_libeztest_a_SOURCES =

# `make check` builds the unit tier only; the device tier's programs are
# EXTRA_PROGRAMS (their sources are distributed all the same), built on the
# host by `make integration-programs`. distcheck thus compiles ~20 programs,
# not ~90 (it took 310 s of CI); tests/check-dist.sh checks the tarball holds
# every tracked file instead of compiling them a second time.
check_PROGRAMS += $(UNIT_TESTS)
EXTRA_PROGRAMS += $(INTEGRATION_TESTS) $(MULTI_VM_TOOLS)
CLEANFILES += $(INTEGRATION_TESTS) $(MULTI_VM_TOOLS)
TESTS += $(UNIT_TESTS) tests/integration/device-probe.sh
# automake writes a test's .log rule only when it sees the test in TESTS; this
# never-true condition makes it write them for the integration tier too, which
# check-integration runs by overriding TESTS.
if EZ_NEVER
TESTS += $(INTEGRATION_TESTS)
endif
dist_noinst_SCRIPTS += tests/integration/device-probe.sh tests/integration/two_host_capture.sh \
	tests/run-asan.sh
EXTRA_DIST += tests/testbed .ci/run tests/checkmain.h tests/waits.h

# The integration tier: every test must run; no device is a failure here.
check-integration: $(INTEGRATION_TESTS)
	@EZ_REQUIRE_DEVICE=1 $(srcdir)/tests/integration/device-probe.sh
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(INTEGRATION_TESTS)'

# Builds the tier's programs (on the host: compiling inside a TCG guest is slow),
# the multi-VM tiers' programs and every program `make check` builds (the unit
# tests): else the guest's `make check` compiles them, which took minutes of the
# ASan tier.
integration-programs: $(check_PROGRAMS) $(INTEGRATION_TESTS) $(MULTI_VM_TOOLS)

# The tier's tests, in order, for tests/run-asan.sh's shards.
print-integration-tests:
	@echo $(INTEGRATION_TESTS)

.PHONY: check-integration integration-programs print-integration-tests

# The README's example must build against the installed library and its
# pkg-config file (make installcheck; distcheck runs it).
installcheck-local:
	$(AWK) '/^```c$$/ { f = 1; next } /^```$$/ { f = 0 } f' $(srcdir)/README.md >readme-example.c
	$(CC) -Wall -Werror -o readme-example readme-example.c \
		`PKG_CONFIG_PATH="$(DESTDIR)$(pkgconfigdir)" $(PKG_CONFIG) --cflags --libs easyrdma` $(EV_LIBS)
	rm -f readme-example readme-example.c

# The layer rules, no include cycle in lib/ and the owner rule with its
# baseline (tests/check-layers.py, run on the source tree), and that checker
# itself on small fake trees.
TESTS += tests/check-layers.py tests/unit/test_check_layers.sh
dist_noinst_SCRIPTS += tests/check-layers.py tests/unit/test_check_layers.sh
EXTRA_DIST += tests/owner-baseline.txt

# doc/design.md against the code (tests/check-design-doc.py: the connection
# machine's state and event counts and names, the layer table, the files it
# names), and that checker itself on copies of the tree with a drift planted.
TESTS += tests/check-design-doc.py tests/unit/test_check_design_doc.sh
dist_noinst_SCRIPTS += tests/check-design-doc.py tests/unit/test_check_design_doc.sh

# The tiers ./dev.sh test runs, one script each (tests/tiers/lib.sh counts).
dist_noinst_SCRIPTS += tests/tiers/install-packages.sh tests/tiers/build.sh \
	tests/tiers/unit.sh tests/tiers/integration-asan.sh tests/tiers/plain-integration.sh \
	tests/tiers/plain-leak.sh tests/tiers/two-hosts.sh tests/tiers/linkdown.sh \
	tests/tiers/distcheck.sh tests/tiers/fuzz.sh tests/tiers/tsan.sh tests/tiers/insn-budget.sh \
	tests/tiers/cluster.sh tests/tiers/scale.sh tests/tiers/quick.sh tests/flakehunt.sh \
	tests/tiers/kernel612.sh tests/tiers/packages.sh tests/check-dist.sh
EXTRA_DIST += tests/tiers/lib.sh

