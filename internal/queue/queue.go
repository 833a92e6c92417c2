// Package queue runs baton's delivery phases as River jobs, on the same
// database as baton's tables: SQLite (riversqlite over database/sql) or
// PostgreSQL (riverpgxv5 over pgx).
//
// Everything River-specific stays here. River's client is generic over
// the driver's transaction type (*sql.Tx, pgx.Tx); this package hides it
// behind Queue and Tx, so the code above works the same on both
// databases: a state change and the job it causes are written in one
// transaction (Queue.InTx, Tx.Enqueue), and commit or roll back together.
//
// Job outcomes map baton error codes: nil completes the job; Invalid
// cancels it (retrying cannot help); a SnoozeError snoozes it without
// spending an attempt (a rate limit); anything else is retried with
// River's backoff.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// QueueName is the River queue phase jobs run on.
const QueueName = "phases"

// fetchCooldown is the shortest time between two job fetches of a worker.
// River's default (100 ms) suits many short jobs; a phase job ends, and
// its successor is committed, well apart, and a fetch asked for during
// the cooldown (the poll's, or a wake's) waits for its end: 100 ms, or
// the poll interval, lost between phases.
const fetchCooldown = 2 * time.Millisecond

// RunPhaseArgs asks a worker to run the pending phase of a delivery.
type RunPhaseArgs struct {
	DeliveryID string      `json:"delivery_id"`
	Phase      baton.Phase `json:"phase"`
	// Entry is the delivery's version when the phase was entered: jobs
	// are unique per delivery, phase and entry, so a replayed transition
	// cannot queue a second job, while a later return to the same phase
	// (implement after a not_pass review) gets its own.
	Entry int64 `json:"entry"`
}

// Kind implements river.JobArgs.
func (RunPhaseArgs) Kind() string { return "baton.run_phase" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RunPhaseArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueName,
		MaxAttempts: 10,
		UniqueOpts:  river.UniqueOpts{ByArgs: true},
	}
}

// Handler runs one phase job; attempt counts River attempts from 1.
type Handler func(ctx context.Context, args RunPhaseArgs, attempt int) error

// SnoozeError asks for the job to run again at Until without spending an
// attempt (a rate limit that resets then).
type SnoozeError struct {
	Until time.Time
	Err   error
}

func (e *SnoozeError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.Until.UTC().Format(time.RFC3339), e.Err)
}

func (e *SnoozeError) Unwrap() error { return e.Err }

// Config configures a Queue.
type Config struct {
	// Workers is how many phase jobs run at once. 0 makes an insert-only
	// queue, for the CLI.
	Workers int
	// ID names this worker in River (default: River's own).
	ID string
	// JobTimeout bounds one job; it must exceed the longest phase run.
	// 0 means River's default (1 minute) is NOT used: no timeout, since
	// the phase runner enforces its own per-phase timeout.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is when River considers a running job's worker
	// dead and retries the job (default JobTimeout + 1 hour, or 1 hour).
	RescueStuckJobsAfter time.Duration
	// FetchPollInterval is how often idle workers look for jobs they
	// were not told about (default 1s): on PostgreSQL a job committed
	// anywhere wakes every worker through LISTEN/NOTIFY; on SQLite a job
	// committed in this process wakes its workers, and other processes
	// see it within this interval.
	FetchPollInterval time.Duration
	Logger            *slog.Logger
}

// Tx is one transaction over baton's tables and River's.
type Tx interface {
	// Store is baton's store bound to the transaction.
	Store() *sqlstore.Store
	// Enqueue inserts a phase job in the transaction. A duplicate of a
	// job that is still queued or done is skipped.
	Enqueue(ctx context.Context, args RunPhaseArgs) error
}

// backend is the part that depends on River's transaction type.
type backend interface {
	inTx(ctx context.Context, fn func(Tx) error) error
	start(ctx context.Context) error
	stopAndCancel(ctx context.Context) error
	jobStates(ctx context.Context, deliveryID string) (map[rivertype.JobState]int, error)
}

// Queue is baton's job queue on one database.
type Queue struct {
	store *sqlstore.Store
	b     backend
	cfg   Config
	// worker is registered with River at open; Run hands it the handler.
	worker *phaseWorker
	// close closes the database when the queue opened it (Open).
	close func()
}

// Open opens the database dsn names (sqlstore.Open: a postgres:// URL or
// a SQLite file) and the queue on it. Close closes both.
func Open(ctx context.Context, dsn string, cfg Config) (*Queue, error) {
	db, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	var q *Queue
	if db.Dialect == sqlstore.Postgres {
		q, err = openPostgres(ctx, db.Pool, cfg)
	} else {
		q, err = openSQLite(ctx, db.SQL, db.Store(), cfg)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	q.close = db.Close
	return q, nil
}

// Close closes the database when the queue opened it; a queue on a
// caller's handle leaves it open.
func (q *Queue) Close() {
	if q.close != nil {
		q.close()
	}
}

// Store returns baton's store on the queue's database (outside any
// transaction).
func (q *Queue) Store() *sqlstore.Store { return q.store }

// InTx runs fn in a transaction and commits it when fn returns nil. A
// busy database (SQLite locked, a PostgreSQL serialization failure) is
// Unavailable.
func (q *Queue) InTx(ctx context.Context, fn func(Tx) error) error {
	return q.b.inTx(ctx, fn)
}

// Run works jobs with h until ctx is done, then stops: jobs still running
// get their context canceled (the phase runner releases them back to the
// queue) and Run waits for them to return.
func (q *Queue) Run(ctx context.Context, h Handler) error {
	if q.cfg.Workers <= 0 || q.worker == nil {
		return baton.Errorf(baton.Internal, "queue opened without workers cannot run jobs")
	}
	if h == nil {
		return baton.Errorf(baton.Internal, "queue: Run without a handler")
	}
	if !q.worker.handle.CompareAndSwap(nil, &h) {
		return baton.Errorf(baton.Internal, "queue: Run called twice")
	}
	if err := q.b.start(ctx); err != nil {
		return baton.WrapError(baton.Unavailable, err, "start the job queue")
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := q.b.stopAndCancel(stopCtx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("stop the job queue: %w", err)
	}
	return nil
}

// JobStates counts River jobs of a delivery by state, for tests and
// diagnostics.
func (q *Queue) JobStates(ctx context.Context, deliveryID string) (map[string]int, error) {
	m, err := q.b.jobStates(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for k, v := range m {
		out[string(k)] = v
	}
	return out, nil
}

// riverBackend is the backend for one River driver.
type riverBackend[TTx any] struct {
	client *river.Client[TTx]
	// wakeLocal is set when committed jobs must wake this process's
	// workers by hand: it has workers, and the driver no listener.
	wakeLocal bool
	store     *sqlstore.Store
	begin     func(ctx context.Context) (TTx, error)
	commit    func(ctx context.Context, tx TTx) error
	abort     func(ctx context.Context, tx TTx) error
	querier   func(tx TTx) sqlstore.Querier
}

type riverTx[TTx any] struct {
	b        *riverBackend[TTx]
	tx       TTx
	store    *sqlstore.Store
	enqueued []RunPhaseArgs
}

func (t *riverTx[TTx]) Store() *sqlstore.Store { return t.store }

func (t *riverTx[TTx]) Enqueue(ctx context.Context, args RunPhaseArgs) error {
	if _, err := t.b.client.InsertTx(ctx, t.tx, args, nil); err != nil {
		return fmt.Errorf("queue %s of delivery %s: %w", args.Phase, args.DeliveryID, err)
	}
	t.enqueued = append(t.enqueued, args)
	return nil
}

func (b *riverBackend[TTx]) inTx(ctx context.Context, fn func(Tx) error) error {
	tx, err := b.begin(ctx)
	if err != nil {
		return baton.WrapError(baton.Unavailable, err, "begin a database transaction")
	}
	t := &riverTx[TTx]{b: b, tx: tx, store: b.store.With(b.querier(tx))}
	if err := fn(t); err != nil {
		_ = b.abort(context.WithoutCancel(ctx), tx)
		return err
	}
	if err := b.commit(ctx, tx); err != nil {
		return baton.WrapError(baton.Unavailable, err, "commit a database transaction")
	}
	if b.wakeLocal {
		b.wake(ctx, t.enqueued)
	}
	return nil
}

// wake tells this process's workers about jobs just committed. On
// PostgreSQL River does it itself: an insert in a transaction sends a
// NOTIFY that every listening worker gets at commit. SQLite has no such
// thing, and River wakes a process's own workers only after an insert
// outside a transaction, which is what this does after the commit: the
// same job again, which River's unique-job check turns into no new row,
// and then wakes the workers. Without it a job waits for the next poll.
func (b *riverBackend[TTx]) wake(ctx context.Context, jobs []RunPhaseArgs) {
	for _, args := range jobs {
		_, _ = b.client.Insert(context.WithoutCancel(ctx), args, nil) // the poll is the fallback
	}
}

func (b *riverBackend[TTx]) start(ctx context.Context) error { return b.client.Start(ctx) }

func (b *riverBackend[TTx]) stopAndCancel(ctx context.Context) error {
	return b.client.StopAndCancel(ctx)
}

func (b *riverBackend[TTx]) jobStates(ctx context.Context, deliveryID string) (map[rivertype.JobState]int, error) {
	params := river.NewJobListParams().Kinds(RunPhaseArgs{}.Kind()).First(10000)
	res, err := b.client.JobList(ctx, params)
	if err != nil {
		return nil, err
	}
	out := map[rivertype.JobState]int{}
	for _, j := range res.Jobs {
		if jsonField(j.EncodedArgs, "delivery_id") == deliveryID {
			out[j.State]++
		}
	}
	return out, nil
}

// newClient migrates River's tables and builds the River client for cfg
// on driver, with w as its worker when cfg has workers.
func newClient[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], cfg Config, w *phaseWorker) (*river.Client[TTx], error) {
	mig, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		// Processes starting on a new database at once race to create
		// River's tables; the loser finds them on a second look.
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return nil, baton.WrapError(baton.Unavailable, err, "migrate River's tables")
		}
	}
	rc := &river.Config{
		ID:                   cfg.ID,
		Logger:               quiet(cfg.Logger),
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		FetchPollInterval:    cfg.FetchPollInterval,
		FetchCooldown:        fetchCooldown,
	}
	if rc.FetchPollInterval > 0 && rc.FetchPollInterval < fetchCooldown {
		rc.FetchCooldown = rc.FetchPollInterval
	}
	if rc.JobTimeout == 0 {
		rc.JobTimeout = -1 // the phase runner enforces the per-phase timeout
	}
	if cfg.Workers > 0 {
		workers := river.NewWorkers()
		if err := river.AddWorkerSafely(workers, w); err != nil {
			return nil, err
		}
		rc.Workers = workers
		rc.Queues = map[string]river.QueueConfig{QueueName: {MaxWorkers: cfg.Workers}}
	}
	return river.NewClient(driver, rc)
}

// quiet makes River's own logging warnings-only unless the caller
// asked for a logger.
func quiet(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// phaseWorker adapts a Handler to River and maps errors to outcomes.
// River needs its workers when the client is built; the handler arrives
// when the queue starts running.
type phaseWorker struct {
	river.WorkerDefaults[RunPhaseArgs]
	handle atomic.Pointer[Handler]
}

func (w *phaseWorker) Work(ctx context.Context, job *river.Job[RunPhaseArgs]) error {
	h := w.handle.Load()
	if h == nil {
		return errors.New("queue: a job arrived before the queue was running")
	}
	return outcome((*h)(ctx, job.Args, job.Attempt))
}

// outcome maps a handler error to what River should do with the job.
func outcome(err error) error {
	var sn *SnoozeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sn):
		return river.JobSnooze(max(time.Until(sn.Until), time.Second))
	case baton.ErrorCode(err) == baton.Invalid:
		return river.JobCancel(err)
	}
	return err
}

// jsonField returns a top-level string field of a JSON object, "" if
// absent.
func jsonField(b []byte, key string) string {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}
