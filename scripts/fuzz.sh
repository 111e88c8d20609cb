#!/usr/bin/env bash
# Runs every fuzz target of the module for the given time each (default 60s). New
# crashers land in the package's testdata/fuzz and then run with every `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-60s}
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $target ($t)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" -parallel 2 "$pkg"
	done
done
