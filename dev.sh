#!/usr/bin/env bash
# dev.sh: the README's two commands: `./dev.sh demo` (the main job) and `./dev.sh test` (every tier); `./dev.sh quick` (unit + core integration tests) before the whole suite.
#
# Both work on a fresh Debian 12 machine as root with no input: they install the
# Debian packages that are missing, bootstrap (autoreconf), configure in ./build
# and build with make -j2, then
#   demo  runs the RPC echo sample (rpc_server and rpc_client) over a real RDMA
#         device (Soft-RoCE in a VM when the machine has none) and prints its
#         round trips and latency;
#   test  runs the unit tier (make check), the integration tier in the test bed
#         built with AddressSanitizer+UBSan (tests/run-asan.sh; EZ_PLAIN_TIER=1
#         runs it in the plain build too; else the plain build runs
#         test_leak alone, whose RSS bound ASan compiles out), the threaded
#         tests under ThreadSanitizer (tests/tiers/tsan.sh), the device-rule
#         tests on Debian's 6.12 kernel (tests/tiers/kernel612.sh), the two-VM
#         tests (RoCEv2 capture, source ports per connection and path, link
#         down), four VMs on one switch (tests/tiers/cluster.sh: 3 x 3,000
#         connections), 10,000 connections in one process (tests/tiers/scale.sh), the instruction budget of the per-message path
#         (tests/tiers/insn-budget.sh), make distcheck, the Debian packages
#         (built, checked with lintian, installed, hello.c built against them
#         with pkg-config and CMake and run on the device, removed;
#         tests/tiers/packages.sh) and
#         the libFuzzer targets for a bounded time,
#         prints every Check summary line, and ends with
#         "tests: N passed, N failed". It exits non-zero when anything failed or
#         when the integration tier could not run.
# Environment: EZ_VM_ACCEL=kvm|tcg and the rest of tests/testbed/testbed's;
# EZ_SKIP_DISTCHECK=1 leaves make distcheck out; EZ_SKIP_PACKAGES=1 the packages; EZ_FUZZ_SECONDS (30) bounds
# each fuzz target.
#
# Each step is a script under tests/tiers/ (runnable on its own, with its
# own summary); tests/tiers/lib.sh counts the results across them.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
tiers=$PWD/tests/tiers
# shellcheck source=tests/tiers/lib.sh
. "$tiers/lib.sh"

prepare() {	# prepare [demo]: demo installs and builds only what the demo runs
	"$tiers/install-packages.sh" ${1:+"$1"} || exit 1
	"$tiers/build.sh" ${1:+"$1"} || exit 1
}

# The RPC echo sample: rpc_server and rpc_client over RDMA (samples/rpc-demo.sh).
demo() {
	prepare demo
	say "RPC echo sample over a real RDMA device (a Soft-RoCE VM if there is none here)"
	"$testbed" run --cwd "$build" --timeout 900 -- "$top/samples/rpc-demo.sh" "$build"
}

# Every tier in order; each adds its results to $EZ_RESULTS, a tier's own
# exit status is only its summary of them.
test_all() {
	local t0=$SECONDS
	prepare
	EZ_RESULTS=$(mktemp "${TMPDIR:-/tmp}/ez-results.XXXXXX") || exit 1
	export EZ_RESULTS
	trap 'rm -f "$EZ_RESULTS" "$EZ_RESULTS.why"' EXIT
	clean_results
	run_tier "$tiers/unit.sh"
	run_tier "$tiers/integration-asan.sh"
	run_tier "$tiers/kernel612.sh"
	run_tier "$tiers/tsan.sh"
	if [ "${EZ_PLAIN_TIER:-0}" = 1 ]; then
		run_tier "$tiers/plain-integration.sh"
	else
		run_tier "$tiers/plain-leak.sh"
	fi
	run_tier "$tiers/two-hosts.sh"
	run_tier "$tiers/linkdown.sh"
	run_tier "$tiers/cluster.sh"
	run_tier "$tiers/scale.sh"
	run_tier "$tiers/insn-budget.sh"
	run_tier "$tiers/distcheck.sh"
	run_tier "$tiers/packages.sh"
	run_tier "$tiers/fuzz.sh"
	report "$t0"
}

case ${1:-} in
demo) demo ;;
test) test_all ;;
quick) prepare && exec "$tiers/quick.sh" ;;
*) echo "usage: $0 demo|test|quick" >&2; exit 2 ;;
esac
