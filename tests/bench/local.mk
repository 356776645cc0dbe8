# tests/bench/local.mk: the benchmark program (easyrdma's side of tests/bench/compare) and its check.

# Built by `make` so tests/bench/compare finds it; never run by `make check`
# itself except through the integration test below.
noinst_PROGRAMS += tests/bench/ezbench
tests_bench_ezbench_SOURCES = tests/bench/ezbench.c
tests_bench_ezbench_LDADD = lib/libeasyrdma.la $(EV_LIBS) $(IBVERBS_LIBS)
# A real executable, not a libtool wrapper that relinks on first run in the VM.
tests_bench_ezbench_LDFLAGS = -no-install
# The serial rdma_cm anchor (cmtime has no serial mode).
noinst_PROGRAMS += tests/bench/cmserial
tests_bench_cmserial_SOURCES = tests/bench/cmserial.c
tests_bench_cmserial_LDADD = $(RDMACM_LIBS) $(IBVERBS_LIBS)

dist_noinst_SCRIPTS += tests/bench/compare tests/bench/inside-vm.sh tests/bench/summarize.py \
	tests/bench/plot.py tests/bench/test-plot.sh \
	tests/bench/insn tests/bench/insn-inside.sh tests/bench/insn-summarize.py \
	tests/bench/insn-functions.py \
	tests/bench/workers-bench.sh
# Issue 21 (cores): the two-VM worker benchmark and the per-worker instruction count.
dist_noinst_SCRIPTS += tests/bench/workers-bench-pair.sh tests/bench/insn-workers.sh
# The pictures of doc/performance.md (plot.py) are drawn from fixed data.
TESTS += tests/bench/test-plot.sh
EXTRA_DIST += tests/bench/README.md tests/bench/insn-budget.json tests/bench/steptime.c tests/bench/cmwait.c doc/performance.md doc/performance-history.md doc/performance.json \
	doc/performance-s4.json doc/performance-s4-conn.json doc/performance-s4-lat.json doc/performance-s5.json \
	doc/performance-s6.json doc/performance-insn.json \
	tests/bench/experiments/lat-variants.sh tests/bench/experiments/perftest-shared-cq.patch \
	tests/bench/experiments/kernel-calls.sh
