#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 cluster (as the postgres user, in a
# temporary directory, on a free local port), exports
# BATON_TEST_POSTGRES_URL, runs the given command (default: the store and
# queue contract tests), and stops and deletes the cluster afterwards.
#
#   scripts/pg-test.sh                         # go test ./internal/{sqlstore,queue,delivery}/...
#   scripts/pg-test.sh go test ./internal/...  # any command
set -euo pipefail
cd "$(dirname "$0")/.."

PGBIN=${PGBIN:-}
if [ -z "$PGBIN" ]; then
	for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && PGBIN=$d; done
fi
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
		PGBIN=/usr/lib/postgresql/15/bin
	else
		echo "pg-test: PostgreSQL server binaries not found (install postgresql-15)" >&2
		exit 1
	fi
fi

# initdb and postgres refuse to run as root: run them as postgres.
as_pg() {
	if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi
}

dir=$(mktemp -d /tmp/baton-pg.XXXXXX)
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 55432)

cleanup() {
	as_pg "$PGBIN/pg_ctl -D $dir/data -m immediate stop" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

as_pg "$PGBIN/initdb -D $dir/data -U postgres -A trust --no-sync" >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }
as_pg "$PGBIN/pg_ctl -D $dir/data -l $dir/server.log -w -o \"-k $dir -p $port -h 127.0.0.1 -c fsync=off -c max_connections=200\" start" >/dev/null ||
	{ cat "$dir/server.log" >&2; exit 1; }

export BATON_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
echo "pg-test: PostgreSQL on port $port" >&2
if [ $# -eq 0 ]; then
	set -- go test -count=1 ./internal/sqlstore/... ./internal/queue/... ./internal/delivery/...
fi
"$@"
