#!/usr/bin/env bash
# Runs ONNX's backend node tests and the PyTorch-converted and PyTorch-operator sets of
# Debian's libonnx-testdata through clhost (PoCL by default) and prints pass / wrong /
# refused / crash per op type and in total. Each test runs in a process of its own, so a
# crash ends that test only. Extra arguments go to `clhost conformance` (e.g. -v, -run
# REGEXP, -d gpu, -json FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh libonnx-testdata
data=/usr/share/libonnx-testdata/data
go build -o bin/clhost ./cmd/clhost
exec bin/clhost conformance -j "$(nproc)" "$@" "$data/node" "$data/pytorch-converted" "$data/pytorch-operator"
