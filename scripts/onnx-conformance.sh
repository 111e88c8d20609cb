#!/usr/bin/env bash
# Runs ONNX's backend node tests and the PyTorch-converted and PyTorch-operator sets of
# Debian's libonnx-testdata through clhost (PoCL by default) and prints pass / wrong /
# refused / crash per op type and in total. Each test runs in a process of its own, so a
# crash ends that test only.
#
# With no arguments the run is held to scripts/conformance-pass.txt: it fails when a test
# listed there stops passing or any test is wrong or crashes. Arguments go to `clhost
# conformance` instead (e.g. -v, -run REGEXP, -d gpu, -json FILE), without that check.
# PoCL's and clhost's caches start empty, as in make test, unless CLHOST_TEST_WARM=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh libonnx-testdata
data=/usr/share/libonnx-testdata/data
go build -o bin/clhost ./cmd/clhost
if [ "${CLHOST_TEST_WARM:-0}" != 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	export POCL_CACHE_DIR="$tmp/pocl" XDG_CACHE_HOME="$tmp/xdg"
	mkdir -p "$POCL_CACHE_DIR" "$XDG_CACHE_HOME"
fi
args=("$@")
if [ $# = 0 ]; then
	args=(-expect-pass scripts/conformance-pass.txt)
fi
start=$SECONDS
status=0
bin/clhost conformance -j "$(nproc)" "${args[@]}" "$data/node" "$data/pytorch-converted" "$data/pytorch-operator" || status=$?
echo "conformance: $((SECONDS - start)) s, status $status"
exit $status
