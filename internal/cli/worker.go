package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
)

type workerOptions struct {
	workers     int
	lease       time.Duration
	heartbeat   time.Duration
	poll        time.Duration
	rescueAfter time.Duration
}

func newWorkerCmd(f *Factory) *cobra.Command {
	var o workerOptions
	var db string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Process delivery jobs until interrupted",
		Long: `Run delivery phases as they are queued, until interrupted.

Several workers, in one process (--workers) or many, share the queue: a
phase runs once at a time, claimed in the database. A running phase beats
a heartbeat; a worker that finds a running phase without one for --lease
takes its worker for dead, records the run as lost and queues the phase
again (a phase whose worker dies twice fails instead). This happens at
start and then every half lease.

Ctrl-C (SIGINT) or SIGTERM stops the worker: running agents are stopped
and their phases go back to the queue for the next worker.`,
		Example: "  baton worker\n  baton worker --workers 4 --db /srv/baton/baton.db",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorker(cmd.Context(), f, db, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&db, "db", "", "SQLite database file (default: <data dir>/baton.db)")
	fl.IntVar(&o.workers, "workers", 1, "phases to run at once")
	fl.DurationVar(&o.lease, "lease", delivery.DefaultLease, "heartbeat age after which a running phase's worker is taken for dead")
	fl.DurationVar(&o.heartbeat, "heartbeat", delivery.DefaultHeartbeatEvery, "how often a running phase beats")
	fl.DurationVar(&o.poll, "poll", time.Second, "how often an idle worker looks for jobs")
	fl.DurationVar(&o.rescueAfter, "rescue-after", 2*time.Hour, "River rescues a job still running after this (keep it above the longest phase timeout)")
	return cmd
}

func runWorker(ctx context.Context, f *Factory, db string, o workerOptions) error {
	if o.workers < 1 {
		return usageError("--workers must be at least 1")
	}
	if o.heartbeat <= 0 || o.lease <= 2*o.heartbeat {
		return usageError("--lease (%s) must be more than twice --heartbeat (%s)", o.lease, o.heartbeat)
	}
	id := workerID("worker")
	r := &delivery.Runner{Owner: id, HeartbeatEvery: o.heartbeat}
	var mu sync.Mutex
	handler := func(ctx context.Context, a queue.RunPhaseArgs, attempt int) error {
		d, err := r.Run(ctx, a.DeliveryID, a.Phase, "")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			fmt.Fprintf(f.IO.Err, "%s  %s %s: %v\n", f.now().Local().Format("15:04:05"), a.DeliveryID, a.Phase, err)
		case d != nil:
			fmt.Fprintf(f.IO.Err, "%s  %s %s → %s\n", f.now().Local().Format("15:04:05"), d.ID, a.Phase, stateText(d))
		}
		return err
	}
	ds, err := f.openDeliveries(ctx, db, queue.Config{
		Workers: o.workers, Handler: handler, ID: id,
		FetchPollInterval: o.poll, RescueStuckJobsAfter: o.rescueAfter,
	})
	if err != nil {
		return err
	}
	defer ds.close()
	r.Service = ds.svc
	fmt.Fprintf(f.IO.Err, "baton worker %s: %d at once, data in %s (Ctrl-C stops)\n", id, o.workers, ds.svc.DataDir)

	reconcile := func() {
		n, err := ds.svc.Reconcile(ctx, o.lease, id)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(f.IO.Err, "reconcile: %v\n", err)
		} else if n > 0 {
			fmt.Fprintf(f.IO.Err, "%s  recovered %d phase(s) whose worker died\n", f.now().Local().Format("15:04:05"), n)
		}
	}
	reconcile()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.lease / 2)
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
	err = ds.svc.Queue.Run(ctx)
	wg.Wait()
	if err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Err, "baton worker stopped")
	return nil
}
