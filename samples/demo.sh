#!/usr/bin/env bash
# The main job: build the custom-layer sample model and run it on the default device
# (first GPU, else first CPU) with the user's ReLU kernel from samples/custom_relu,
# checking every built-in layer against its CPU reference and printing the profile.
set -euo pipefail
bin=${1:-bin/clhost}
here=$(cd "$(dirname "$0")" && pwd)
work=${DEMO_DIR:-$(mktemp -d)}
go run ./samples/custom_relu -o "$work/custom_relu.clm"
echo "== clhost devices"
"$bin" devices
echo "== clhost validate (the sample's XML)"
"$bin" validate -c "$here/custom_relu/custom_layer_example.xml"
echo "== clhost run: Conv -> custom ReLU (example_relu_kernel) -> MaxPool"
"$bin" run -m "$work/custom_relu.clm" -c "$here/custom_relu/custom_layer_example.xml" \
	--check --profile -o "$work/out" --dump-kernels "$work/kernels"
echo "== outputs in $work/out, compiled programs in $work/kernels"
ls "$work/kernels"
