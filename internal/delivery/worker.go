package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
)

// Worker runs queued phases until its context ends. The queue's workers
// hand each job to the Runner; at start and then every half lease, a
// reconciler recovers phases whose worker died and the repository caches
// are tidied (Service.Tidy); each outcome is logged. When
// the context ends, running agents are stopped and their phases go back
// to the queue.
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

// Run works jobs until ctx is done.
func (w *Worker) Run(ctx context.Context) error {
	r := w.Runner
	log := w.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lease := w.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	handle := func(ctx context.Context, a queue.RunPhaseArgs, attempt int) error {
		start := time.Now()
		d, err := r.Run(ctx, a.DeliveryID, a.Phase, "")
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
			log.Warn(fmt.Sprintf("%s %s waits: %v", a.DeliveryID, a.Phase, wait.Err),
				"delivery", a.DeliveryID, "phase", a.Phase, "until", wait.Until, "err", wait.Err)
		case err != nil:
			log.Error(fmt.Sprintf("%s %s: %v", a.DeliveryID, a.Phase, err),
				"delivery", a.DeliveryID, "phase", a.Phase, "attempt", attempt, "err", err)
		case d != nil:
			attrs := []any{"delivery", d.ID, "phase", a.Phase, "state", d.String()}
			if d.Error != "" {
				attrs = append(attrs, "error", d.Error)
			}
			log.Info(fmt.Sprintf("%s %s → %s", d.ID, a.Phase, d), attrs...)
		}
		return err
	}
	reconcile := func() {
		n, err := r.Service.Reconcile(ctx, lease, r.Owner)
		if err != nil && ctx.Err() == nil {
			log.Error("reconcile: "+err.Error(), "err", err)
		} else if n > 0 {
			log.Info(fmt.Sprintf("recovered %d phase(s) whose worker died", n), "count", n)
		}
		if err := r.Service.Tidy(ctx); err != nil && ctx.Err() == nil {
			log.Error("tidy the repository caches: "+err.Error(), "err", err)
		}
	}
	reconcile()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lease / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				reconcile()
			}
		}
	}()
	err := r.Service.Queue.Run(ctx, handle)
	wg.Wait()
	return err
}
