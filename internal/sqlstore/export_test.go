package sqlstore

import (
	"context"
	"database/sql"
)

// MigrateTo brings baton's tables up to version, for tests of what a
// later migration does to rows written before it.
func MigrateTo(ctx context.Context, d Dialect, db *sql.DB, version int64) error {
	return migrate(ctx, d, db, version)
}

// Rebind and FmtTime are the store's own, for tests that write rows as an
// older version did.
var (
	Rebind  = rebind
	FmtTime = fmtTime
)
