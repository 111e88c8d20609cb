#!/bin/sh
# Measures clhost serve against the bare Network on one model and device set:
#
#   1. `clhost bench` of the bare network at batch 1 on the first device: inferences one
#      after another, the baseline of both goals below;
#   2. `clhost serve` on the first device, timed by `clhost bench --url` with 1, 8 and 64
#      concurrent clients (binary tensors over HTTP, batch 1 per request): the goals are
#      ≥ 0.9× the bare network at concurrency 1 and ≥ 3× at 64. Steps 1 and 2 alternate
#      in ROUNDS rounds and the median ratio is reported;
#   3. when DEVICES lists several, `clhost serve` on all of them at concurrency 64,
#      against step 2's one device (the goal on two GPUs: ≥ 1.9×).
#
# usage: bench/serve.sh MODEL DEVICES [MAX_BATCH] [CONFIG.xml ...]
#
#   MODEL    a model file (.onnx with a dynamic batch, .clm or .json); "mlp" builds the
#            small model of bench/servemodel (custom ReLU from samples/custom_relu;
#            MLP_WIDTH sets its width, default 2048; MLP_IMAGE=3x224x224 gives it an image
#            input of that shape, averaged per channel: ResNet-18's request size at
#            almost no compute, which shows the server's cost per byte)
#   DEVICES  serve's -d list: gpu:0,gpu:1 or cpu (the bare network runs on the first)
#   MAX_BATCH  --max-batch (default 16)
#
# Environment: N (requests per run, default 2000), ROUNDS (default 3), PORT (default 18080), DELAY
# (--max-delay, default 2ms), CLHOST (the binary; default: built into bin/clhost), CLIENT
# (the binary whose `bench --url` sends the requests; default CLHOST), OUT (folder of the
# JSON results, default a temporary one).
#
# On the GPU machine (two GPUs, ResNet-18 from bench/models/make_models.py):
#   python3 bench/models/make_models.py /tmp/models
#   N=5000 bench/serve.sh /tmp/models/resnet18.onnx gpu:0,gpu:1 32
set -eu
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
	sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2
	exit 2
fi
model=$1
devices=$2
maxbatch=${3:-16}
shift 2
[ $# -gt 0 ] && shift
n=${N:-2000}
rounds=${ROUNDS:-3}
port=${PORT:-18080}
delay=${DELAY:-2ms}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
configs=""
for c in "$@"; do configs="$configs -c $c"; done

bin=${CLHOST:-bin/clhost}
if [ -z "${CLHOST:-}" ]; then
	go build -o "$bin" ./cmd/clhost
fi
client=${CLIENT:-$bin}
if [ "$model" = mlp ]; then
	model=$out/mlp.clm
	go run ./bench/servemodel -width "${MLP_WIDTH:-2048}" -image "${MLP_IMAGE:-}" -o "$model" >/dev/null
	configs="$configs -c samples/custom_relu/custom_layer_example.xml"
fi
name=$(basename "$model")
name=${name%.*}
first=${devices%%,*}

# bench's -d takes cpu, gpu, an index or a name: gpu:N becomes the N-th GPU's index.
bare_device() {
	case $1 in
	gpu:* | cpu:*)
		kind=$(echo "${1%%:*}" | tr a-z A-Z)
		"$bin" devices | awk -v k="$kind" -v n="${1#*:}" '$2 == k { if (i++ == n) { gsub(/[][]/, "", $1); print $1; exit } }'
		;;
	*) echo "$1" ;;
	esac
}

# field FILE NAME prints a number of a JSON result.
field() { sed -n "s/.*\"$2\": \([-0-9.e+]*\).*/\1/p" "$1" | head -1; }

bare() {
	# shellcheck disable=SC2086
	"$bin" bench -m "$model" $configs -d "$(bare_device "$first")" -n "$n" -warmup 20 -layers=false -json >"$out/bare$1.json" 2>"$out/bare$1.log"
	field "$out/bare$1.json" inferences_per_s
}

server_pid=""
stop_server() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
	fi
}
trap stop_server EXIT INT TERM

# serve starts the server and waits until it is ready: compiling every batch size on
# every device (and tuning, on GPUs) may take minutes.
serve() {
	# shellcheck disable=SC2086
	"$bin" serve -m "$model" $configs -d "$1" --http "127.0.0.1:$port" --grpc off \
		--max-batch "$maxbatch" --max-delay "$delay" >"$out/serve-$2.log" 2>&1 &
	server_pid=$!
	i=0
	until curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 3600 ] || ! kill -0 "$server_pid" 2>/dev/null; then
			echo "serve.sh: the server did not become ready; its log:" >&2
			cat "$out/serve-$2.log" >&2
			exit 1
		fi
		sleep 0.5
	done
}

remote() {
	"$client" bench --url "http://127.0.0.1:$port" -m "$name" --concurrency "$1" -n "$n" -warmup 50 -json >"$out/$2.json" 2>/dev/null
	echo "$(field "$out/$2.json" requests_per_s) $(field "$out/$2.json" p50_ms) $(field "$out/$2.json" p99_ms)"
}

echo "model $model, devices $devices, max batch $maxbatch, max delay $delay, $rounds rounds of $n requests per run; results in $out"
# Rounds alternate the bare network with the server at each concurrency, so that each
# ratio compares runs seconds apart: a shared machine's speed drifts by more than the
# differences measured.
serve "$first" one
: >"$out/rounds.txt"
for r in $(seq "$rounds"); do
	echo "$(bare "$r") $(remote 1 "c1-$r") $(remote 8 "c8-$r") $(remote 64 "c64-$r")" >>"$out/rounds.txt"
done
bare $((rounds + 1)) >>"$out/rounds.txt"
batches=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^clhost_batch_size_sum/ { s += $2 } /^clhost_batch_size_count/ { c += $2 } END { if (c) printf "%.2f", s / c }')
stop_server
all=""
case $devices in
*,*)
	serve "$devices" all
	all=$(remote 64 all-c64)
	stop_server
	serve "$first" one-again
	one=$(remote 64 one-c64)
	stop_server
	all="$all $one"
	;;
esac

# Each line of rounds.txt: bare inferences/s, then requests/s, p50 and p99 ms at
# concurrency 1, 8 and 64; a last line holds a last bare run. Each round's ratios are to
# the mean of the bare runs before and after it.
awk -v first="$first" -v devices="$devices" -v batches="$batches" -v all="$all" '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ rows++; for (i = 1; i <= NF; i++) v[rows, i] = $i }
END {
	n = rows - 1
	for (r = 1; r <= n; r++) {
		b = (v[r, 1] + v[r + 1, 1]) / 2
		r1[r] = v[r, 2] / b; r8[r] = v[r, 5] / b; r64[r] = v[r, 8] / b
		printf "round %d: bare %.1f/s (%.1f before, %.1f after); serve c=1 %.1f/s (%.2f×), c=8 %.1f/s (%.2f×), c=64 %.1f/s (%.2f×); p50/p99 ms c=1 %.2f/%.2f, c=8 %.2f/%.2f, c=64 %.2f/%.2f\n",
			r, b, v[r, 1], v[r + 1, 1], v[r, 2], r1[r], v[r, 5], r8[r], v[r, 8], r64[r], v[r, 3], v[r, 4], v[r, 6], v[r, 7], v[r, 9], v[r, 10]
	}
	printf "median over %d rounds, against the bare network at batch 1 on %s, one inference after another:\n", n, first
	printf "  serve, concurrency  1: %.2f×  (goal ≥ 0.9×)\n", median(r1, n)
	printf "  serve, concurrency  8: %.2f×\n", median(r8, n)
	printf "  serve, concurrency 64: %.2f×  (goal ≥ 3×)\n", median(r64, n)
	printf "items per batch on %s over all runs: %s\n", first, batches
	if (all != "") {
		split(all, a)
		printf "serve on %s at concurrency 64: %.1f requests/s, %.2f× %s alone (%.1f/s)  (goal on two GPUs ≥ 1.9×)\n", devices, a[1], a[1] / a[4], first, a[4]
	}
}' "$out/rounds.txt"
