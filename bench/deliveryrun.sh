#!/usr/bin/env bash
# Times `baton delivery run` as a person runs it: one process per
# delivery, planning only, with a command agent that answers at once, in a
# fresh repository. With BEFORE=<git revision>, that revision's baton runs
# alternately with this tree's, round by round. Each line is one run's
# wall, user and system time (the boxes and git it started included).
#
#   bash bench/deliveryrun.sh [-n ROUNDS]
#   BEFORE=5b70a2f bash bench/deliveryrun.sh -n 10
set -euo pipefail
n=5
[ "${1:-}" = -n ] && n=$2
cd "$(dirname "$0")/.."
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
build() { # dir, revision (empty: this tree)
  local src=.
  if [ -n "$2" ]; then
    src=$w/src-$2
    mkdir "$src" && git archive "$2" | tar -x -C "$src"
  fi
  (cd "$src" && go build -o "$1/baton" ./cmd/baton && go build -o "$1/baton-box-init" ./cmd/baton-box-init)
}
versions=(after)
build "$w/after" ""
if [ -n "${BEFORE:-}" ]; then
  build "$w/before" "$BEFORE"
  versions=(before after)
fi
printf '#!/bin/sh\ncat >/dev/null\necho "1. Do it."\n' > "$w/agent.sh"
chmod +x "$w/agent.sh"
export HOME=$w/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.email bench@example.com
git config --global user.name bench
for v in "${versions[@]}"; do
  mkdir -p "$w/$v/repo"
  (cd "$w/$v/repo" && git init -q && echo hi > README && git add README && git commit -qm init)
done
echo "Date: $(date -u +%Y-%m-%dT%H:%MZ); $(nproc) cores; uid $(id -u); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$n"); do
  for v in "${versions[@]}"; do
    cd "$w/$v/repo"
    export BATON_DATA_DIR=$w/$v/data
    "$w/$v/baton" delivery create --repo . --summary "Run $i" --agent "command:$w/agent.sh" \
      --checkpoints none --endpoint plan >/dev/null
    /usr/bin/time -o "$w/time" -f "%e %U %S" "$w/$v/baton" delivery run "$i" >/dev/null 2>"$w/err" ||
      { cat "$w/err" >&2; exit 1; }
    read -r wall user sys < "$w/time"
    echo "$v run $i: ${wall} s wall, ${user} s user, ${sys} s sys"
  done
done
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
