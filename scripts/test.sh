#!/usr/bin/env bash
# Runs every test baton has: formatting, vet, `go test ./...` with the real
# parts the tests need (git; a PostgreSQL server for the pipeline's Postgres
# driver; chromium for the dashboard's browser tests; GoReleaser, podman and
# npm for the release tests), and a type-check of the pi extension against
# pi's published types. Installs what is missing from Debian's packages, starts PostgreSQL
# as the postgres user, and exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

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
if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		log "installing ${need_apt[*]}"
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
	log "installing goreleaser v2.15.1"
	GOFLAGS= go install github.com/goreleaser/goreleaser/v2@v2.15.1
fi
if ! command -v cyclonedx-gomod >/dev/null; then
	log "installing cyclonedx-gomod v1.10.0"
	GOFLAGS= go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
fi

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

log "go test (with a throwaway PostgreSQL for the Postgres store and queue)"
./scripts/pg-test.sh go test -count=1 ./...

log "pi extension type-check"
bash integrations/pi/check.sh
log "all tests passed"
