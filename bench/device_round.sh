#!/bin/bash
# One call on the GPU machine (which has PyTorch, ONNX Runtime, onnx and numpy, no Go):
# everything that waits for an NVIDIA GPU and its host's 16 cores, in priority order,
# each phase under its own time limit, logs and JSON under $OUT.
#
#   1. gpu_tests   builtin_kernels' tests on NVIDIA's OpenCL: the no-warnings gate
#                  (TestMain), the tensor-core kernels on real PTX, fp16 storage
#   2. host_tests  the PTX probe and the fp16 / fp32 network tests on the GPU
#   3. peers_gpu   ResNet-18 against PyTorch in one CUDA graph, fp32 / tf32 / fp16,
#                  batch 1 and 16 (bench/peers/torch_graph.py)
#   4. layers      `clhost bench --json` per-layer TFLOP/s beside the peak, tf32 and fp16
#   5. guard       guard zones' cost on the GPU and on PoCL (bench/guard_cost.sh)
#   6. serve       serve with and without shared memory (bench/serve_shm.sh)
#   7. peers_cpu   PoCL on 16 cores against ONNX Runtime, batch 1 and 16 (peers.py)
#   8. accuracy    every precision against ONNX Runtime (bench/precision_accuracy.sh)
#
# Built here and carried (git-ignored bin/dev, under the 64 MiB carry limit):
#   go build -ldflags="-s -w" -o bin/dev/clhost ./cmd/clhost
#   go test -ldflags="-s -w" -c -o bin/dev/builtin_kernels.test ./builtin_kernels
#   go test -ldflags="-s -w" -c -o bin/dev/host.test ./host
#   go run ./samples/custom_relu -o bin/dev/custom_relu.clm
# then, with the device tool: bash bench/device_round.sh (carry bin/dev). PHASES="3 5"
# runs only those; OUT defaults to $OUT, the folder that comes back.
set -u
cd "$(dirname "$0")/.."
root=$PWD
BIN=${BIN:-$root/bin/dev}
OUT=${OUT:-/tmp/device_round}
PHASES=${PHASES:-1 2 3 4 5 6 7 8}
mkdir -p "$OUT" /etc/OpenCL/vendors
[ -f /etc/OpenCL/vendors/nvidia.icd ] || echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export PYTHONUNBUFFERED=1
M=$OUT/models
mkdir -p "$M"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
"$BIN/clhost" devices > "$OUT/devices.txt" 2>&1

# phase NAME SECONDS COMMAND...: runs it with its output in $OUT/NAME.log and says how
# it ended, with the log's last lines.
phase() {
	local name=$1 limit=$2
	shift 2
	local t0=$SECONDS
	timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
	local rc=$?
	echo "== $name: rc $rc in $((SECONDS - t0)) s"
	tail -n 15 "$OUT/$name.log" | cut -c1-300
}

want() { [[ " $PHASES " == *" $1 "* ]]; }

if want 3 || want 4 || want 5 || want 6; then
	python3 bench/models/make_models.py "$M" > "$OUT/models.log" 2>&1
	cp "$BIN/custom_relu.clm" "$M/" 2>/dev/null
fi
if want 1; then
	(cd builtin_kernels && CLHOST_TEST_DEVICE=gpu:0 CLHOST_TEST_OPTIMIZE=1 phase gpu_tests 480 "$BIN/builtin_kernels.test" -test.timeout 470s)
fi
if want 2; then
	(cd host && CLHOST_TEST_DEVICE=gpu:0 phase host_tests 300 "$BIN/host.test" -test.run 'MMAProbe|FP16|FP32|Precision' -test.v -test.timeout 290s)
fi
if want 3; then
	for b in 16 1; do
		for p in fp32 tf32 fp16; do
			phase "peers_gpu_b${b}_$p" 240 python3 bench/peers/torch_graph.py --clhost "$BIN/clhost" --model resnet18 \
				--batch $b --precision $p --device gpu:0 --out "$M"
		done
	done
fi
if want 4; then
	for p in tf32 fp16; do
		phase "layers_$p" 180 "$BIN/clhost" bench -m "$M/resnet18.onnx" --batch 16 -d gpu:0 --precision $p -n 50 --first-run=false --json
	done
fi
if want 5; then
	phase guard_gpu 420 bash bench/guard_cost.sh "$BIN/clhost" "$M" gpu:0 300
	phase guard_cpu 420 bash bench/guard_cost.sh "$BIN/clhost" "$M" cpu 150
fi
if want 6; then
	CLHOST=$BIN/clhost N=3000 ROUNDS=3 phase serve 540 sh bench/serve_shm.sh "$M/resnet18.onnx" gpu:0 32
fi
if want 7; then
	phase peers_cpu 540 python3 bench/peers/peers.py --clhost "$BIN/clhost" --engines cpu --out "$M/peers" \
		--models resnet18,mobilenet_v2,squeezenet1_1 --batches 1,16 --json "$OUT/peers_cpu.json"
fi
if want 8; then
	CLHOST=$BIN/clhost DEV=gpu:0 MODELS=$M/real PRECISIONS="fp32 tf32 fp16" phase accuracy 540 bash bench/precision_accuracy.sh
fi
