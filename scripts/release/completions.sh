#!/bin/sh
# Writes baton's shell completions into completions/, for the release
# archives and packages (GoReleaser's before hook).
set -eu
cd "$(dirname "$0")/../.."
mkdir -p completions
for sh in bash zsh fish powershell; do
	go run ./cmd/baton completion "$sh" > "completions/baton.$sh"
done
