#!/usr/bin/env bash
# Guard zones' cost, timed with guards on and off in alternating inferences of one process
# (clhost bench -against "--guard off"): each model with its GlobalAveragePool a custom
# layer (bench/guard/gap.xml: one custom layer, the common case), each model with every
# ReLU a custom layer (the custom_relu sample's kernel: the heaviest case), and the demo
# model. Prints one line per case and device with the p50 ratio.
#
#   bench/guard_cost.sh BIN MODELDIR DEVICE [N]
#
# MODELDIR holds make_models.py's models and custom_relu.clm (go run ./samples/custom_relu).
set -euo pipefail
bin=$1 dir=$2 dev=$3 n=${4:-300}
here=$(cd "$(dirname "$0")/.." && pwd)
cfg=$(mktemp --suffix=.xml)
cat >"$cfg" <<XML
<CustomLayer name="Relu" type="SimpleGPU" version="1">
  <Kernel entry="example_relu_kernel">
    <Source filename="$here/samples/custom_relu/custom_layer_kernel.cl"/>
    <Define name="neg_slope" type="float" default="0.0"/>
  </Kernel>
  <Buffers>
    <Tensor arg-index="0" type="input" port-index="0" format="BFYX"/>
    <Tensor arg-index="1" type="output" port-index="0" format="BFYX"/>
  </Buffers>
  <CompilerOptions options="-cl-mad-enable"/>
  <WorkSizes global="X,Y,B*F"/>
</CustomLayer>
XML
# report prints guard-on time over guard-off time, p50 and min, from bench's JSON.
report() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[2])); a=j["against"]; print("%-20s %s: on/off p50 %.4f (%.3f / %.3f ms), min %.4f, guards on faster in %d of %d pairs" % (sys.argv[1], j["device"], j["p50_ms"]/a["p50_ms"], j["p50_ms"], a["p50_ms"], j["min_ms"]/a["min_ms"], a["faster_pairs"], a["pairs"]))' "$1" "$2"
}
for m in resnet18 squeezenet1_1 mobilenet_v2; do
	"$bin" bench -d "$dev" -m "$dir/$m.onnx" -c "$here/bench/guard/gap.xml" -against "--guard off" -quiet -n "$n" -layers=false -first-run=false -json >"$dir/guard_gap_$m.$dev.json"
	report "$m+GAP" "$dir/guard_gap_$m.$dev.json"
done
for m in resnet18 squeezenet1_1; do
	"$bin" bench -d "$dev" -m "$dir/$m.onnx" -c "$cfg" -against "--guard off" -quiet -n "$n" -layers=false -first-run=false -json >"$dir/guard_relu_$m.$dev.json"
	report "$m+ReLUs" "$dir/guard_relu_$m.$dev.json"
done
"$bin" bench -d "$dev" -m "$dir/custom_relu.clm" -c "$here/samples/custom_relu/custom_layer_example.xml" -against "--guard off" -quiet -n "$((n * 5))" -layers=false -first-run=false -json >"$dir/guard_demo.$dev.json"
report demo "$dir/guard_demo.$dev.json"
rm -f "$cfg"
