#!/usr/bin/env bash
# Runs a command in a fresh clone of this repository as a new contributor's
# machine would: HOME, GOPATH, GOMODCACHE, GOCACHE, npm's cache,
# XDG_CACHE_HOME (and so the test cache, baton-test) and podman's storage all
# point at empty directories, and no GOFLAGS or GOTOOLCHAIN is inherited. The
# machine's own caches are neither read nor touched. It prints how long the
# command took, and removes everything afterwards (--keep leaves it).
#
#   bench/fresh-machine.sh ./scripts/test.sh          # the README's test command, cold
#   bench/fresh-machine.sh sh -c 'CGO_ENABLED=0 go build -o bin/ ./cmd/baton ./cmd/baton-hook'
#
# Debian packages (git, Go, Node.js, chromium, podman, PostgreSQL) are the
# machine's: they are not per-user caches.
set -euo pipefail
keep=false
if [ "${1:-}" = --keep ]; then
	keep=true
	shift
fi
[ $# -gt 0 ] || { echo "usage: bench/fresh-machine.sh [--keep] command [args...]" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
go=$(command -v go)

base=$(mktemp -d /tmp/baton-fresh.XXXXXX)
chmod 755 "$base"
cleanup() {
	if $keep; then
		echo "fresh-machine: kept $base" >&2
		return
	fi
	# The module cache is read-only on purpose; podman's storage may hold
	# files of other owners.
	chmod -R u+w "$base" 2>/dev/null || true
	rm -rf "$base"
}
trap cleanup EXIT

mkdir -p "$base/home" "$base/containers/storage" "$base/containers/run"
cat >"$base/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$base/containers/storage"
runroot = "$base/containers/run"
EOF
git clone -q "$repo" "$base/baton"
git -C "$base/baton" checkout -q "$(git -C "$repo" rev-parse HEAD)"

cd "$base/baton"
start=$(date +%s)
set +e
env -u GOFLAGS -u GOTOOLCHAIN -u BATON_TEST_CACHE -u BATON_TEST_ALL \
	HOME="$base/home" \
	PATH="$(dirname "$go"):/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
	GOPATH="$base/home/go" GOMODCACHE="$base/home/go/pkg/mod" GOCACHE="$base/home/.cache/go-build" \
	XDG_CACHE_HOME="$base/home/.cache" npm_config_cache="$base/home/.npm" \
	CONTAINERS_STORAGE_CONF="$base/storage.conf" \
	"$@"
code=$?
set -e
end=$(date +%s)
echo "fresh-machine: \`$*\` exited $code after $(((end - start) / 60))m$(((end - start) % 60))s on $(nproc) cores, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)" >&2
exit $code
