package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/safefile"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// deliveryWiring opens the delivery pipeline's database and builds the
// service over it, with forges and GitHub access from the environment.
type deliveryWiring struct {
	getenv func(string) string
	// secretErr says why the named secrets' files could not be read: a
	// command told where a secret is stops there instead of going on as
	// if none were set (nil: no secret files).
	secretErr func(names ...string) error
	workDir   string
	github    github.Access
	// warn receives one-line warnings about the data directory's
	// permissions; nil discards them.
	warn io.Writer
}

// open opens the database o names: o.DB (a SQLite file or a postgres://
// URL), else BATON_DATABASE_URL, else <data dir>/baton.db. Repository
// caches, worktrees, run logs and notes live next to the SQLite file, or
// in the data directory with PostgreSQL.
func (w deliveryWiring) open(ctx context.Context, o cli.DeliveriesOptions) (*delivery.Service, error) {
	dsn := o.DB
	if dsn == "" {
		if err := w.checkSecrets("BATON_DATABASE_URL"); err != nil {
			return nil, err
		}
		dsn = w.getenv("BATON_DATABASE_URL")
	}
	hosts, err := github.HostsFromEnv(w.getenv)
	if err != nil {
		return nil, err
	}
	own, err := w.dataDir()
	if err != nil && (dsn == "" || sqlstore.IsPostgresURL(dsn)) {
		return nil, err
	}
	dataDir := own
	if dsn == "" {
		dsn = filepath.Join(own, "baton.db")
	}
	if !sqlstore.IsPostgresURL(dsn) {
		dsn = w.abs(dsn)
		dataDir = filepath.Dir(dsn)
	}
	if err := w.privateDataDir(dataDir, dataDir == own); err != nil {
		return nil, err
	}
	q, err := queue.Open(ctx, dsn, queue.Config{
		Workers: o.Workers, ServerJobs: o.ServerJobs, ID: o.WorkerID,
		FetchPollInterval: o.Poll, RescueStuckJobsAfter: o.RescueAfter,
	})
	if err != nil {
		return nil, err
	}
	return &delivery.Service{
		Queue: q, DataDir: dataDir, Forge: w.forge, DefaultAgent: w.getenv("BATON_AGENT"), GitHubHosts: hosts,
		PublicURL: w.getenv("BATON_PUBLIC_URL"),
		GitHub: func(ctx context.Context, repo github.Repo) (*github.Client, error) {
			return w.githubClient(ctx, repo, "")
		},
	}, nil
}

// githubClient opens the GitHub API for repo (apiURL overrides the base
// URL), once the secrets it may read (a token, a GitHub App's key) were
// readable.
func (w deliveryWiring) githubClient(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error) {
	if err := w.checkSecrets("GH_TOKEN", github.AppKeyVar); err != nil {
		return nil, err
	}
	return w.github.Client(ctx, repo, apiURL)
}

func (w deliveryWiring) checkSecrets(names ...string) error {
	if w.secretErr == nil {
		return nil
	}
	return w.secretErr(names...)
}

// privateDataDir keeps the data directory out of other users' reach: it
// holds the database (webhook secrets), the API token, run logs, notes,
// repository caches and worktrees. baton's own data directory is created
// 0700, or tightened when it is open to others, with a warning when it
// already held something (an empty one exposed nothing); a directory a
// --db file sits in elsewhere is the user's, so baton only warns about
// it.
func (w deliveryWiring) privateDataDir(dir string, own bool) error {
	if !own {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return baton.WrapError(baton.Internal, err, "create %s", dir)
		}
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
			w.warnf("warning: %s holds baton's database and other users may read it (mode %04o): chmod 700 it, or keep the database in baton's data directory\n", dir, fi.Mode().Perm())
		}
		return nil
	}
	was, err := safefile.PrivateDir(dir)
	if err != nil {
		return baton.WrapError(baton.Internal, err, "make baton's data directory %s private (mode 0700)", dir)
	}
	if was != 0 && !emptyDir(dir) {
		w.warnf("warning: baton's data directory %s was open to other users (mode %04o): now 0700, as it holds the database, tokens and run logs\n", dir, was)
	}
	return nil
}

func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

func (w deliveryWiring) warnf(format string, args ...any) {
	if w.warn != nil {
		fmt.Fprintf(w.warn, format, args...)
	}
}

// configured reports whether a delivery database is set up: named by db
// or BATON_DATABASE_URL, or the default SQLite file exists. Opening one
// that is not would create it, which only commands that ask for
// deliveries may do.
func (w deliveryWiring) configured(db string) bool {
	if db != "" || w.getenv("BATON_DATABASE_URL") != "" {
		return true
	}
	dir, err := w.dataDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "baton.db"))
	return err == nil
}

// dataDir is where baton's delivery data lives by default (baton.DataDir).
func (w deliveryWiring) dataDir() (string, error) {
	getenv := w.getenv
	if getenv("HOME") == "" {
		getenv = func(k string) string {
			if k == "HOME" {
				h, _ := os.UserHomeDir()
				return h
			}
			return w.getenv(k)
		}
	}
	return baton.DataDir(getenv, w.workDir)
}

func (w deliveryWiring) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(w.workDir, p)
}

// forge returns the forge of a delivery: local for a path, GitHub for
// owner/name (as the GitHub App when one is configured, else with the
// token from GH_TOKEN, GITHUB_TOKEN or `gh auth token`).
func (w deliveryWiring) forge(ctx context.Context, d *baton.Delivery) (forge.Forge, error) {
	if d.Forge == baton.ForgeLocal {
		return forge.Local{}, nil
	}
	repo, err := github.ParseRepo(d.Repository)
	if err != nil {
		return nil, err
	}
	c, err := w.githubClient(ctx, repo, "")
	if err != nil {
		return nil, err
	}
	return &forge.GitHub{Client: c, Repo: repo, RemoteURL: w.getenv("BATON_GITHUB_REMOTE_URL")}, nil
}
