package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Worker runs queued phases. Work is the queue's handler of phase jobs:
// it hands each to the Runner and logs the outcome. Maintain recovers,
// at start and then every half lease, phases whose worker died, tidies
// the repository caches (Service.Tidy) and, as root, walks the system
// directories the box narrows before a box start would have to
// (sandbox.WalkSystem). Run does both for a process that
// runs phases only (`baton worker`); `baton serve` runs them beside its
// other work. When the context ends, running agents are stopped and their
// phases go back to the queue.
type Worker struct {
	// Runner runs the phases, on its Service's queue. Its HeartbeatEvery
	// must be well under Lease.
	Runner *Runner
	// Lease is how old a running phase's heartbeat may get before its
	// worker is taken for dead (default DefaultLease).
	Lease time.Duration
	// Log receives one record per phase run and recovery (default: none).
	Log *slog.Logger
	// Observe, when set, is told how long each job took and how it ended:
	// the phase's run status after it ("succeeded", "failed", ...),
	// "error", "waiting" for a job that waits for room on the disk, or
	// "none" for a job with nothing to run (for metrics).
	Observe func(phase baton.Phase, result string, took time.Duration)
}

func (w *Worker) log() *slog.Logger {
	if w.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Log
}

// Run works phase jobs and maintains them until ctx is done.
func (w *Worker) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.Maintain(ctx) })
	g.Go(func() error {
		return w.Runner.Service.Queue.Run(ctx, queue.Handlers{Phase: w.Work, Message: w.WorkMessage})
	})
	return g.Wait()
}

// Work runs the phase a job names, if it is still pending: the queue's
// phase handler.
func (w *Worker) Work(ctx context.Context, a queue.RunPhaseArgs, job queue.Job) error {
	start := time.Now()
	d, err := w.Runner.Run(ctx, a.DeliveryID, a.Phase, "")
	var wait *queue.SnoozeError
	waits := errors.As(err, &wait)
	if w.Observe != nil {
		result := "none"
		switch {
		case waits:
			result = "waiting"
		case err != nil:
			result = "error"
		case d != nil:
			result = string(d.RunStatus)
		}
		w.Observe(a.Phase, result, time.Since(start))
	}
	switch {
	case waits:
		w.log().Warn(fmt.Sprintf("%s %s waits: %v", a.DeliveryID, a.Phase, wait.Err),
			"delivery", a.DeliveryID, "phase", a.Phase, "until", wait.Until, "err", wait.Err)
	case err != nil:
		w.log().Error(fmt.Sprintf("%s %s: %v", a.DeliveryID, a.Phase, err),
			"delivery", a.DeliveryID, "phase", a.Phase, "attempt", job.Attempt, "err", err)
	case d != nil:
		attrs := []any{"delivery", d.ID, "phase", a.Phase, "state", d.String()}
		if d.Error != "" {
			attrs = append(attrs, "error", d.Error)
		}
		w.log().Info(fmt.Sprintf("%s %s → %s", d.ID, a.Phase, d), attrs...)
	}
	return err
}

// Maintain recovers phases whose worker died and tidies the repository
// caches, at once and then every half lease, until ctx is done. Errors
// are logged: the next round tries again.
func (w *Worker) Maintain(ctx context.Context) error {
	lease := w.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	r := w.Runner
	t := time.NewTicker(lease / 2)
	defer t.Stop()
	for {
		n, err := r.Service.Reconcile(ctx, lease, r.Owner)
		if err != nil && ctx.Err() == nil {
			w.log().Error("reconcile: "+err.Error(), "err", err)
		} else if n > 0 {
			w.log().Info(fmt.Sprintf("recovered %d phase(s) whose worker died", n), "count", n)
		}
		if err := r.Service.Tidy(ctx); err != nil && ctx.Err() == nil {
			w.log().Error("tidy the repository caches: "+err.Error(), "err", err)
		}
		// As root, a box narrows the system directories by a walk of
		// them that stands ten minutes: made here, ahead of time, no
		// phase waits for it.
		if err := sandbox.WalkSystem(); err != nil {
			w.log().Error("walk the system directories: "+err.Error(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
