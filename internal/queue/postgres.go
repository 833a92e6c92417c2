package queue

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/baton-agent/baton/internal/sqlstore"
)

// openPostgres opens the queue on a PostgreSQL pool whose baton tables
// are migrated: the same Tx, Store and Handler serve both databases.
func openPostgres(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Queue, error) {
	store := sqlstore.New(sqlstore.Postgres, sqlstore.Pgx(pool))
	ws := newWorkers(cfg)
	client, err := newClient(ctx, riverpgxv5.New(pool), cfg, ws)
	if err != nil {
		return nil, err
	}
	b := &riverBackend[pgx.Tx]{
		client:    client,
		wakeLocal: ws != nil && !client.Driver().SupportsListener(),
		store:     store,
		begin:     func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		commit:    func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		abort:     func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		querier:   func(tx pgx.Tx) sqlstore.Querier { return sqlstore.Pgx(tx) },
	}
	return &Queue{store: store, b: b, cfg: cfg, workers: ws}, nil
}
