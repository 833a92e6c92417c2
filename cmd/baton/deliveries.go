package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// deliveryWiring opens the delivery pipeline's database and builds the
// service over it, with forges and GitHub access from the environment.
type deliveryWiring struct {
	getenv  func(string) string
	workDir string
	github  github.Access
}

// open opens the database o names: o.DB (a SQLite file or a postgres://
// URL), else BATON_DATABASE_URL, else <data dir>/baton.db. Repository
// caches, worktrees, run logs and notes live next to the SQLite file, or
// in the data directory with PostgreSQL.
func (w deliveryWiring) open(ctx context.Context, o cli.DeliveriesOptions) (*delivery.Service, error) {
	dsn := o.DB
	if dsn == "" {
		dsn = w.getenv("BATON_DATABASE_URL")
	}
	hosts, err := github.HostsFromEnv(w.getenv)
	if err != nil {
		return nil, err
	}
	var dataDir string
	switch {
	case dsn == "" || !sqlstore.IsPostgresURL(dsn):
		if dsn == "" {
			dir, err := w.dataDir()
			if err != nil {
				return nil, err
			}
			dsn = filepath.Join(dir, "baton.db")
		}
		dsn = w.abs(dsn)
		dataDir = filepath.Dir(dsn)
	default:
		dir, err := w.dataDir()
		if err != nil {
			return nil, err
		}
		dataDir = dir
	}
	q, err := queue.Open(ctx, dsn, queue.Config{
		Workers: o.Workers, ID: o.WorkerID,
		FetchPollInterval: o.Poll, RescueStuckJobsAfter: o.RescueAfter,
	})
	if err != nil {
		return nil, err
	}
	return &delivery.Service{
		Queue: q, DataDir: dataDir, Forge: w.forge, DefaultAgent: w.getenv("BATON_AGENT"), GitHubHosts: hosts,
		GitHub: func(ctx context.Context, repo github.Repo) (*github.Client, error) {
			c, _, err := w.github.Client(ctx, repo, "")
			return c, err
		},
	}, nil
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

// dataDir is where baton's delivery data lives by default:
// BATON_DATA_DIR, else $XDG_DATA_HOME/baton, else ~/.local/share/baton.
func (w deliveryWiring) dataDir() (string, error) {
	if d := w.getenv("BATON_DATA_DIR"); d != "" {
		return w.abs(d), nil
	}
	if d := w.getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(w.abs(d), "baton"), nil
	}
	home := w.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", baton.Errorf(baton.Invalid, "no home directory for baton's data: set BATON_DATA_DIR or pass --db")
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "baton"), nil
}

func (w deliveryWiring) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(w.workDir, p)
}

// forge returns the forge of a delivery: local for a path, GitHub (token
// from GH_TOKEN, GITHUB_TOKEN or `gh auth token`) for owner/name.
func (w deliveryWiring) forge(ctx context.Context, d *baton.Delivery) (forge.Forge, error) {
	if d.Forge == baton.ForgeLocal {
		return forge.Local{}, nil
	}
	repo, err := github.ParseRepo(d.Repository)
	if err != nil {
		return nil, err
	}
	c, tok, err := w.github.Client(ctx, repo, "")
	if err != nil {
		return nil, err
	}
	return &forge.GitHub{Client: c, Repo: repo, Token: tok, RemoteURL: w.getenv("BATON_GITHUB_REMOTE_URL")}, nil
}
