#!/usr/bin/env bash
# The main job: build the custom-layer sample model and run it on the default device
# (first GPU, else first CPU) with the user's ReLU kernel from samples/custom_relu,
# checking every built-in layer against its CPU reference, the custom layer against the
# values the sample computes in plain Go, and printing the profile.
set -euo pipefail
bin=${1:-bin/clhost}
here=$(cd "$(dirname "$0")" && pwd)
work=${DEMO_DIR:-$(mktemp -d)}
mkdir -p "$work"
go run ./samples/custom_relu -o "$work/custom_relu.clm" -reference "$work/ref"
echo "== clhost devices"
"$bin" devices
echo "== clhost validate (the sample's XML)"
"$bin" validate -c "$here/custom_relu/custom_layer_example.xml"
echo "== clhost run: Conv -> custom ReLU (example_relu_kernel) -> MaxPool"
# --expect checks the custom kernel's output against the values the sample computed in Go.
"$bin" run -m "$work/custom_relu.clm" -c "$here/custom_relu/custom_layer_example.xml" \
	-i "image=$work/ref/image.npy" --expect "relu1=$work/ref/relu1.npy" \
	--check --profile -o "$work/out" --dump-kernels "$work/kernels"
echo "== outputs in $work/out, compiled programs in $work/kernels"
ls "$work/kernels"
