package queue_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
)

// opens returns a constructor per database: SQLite always, PostgreSQL
// when BATON_TEST_POSTGRES_URL is set. Each constructor opens the same
// database again, as a second process would.
func opens(t *testing.T) map[string]func(cfg queue.Config) *queue.Queue {
	t.Helper()
	out := map[string]func(queue.Config) *queue.Queue{}
	for _, d := range sqlstoretest.Dialects(t) {
		dsn := sqlstoretest.DSN(t, d)
		out[string(d)] = func(cfg queue.Config) *queue.Queue {
			q, err := queue.Open(t.Context(), dsn, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(q.Close)
			return q
		}
	}
	return out
}

func delivery(id string) *baton.Delivery {
	now := time.Now().UTC()
	return &baton.Delivery{
		ID: id, Summary: "s", Repository: "/r", Forge: baton.ForgeLocal, Phase: baton.PhasePlan,
		RunStatus: baton.StatusPending, Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{},
		Config: baton.DeliveryConfig{Agent: "claude"}, Queued: true, CreatedAt: now, UpdatedAt: now,
	}
}

// eventually waits for cond, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testenv.Until(20*time.Second, nil, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestStateAndJobCommitTogether(t *testing.T) {
	t.Parallel()
	for name, open := range opens(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			q := open(queue.Config{})
			boom := errors.New("boom")
			err := q.InTx(ctx, func(tx queue.Tx) error {
				if _, _, err := tx.Store().CreateDelivery(ctx, delivery("aaaaaaaaaaaa")); err != nil {
					return err
				}
				if err := tx.Enqueue(ctx, queue.RunPhaseArgs{DeliveryID: "aaaaaaaaaaaa", Phase: baton.PhasePlan, Entry: 1}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("InTx = %v", err)
			}
			if _, err := q.Store().FindDeliveryByID(ctx, "aaaaaaaaaaaa"); baton.ErrorCode(err) != baton.NotFound {
				t.Errorf("rolled back delivery exists: %v", err)
			}
			if st, _ := q.JobStates(ctx, "aaaaaaaaaaaa"); len(st) != 0 {
				t.Errorf("rolled back job exists: %v", st)
			}

			// Committed, and the same job twice is one job.
			for range 2 {
				err = q.InTx(ctx, func(tx queue.Tx) error {
					if _, _, err := tx.Store().CreateDelivery(ctx, delivery("aaaaaaaaaaaa")); err != nil {
						return err
					}
					return tx.Enqueue(ctx, queue.RunPhaseArgs{DeliveryID: "aaaaaaaaaaaa", Phase: baton.PhasePlan, Entry: 1})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if st, _ := q.JobStates(ctx, "aaaaaaaaaaaa"); st["available"] != 1 || len(st) != 1 {
				t.Errorf("job states = %v, want one available job", st)
			}
		})
	}
}

func TestWorkerOutcomes(t *testing.T) {
	t.Parallel()
	for name, open := range opens(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var mu sync.Mutex
			calls := map[string]int{}
			handler := func(ctx context.Context, a queue.RunPhaseArgs, _ queue.Job) error {
				mu.Lock()
				calls[a.DeliveryID]++
				n := calls[a.DeliveryID]
				mu.Unlock()
				switch a.DeliveryID {
				case "invalid00000":
					return baton.Errorf(baton.Invalid, "bad delivery")
				case "snooze000000":
					if n == 1 {
						return &queue.SnoozeError{Until: time.Now().Add(time.Second), Err: errors.New("rate limited")}
					}
				}
				return nil
			}
			q := open(queue.Config{Workers: 2, FetchPollInterval: 50 * time.Millisecond})
			for _, id := range []string{"ok0000000000", "invalid00000", "snooze000000"} {
				err := q.InTx(ctx, func(tx queue.Tx) error {
					if _, _, err := tx.Store().CreateDelivery(ctx, delivery(id)); err != nil {
						return err
					}
					return tx.Enqueue(ctx, queue.RunPhaseArgs{DeliveryID: id, Phase: baton.PhasePlan, Entry: 1})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- q.Run(ctx, queue.Handlers{Phase: handler}) }()
			states := func(id string) map[string]int {
				st, err := q.JobStates(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			eventually(t, "ok job completed", func() bool { return states("ok0000000000")["completed"] == 1 })
			eventually(t, "invalid job cancelled", func() bool { return states("invalid00000")["cancelled"] == 1 })
			eventually(t, "snoozed job completed on its second run", func() bool { return states("snooze000000")["completed"] == 1 })
			mu.Lock()
			if calls["invalid00000"] != 1 || calls["snooze000000"] != 2 {
				t.Errorf("calls = %v, want invalid once (not retried), snooze twice", calls)
			}
			mu.Unlock()
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run = %v", err)
			}
		})
	}
}

// A CLI and workers starting together on a new database all get a queue.
func TestConcurrentFirstOpens(t *testing.T) {
	t.Parallel()
	sqlstoretest.OpenAtOnce(t, 4, func(db *sql.DB) error {
		_, err := queue.OpenSQLite(context.Background(), db, queue.Config{})
		return err
	})
}

// A server's jobs (notices, reviews, feedback, webhooks) run on their own queue:
// a process opened for phases only leaves them to a server, which works
// each kind with its handler; a failure is retried after RetryAfter, and
// the last attempt knows it is the last.
func TestServerJobsRunOnTheServerQueue(t *testing.T) {
	t.Parallel()
	for name, open := range opens(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			err := open(queue.Config{}).InTx(ctx, func(tx queue.Tx) error {
				return errors.Join(tx.Enqueue(ctx, queue.NoticeArgs{ID: 7}), tx.Enqueue(ctx, queue.ReviewArgs{DeliveryID: "d1", NoteID: 3}),
					tx.Enqueue(ctx, queue.FeedbackArgs{Repo: "octo/app", CommentKind: "issue_comment", CommentID: 9}),
					tx.Enqueue(ctx, queue.WebhookArgs{ID: "d-1"}))
			})
			if err != nil {
				t.Fatal(err)
			}
			// A worker of phases takes none of them.
			phases := open(queue.Config{Workers: 1, FetchPollInterval: 20 * time.Millisecond})
			pctx, pstop := context.WithCancel(ctx)
			pdone := make(chan error, 1)
			events, unsubscribe := phases.Subscribe()
			go func() {
				pdone <- phases.Run(pctx, queue.Handlers{Phase: func(context.Context, queue.RunPhaseArgs, queue.Job) error { return nil }})
			}()

			server := open(queue.Config{ServerJobs: 2, FetchPollInterval: 20 * time.Millisecond, RetryAfter: func(int) time.Duration { return 10 * time.Millisecond }})
			var mu sync.Mutex
			var got []string
			record := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, s)
			}
			finished, stop := server.Subscribe()
			defer stop()
			done := make(chan error, 1)
			go func() {
				done <- server.Run(ctx, queue.Handlers{
					Notice: func(_ context.Context, a queue.NoticeArgs, j queue.Job) error {
						record(fmt.Sprintf("notice %d attempt %d last %v", a.ID, j.Attempt, j.Last()))
						if j.Attempt == 1 {
							return errors.New("the target answered 500")
						}
						return nil
					},
					Review: func(_ context.Context, a queue.ReviewArgs, _ queue.Job) error {
						record(fmt.Sprintf("review %s %d", a.DeliveryID, a.NoteID))
						return nil
					},
					Feedback: func(_ context.Context, a queue.FeedbackArgs, _ queue.Job) error {
						record(fmt.Sprintf("feedback %s %s %d", a.Repo, a.CommentKind, a.CommentID))
						return nil
					},
					Webhook: func(_ context.Context, a queue.WebhookArgs, _ queue.Job) error {
						record("webhook " + a.ID)
						return nil
					},
				})
			}()
			var states []string
			for completed := 0; completed < 4; {
				select {
				case f := <-finished:
					states = append(states, f.Kind+" "+f.State)
					if f.State == "completed" {
						completed++
					}
				case <-time.After(30 * time.Second): // a bound on a broken queue, not a wait for success
					t.Fatalf("after 30 s the server finished %v", states)
				}
			}
			mu.Lock()
			slices.Sort(got)
			want := []string{"feedback octo/app issue_comment 9", "notice 7 attempt 1 last false", "notice 7 attempt 2 last false", "review d1 3", "webhook d-1"}
			if !slices.Equal(got, want) {
				t.Errorf("handled %q, want %q", got, want)
			}
			mu.Unlock()
			pstop()
			if err := <-pdone; err != nil {
				t.Fatal(err)
			}
			unsubscribe()
			for f := range events {
				t.Errorf("the phase worker worked a %s job", f.Kind)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run = %v", err)
			}
		})
	}
}

// Run refuses a process opened for the server's jobs without their
// handlers, and a second Run.
func TestRunNeedsItsHandlers(t *testing.T) {
	t.Parallel()
	dsn := sqlstoretest.DSN(t, "sqlite")
	q, err := queue.Open(t.Context(), dsn, queue.Config{ServerJobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Run(t.Context(), queue.Handlers{Notice: func(context.Context, queue.NoticeArgs, queue.Job) error { return nil }}); err == nil {
		t.Error("Run without the feedback and webhook handlers started")
	}
}
