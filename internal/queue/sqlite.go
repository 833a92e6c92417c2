package queue

import (
	"context"
	"database/sql"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/baton-agent/baton/internal/sqlstore"
)

// OpenSQLite opens the queue on a SQLite database opened with
// sqlstore.OpenSQLite (one connection), migrating River's tables and
// baton's.
func OpenSQLite(ctx context.Context, db *sql.DB, cfg Config) (*Queue, error) {
	if err := sqlstore.Migrate(ctx, sqlstore.SQLite, db); err != nil {
		return nil, err
	}
	return openSQLite(ctx, db, sqlstore.New(sqlstore.SQLite, sqlstore.SQL(db)), cfg)
}

// openSQLite is OpenSQLite on a database whose baton tables are migrated,
// with store on it for reads and writes outside transactions.
func openSQLite(ctx context.Context, db *sql.DB, store *sqlstore.Store, cfg Config) (*Queue, error) {
	ws := newWorkers(cfg)
	client, err := newClient(ctx, riversqlite.New(db), cfg, ws)
	if err != nil {
		return nil, err
	}
	b := &riverBackend[*sql.Tx]{
		client:    client,
		wakeLocal: ws != nil && !client.Driver().SupportsListener(),
		store:     store,
		begin: func(ctx context.Context) (*sql.Tx, error) {
			return db.BeginTx(ctx, nil)
		},
		commit:  func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		abort:   func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		querier: func(tx *sql.Tx) sqlstore.Querier { return sqlstore.SQL(tx) },
	}
	return &Queue{store: store, b: b, cfg: cfg, workers: ws}, nil
}
