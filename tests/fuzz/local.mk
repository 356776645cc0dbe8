# tests/fuzz/local.mk: libFuzzer targets (clang), run for a bounded time by `make fuzz`.
EXTRA_DIST += tests/fuzz
FUZZ_SECONDS = 60

fuzz: config.h
	$(srcdir)/tests/fuzz/run.sh $(abs_builddir) $(FUZZ_SECONDS)

.PHONY: fuzz
