package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds a stmtCache. baton's queries are constants of
// its code, well under this; a query built at run time (an IN list of
// some length) beyond it is run unprepared.
const maxCachedStmts = 256

// stmtCache runs queries on a database/sql database through statements
// prepared once and kept, by query text. SQLite spends longer parsing one
// of baton's queries than running it, and the same few are asked over
// and over: each runner polls its delivery's row, every page reads it.
// database/sql prepares a kept statement again on each connection that
// runs it, and the driver resets it when its rows close, so a kept
// statement holds no read snapshot between uses.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: make(map[string]*sql.Stmt)}
}

// stmt returns the kept statement of q, preparing it on first use; nil
// when the cache is full or q does not prepare (the caller runs q
// unprepared then, and gets the database's own error).
func (c *stmtCache) stmt(ctx context.Context, q string) *sql.Stmt {
	c.mu.Lock()
	st, full := c.m[q], len(c.m) >= maxCachedStmts
	c.mu.Unlock()
	if st != nil || full {
		return st
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.m[q]; kept != nil { // prepared meanwhile by another caller
		_ = st.Close()
		return kept
	}
	if len(c.m) >= maxCachedStmts {
		_ = st.Close()
		return nil
	}
	c.m[q] = st
	return st
}

// close closes every kept statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		_ = st.Close()
		delete(c.m, q)
	}
}

func (c *stmtCache) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := c.stmt(ctx, q); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = c.db.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c *stmtCache) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	var rows *sql.Rows
	var err error
	if st := c.stmt(ctx, q); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = c.db.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c *stmtCache) QueryRow(ctx context.Context, q string, args ...any) Row {
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, q, args...)
}
