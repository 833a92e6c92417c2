package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/delivery"
)

type workerOptions struct {
	sandbox         sandboxOptions
	workers         int
	lease           time.Duration
	heartbeat       time.Duration
	poll            time.Duration
	rescueAfter     time.Duration
	githubTokenFile string
	app             appOptions
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
	fl.StringVar(&db, "db", "", "SQLite database file or postgres:// URL (default: BATON_DATABASE_URL, else <data dir>/baton.db)")
	fl.IntVar(&o.workers, "workers", 1, "phases to run at once")
	fl.DurationVar(&o.lease, "lease", delivery.DefaultLease, "heartbeat age after which a running phase's worker is taken for dead")
	fl.DurationVar(&o.heartbeat, "heartbeat", delivery.DefaultHeartbeatEvery, "how often a running phase beats")
	fl.DurationVar(&o.poll, "poll", time.Second, "how often an idle worker looks for jobs")
	fl.DurationVar(&o.rescueAfter, "rescue-after", 2*time.Hour, "River rescues a job still running after this (keep it above the longest phase timeout)")
	o.sandbox.register(fl)
	fl.StringVar(&o.githubTokenFile, "github-token-file", "", "read the GitHub token from this `file` (default $BATON_GITHUB_TOKEN_FILE, else GH_TOKEN)")
	o.app.register(fl)
	return cmd
}

func runWorker(ctx context.Context, f *Factory, db string, o workerOptions) error {
	if o.workers < 1 {
		return usageError("--workers must be at least 1")
	}
	if o.heartbeat <= 0 || o.lease <= 2*o.heartbeat {
		return usageError("--lease (%s) must be more than twice --heartbeat (%s)", o.lease, o.heartbeat)
	}
	files, err := o.app.apply(f)
	if err != nil {
		return err
	}
	files["GH_TOKEN"] = o.githubTokenFile
	if err := f.secrets(files); err != nil {
		return err
	}
	conf, err := o.sandbox.confinement(f)
	if err != nil {
		return err
	}
	id := delivery.WorkerID("worker")
	svc, err := f.openDeliveries(ctx, DeliveriesOptions{
		DB: db, Workers: o.workers, WorkerID: id, Poll: o.poll, RescueAfter: o.rescueAfter,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Sandbox = conf
	fmt.Fprintf(f.IO.Err, "baton worker %s: %d at once, data in %s (Ctrl-C stops)\n", id, o.workers, svc.DataDir)
	sandboxNotice(f.IO.Err, conf)
	w := &delivery.Worker{
		Runner: &delivery.Runner{Service: svc, Owner: id, HeartbeatEvery: o.heartbeat},
		Lease:  o.lease,
		Log:    slog.New(newLogHandler(f.IO.Err)),
	}
	if err := w.Run(ctx); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Err, "baton worker stopped")
	return nil
}
