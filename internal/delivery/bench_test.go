package delivery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// BenchmarkTransitionSQLite measures what one state change costs baton on
// SQLite, without git or an agent: read the delivery, apply the action,
// write it conditionally, append its log entries and, for a forward,
// insert the next phase's River job, all in one transaction. Each
// iteration is one claim (run) and one forward: two transitions.
//
//	go test ./internal/delivery -run XXX -bench TransitionSQLite -benchtime 2000x
func BenchmarkTransitionSQLite(b *testing.B) {
	db, err := sqlstore.OpenSQLite(filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	q, err := queue.OpenSQLite(context.Background(), db, queue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	benchTransitions(b, q)
}

// BenchmarkTransitionPostgres is the same on PostgreSQL (riverpgxv5),
// when BATON_TEST_POSTGRES_URL is set:
//
//	scripts/pg-test.sh go test ./internal/delivery -run XXX -bench Transition -benchtime 2000x
func BenchmarkTransitionPostgres(b *testing.B) {
	url := os.Getenv("BATON_TEST_POSTGRES_URL")
	if url == "" {
		b.Skip("BATON_TEST_POSTGRES_URL is not set (scripts/pg-test.sh sets it)")
	}
	ctx := context.Background()
	admin, err := sqlstore.OpenPostgres(ctx, url, "")
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	defer admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	pool, err := sqlstore.OpenPostgres(ctx, url, schema)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	q, err := queue.OpenPostgres(ctx, pool, queue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	benchTransitions(b, q)
}

func benchTransitions(b *testing.B, q *queue.Queue) {
	ctx := context.Background()
	svc := &Service{Queue: q}
	now := time.Now()
	var ids []string
	for i := range 200 {
		d := baton.Delivery{ID: fmt.Sprintf("bench%07d", i), Summary: "s", Repository: "/r", Forge: baton.ForgeLocal,
			Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{}, Config: baton.DeliveryConfig{Agent: "claude", MaxRounds: 5}}
		got, _, err := svc.Create(ctx, d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, got.ID)
	}
	step := func(id string, in Input) {
		err := q.InTx(ctx, func(tx queue.Tx) error {
			cur, err := tx.Store().FindDeliveryByID(ctx, id)
			if err != nil {
				return err
			}
			if in.Action == ActForward {
				in.Attempt = cur.Attempt
				if cur.Phase == baton.PhaseReview || cur.Phase == baton.PhaseVerify {
					in.Verdict = baton.VerdictPass
				}
			}
			res, err := Apply(*cur, in)
			if err != nil {
				return err
			}
			_, err = commit(ctx, tx, cur, res)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := ids[i%len(ids)]
		d, err := q.Store().FindDeliveryByID(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if d.Phase == baton.PhaseClose {
			b.StopTimer()
			// Reopen a closed delivery at plan to keep going.
			d.Phase, d.RunStatus, d.Queued = baton.PhasePlan, baton.StatusPending, true
			if err := q.Store().UpdateDelivery(ctx, d); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		step(id, Input{Action: ActRun, Actor: "bench", Now: now})
		step(id, Input{Action: ActForward, Actor: "bench", Now: now})
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N)/1000, "ms/transition")
}
