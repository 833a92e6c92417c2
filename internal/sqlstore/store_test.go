package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 123456000, time.UTC)

// stores returns a fresh SQLite store, and a PostgreSQL one when
// BATON_TEST_POSTGRES_URL is set.
func stores(t *testing.T) map[string]*sqlstore.Store {
	t.Helper()
	out := map[string]*sqlstore.Store{}
	for _, d := range sqlstoretest.Dialects(t) {
		out[string(d)] = sqlstoretest.Open(t, d)
	}
	return out
}

func newDelivery(id string) *baton.Delivery {
	return &baton.Delivery{
		ID: id, Summary: "Fix the login bug", Repository: "/src/app", Forge: baton.ForgeLocal,
		Phase: baton.PhasePlan, RunStatus: baton.StatusPending, Endpoint: baton.PhaseObserve,
		Checkpoints: []baton.Phase{baton.PhasePlan, baton.PhaseDeploy},
		Refs:        []baton.Ref{{Role: baton.RoleRequest, Type: "summary", Label: "Fix the login bug"}},
		Config:      baton.DeliveryConfig{Agent: "claude", PhaseTimeout: time.Hour, MaxRounds: 5, VerifyCommand: "go test ./..."},
		Queued:      true, CreatedAt: t0, UpdatedAt: t0,
	}
}

func TestStoreContract(t *testing.T) {
	t.Parallel()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			d := newDelivery("aaaaaaaaaaaa")
			got, created, err := s.CreateDelivery(ctx, d)
			if err != nil || !created {
				t.Fatalf("CreateDelivery = %v, created %v", err, created)
			}
			if got.Seq != 1 || got.Version != 1 {
				t.Errorf("seq %d version %d, want 1 1", got.Seq, got.Version)
			}
			want := *d
			want.Seq, want.Version = 1, 1
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}

			// Idempotent: the same id returns the existing one, unchanged.
			again := newDelivery("aaaaaaaaaaaa")
			again.Summary = "something else"
			got2, created, err := s.CreateDelivery(ctx, again)
			if err != nil || created || got2.Summary != "Fix the login bug" || got2.Seq != 1 {
				t.Fatalf("second CreateDelivery = %+v created=%v err=%v, want the first one untouched", got2, created, err)
			}
			d2, _, err := s.CreateDelivery(ctx, newDelivery("bbbbbbbbbbbb"))
			if err != nil || d2.Seq != 2 {
				t.Fatalf("second delivery seq %v err %v, want 2", d2, err)
			}

			// Optimistic update: the second writer with the old version loses.
			a, _ := s.FindDeliveryByID(ctx, d.ID)
			b, _ := s.FindDeliveryByID(ctx, d.ID)
			a.RunStatus, a.Attempt = baton.StatusRunning, 1
			a.AddRef(baton.Ref{Role: baton.RoleWork, Type: "branch", Label: "baton/aaaaaaaaaaaa", URL: "file:///src/app#baton/aaaaaaaaaaaa"})
			if err := s.UpdateDelivery(ctx, a); err != nil {
				t.Fatal(err)
			}
			b.RunStatus = baton.StatusRunning
			if err := s.UpdateDelivery(ctx, b); baton.ErrorCode(err) != baton.Conflict {
				t.Fatalf("stale UpdateDelivery = %v, want Conflict", err)
			}
			got, _ = s.FindDeliveryByID(ctx, d.ID)
			if got.Version != 2 || len(got.Refs) != 2 || got.Attempt != 1 {
				t.Errorf("after update: %+v", got)
			}
			if _, err := s.FindDeliveryByID(ctx, "nope"); baton.ErrorCode(err) != baton.NotFound {
				t.Errorf("FindDeliveryByID(nope) = %v, want NotFound", err)
			}
			if g, err := s.FindDeliveryBySeq(ctx, 2); err != nil || g.ID != "bbbbbbbbbbbb" {
				t.Errorf("FindDeliveryBySeq(2) = %v %v", g, err)
			}
			list, err := s.FindDeliveries(ctx, baton.DeliveryFilter{RunStatus: baton.StatusRunning})
			if err != nil || len(list) != 1 || list[0].ID != d.ID {
				t.Errorf("FindDeliveries(running) = %v %v", list, err)
			}

			// Heartbeats and stale runs.
			if err := s.Heartbeat(ctx, d.ID, 1, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := s.Heartbeat(ctx, d.ID, 2, t0); baton.ErrorCode(err) != baton.Conflict {
				t.Errorf("Heartbeat of another attempt = %v, want Conflict", err)
			}
			stale, _ := s.FindStaleRunning(ctx, t0.Add(30*time.Second))
			if len(stale) != 0 {
				t.Errorf("fresh heartbeat reported stale")
			}
			stale, _ = s.FindStaleRunning(ctx, t0.Add(2*time.Minute))
			if len(stale) != 1 {
				t.Errorf("old heartbeat not reported stale")
			}

			// Phase log: each append ends the open entry.
			for i, st := range []baton.RunStatus{baton.StatusPending, baton.StatusRunning, baton.StatusSucceeded} {
				e := &baton.PhaseLogEntry{Phase: baton.PhasePlan, Status: st, Executor: baton.ExecutorAgent, Actor: "alice", Action: "x", StartedAt: t0.Add(time.Duration(i) * time.Second)}
				if err := s.AppendPhaseLog(ctx, d.ID, e); err != nil || e.ID == 0 {
					t.Fatalf("AppendPhaseLog = %v id %d", err, e.ID)
				}
			}
			log, err := s.PhaseLog(ctx, d.ID)
			if err != nil || len(log) != 3 {
				t.Fatalf("PhaseLog = %v %v", log, err)
			}
			if log[0].EndedAt != log[1].StartedAt || log[1].Duration(time.Time{}) != time.Second || !log[2].EndedAt.IsZero() {
				t.Errorf("log intervals wrong: %+v", log)
			}

			// Agent runs: one running at a time, finished runs keep their data,
			// canceled stays canceled.
			r1 := &baton.AgentRun{DeliveryID: d.ID, Phase: baton.PhasePlan, Attempt: 1, Agent: "claude", Prompt: "p", SystemPrompt: "s", StartedAt: t0}
			if err := s.CreateAgentRun(ctx, r1); err != nil || r1.N != 1 {
				t.Fatalf("CreateAgentRun = %v n=%d", err, r1.N)
			}
			r2 := &baton.AgentRun{DeliveryID: d.ID, Phase: baton.PhasePlan, Attempt: 2, Agent: "claude", StartedAt: t0}
			if err := s.CreateAgentRun(ctx, r2); baton.ErrorCode(err) != baton.Conflict {
				t.Fatalf("second running run = %v, want Conflict", err)
			}
			if n, err := s.EndRunningAgentRuns(ctx, d.ID, baton.RunCanceled, "canceled by alice", t0.Add(time.Second)); err != nil || n != 1 {
				t.Fatalf("EndRunningAgentRuns = %d %v", n, err)
			}
			r1.Status, r1.FinalMessage, r1.CostUSD, r1.InputTokens, r1.OutputTokens, r1.Duration, r1.ExitCode, r1.EndedAt =
				baton.RunSucceeded, "late answer", 0.25, 100, 20, 3*time.Second, 0, t0.Add(3*time.Second)
			if err := s.FinishAgentRun(ctx, r1); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateAgentRun(ctx, r2); err != nil || r2.N != 2 {
				t.Fatalf("run after cancel = %v n=%d", err, r2.N)
			}
			runs, err := s.AgentRuns(ctx, d.ID)
			if err != nil || len(runs) != 2 {
				t.Fatalf("AgentRuns = %v %v", runs, err)
			}
			if r := runs[0]; r.Status != baton.RunCanceled || r.Error != "canceled by alice" || r.FinalMessage != "late answer" || r.CostUSD != 0.25 || r.Duration != 3*time.Second {
				t.Errorf("canceled run = %+v, want canceled with the late result's data kept", r)
			}

			// Review notes.
			n := &baton.ReviewNote{DeliveryID: d.ID, Verdict: baton.VerdictNotPass, Summary: "s", Feedback: "f", Author: "reviewer", CreatedAt: t0}
			if err := s.CreateReviewNote(ctx, n); err != nil || n.ID == 0 {
				t.Fatal(err)
			}
			if err := s.SetReviewNoteURL(ctx, n.ID, "file:///x"); err != nil {
				t.Fatal(err)
			}
			notes, err := s.ReviewNotes(ctx, d.ID)
			if err != nil || len(notes) != 1 || notes[0].URL != "file:///x" {
				t.Errorf("ReviewNotes = %v %v", notes, err)
			}
		})
	}
}

// Concurrent creates of the same request make one delivery.
func TestCreateDeliveryConcurrent(t *testing.T) {
	t.Parallel()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			createdN := 0
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, created, err := s.CreateDelivery(t.Context(), newDelivery("cccccccccccc"))
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					if created {
						createdN++
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			if createdN != 1 {
				t.Errorf("%d creates reported created, want 1", createdN)
			}
		})
	}
}

// Several processes opening a new database at once all end up migrated.
func TestConcurrentFirstMigrations(t *testing.T) {
	t.Parallel()
	sqlstoretest.OpenAtOnce(t, 4, func(db *sql.DB) error {
		return sqlstore.Migrate(context.Background(), sqlstore.SQLite, db)
	})
}

// Reads on a SQLite database do not wait for its writer: while a write
// transaction holds the one writing connection (a worker moving a phase
// on), the dashboard's reads still answer, and see what was committed.
func TestSQLiteReadsDoNotWaitForTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstoretest.DSN(t, sqlstore.SQLite))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Store()
	d := baton.Delivery{ID: "d1", Summary: "committed", Repository: "/r", Forge: baton.ForgeLocal,
		Phase: baton.PhasePlan, RunStatus: baton.StatusPending, Endpoint: baton.PhaseObserve}
	if _, _, err := st.CreateDelivery(ctx, &d); err != nil {
		t.Fatal(err)
	}

	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	in := st.With(sqlstore.SQL(tx))
	d2 := baton.Delivery{ID: "d2", Summary: "uncommitted", Repository: "/r", Forge: baton.ForgeLocal,
		Phase: baton.PhasePlan, RunStatus: baton.StatusPending, Endpoint: baton.PhaseObserve}
	if _, _, err := in.CreateDelivery(ctx, &d2); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ds, err := st.FindDeliveries(rctx, baton.DeliveryFilter{})
	if err != nil {
		t.Fatalf("a read while a write transaction is open: %v", err)
	}
	if len(ds) != 1 || ds[0].ID != "d1" {
		t.Errorf("read %d deliveries, want the committed one only", len(ds))
	}
	// Within the transaction, its own write is seen.
	if got, err := in.FindDeliveryByID(ctx, "d2"); err != nil || got.Summary != "uncommitted" {
		t.Errorf("the transaction's own read = %v, %v", got, err)
	}
}

// Creates of different deliveries at once, each in a transaction of its
// own (as webhook jobs run them), all commit, with a number each. Two may
// take the same number; on PostgreSQL the loser's conflict would abort
// its whole transaction but for the savepoint it goes back to.
func TestCreateDeliveriesAtOnceInTransactions(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, err := sqlstore.Open(ctx, sqlstoretest.DSN(t, d))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			base := db.Store()
			inTx := func(fn func(*sqlstore.Store) error) error {
				if d == sqlstore.Postgres {
					tx, err := db.Pool.Begin(ctx)
					if err != nil {
						return err
					}
					if err := fn(base.With(sqlstore.Pgx(tx))); err != nil {
						_ = tx.Rollback(ctx)
						return err
					}
					return tx.Commit(ctx)
				}
				tx, err := db.SQL.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				if err := fn(base.With(sqlstore.SQL(tx))); err != nil {
					_ = tx.Rollback()
					return err
				}
				return tx.Commit()
			}
			// More than a few: the last of n creates may lose the race for
			// a number n-1 times.
			const n = 48
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					err := inTx(func(st *sqlstore.Store) error {
						_, created, err := st.CreateDelivery(ctx, newDelivery(fmt.Sprintf("conc%08d", i)))
						if err == nil && !created {
							err = fmt.Errorf("delivery %d already existed", i)
						}
						return err
					})
					if err != nil {
						t.Errorf("create %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			ds, err := base.FindDeliveries(ctx, baton.DeliveryFilter{})
			if err != nil {
				t.Fatal(err)
			}
			seqs := map[int64]bool{}
			for _, dv := range ds {
				seqs[dv.Seq] = true
			}
			if len(ds) != n || len(seqs) != n {
				t.Errorf("%d deliveries with %d numbers, want %d each", len(ds), len(seqs), n)
			}
		})
	}
}
