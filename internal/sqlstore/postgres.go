package sqlstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/baton-agent/baton"
)

// OpenPostgres connects to the PostgreSQL database at url (a postgres://
// URL or a key=value DSN). schema, when set, becomes the search_path, so
// baton's and River's tables live there (tests use a schema each).
func OpenPostgres(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The URL may hold a password: never echo it.
		return nil, baton.Errorf(baton.Invalid, "bad PostgreSQL URL: want postgres://user:password@host:port/db")
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "connect to PostgreSQL")
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, baton.WrapError(baton.Unavailable, err, "connect to PostgreSQL at %s", cfg.ConnConfig.Host)
	}
	return pool, nil
}

// MigratePostgres runs baton's PostgreSQL migrations over pool.
func MigratePostgres(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return Migrate(ctx, Postgres, db)
}
