#!/usr/bin/env bash
# Runs the samples and the bench models with two clhost binaries from the same inputs and
# compares every output file byte for byte: a refactor that must not change results shows
# "identical" on every line. Models come from bench/models/make_models.py (numpy, onnx).
#
#   bench/compare-outputs.sh BEFORE_BIN AFTER_BIN [DEVICE]
set -euo pipefail
before=$(realpath "$1") after=$(realpath "$2") dev=${3:-cpu}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export POCL_CACHE_DIR="$work/pocl" XDG_CACHE_HOME="$work/xdg"
python3 "$root/bench/models/make_models.py" "$work/models" >/dev/null
(cd "$root" && go run ./samples/custom_relu -o "$work/custom_relu.clm" -reference "$work/ref" >/dev/null)
python3 - "$work" <<'PY'
import sys, numpy as np
np.random.seed(0)
np.save(sys.argv[1] + "/image.npy", np.random.rand(1, 3, 224, 224).astype(np.float32))
PY
s=$root/samples
cases=(
	"demo|-m $work/custom_relu.clm -c $s/custom_relu/custom_layer_example.xml -i image=$work/ref/image.npy"
	"onnx_custom_op|-m $s/onnx_custom_op/model.onnx -c $s/onnx_custom_op/hardswish.xml -i $s/onnx_custom_op/input.npy"
	"yolo_head|-m $s/yolo_head/model.onnx -c $s/yolo_head/yolo_decode.xml -i p4=$s/yolo_head/p4.npy -i p5=$s/yolo_head/p5.npy"
	"resnet18|-m $work/models/resnet18.onnx -i $work/image.npy"
	"mobilenet_v2|-m $work/models/mobilenet_v2.onnx -i $work/image.npy"
	"squeezenet1_1|-m $work/models/squeezenet1_1.onnx -i $work/image.npy"
)
status=0
for c in "${cases[@]}"; do
	name=${c%%|*} args=${c#*|}
	for side in before after; do
		bin=$before
		[ "$side" = after ] && bin=$after
		# shellcheck disable=SC2086
		"$bin" run $args -d "$dev" -o "$work/$name.$side" >"$work/$name.$side.log" 2>&1 || { echo "$name: $side failed:"; tail -3 "$work/$name.$side.log"; status=1; }
	done
	if diff -r "$work/$name.before" "$work/$name.after" >/dev/null 2>&1; then
		echo "$name: identical ($(ls "$work/$name.after" | wc -l) output files)"
	else
		echo "$name: DIFFERENT"
		status=1
	fi
done
exit $status
