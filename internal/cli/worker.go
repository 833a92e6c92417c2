package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-agent/baton/internal/delivery"
)

type workerOptions struct {
	sandbox         sandboxOptions
	run             workerFlags
	githubTokenFile string
	app             appOptions
}

// workerFlags say how a process runs phases: `baton worker` and the
// in-process workers of `baton serve` take the same ones.
type workerFlags struct {
	workers     int
	lease       time.Duration
	heartbeat   time.Duration
	poll        time.Duration
	rescueAfter time.Duration
}

// register adds the flags; workersUsage says what --workers means here
// and workers is its default.
func (w *workerFlags) register(fl *pflag.FlagSet, workers int, workersUsage string) {
	fl.IntVar(&w.workers, "workers", workers, workersUsage)
	fl.DurationVar(&w.lease, "lease", delivery.DefaultLease, "heartbeat age after which a running phase's worker is taken for dead")
	fl.DurationVar(&w.heartbeat, "heartbeat", delivery.DefaultHeartbeatEvery, "how often a running phase beats")
	fl.DurationVar(&w.poll, "poll", time.Second, "how often an idle worker looks for jobs")
	fl.DurationVar(&w.rescueAfter, "rescue-after", 2*time.Minute, "run again a job still running this long after its process died (a live notice, comment or webhook job is cut off at half of it; a phase keeps its heartbeat)")
}

// check refuses flags no worker can run with; min is the least --workers.
func (w workerFlags) check(min int) error {
	if w.workers < min {
		return usageError("--workers must be at least %d", min)
	}
	if w.heartbeat <= 0 || w.lease <= 2*w.heartbeat {
		return usageError("--lease (%s) must be more than twice --heartbeat (%s)", w.lease, w.heartbeat)
	}
	if w.poll <= 0 || w.rescueAfter <= 0 {
		return usageError("--poll and --rescue-after must be positive")
	}
	return nil
}

// deliveries is how the process opens the delivery service.
func (w workerFlags) deliveries(db, id string) DeliveriesOptions {
	return DeliveriesOptions{DB: db, Workers: w.workers, WorkerID: id, Poll: w.poll, RescueAfter: w.rescueAfter}
}

// worker runs svc's phases as owner id.
func (w workerFlags) worker(svc *delivery.Service, id string, log *slog.Logger) *delivery.Worker {
	return &delivery.Worker{
		Runner: &delivery.Runner{Service: svc, Owner: id, HeartbeatEvery: w.heartbeat},
		Lease:  w.lease,
		Log:    log,
	}
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
	o.run.register(fl, 1, "phases to run at once")
	o.sandbox.register(fl)
	fl.StringVar(&o.githubTokenFile, "github-token-file", "", "read the GitHub token from this `file` (default $BATON_GITHUB_TOKEN_FILE, else GH_TOKEN)")
	o.app.register(fl)
	return cmd
}

func runWorker(ctx context.Context, f *Factory, db string, o workerOptions) error {
	if err := o.run.check(1); err != nil {
		return err
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
	svc, err := f.openDeliveries(ctx, o.run.deliveries(db, id))
	if err != nil {
		return err
	}
	defer svc.Close()
	conf = conf.InDataDir(svc.DataDir)
	svc.Sandbox = conf
	fmt.Fprintf(f.IO.Err, "baton worker %s: %d at once, data in %s (Ctrl-C stops)\n", id, o.run.workers, svc.DataDir)
	sandboxNotice(f.IO.Err, conf)
	w := o.run.worker(svc, id, slog.New(newLogHandler(f.IO.Err)))
	if err := w.Run(ctx); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Err, "baton worker stopped")
	return nil
}
