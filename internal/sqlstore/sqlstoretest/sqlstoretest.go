// Package sqlstoretest gives tests fresh, empty databases: a SQLite file
// in the test's temporary directory, or a schema of its own in the
// PostgreSQL server that EnvURL names (scripts/pg-test.sh starts one and
// sets it). PostgreSQL runs are skipped, with the reason logged, when it
// is unset, so plain `go test ./...` works without a server.
package sqlstoretest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/sqlstore"
)

// EnvURL names the environment variable holding the test server's URL.
const EnvURL = "BATON_TEST_POSTGRES_URL"

// Dialects returns the dialects a contract test runs on: SQLite always,
// PostgreSQL when EnvURL is set.
func Dialects(t testing.TB) []sqlstore.Dialect {
	t.Helper()
	if os.Getenv(EnvURL) == "" {
		t.Logf("PostgreSQL run skipped: %s is not set (scripts/pg-test.sh sets it)", EnvURL)
		return []sqlstore.Dialect{sqlstore.SQLite}
	}
	return []sqlstore.Dialect{sqlstore.SQLite, sqlstore.Postgres}
}

var schemas atomic.Int64

// DSN returns a fresh database of dialect d for sqlstore.Open or
// queue.Open: a SQLite file path in t.TempDir(), or a postgres:// URL whose
// search_path is a new schema, dropped when the test ends. It skips the
// test for PostgreSQL when EnvURL is unset.
func DSN(t testing.TB, d sqlstore.Dialect) string {
	t.Helper()
	if d == sqlstore.SQLite {
		return filepath.Join(t.TempDir(), "baton.db")
	}
	base := os.Getenv(EnvURL)
	if base == "" {
		t.Skipf("PostgreSQL run skipped: %s is not set (scripts/pg-test.sh sets it)", EnvURL)
	}
	ctx := context.Background()
	admin, err := sqlstore.OpenPostgres(ctx, base, "")
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("t_%d_%d_%d", os.Getpid(), time.Now().UnixNano(), schemas.Add(1))
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open returns baton's store, migrated, on a fresh database of dialect d;
// the database closes when the test ends.
func Open(t testing.TB, d sqlstore.Dialect) *sqlstore.Store {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), DSN(t, d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db.Store()
}

// OpenAtOnce opens one new SQLite file from n goroutines at the same
// moment, as processes starting together on a new database do, and runs
// each connection through first (a migration, opening a queue). It fails
// t for every opener that got an error.
func OpenAtOnce(t testing.TB, n int, first func(db *sql.DB) error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "baton.db")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Go(func() {
			db, err := sqlstore.OpenSQLite(path)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = first(db)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
}
