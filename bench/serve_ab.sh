#!/bin/sh
# Compares two builds of clhost serve with bench/serve.sh, runs of the two alternating:
# concurrency 1, 8 and 64 against the bare network, and all devices against the first.
#
# usage: bench/serve_ab.sh build BASE_REV
#          (here, with git and Go) writes bin/clhost-before: HEAD with host/serve,
#          bench/servemodel and cmd/clhost/bench_remote.go as of BASE_REV, so that
#          only the server differs and the kernels (and their compile cache) are
#          shared; and bin/clhost-after: the working tree. Both stripped, to travel.
#        bench/serve_ab.sh run MODEL DEVICES [MAX_BATCH]
#          (on the device machine, bin/ carried) serve.sh with the before and the
#          after server in turn, PAIRS times (default 2), both timed by the after
#          build's `bench --url`, whose client adds the least time of its own.
#
# Environment as serve.sh's (N, ROUNDS per run, default 1, ...); OUT (default a
# temporary folder) keeps each run's results in a folder of its own.
#
# The GPU machine's command (two GPUs, ResNet-18, after `bench/serve_ab.sh build REV`
# here and with bin carried):
#   python3 bench/models/make_models.py /tmp/models >/dev/null &&
#     N=2000 bench/serve_ab.sh run /tmp/models/resnet18.onnx gpu:0,gpu:1 32
set -eu
cd "$(dirname "$0")/.."
usage() {
	sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2
	exit 2
}
[ $# -ge 1 ] || usage
case $1 in
build)
	[ $# -eq 2 ] || usage
	base=$2
	tree=$(mktemp -d)/clhost-before
	git worktree add -q --detach "$tree" HEAD
	trap 'git worktree remove --force "$tree"' EXIT
	(cd "$tree" && rm -r host/serve bench/servemodel &&
		git checkout -q "$base" -- host/serve bench/servemodel cmd/clhost/bench_remote.go)
	mkdir -p bin
	(cd "$tree" && go build -ldflags='-s -w' -o "$OLDPWD/bin/clhost-before" ./cmd/clhost)
	go build -ldflags='-s -w' -o bin/clhost-after ./cmd/clhost
	ls -l bin/clhost-before bin/clhost-after
	;;
run)
	[ $# -ge 3 ] || usage
	shift
	out=${OUT:-$(mktemp -d)}
	pairs=${PAIRS:-2}
	for f in bin/clhost-before bin/clhost-after; do
		[ -x "$f" ] || { echo "serve_ab.sh: no $f; build it with: bench/serve_ab.sh build BASE_REV" >&2; exit 1; }
	done
	for p in $(seq "$pairs"); do
		for v in before after; do
			echo "== $v, pair $p"
			CLHOST=bin/clhost-$v CLIENT=bin/clhost-after ROUNDS=${ROUNDS:-1} OUT="$out/$v-$p" bench/serve.sh "$@" |
				grep -v '^model \|^median over'
		done
	done
	;;
*) usage ;;
esac
