#!/bin/sh
# Measures clhost serve with and without the system shared-memory extension against the
# bare Network, on one device (issue 60's goals for clients on the server's host):
#
#   - `clhost bench` of the bare network at batch 1: inferences one after another, the
#     baseline;
#   - `clhost serve -allow-shm` on that device, timed by `clhost bench --url` at
#     concurrency 1 and 64, each with the tensors as binary data over HTTP and with
#     every client's tensors in a shared-memory region of its own (--shm).
#
# The goals: concurrency 1 ≥ 0.9× the bare network, concurrency 64 ≥ 3×. The bare runs and
# the four server runs alternate in ROUNDS rounds, each ratio to the mean of the bare
# runs before and after it, and the median over the rounds is reported.
#
# usage: bench/serve_shm.sh MODEL DEVICE [MAX_BATCH] [CONFIG.xml ...]
#
#   MODEL    a model file (.onnx with a dynamic batch, .clm or .json); "mlp" builds the
#            small model of bench/servemodel (MLP_WIDTH, default 2048; MLP_IMAGE=3x224x224
#            gives it ResNet-18's 602 KB input at almost no compute: the cost per byte)
#   DEVICE   serve's -d: gpu:0 or cpu (one device)
#   MAX_BATCH  --max-batch (default 16)
#
# Environment: N (requests per run, default 2000), ROUNDS (default 3), PORT (default
# 18090), DELAY (--max-delay, default 2ms), CLHOST (the binary; default: built into
# bin/clhost), OUT (folder of the JSON results, default a temporary one).
#
# On the GPU machine (ResNet-18 from bench/models/make_models.py; the client runs on the
# same host, as shared memory needs):
#   python3 bench/models/make_models.py /tmp/models
#   N=5000 bench/serve_shm.sh /tmp/models/resnet18.onnx gpu:0 32
set -eu
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
	sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2
	exit 2
fi
model=$1
device=$2
maxbatch=${3:-16}
shift 2
[ $# -gt 0 ] && shift
n=${N:-2000}
rounds=${ROUNDS:-3}
port=${PORT:-18090}
delay=${DELAY:-2ms}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
configs=""
for c in "$@"; do configs="$configs -c $c"; done

bin=${CLHOST:-bin/clhost}
if [ -z "${CLHOST:-}" ]; then
	go build -o "$bin" ./cmd/clhost
fi
if [ "$model" = mlp ]; then
	model=$out/mlp.clm
	go run ./bench/servemodel -width "${MLP_WIDTH:-2048}" -image "${MLP_IMAGE:-}" -o "$model" >/dev/null
	configs="$configs -c samples/custom_relu/custom_layer_example.xml"
fi
name=$(basename "$model")
name=${name%.*}

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
	"$bin" bench -m "$model" $configs -d "$(bare_device "$device")" -n "$n" -warmup 20 -layers=false -json >"$out/bare$1.json" 2>"$out/bare$1.log"
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

# serve starts the server and waits until it is ready: compiling every batch size (and
# tuning, on GPUs) may take minutes.
serve() {
	# shellcheck disable=SC2086
	"$bin" serve -m "$model" $configs -d "$device" --http "127.0.0.1:$port" --grpc off --allow-shm \
		--max-batch "$maxbatch" --max-delay "$delay" >"$out/serve.log" 2>&1 &
	server_pid=$!
	i=0
	until curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 3600 ] || ! kill -0 "$server_pid" 2>/dev/null; then
			echo "serve_shm.sh: the server did not become ready; its log:" >&2
			cat "$out/serve.log" >&2
			exit 1
		fi
		sleep 0.5
	done
}

# remote CONCURRENCY FILE [--shm] prints requests/s, p50 and p99 ms.
remote() {
	c=$1
	f=$2
	shift 2
	if ! "$bin" bench --url "http://127.0.0.1:$port" -m "$name" --concurrency "$c" -n "$n" -warmup 50 -json "$@" >"$out/$f.json" 2>"$out/$f.log"; then
		echo "serve_shm.sh: bench --url $* failed:" >&2
		cat "$out/$f.log" >&2
		exit 1
	fi
	echo "$(field "$out/$f.json" requests_per_s) $(field "$out/$f.json" p50_ms) $(field "$out/$f.json" p99_ms)"
}

# batch_totals prints the items and the batches the server has run so far.
batch_totals() {
	curl -s "http://127.0.0.1:$port/metrics" | awk '/^clhost_batch_size_sum/ { s += $2 } /^clhost_batch_size_count/ { c += $2 } END { printf "%d %d", s, c }'
}

echo "model $model, device $device, max batch $maxbatch, max delay $delay, $rounds rounds of $n requests per run; results in $out"
serve
: >"$out/rounds.txt"
: >"$out/batches64.txt"
for r in $(seq "$rounds"); do
	b=$(bare "$r")
	c1=$(remote 1 "c1-$r")
	c1s=$(remote 1 "c1-shm-$r" --shm)
	# Items per batch at concurrency 64 alone: the runs at 1 are all batches of 1.
	t0=$(batch_totals)
	c64=$(remote 64 "c64-$r")
	c64s=$(remote 64 "c64-shm-$r" --shm)
	echo "$t0 $(batch_totals)" >>"$out/batches64.txt"
	echo "$b $c1 $c1s $c64 $c64s" >>"$out/rounds.txt"
done
bare $((rounds + 1)) >>"$out/rounds.txt"
batches=$(awk '{ s += $3 - $1; c += $4 - $2 } END { if (c) printf "%.2f", s / c }' "$out/batches64.txt")
stop_server

# Each line of rounds.txt: bare inferences/s, then requests/s, p50 and p99 ms at
# concurrency 1, 1 with shm, 64 and 64 with shm; a last line holds a last bare run.
awk -v device="$device" -v batches="$batches" '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ rows++; for (i = 1; i <= NF; i++) v[rows, i] = $i }
END {
	n = rows - 1
	for (r = 1; r <= n; r++) {
		b = (v[r, 1] + v[r + 1, 1]) / 2
		a1[r] = v[r, 2] / b; s1[r] = v[r, 5] / b; a64[r] = v[r, 8] / b; s64[r] = v[r, 11] / b
		printf "round %d: bare %.1f/s; c=1 %.1f/s (%.2f×), shm %.1f/s (%.2f×); c=64 %.1f/s (%.2f×), shm %.1f/s (%.2f×); p50/p99 ms c=1 %.3f/%.3f shm %.3f/%.3f, c=64 %.2f/%.2f shm %.2f/%.2f\n",
			r, b, v[r, 2], a1[r], v[r, 5], s1[r], v[r, 8], a64[r], v[r, 11], s64[r], v[r, 3], v[r, 4], v[r, 6], v[r, 7], v[r, 9], v[r, 10], v[r, 12], v[r, 13]
	}
	printf "median over %d rounds, against the bare network at batch 1 on %s, one inference after another:\n", n, device
	printf "  concurrency  1, binary tensors over HTTP: %.2f×   shared memory: %.2f×  (goal ≥ 0.9×)\n", median(a1, n), median(s1, n)
	printf "  concurrency 64, binary tensors over HTTP: %.2f×   shared memory: %.2f×  (goal ≥ 3×)\n", median(a64, n), median(s64, n)
	printf "items per batch at concurrency 64: %s\n", batches
}' "$out/rounds.txt"
