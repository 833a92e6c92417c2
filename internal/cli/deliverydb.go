package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// deliveries is an open delivery database: its queue, the service over
// it, and how to close it.
type deliveries struct {
	svc   *delivery.Service
	close func()
}

// dataDir is where the delivery database and its files live by default:
// BATON_DATA_DIR, else $XDG_DATA_HOME/baton, else ~/.local/share/baton.
func (f *Factory) dataDir() (string, error) {
	if d := f.env("BATON_DATA_DIR"); d != "" {
		return f.abs(d), nil
	}
	if d := f.env("XDG_DATA_HOME"); d != "" {
		return filepath.Join(f.abs(d), "baton"), nil
	}
	home := f.env("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", baton.Errorf(baton.Invalid, "no home directory for baton's data: set BATON_DATA_DIR or pass --db")
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "baton"), nil
}

func (f *Factory) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(f.WorkDir, p)
}

// openDeliveries opens the delivery database (never opened by other
// commands): PostgreSQL when BATON_DATABASE_URL is set, else the SQLite
// file dbFlag (default <data dir>/baton.db). The files (repository
// caches, worktrees, run logs, notes) live next to the SQLite file, or in
// the data directory with PostgreSQL. qc configures the queue (workers,
// handler); its Handler may be set after opening through the returned
// service's runner.
func (f *Factory) openDeliveries(ctx context.Context, dbFlag string, qc queue.Config) (*deliveries, error) {
	var (
		q       *queue.Queue
		dataDir string
		closer  func()
	)
	if url := f.env("BATON_DATABASE_URL"); url != "" && dbFlag == "" {
		dir, err := f.dataDir()
		if err != nil {
			return nil, err
		}
		pool, err := sqlstore.OpenPostgres(ctx, url, "")
		if err != nil {
			return nil, err
		}
		if q, err = queue.OpenPostgres(ctx, pool, qc); err != nil {
			pool.Close()
			return nil, err
		}
		dataDir, closer = dir, pool.Close
	} else {
		path := dbFlag
		if path == "" {
			dir, err := f.dataDir()
			if err != nil {
				return nil, err
			}
			path = filepath.Join(dir, "baton.db")
		}
		path = f.abs(path)
		db, err := sqlstore.OpenSQLite(path)
		if err != nil {
			return nil, err
		}
		if q, err = queue.OpenSQLite(ctx, db, qc); err != nil {
			db.Close()
			return nil, err
		}
		dataDir, closer = filepath.Dir(path), func() { db.Close() }
	}
	svc := &delivery.Service{Queue: q, DataDir: dataDir, Now: f.now, Forge: f.forgeFor}
	return &deliveries{svc: svc, close: closer}, nil
}

// forgeFor returns the forge of a delivery: local for a path, GitHub
// (token from GH_TOKEN, GITHUB_TOKEN or `gh auth token`) for owner/name.
func (f *Factory) forgeFor(d *baton.Delivery) (forge.Forge, error) {
	if d.Forge == baton.ForgeLocal {
		return forge.Local{}, nil
	}
	repo, err := github.ParseRepo(d.Repository)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok, _, err := github.ResolveToken(ctx, f.env, repo.Host)
	if err != nil {
		return nil, err
	}
	c, err := github.New(github.Options{Token: tok, BaseURL: github.ResolveAPIURL("", f.env, repo.Host)})
	if err != nil {
		return nil, err
	}
	return &forge.GitHub{Client: c, Repo: repo, Token: tok, RemoteURL: f.env("BATON_GITHUB_REMOTE_URL")}, nil
}

// actor names the person at the terminal for the phase log: BATON_ACTOR,
// else the login name.
func (f *Factory) actor() string {
	if a := f.env("BATON_ACTOR"); a != "" {
		return a
	}
	if u := f.env("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "person"
}

// workerID names a worker process: worker:<host>:<pid>.
func workerID(prefix string) string {
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	return fmt.Sprintf("%s:%s:%d", prefix, host, os.Getpid())
}
