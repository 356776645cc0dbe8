# tests/scale/local.mk: the 10,000-connection run (tests/scale/run-10k.sh, tests/scale/README.md); not run by make check.
MULTI_VM_TOOLS += tests/scale/ezscale
tests_scale_ezscale_SOURCES = tests/scale/ezscale.c
tests_scale_ezscale_LDADD = lib/libezcore.la
dist_noinst_SCRIPTS += tests/scale/run-10k.sh
EXTRA_DIST += tests/scale/README.md doc/scaling.md
