#!/usr/bin/env bash
# Times baton search over 10,000 packets and 1 GB of transcripts (see
# bench/searchbench; the project is generated once into
# ${XDG_CACHE_HOME:-~/.cache}/baton-bench) and prints markdown for
# docs/benchmarks.md, with the machine and date.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/baton
CGO_ENABLED=0 go build -o "$bin" ./cmd/baton
echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(go version | cut -d' ' -f3); load average $(cut -d' ' -f1 /proc/loadavg)"
echo
go run ./bench/searchbench -baton "$bin" "$@"
rm -rf "$(dirname "$bin")"
