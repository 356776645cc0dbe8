#!/usr/bin/env bash
# dev.sh: the README's two commands: `./dev.sh demo` (the main job) and `./dev.sh test` (every tier).
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
#         test_leak alone, whose RSS bound ASan compiles out), the two-VM
#         tests (RoCEv2 capture, source ports per connection and path, link
#         down), make distcheck and
#         the libFuzzer targets for a bounded time,
#         prints every Check summary line, and ends with
#         "tests: N passed, N failed". It exits non-zero when anything failed or
#         when the integration tier could not run.
# Environment: EZ_VM_ACCEL=kvm|tcg and the rest of tests/testbed/testbed's;
# EZ_SKIP_DISTCHECK=1 leaves make distcheck out; EZ_FUZZ_SECONDS (30) bounds
# each fuzz target.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")" || exit 1
top=$PWD
build=$top/build
testbed=$top/tests/testbed/testbed

PACKAGES="build-essential autoconf automake libtool pkg-config libev-dev check
	rdma-core ibverbs-providers libibverbs-dev librdmacm-dev libssl-dev ibverbs-utils
	rdmacm-utils perftest qemu-system-x86 linux-image-amd64 busybox-static kmod
	iproute2 tcpdump clang xz-utils"

say() { printf '\n==== %s\n' "$*"; }
die() { echo "dev.sh: $*" >&2; exit 1; }

# Installs only what dpkg does not already have, so a warm machine skips apt.
install_packages() {
	local p missing=""
	for p in $PACKAGES; do
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	say "installing:$missing"
	[ "$(id -u)" = 0 ] || die "packages missing:$missing (run as root, or apt-get install them)"
	export DEBIAN_FRONTEND=noninteractive
	timeout 900 apt-get update -q || die "apt-get update failed"
	# shellcheck disable=SC2086
	timeout 1800 apt-get install -y -q --no-install-recommends $missing ||
		die "apt-get install failed"
}

# autoreconf when configure is missing: once it exists, make reruns autoconf,
# automake and config.status itself when their sources change.
build_tree() {
	if [ ! -x configure ]; then
		say "autoreconf -fi"
		timeout 600 autoreconf -fi || die "autoreconf failed"
	fi
	mkdir -p "$build"
	if [ ! -f "$build/Makefile" ]; then
		say "configure (in build/)"
		(cd "$build" && timeout 600 ../configure) || die "configure failed"
	fi
	say "make -j2"
	timeout 1800 make -C "$build" -j2 || die "make failed"
	timeout 1800 make -C "$build" -j2 integration-programs || die "make integration-programs failed"
}

# The RPC echo sample: rpc_server and rpc_client over RDMA (samples/rpc-demo.sh).
# A second tree configured with --enable-sanitizers, for the fault suite.
asan_build() {
	mkdir -p "$top/build-asan"
	if [ ! -f "$top/build-asan/Makefile" ]; then
		(cd "$top/build-asan" && timeout 600 ../configure --enable-sanitizers >/dev/null) ||
			{ echo "dev.sh: configure --enable-sanitizers failed" >&2; return 1; }
	fi
	timeout 1800 make -C "$top/build-asan" -j2 >/dev/null
}

demo() {
	install_packages
	build_tree
	say "RPC echo sample over a real RDMA device (a Soft-RoCE VM if there is none here)"
	"$testbed" run --cwd "$build" --timeout 900 -- "$top/samples/rpc-demo.sh" "$build"
}

passed=0 failed=0
declare -a summary=()
result() {	# result pass|fail WHAT
	if [ "$1" = pass ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	summary+=("$(printf '%-4s %s' "${1^^}" "$2")")
}

# Counts the results automake's test driver left in DIR's .trs files. Returns
# 1 when there were none (the tier did not run).
# count_trs DIR [BUILD]: one result per .trs below BUILD/DIR (BUILD: ./build).
count_trs() {
	local f r name n=0 b=${2:-$build}
	while IFS= read -r f; do
		name=${f#"$top"/}; name=${name%.trs}
		r=$(sed -n 's/^:test-result: //p' "$f" | head -1)
		case $r in
		PASS|XFAIL) result pass "$name"; n=$((n + 1)) ;;
		FAIL|ERROR|XPASS) result fail "$name"; n=$((n + 1)) ;;
		SKIP) summary+=("SKIP $name") ;;
		esac
	done < <(find "$b/$1" -name '*.trs' 2>/dev/null | sort)
	[ $n -gt 0 ]
}

# Each test log's Check summary ("100%: Checks: N, Failures: N, Errors: N").
check_lines() {
	local f
	find "$build" "$top/build-asan" -path "*/easyrdma-*" -prune -o -name '*.log' ! -name test-suite.log \
		-print 2>/dev/null | sort | while IFS= read -r f; do
		grep -h '^[0-9]*%: Checks: ' "$f" | sed "s|^|${f#"$top"/}: |"
	done
}

test_all() {
	local st t0=$SECONDS t
	install_packages
	build_tree
	# Fresh results only: a stale .trs must not count.
	find "$build" -path "$build/easyrdma-*" -prune -o \( -name '*.trs' -o -name 'test-suite.log' \) -print0 |
		xargs -0 rm -f

	say "unit tier: make check"
	local f0=$failed
	timeout 1200 make -C "$build" -j2 check; st=$?
	count_trs tests/unit || result fail "unit tier did not run (make check exited $st)"
	count_trs doc || true
	[ $st -eq 0 ] || [ $failed -gt $f0 ] || result fail "make check exited $st"

	# The integration tier runs once, in the ASan+UBSan build: every test
	# on the device with leak checks on (a plain-build run adds nothing a
	# sanitized one misses, and CI's time is bounded). EZ_PLAIN_TIER=1 runs
	# it in the plain build as well.
	say "integration tier under AddressSanitizer and UBSan (build-asan/, in the test bed)"
	t=$SECONDS
	f0=$failed
	if asan_build; then
		EZ_TESTBED_TIMEOUT=2100 "$top/tests/run-asan.sh" "$top/build-asan"; st=$?
	else
		st=1
		result fail "ASan build"
	fi
	echo "(ASan integration tier: $((SECONDS - t)) s)"
	count_trs tests/faults "$top/build-asan" || result fail "fault suite did not run"
	if ! count_trs tests/integration "$top/build-asan"; then
		result fail "integration tier could not run (run-asan.sh exited $st)"
	elif [ $st -ne 0 ] && [ $failed -eq $f0 ]; then
		result fail "integration tier under ASan+UBSan (sanitizer report or test bed error; run-asan.sh exited $st)"
	fi
	if [ "${EZ_PLAIN_TIER:-0}" = 1 ]; then
		say "integration tier: make check-integration in the test bed (plain build)"
		"$testbed" run --cwd "$build" --timeout 1500 -- make check-integration ||
			result fail "integration tier (plain build)"
		count_trs tests/integration || result fail "plain integration tier did not run"
	else
		# test_leak's RSS bound is compiled out under ASan (its quarantine
		# keeps freed memory resident), so the plain build runs that test.
		say "plain build: tests/faults/test_leak (its RSS bound), in the test bed"
		f0=$failed
		make -C "$build" -j2 tests/faults/test_leak >/dev/null &&
			"$testbed" run --cwd "$build" --timeout 600 -- \
				make check TESTS=tests/faults/test_leak; st=$?
		count_trs tests/faults || result fail "plain test_leak did not run (exit $st)"
		[ $st -eq 0 ] || [ $failed -gt $f0 ] || result fail "plain test_leak (exit $st)"
	fi

	# Two VMs on a virtual wire: real RoCEv2 packets, captured with tcpdump.
	say "two hosts: RoCEv2 between two VMs, captured with tcpdump"
	t=$SECONDS
	if "$testbed" pair --cwd "$build" --timeout 600 -- "$top/tests/integration/two_host_capture.sh"; then
		result pass two_host_capture
	else
		result fail two_host_capture
	fi
	echo "(two hosts: $((SECONDS - t)) s)"
	local pt
	for pt in check-flows-pair check-mpath-pair; do
		say "two hosts: make $pt"
		t=$SECONDS
		if timeout 900 make -C "$build" "$pt"; then
			result pass "$pt"
		else
			result fail "$pt"
		fi
		echo "($pt: $((SECONDS - t)) s)"
	done
	say "two hosts: link down on one of them (tests/faults/linkdown.sh)"
	t=$SECONDS
	if EZ_TESTBED_TIMEOUT=400 "$top/tests/faults/linkdown.sh" "$build"; then
		result pass "link down (two hosts)"
	else
		result fail "link down (two hosts)"
	fi
	echo "(link down: $((SECONDS - t)) s)"

	if [ "${EZ_SKIP_DISTCHECK:-0}" = 1 ]; then
		summary+=("SKIP make distcheck (EZ_SKIP_DISTCHECK=1)")
	else
		say "make distcheck"
		t=$SECONDS
		if timeout 1200 make -C "$build" -j2 distcheck; then
			result pass "make distcheck"
		else
			result fail "make distcheck"
		fi
		echo "(distcheck: $((SECONDS - t)) s)"
	fi

	say "fuzzing: libFuzzer targets, ${EZ_FUZZ_SECONDS:-30} s each (make fuzz)"
	if timeout 900 make -C "$build" fuzz FUZZ_SECONDS="${EZ_FUZZ_SECONDS:-30}"; then
		result pass "fuzz (handshake decoder, qpfsm validator)"
	else
		result fail "fuzz (handshake decoder, qpfsm validator)"
	fi

	say "Check summaries"
	check_lines
	say "results ($((SECONDS - t0)) s)"
	printf '%s\n' "${summary[@]}"
	echo "tests: $passed passed, $failed failed"
	[ $failed -eq 0 ]
}

case ${1:-} in
demo) demo ;;
test) test_all ;;
*) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
