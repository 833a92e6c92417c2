#!/usr/bin/env bash
# Measures every hook and store call at two scales (see bench/scalebench):
# a small project and a monorepo-sized one, generated once into
# ${XDG_CACHE_HOME:-~/.cache}/baton-bench. Prints markdown tables for
# docs/benchmarks.md, with the machine and date. With BEFORE=<git
# revision>, the hooks of that revision are timed beside this tree's in
# the same rounds (before → after in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/baton
CGO_ENABLED=0 go build -o "$bin" ./cmd/baton  # static: no dynamic loader on every hook
CGO_ENABLED=0 go build -o "$bin-hook" ./cmd/baton-hook  # what baton install points hooks at
CGO_ENABLED=0 go build -o "$bin-noop" ./bench/noop  # the floor: a Go program that does nothing
CGO_ENABLED=0 go build -o "$bin-floor" ./bench/statefloor  # a blocking stop's floor: the loop file replaced durably
before=()
if [ -n "${BEFORE:-}" ]; then
  src=$(dirname "$bin")/before
  mkdir "$src"
  git archive "$BEFORE" | tar -x -C "$src"
  (cd "$src" && CGO_ENABLED=0 go build -o "$bin-hook-before" ./cmd/baton-hook)
  before=(-before "$bin-hook-before")
  echo "Before: $(git rev-parse --short "$BEFORE"); after: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' with uncommitted changes')"
fi
echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(go version | cut -d' ' -f3); $(git --version); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
go run ./bench/scalebench -baton "$bin" -hook "$bin-hook" -noop "$bin-noop" -floor "$bin-floor" "${before[@]}" "$@"
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$(dirname "$bin")"
