#!/usr/bin/env bash
# Measures baton's hooks as whole processes (see bench/hookbench) and
# prints a markdown table for docs/benchmarks.md, with the machine and date:
# each event through `baton hook` and through the companion baton-hook,
# beside /bin/true and a Go program that does nothing, all in one run; a
# stop the loop blocks also beside bench/statefloor, which does only the
# durable write such a stop cannot avoid.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Static, as releases are: no dynamic loader on every hook.
CGO_ENABLED=0 go build -o "$dir/baton" ./cmd/baton
CGO_ENABLED=0 go build -o "$dir/baton-hook" ./cmd/baton-hook
CGO_ENABLED=0 go build -o "$dir/noop" ./bench/noop
CGO_ENABLED=0 go build -o "$dir/statefloor" ./bench/statefloor
echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(go version | cut -d' ' -f3); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Sizes: baton $(du -h "$dir/baton" | cut -f1), baton-hook $(du -h "$dir/baton-hook" | cut -f1), noop $(du -h "$dir/noop" | cut -f1)"
echo
go run ./bench/hookbench -baton "$dir/baton" -hook "$dir/baton-hook" -noop "$dir/noop" -floor "$dir/statefloor" "$@"
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
