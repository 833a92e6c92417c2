// Package queue runs baton's durable background work as River jobs, on
// the same database as baton's tables: SQLite (riversqlite over
// database/sql) or PostgreSQL (riverpgxv5 over pgx).
//
// The kinds of job (jobs.go): a delivery's phase, a person's message to
// its agent, a notice to send, a review note to post, a comment or
// review to act on, a webhook to handle. Each is queued in the
// transaction of the change that causes it (Queue.InTx, Tx.Enqueue), so
// the change and its job commit or roll back together, and River retries
// it with backoff and rescues it from a process that died. Phases run on
// one River queue, the server's short jobs on another, which only
// `baton serve` works.
//
// Everything River-specific stays here. River's client is generic over
// the driver's transaction type (*sql.Tx, pgx.Tx); this package hides it
// behind Queue and Tx, so the code above works the same on both
// databases.
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

// fetchCooldown is the shortest time between two job fetches of a worker.
// River's default (100 ms) suits many short jobs; a phase job ends, and
// its successor is committed, well apart, and a fetch asked for during
// the cooldown (the poll's, or a wake's) waits for its end: 100 ms, or
// the poll interval, lost between phases.
const fetchCooldown = 2 * time.Millisecond

// rescueDefault is River's: a job still running an hour after it started
// is taken for its process's.
const rescueDefault = time.Hour

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
	// Workers is how many phase jobs run at once. 0 with no ServerJobs
	// makes an insert-only queue, for the CLI.
	Workers int
	// ServerJobs is how many notice, feedback and webhook jobs run at
	// once: `baton serve` works them, `baton worker` does not (0).
	ServerJobs int
	// ID names this worker in River (default: River's own).
	ID string
	// JobTimeout bounds one phase job; 0 means none (River's default of
	// a minute is not used): the phase runner enforces each phase's own
	// timeout.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is when River takes a running job's process for
	// dead and retries the job (default an hour). The server's jobs are
	// each bounded to half of it (and a minute at most), so one is rescued
	// only when its process is gone. A phase whose worker died is
	// recovered by its heartbeat instead (delivery.Service.Reconcile); a
	// rescued phase job whose phase still runs does nothing.
	RescueStuckJobsAfter time.Duration
	// FetchPollInterval is how often idle workers look for jobs they
	// were not told about (default 1s): on PostgreSQL a job committed
	// anywhere wakes every worker through LISTEN/NOTIFY; on SQLite a job
	// committed in this process wakes its workers, and other processes
	// see it within this interval.
	FetchPollInterval time.Duration
	// RetryAfter is the wait after a job's nth failed attempt (nil:
	// River's, n⁴ seconds: 1 s, 16 s, 81 s, 4 min, 10 min, ...).
	RetryAfter func(attempt int) time.Duration
	Logger     *slog.Logger
}

// serverJobTimeout bounds a server job: at most a minute, and half the
// rescue time, so River never rescues a job that is still running.
func (c Config) serverJobTimeout() time.Duration {
	rescue := c.RescueStuckJobsAfter
	if rescue <= 0 {
		rescue = rescueDefault
	}
	return min(maxServerJob, rescue/2)
}

// Tx is one transaction over baton's tables and River's.
type Tx interface {
	// Store is baton's store bound to the transaction.
	Store() *sqlstore.Store
	// Enqueue inserts a job in the transaction. A duplicate of a job that
	// is still queued or done is skipped.
	Enqueue(ctx context.Context, args Args) error
}

// Finished is a job this process's workers finished an attempt of.
type Finished struct {
	Kind string
	Args json.RawMessage
	// State is where the job is now: completed, retryable (it failed and
	// runs again), discarded (it failed for the last time), cancelled, or
	// scheduled or available (snoozed).
	State string
	// Err is the attempt's error, for a failure.
	Err string
}

// backend is the part that depends on River's transaction type.
type backend interface {
	inTx(ctx context.Context, fn func(Tx) error) error
	start(ctx context.Context) error
	stopAndCancel(ctx context.Context) error
	subscribe() (<-chan *river.Event, func())
	jobsOf(ctx context.Context, kind string) ([]*rivertype.JobRow, error)
}

// Queue is baton's job queue on one database.
type Queue struct {
	store *sqlstore.Store
	b     backend
	cfg   Config
	// workers are registered with River at open; Run hands them their
	// handlers.
	workers *workers
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

// Run works the queues this process was opened for with h until ctx is
// done, then stops: jobs still running get their context canceled (the
// phase runner releases its phase back to the queue; a server job is
// retried) and Run waits for them to return.
func (q *Queue) Run(ctx context.Context, h Handlers) error {
	switch {
	case q.workers == nil:
		return baton.Errorf(baton.Internal, "queue opened without workers cannot run jobs")
	case q.cfg.Workers > 0 && h.Phase == nil:
		return baton.Errorf(baton.Internal, "queue: Run without a phase handler")
	case q.cfg.ServerJobs > 0 && (h.Notice == nil || h.Review == nil || h.Feedback == nil || h.Webhook == nil):
		return baton.Errorf(baton.Internal, "queue: Run without the server's handlers")
	case !q.workers.running.CompareAndSwap(false, true):
		return baton.Errorf(baton.Internal, "queue: Run called twice")
	}
	q.workers.set(h)
	if err := q.b.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
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

// Subscribe tells each job attempt this process's workers finish, until
// cancel is called, for tests and diagnostics. A reader that falls more
// than a thousand behind misses some. Only a queue with workers has any.
func (q *Queue) Subscribe() (<-chan Finished, func()) {
	out := make(chan Finished, 64)
	if q.workers == nil {
		close(out)
		return out, func() {}
	}
	events, cancel := q.b.subscribe()
	go func() {
		defer close(out)
		for ev := range events {
			f := Finished{Kind: ev.Job.Kind, Args: ev.Job.EncodedArgs, State: string(ev.Job.State)}
			if n := len(ev.Job.Errors); n > 0 && ev.Kind == river.EventKindJobFailed {
				f.Err = ev.Job.Errors[n-1].Error
			}
			out <- f
		}
	}()
	return out, cancel
}

// JobStates counts the phase jobs of a delivery by state, for tests and
// diagnostics.
func (q *Queue) JobStates(ctx context.Context, deliveryID string) (map[string]int, error) {
	jobs, err := q.b.jobsOf(ctx, RunPhaseArgs{}.Kind())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, j := range jobs {
		if jsonField(j.EncodedArgs, "delivery_id") == deliveryID {
			out[string(j.State)]++
		}
	}
	return out, nil
}

// JobCounts counts the jobs of a kind (Args.Kind) by state, for tests
// and diagnostics.
func (q *Queue) JobCounts(ctx context.Context, kind string) (map[string]int, error) {
	jobs, err := q.b.jobsOf(ctx, kind)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, j := range jobs {
		out[string(j.State)]++
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
	enqueued []Args
}

func (t *riverTx[TTx]) Store() *sqlstore.Store { return t.store }

func (t *riverTx[TTx]) Enqueue(ctx context.Context, args Args) error {
	if _, err := t.b.client.InsertTx(ctx, t.tx, args, nil); err != nil {
		return fmt.Errorf("queue a %s job: %w", args.Kind(), err)
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
// same job again, which River's unique-job check (every kind is unique by
// its arguments) turns into no new row, and then wakes the workers.
// Without it a job waits for the next poll.
func (b *riverBackend[TTx]) wake(ctx context.Context, jobs []Args) {
	for _, args := range jobs {
		_, _ = b.client.Insert(context.WithoutCancel(ctx), args, nil) // the poll is the fallback
	}
}

func (b *riverBackend[TTx]) start(ctx context.Context) error { return b.client.Start(ctx) }

func (b *riverBackend[TTx]) stopAndCancel(ctx context.Context) error {
	return b.client.StopAndCancel(ctx)
}

func (b *riverBackend[TTx]) subscribe() (<-chan *river.Event, func()) {
	return b.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed)
}

func (b *riverBackend[TTx]) jobsOf(ctx context.Context, kind string) ([]*rivertype.JobRow, error) {
	res, err := b.client.JobList(ctx, river.NewJobListParams().Kinds(kind).First(10000))
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}

// newClient migrates River's tables and builds the River client for cfg
// on driver, with ws as its workers when cfg has any.
func newClient[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], cfg Config, ws *workers) (*river.Client[TTx], error) {
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
	if cfg.RetryAfter != nil {
		rc.RetryPolicy = retryPolicy(cfg.RetryAfter)
	}
	if rc.FetchPollInterval > 0 && rc.FetchPollInterval < fetchCooldown {
		rc.FetchCooldown = rc.FetchPollInterval
	}
	if rc.JobTimeout == 0 {
		rc.JobTimeout = -1 // the phase runner enforces the per-phase timeout
	}
	if ws != nil {
		reg := river.NewWorkers()
		if err := ws.register(reg); err != nil {
			return nil, err
		}
		rc.Workers = reg
		rc.Queues = map[string]river.QueueConfig{}
		if cfg.Workers > 0 {
			rc.Queues[QueueName] = river.QueueConfig{MaxWorkers: cfg.Workers}
		}
		if cfg.ServerJobs > 0 {
			rc.Queues[ServerQueue] = river.QueueConfig{MaxWorkers: cfg.ServerJobs}
		}
	}
	return river.NewClient(driver, rc)
}

// retryPolicy waits after is says after each failed attempt.
type retryPolicy func(attempt int) time.Duration

func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(p(job.Attempt))
}

// quiet makes River's own logging warnings-only unless the caller
// asked for a logger.
func quiet(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// workers are the River workers of each kind. River needs them when
// the client is built; the handlers arrive when the queue starts running.
type workers struct {
	phase    *worker[RunPhaseArgs]
	message  *worker[MessageArgs]
	notice   *worker[NoticeArgs]
	review   *worker[ReviewArgs]
	feedback *worker[FeedbackArgs]
	webhook  *worker[WebhookArgs]
	running  atomic.Bool
}

// newWorkers returns cfg's workers, nil for an insert-only queue.
func newWorkers(cfg Config) *workers {
	if cfg.Workers <= 0 && cfg.ServerJobs <= 0 {
		return nil
	}
	t := cfg.serverJobTimeout()
	return &workers{phase: &worker[RunPhaseArgs]{}, message: &worker[MessageArgs]{timeout: t}, notice: &worker[NoticeArgs]{timeout: t},
		review: &worker[ReviewArgs]{timeout: t}, feedback: &worker[FeedbackArgs]{timeout: t}, webhook: &worker[WebhookArgs]{timeout: t}}
}

func (ws *workers) register(reg *river.Workers) error {
	return errors.Join(river.AddWorkerSafely(reg, ws.phase), river.AddWorkerSafely(reg, ws.message), river.AddWorkerSafely(reg, ws.notice),
		river.AddWorkerSafely(reg, ws.review), river.AddWorkerSafely(reg, ws.feedback), river.AddWorkerSafely(reg, ws.webhook))
}

func (ws *workers) set(h Handlers) {
	ws.phase.set(h.Phase)
	ws.message.set(h.Message)
	ws.notice.set(h.Notice)
	ws.review.set(h.Review)
	ws.feedback.set(h.Feedback)
	ws.webhook.set(h.Webhook)
}

// worker adapts a handler to River and maps its errors to outcomes.
type worker[A Args] struct {
	river.WorkerDefaults[A]
	// timeout bounds a job (0: the client's JobTimeout).
	timeout time.Duration
	handle  atomic.Pointer[func(context.Context, A, Job) error]
}

func (w *worker[A]) set(h func(context.Context, A, Job) error) {
	if h != nil {
		w.handle.Store(&h)
	}
}

func (w *worker[A]) Work(ctx context.Context, job *river.Job[A]) error {
	h := w.handle.Load()
	if h == nil {
		return fmt.Errorf("queue: a %s job arrived at a process with no handler for it", job.Kind)
	}
	return outcome((*h)(ctx, job.Args, Job{ID: job.ID, Attempt: job.Attempt, MaxAttempts: job.MaxAttempts}))
}

func (w *worker[A]) Timeout(*river.Job[A]) time.Duration { return w.timeout }

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
