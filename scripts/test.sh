#!/usr/bin/env bash
# Runs every test baton has: formatting, vet, `go test ./...` with the real
# parts the tests need (git; a PostgreSQL server for the pipeline's Postgres
# driver; chromium for the dashboard's browser tests; GoReleaser, podman and
# npm for the release tests; the real agent harnesses, axe-core and
# Lighthouse from npm), and a type-check of the pi extension against pi's
# published types. Exits non-zero on any failure.
#
# It gets everything before the tests that are timed:
#   1. Debian packages that are missing (as root, with apt-get), and the
#      release tools (go install);
#   2. the Go modules;
#   3. the heavy tests' own prerequisites, through the very helpers the tests
#      call: each package with such a test has a TestPrefetch that does
#      nothing unless BATON_TEST_PREFETCH is set (internal/testenv). That is
#      the npm installs of the harnesses, axe-core and Lighthouse, and the
#      Debian root of the worker image, imported into podman. They are cached
#      in ${BATON_TEST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/baton-test} and
#      podman's storage, so a second run fetches nothing.
#      BATON_TEST_CLAUDE_VERSION, _CODEX_, _DROID_ and _PI_ pick another
#      version of a harness than the one the tests pin (docs/hooks.md).
# Then `go test ./...` runs with a -timeout from what this machine measured:
# three times its slowest package in the last run that passed here (kept in
# the cache as test-times), at least 45 minutes, which is also the bound
# when nothing was measured yet: the browser tests' Lighthouse audits (up
# to five mobile runs per page) took 22 minutes at a load of 3-10, more
# than three times a run from before they were added. A hang still ends
# well inside CI's 90 minutes. BATON_TEST_TIMEOUT overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
log() { printf '== %dm%02ds %s\n' $(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)) "$*" >&2; }

need_apt=()
command -v git >/dev/null || need_apt+=(git)
command -v npm >/dev/null || need_apt+=(nodejs npm)
# The dashboard's browser tests drive Debian's chromium; without it they
# would skip.
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need_apt+=(chromium)
# The release tests build and run the container images with podman (runc:
# crun refuses hybrid cgroups), on a Debian root made by debootstrap, and
# read the deb package with dpkg-deb.
command -v podman >/dev/null || need_apt+=(podman)
command -v runc >/dev/null || need_apt+=(runc)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
# The Postgres store and queue run against a throwaway server
# (scripts/pg-test.sh).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql-15)
if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		log "installing ${need_apt[*]} (apt-get)"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
	else
		echo "missing: ${need_apt[*]} (install them and run again)" >&2
		exit 1
	fi
fi

# The release tests' tools, at the versions the release workflow uses.
gobin=$(go env GOPATH)/bin
export PATH="$gobin:$PATH"
if ! goreleaser --version 2>/dev/null | grep -q 'GitVersion:\s*v\?2\.15\.1'; then
	log "installing goreleaser v2.15.1 (go install)"
	GOFLAGS= go install github.com/goreleaser/goreleaser/v2@v2.15.1
fi
if ! command -v cyclonedx-gomod >/dev/null; then
	log "installing cyclonedx-gomod v1.10.0 (go install)"
	GOFLAGS= go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
fi

log "Go modules (go mod download)"
go mod download

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

log "go vet"
go vet ./...

# Every test: the real harnesses, Lighthouse and axe, the release build
# and images, the multi-process workers (plain `go test ./...` skips them).
export BATON_TEST_ALL=1
cache=${BATON_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-test}
mkdir -p "$cache"

prefetch=$(grep -rl --include='*_test.go' '^func TestPrefetch(' . | xargs -n1 dirname | sort -u)
log "the heavy tests' prerequisites (TestPrefetch in $(echo $prefetch | tr ' ' ','))"
# -v streams each helper's lines (what it installs, how long it took).
BATON_TEST_PREFETCH=1 go test -count=1 -timeout 60m -run '^TestPrefetch$' -v $prefetch 2>&1 |
	{ grep -Ev '^(=== (RUN|PAUSE|CONT)|PASS$)' || true; } >&2

timeout=${BATON_TEST_TIMEOUT:-}
if [ -z "$timeout" ]; then
	slowest=$(awk '$2 > m { m = $2 } END { print int(m + 0.5) }' "$cache/test-times" 2>/dev/null || echo 0)
	if [ "${slowest:-0}" -gt 0 ]; then
		secs=$((3 * slowest))
		[ $secs -ge 2700 ] || secs=2700
		timeout=${secs}s
		log "go test -timeout $timeout: three times the slowest package of the last passing run here (${slowest}s), at least 45m"
	else
		timeout=45m
		log "go test -timeout $timeout: no run measured here yet"
	fi
fi

log "go test (with a throwaway PostgreSQL for the Postgres store and queue)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
./scripts/pg-test.sh go test -count=1 -timeout "$timeout" ./... 2>&1 | tee "$out"
# What each package took, for the next run's -timeout.
awk '$1 == "ok" && $3 ~ /s$/ { sub(/s$/, "", $3); print $2, $3 }' "$out" >"$cache/test-times.tmp"
mv "$cache/test-times.tmp" "$cache/test-times"

log "pi extension type-check"
bash integrations/pi/check.sh
log "all tests passed"
