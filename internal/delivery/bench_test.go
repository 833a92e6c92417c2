package delivery

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// BenchmarkTransitionSQLite measures what one state change costs baton on
// SQLite, without git or an agent: read the delivery, apply the action,
// write it conditionally, append its log entries and, for a forward,
// insert the next phase's River job, all in one transaction. Each
// iteration is one claim (run) and one forward: two transitions.
//
//	go test ./internal/delivery -run XXX -bench TransitionSQLite -benchtime 2000x
func BenchmarkTransitionSQLite(b *testing.B) { benchTransitions(b, sqlstore.SQLite) }

// BenchmarkTransitionPostgres is the same on PostgreSQL (riverpgxv5),
// when BATON_TEST_POSTGRES_URL is set:
//
//	scripts/pg-test.sh go test ./internal/delivery -run XXX -bench Transition -benchtime 2000x
func BenchmarkTransitionPostgres(b *testing.B) { benchTransitions(b, sqlstore.Postgres) }

func benchTransitions(b *testing.B, dialect sqlstore.Dialect) {
	ctx := context.Background()
	q, err := queue.Open(ctx, sqlstoretest.DSN(b, dialect), queue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	svc := &Service{Queue: q}
	now := time.Now()
	var ids []string
	for i := range 200 {
		d := baton.Delivery{ID: fmt.Sprintf("bench%07d", i), Summary: "s", Repository: "/r", Forge: baton.ForgeLocal,
			Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{}, Config: baton.DeliveryConfig{Agent: "claude", MaxRounds: 5}}
		got, _, err := svc.Insert(ctx, d, "bench")
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
