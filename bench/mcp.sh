#!/usr/bin/env bash
# Measures `baton mcp` as whole processes (see bench/mcpbench) and prints a
# markdown table for docs/benchmarks.md, with the machine and date.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/baton
CGO_ENABLED=0 go build -o "$bin" ./cmd/baton
echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(go version | cut -d' ' -f3)"
echo
go run ./bench/mcpbench -baton "$bin" "$@"
rm -f "$bin"
