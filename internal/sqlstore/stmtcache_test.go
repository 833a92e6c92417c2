package sqlstore

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
)

// A kept statement reads what was written since its last use: the
// driver resets it when its rows close, so no read snapshot outlives a
// query, from any of the read connections, with readers running at once.
func TestKeptStatementsReadCurrentRows(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.SQL.Exec("CREATE TABLE counter (n INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.Exec("INSERT INTO counter (n) VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	s := db.Store()
	for i := 1; i <= 50; i++ {
		if _, err := s.exec(t.Context(), "UPDATE counter SET n = ?", i); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 2 * sqliteReaders {
			wg.Go(func() {
				rows, err := s.query(t.Context(), "SELECT n FROM counter")
				if err != nil {
					t.Error(err)
					return
				}
				defer rows.Close()
				var n int
				for rows.Next() {
					if err := rows.Scan(&n); err != nil {
						t.Error(err)
					}
				}
				if n != i {
					t.Errorf("a read after write %d saw %d", i, n)
				}
			})
		}
		wg.Wait()
		var n int
		if err := s.row(t.Context(), "SELECT n FROM counter").Scan(&n); err != nil || n != i {
			t.Fatalf("a row read after write %d saw %d, %v", i, n, err)
		}
	}
	if got := len(db.reads.m); got != 1 {
		t.Errorf("%d statements kept for one query text, want 1", got)
	}
}

// The cache keeps at most maxCachedStmts statements; a query beyond them
// runs unprepared and answers the same, and a query that does not
// prepare gives the database's own error.
func TestStmtCacheBounded(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	c := db.reads
	for i := range maxCachedStmts + 20 {
		var n int
		if err := c.QueryRow(t.Context(), fmt.Sprintf("SELECT ? + %d", i), 1).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("query %d = %d, %v; want %d", i, n, err, i+1)
		}
	}
	if len(c.m) != maxCachedStmts {
		t.Errorf("%d statements kept, want the bound %d", len(c.m), maxCachedStmts)
	}
	if _, err := c.Query(t.Context(), "SELECT nothing FROM nowhere"); err == nil {
		t.Error("a query on a missing table answered")
	}
	db.Close()
	if len(c.m) != 0 {
		t.Errorf("%d statements kept after Close", len(c.m))
	}
}

// BenchmarkFindDeliveryByID is a runner's poll of its delivery's row
// through the read connections, with its statement kept (kept) and
// parsed at every call (parsed), as before the cache.
func BenchmarkFindDeliveryByID(b *testing.B) {
	db, err := Open(b.Context(), filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	d := benchDelivery()
	if _, _, err := db.Store().CreateDelivery(b.Context(), d); err != nil {
		b.Fatal(err)
	}
	for _, kept := range []bool{true, false} {
		s := db.Store()
		if !kept {
			s.read = SQL(db.Read)
		}
		b.Run(map[bool]string{true: "kept", false: "parsed"}[kept], func(b *testing.B) {
			for b.Loop() {
				if _, err := s.FindDeliveryByID(b.Context(), d.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchDelivery() *baton.Delivery {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	return &baton.Delivery{
		ID: "aaaaaaaaaaaa", Summary: "Fix the login bug", Repository: "/src/app", Forge: baton.ForgeLocal,
		Phase: baton.PhasePlan, RunStatus: baton.StatusRunning, Endpoint: baton.PhaseObserve,
		Checkpoints: []baton.Phase{baton.PhasePlan, baton.PhaseDeploy},
		Refs:        []baton.Ref{{Role: baton.RoleRequest, Type: "summary", Label: "Fix the login bug"}},
		Config:      baton.DeliveryConfig{Agent: "claude", PhaseTimeout: time.Hour, MaxRounds: 5, VerifyCommand: "go test ./..."},
		CreatedAt:   now, UpdatedAt: now,
	}
}
