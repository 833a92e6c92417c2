package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is an open database of either dialect, migrated: a SQLite file
// (SQL, its one writing connection, and Read, read-only connections) or a
// PostgreSQL pool (Pool).
type DB struct {
	Dialect Dialect
	SQL     *sql.DB
	Read    *sql.DB
	Pool    *pgxpool.Pool

	reads *stmtCache // Read's statements, kept
}

// sqliteReaders is how many read-only connections a SQLite database gets.
const sqliteReaders = 4

// IsPostgresURL reports whether dsn names a PostgreSQL database rather
// than a SQLite file.
func IsPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens and migrates the database dsn names: a postgres:// URL (its
// search_path parameter, if any, picks the schema) or a SQLite file path,
// created with its directory if missing.
func Open(ctx context.Context, dsn string) (*DB, error) {
	if IsPostgresURL(dsn) {
		pool, err := OpenPostgres(ctx, dsn, "")
		if err != nil {
			return nil, err
		}
		if err := MigratePostgres(ctx, pool); err != nil {
			pool.Close()
			return nil, err
		}
		return &DB{Dialect: Postgres, Pool: pool}, nil
	}
	db, err := OpenSQLite(dsn)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, SQLite, db); err != nil {
		db.Close()
		return nil, err
	}
	read, err := OpenSQLiteReader(dsn, sqliteReaders)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &DB{Dialect: SQLite, SQL: db, Read: read, reads: newStmtCache(read)}, nil
}

// Store is baton's store on the whole database.
func (db *DB) Store() *Store {
	if db.Dialect == Postgres {
		return New(Postgres, Pgx(db.Pool))
	}
	s := New(SQLite, SQL(db.SQL))
	switch {
	case db.reads != nil:
		s.read = db.reads
	case db.Read != nil:
		s.read = SQL(db.Read)
	}
	return s
}

// Close closes the database.
func (db *DB) Close() {
	if db.Pool != nil {
		db.Pool.Close()
	}
	if db.SQL != nil {
		_ = db.SQL.Close()
	}
	if db.reads != nil {
		db.reads.close()
	}
	if db.Read != nil {
		_ = db.Read.Close()
	}
}
