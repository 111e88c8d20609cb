#!/bin/bash
# Times what a user meets first: `clhost run` of a model with every cache empty (clhost's
# programs and tuning choices, PoCL's kernels, NVIDIA's compiled kernels, each in a fresh
# temporary folder), the same command again (warm), and the steady-state p50 of
# `clhost bench` on the warm caches. Several clhost binaries (a build of main and one of a
# change) are measured in turn on the same machine, model by model, so that they meet the
# machine's drift alike.
#
# usage: bench/first-run.sh [-d DEVICE] [-b "1 16"] [-n N] [-t] [-x CLHOST]... MODEL...
#
#   -d DEVICE  clhost's -d (default gpu)
#   -b BATCHES --batch values for models with a dynamic batch (default: none, the
#              model's own; torchvision's exports have a fixed one)
#   -n N       timed inferences of the p50 (default 50; 0 skips it)
#   -t         also run `clhost tune` (binaries that have it) after the warm run, and
#              report the p50 with its choices
#   -x CLHOST  a clhost binary (repeatable; default ./clhost)
#
# Output: one tab-separated line per binary, model and batch: first-run s, warm-run s,
# p50 ms (and the p50 after `clhost tune` with -t); the load average is printed with
# each line, since a shared machine's load moves the figures.
#
# On the GPU machine (torch and torchvision there):
#   python3 bench/models/export_torchvision.py /tmp/tv
#   go build -o /tmp/clhost-new ./cmd/clhost
#   git worktree add /tmp/base <main's commit> && (cd /tmp/base && go build -o /tmp/clhost-old ./cmd/clhost)
#   bench/first-run.sh -d gpu -t -x /tmp/clhost-old -x /tmp/clhost-new /tmp/tv/*.onnx
#   bench/first-run.sh -d cpu -x /tmp/clhost-old -x /tmp/clhost-new /tmp/tv/*.onnx
set -eu
device=gpu
batches=""
n=50
tune=0
bins=()
while getopts "d:b:n:tx:" opt; do
	case $opt in
	d) device=$OPTARG ;;
	b) batches=$OPTARG ;;
	n) n=$OPTARG ;;
	t) tune=1 ;;
	x) bins+=("$OPTARG") ;;
	*) sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2
	exit 2
fi
[ ${#bins[@]} -eq 0 ] && bins=(./clhost)
[ -z "$batches" ] && batches=0

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# seconds runs a command and prints its wall time in seconds.
seconds() {
	local start end
	start=$(date +%s.%N)
	"$@" >"$scratch/out.log" 2>&1 || { echo "failed: $*" >&2; tail -5 "$scratch/out.log" >&2; echo NaN; return; }
	end=$(date +%s.%N)
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f\n", b - a }'
}

# p50 prints bench's p50 in ms.
p50() {
	"$@" >"$scratch/bench.json" 2>"$scratch/bench.log" || { tail -5 "$scratch/bench.log" >&2; echo NaN; return; }
	sed -n 's/^ *"p50_ms": \([0-9.]*\),*/\1/p' "$scratch/bench.json" | head -1
}

printf 'binary\tmodel\tbatch\tfirst_s\twarm_s\tp50_ms\ttuned_p50_ms\tload\n'
for model in "$@"; do
	for b in $batches; do
		for bin in "${bins[@]}"; do
			batch=()
			[ "$b" != 0 ] && batch=(--batch "$b")
			quiet=()
			"$bin" run -h 2>&1 | grep -q -- '-quiet' && quiet=(--quiet)
			firstrun=()
			"$bin" bench -h 2>&1 | grep -q -- '-first-run' && firstrun=(--first-run=false)
			dir=$(mktemp -d "$scratch/run.XXXX")
			mkdir -p "$dir/pocl" "$dir/xdg" "$dir/nv"
			export POCL_CACHE_DIR="$dir/pocl" XDG_CACHE_HOME="$dir/xdg" CUDA_CACHE_PATH="$dir/nv"
			common=(-m "$model" -d "$device" ${batch[@]+"${batch[@]}"} --cache-dir "$dir/clhost")
			first=$(seconds "$bin" run "${common[@]}" ${quiet[@]+"${quiet[@]}"} -o "$dir/out")
			warm=$(seconds "$bin" run "${common[@]}" ${quiet[@]+"${quiet[@]}"} -o "$dir/out")
			p=-
			[ "$n" -gt 0 ] && p=$(p50 "$bin" bench "${common[@]}" ${firstrun[@]+"${firstrun[@]}"} --json --layers=false -n "$n" --warmup 10)
			tp=-
			if [ "$tune" = 1 ] && [ "$n" -gt 0 ] && "$bin" tune -h >/dev/null 2>&1; then
				"$bin" tune "${common[@]}" ${quiet[@]+"${quiet[@]}"} >"$scratch/tune.log" 2>&1 || tail -5 "$scratch/tune.log" >&2
				tp=$(p50 "$bin" bench "${common[@]}" ${firstrun[@]+"${firstrun[@]}"} --json --layers=false -n "$n" --warmup 10)
			fi
			unset POCL_CACHE_DIR XDG_CACHE_HOME CUDA_CACHE_PATH
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$bin" "$(basename "$model")" "$b" "$first" "$warm" "$p" "$tp" "$(cut -d' ' -f1 /proc/loadavg)"
			rm -rf "$dir"
		done
	done
done
