// Package sqlstore keeps baton's delivery tables in SQLite or PostgreSQL:
// deliveries, their phase log, agent runs and review notes, with embedded
// goose migrations per dialect.
//
// One implementation serves both databases. Queries are written with "?"
// placeholders and rebound to "$n" for PostgreSQL; times are stored as
// fixed-width UTC text and flags as integers, so the same scanning code
// reads both. A Store is bound to a Querier: the database, or a
// transaction the caller owns (Store.With), which is how a state change
// and the job it causes commit together.
package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Dialect is the SQL database a Store talks to.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Querier is a database handle: a whole database or one transaction, of
// database/sql (SQL) or pgx (Pgx).
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is a single-row result. Scan returns sql.ErrNoRows when there is
// none, whatever the driver.
type Row interface {
	Scan(dest ...any) error
}

// sqlHandle is what *sql.DB, *sql.Conn and *sql.Tx share.
type sqlHandle interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQL adapts a database/sql database or transaction.
func SQL(h sqlHandle) Querier { return sqlQuerier{h} }

type sqlQuerier struct{ h sqlHandle }

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.h.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.h.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return q.h.QueryRowContext(ctx, query, args...)
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// pgxHandle is what pgx.Tx, *pgx.Conn and *pgxpool.Pool share.
type pgxHandle interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Pgx adapts a pgx pool, connection or transaction.
func Pgx(h pgxHandle) Querier { return pgxQuerier{h} }

type pgxQuerier struct{ h pgxHandle }

func (q pgxQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.h.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q pgxQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.h.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (q pgxQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return pgxRow{q.h.QueryRow(ctx, query, args...)}
}

type pgxRow struct{ pgx.Row }

func (r pgxRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

//go:embed migrations
var migrations embed.FS

// Migrate brings baton's tables up to date. db is a database/sql handle
// to the same database (for PostgreSQL, pgx's stdlib.OpenDBFromPool).
func Migrate(ctx context.Context, dialect Dialect, db *sql.DB) error {
	return migrate(ctx, dialect, db, 0)
}

// migrate brings baton's tables up to version (0: the newest).
func migrate(ctx context.Context, dialect Dialect, db *sql.DB, version int64) error {
	var gd goose.Dialect
	switch dialect {
	case SQLite:
		gd = goose.DialectSQLite3
	case Postgres:
		gd = goose.DialectPostgres
	default:
		return baton.Errorf(baton.Invalid, "unknown SQL dialect %q", dialect)
	}
	fsys, err := fs.Sub(migrations, "migrations/"+string(dialect))
	if err != nil {
		return err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if dialect == Postgres {
		// Servers and workers on several machines may start at once: one
		// migrates under a PostgreSQL advisory lock while the others wait.
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gd, db, fsys, append(opts, goose.WithTableName("baton_schema_version"))...)
	if err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	up := func() error {
		if version > 0 {
			_, err := p.UpTo(ctx, version)
			return err
		}
		_, err := p.Up(ctx)
		return err
	}
	if err = up(); err != nil {
		// Two processes starting on a new database race to create the
		// version table; the loser finds it made on a second look.
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err = up()
	}
	if err != nil {
		return baton.WrapError(baton.Unavailable, err, "migrate baton's tables")
	}
	return nil
}

// OpenSQLiteReader opens read-only connections to the SQLite database at
// path, which OpenSQLite made: WAL lets any number of readers run beside
// the one writer, so pages and API reads need not queue behind the
// writer's connection (or each other) on a busy server.
func OpenSQLiteReader(path string, conns int) (*sql.DB, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(20000)&_pragma=query_only(1)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, baton.WrapError(baton.Internal, err, "open database %s", path)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, baton.WrapError(baton.Unavailable, err, "open database %s", path)
	}
	return db, nil
}

// OpenSQLite opens (creating it and its directory if needed) the SQLite
// database at path, in WAL mode with a busy timeout so a CLI and a worker
// can share it, and with one connection: SQLite has one writer, and River
// runs maintenance alongside the workers.
func OpenSQLite(path string) (*sql.DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, baton.WrapError(baton.Internal, err, "create database directory %s", dir)
		}
	}
	// The database holds webhook secrets. SQLite creates its -wal and -shm
	// files with the database file's mode, so a database file made 0600
	// keeps all three private; one made before is tightened.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, baton.WrapError(baton.Internal, err, "create database %s", path)
	}
	f.Close()
	if err := safefile.PrivateFiles(path, path+"-wal", path+"-shm"); err != nil {
		return nil, baton.WrapError(baton.Internal, err, "make database %s private", path)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, baton.WrapError(baton.Internal, err, "open database %s", path)
	}
	db.SetMaxOpenConns(1)
	// Switching a new database to WAL needs a lock that SQLite does not
	// wait for: processes opening it at the same moment get SQLITE_BUSY
	// at once. It settles within milliseconds; look again.
	for try := 0; try < 100; try++ {
		if err = db.Ping(); err == nil || !isBusy(err) {
			break
		}
		time.Sleep(time.Duration(10+try) * time.Millisecond)
	}
	if err != nil {
		db.Close()
		return nil, baton.WrapError(baton.Unavailable, err, "open database %s", path)
	}
	return db, nil
}

// isUniqueViolation reports whether err is a unique or primary key
// violation, by driver error type and code.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	return false
}

// isBusy reports a database that is locked or unreachable right now:
// worth retrying.
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// rebind turns "?" placeholders into "$1", "$2", ... for PostgreSQL. The
// queries in this package hold no "?" inside string literals.
func rebind(d Dialect, q string) string {
	if d != Postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
