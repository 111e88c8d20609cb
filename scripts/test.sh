#!/usr/bin/env bash
# The project's test command (make test, make test-full, .ci/run): go vet, every package's
# tests on PoCL, the concurrency tests under the race detector and every kernel under
# oclgrind, each phase timed, with a table of the phases' wall times at the end.
#
# Caches start empty unless CLHOST_TEST_WARM=1: PoCL's kernel cache and clhost's program
# cache point at new temporary folders, so a run measures what a new machine sees and no
# test leans on an earlier run's cache.
#
#   scripts/test.sh          the default suite (make test)
#   scripts/test.sh full     the default suite, then the exhaustive sweeps (every tile of
#                            every geometry) and the ONNX conformance run (make test-full)
#   scripts/test.sh extra    the exhaustive sweeps and the conformance run alone (CI runs
#                            them after make test)
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-default}
GO=${GO:-go}

# Whether Go's build cache held anything at the start (it is empty on a new machine, and
# where XDG_CACHE_HOME points at a new folder): compiling the packages, their
# dependencies and the race build then takes a share of the phases' time.
gocache=$("$GO" env GOCACHE)
if [ -n "$(ls -A "$gocache" 2>/dev/null | head -1)" ]; then gostate=warm; else gostate=empty; fi
caches=empty tmp=
if [ "${CLHOST_TEST_WARM:-0}" = 1 ]; then
	caches=warm
else
	# Go's build cache stays where it is: it lives under XDG_CACHE_HOME by default.
	GOCACHE=$("$GO" env GOCACHE)
	export GOCACHE
	tmp=$(mktemp -d)
	export POCL_CACHE_DIR="$tmp/pocl" XDG_CACHE_HOME="$tmp/xdg"
	mkdir -p "$POCL_CACHE_DIR" "$XDG_CACHE_HOME"
fi

names=() times=() cpus=() results=()

# childcpu sets CPU to the user+system CPU seconds the script's finished children have
# used (bash's times, which must run in this shell, not in a $(...) subshell).
cpufile=$(mktemp)
trap 'rm -rf "$cpufile" ${tmp:+"$tmp"}' EXIT
childcpu() {
	times >"$cpufile"
	CPU=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$cpufile")
}
status=0
# phase NAME COMMAND...: runs one phase, records its wall time and result, and goes on to
# the next phase when it fails (so one run shows every phase's state), failing at the end.
phase() {
	local name=$1
	shift
	echo "== $name: $*"
	local start=$SECONDS cpu0
	childcpu
	cpu0=$CPU
	if "$@"; then
		results+=(ok)
	else
		results+=(FAIL)
		status=1
	fi
	names+=("$name")
	times+=($((SECONDS - start)))
	childcpu
	cpus+=($((CPU - cpu0)))
}

total_start=$SECONDS
if [ "$mode" != extra ]; then
	phase vet "$GO" vet ./...
	# -vet=off: the vet phase ran every analyzer over every package already.
	phase tests "$GO" test -count=1 -vet=off ./...
	phase race "$GO" test -count=1 -vet=off -race -run 'Concurrent|Async|Hygiene' ./host
	phase kernels scripts/check-kernels.sh
fi
if [ "$mode" = full ] || [ "$mode" = extra ]; then
	export CLHOST_TEST_FULL=1
	phase tests-full "$GO" test -count=1 -timeout 60m ./builtin_kernels ./host ./internal/graph
	phase kernels-full scripts/check-kernels.sh
	if [ -x scripts/onnx-conformance.sh ]; then
		phase conformance scripts/onnx-conformance.sh
	fi
fi

echo
echo "== phase times (${mode} suite, $(nproc) cores, PoCL's and clhost's caches $caches, Go's build cache $gostate at the start)"
printf '  %-12s %7s %7s\n' phase wall cpu
for i in "${!names[@]}"; do
	printf '  %-12s %6ds %6ds  %s\n' "${names[$i]}" "${times[$i]}" "${cpus[$i]}" "${results[$i]}"
done
childcpu
printf '  %-12s %6ds %6ds  %s\n' total $((SECONDS - total_start)) "$CPU" "$([ $status = 0 ] && echo ok || echo FAIL)"
exit $status
