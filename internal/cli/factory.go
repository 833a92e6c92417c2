// Package cli is baton's command tree. Commands are built by functions that
// take a *Factory; cli.Main runs them and maps errors to exit codes.
package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
)

// IO is where a command reads and writes. Tests hand in buffers.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// InTTY and OutTTY say whether stdin and stdout are terminals.
	InTTY  bool
	OutTTY bool
}

// Factory carries what commands need, built once in cmd/baton, the only
// place that chooses concrete adapters. Fields that are expensive
// (databases, network clients) are functions called when a command needs
// them, so a hook pays only for what it uses, and tests hand in real
// services of their own.
type Factory struct {
	IO     IO
	Now    func() time.Time
	Getenv func(string) string
	// Secrets is where Getenv reads baton's own secrets (from files when
	// configured so); commands that hold secrets check Err and add
	// --*-file flags through Set. nil: the environment only.
	Secrets *Secrets
	WorkDir string // the process working directory
	Version string
	// Commit is the commit the binary was built from; "" when unknown.
	Commit string
	// Executable is the absolute path of the running baton binary, for
	// installers that write it into harness configuration.
	Executable string
	// DynamicallyLinked says the binary was built with cgo: every process
	// start, so every hook, then pays for the dynamic loader.
	DynamicallyLinked bool

	// Deliveries opens the delivery service on the database o names; the
	// caller closes it.
	Deliveries func(ctx context.Context, o DeliveriesOptions) (*delivery.Service, error)
	// DeliveriesConfigured says whether a delivery database is set up (db
	// names one, or the default exists), for edges that offer deliveries
	// only then (baton mcp).
	DeliveriesConfigured func(db string) bool
	// DataDir is baton's default data directory (where `baton serve`
	// keeps its API token file).
	DataDir func() (string, error)
	// Serve runs `baton serve` as c asks until ctx ends: the server
	// itself is wired in cmd/baton; this edge keeps its flags, checks and
	// banner.
	Serve func(ctx context.Context, c ServeConfig) error
	// ServeHTTP serves, on addr until ctx ends, the handler build makes,
	// as `baton serve` serves its API: with the HTTP server's limits, and
	// every request needing the API token (BATON_API_TOKEN, else the data
	// directory's). build is told whether there is a token (without one,
	// a non-loopback addr is refused); listening is told the URL it
	// listens on. `baton mcp --http` serves through it.
	ServeHTTP func(ctx context.Context, addr string, log *slog.Logger, build func(hasToken bool) (http.Handler, error), listening func(url string)) error
	// GitHub opens the GitHub API for repo's host; apiURL overrides the
	// base URL ("" for the default). With no token the error wraps
	// github.ErrNoToken.
	GitHub func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error)

	// AgentEnv is added to the environment of the agents and commands
	// baton starts (deliveries, runs), over its own without its secrets,
	// and their programs are looked for on its PATH. nil in cmd/baton:
	// they start from the process's environment. Tests hand in a
	// stand-in agent's PATH here, so tests run side by side.
	AgentEnv []string

	// OpenStore opens the context store at a project root (--root,
	// BATON_ROOT, else discovered); nil opens fsstore's with Now. Store
	// calls it once per process, when a command first needs the store.
	OpenStore func(root string) *fsstore.Store

	// rootFlag is --root, set by the root command before any RunE.
	rootFlag string
	store    *fsstore.Store
}

// env returns the named variable, or "" when the factory has no Getenv.
func (f *Factory) env(key string) string {
	if f.Getenv == nil {
		return ""
	}
	return f.Getenv(key)
}

// now returns the current time from the injected clock.
func (f *Factory) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

// DeliveriesOptions say which delivery database to open, and for a
// worker, how its queue runs.
type DeliveriesOptions struct {
	// DB is a SQLite file or a postgres:// URL; "" means the default
	// (BATON_DATABASE_URL, else baton.db in the data directory).
	DB string
	// Workers is how many phases run at once, ServerJobs how many of a
	// server's notices, comments and webhooks; 0 and 0 open the queue
	// for inserting jobs only.
	Workers, ServerJobs int
	WorkerID            string
	// Poll is how often an idle worker looks for jobs; RescueAfter is when
	// the queue takes a job still running for abandoned.
	Poll, RescueAfter time.Duration
}

// openDeliveries opens the delivery service.
func (f *Factory) openDeliveries(ctx context.Context, o DeliveriesOptions) (*delivery.Service, error) {
	if f.Deliveries == nil {
		return nil, baton.Errorf(baton.Internal, "this baton was built without a delivery database")
	}
	svc, err := f.Deliveries(ctx, o)
	if err != nil {
		return nil, err
	}
	svc.AgentEnv = append(svc.AgentEnv, f.AgentEnv...)
	return svc, nil
}

// abs resolves p against the working directory.
func (f *Factory) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(f.WorkDir, p)
}
