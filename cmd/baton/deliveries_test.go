package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// The delivery database is where the environment says: --db, else
// BATON_DATA_DIR, else $XDG_DATA_HOME/baton, else ~/.local/share/baton;
// the service's files live beside it.
func TestOpenDeliveriesFindsTheDatabase(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	for _, tc := range []struct {
		name string
		vars map[string]string
		db   string
		want string
	}{
		{"data dir", map[string]string{"BATON_DATA_DIR": "data", "XDG_DATA_HOME": "/nonexistent"}, "", filepath.Join(wd, "data", "baton.db")},
		{"xdg", map[string]string{"XDG_DATA_HOME": "xdg", "HOME": "/nonexistent"}, "", filepath.Join(wd, "xdg", "baton", "baton.db")},
		{"home", map[string]string{"HOME": filepath.Join(wd, "home")}, "", filepath.Join(wd, "home", ".local", "share", "baton", "baton.db")},
		{"--db wins", map[string]string{"BATON_DATA_DIR": "data", "BATON_DATABASE_URL": "postgres://nowhere.invalid/x"}, "other/b.db", filepath.Join(wd, "other", "b.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := openWith(t, tc.vars, wd, tc.db)
			if _, err := os.Stat(tc.want); err != nil {
				t.Errorf("no database at %s: %v", tc.want, err)
			}
			if svc.DataDir != filepath.Dir(tc.want) {
				t.Errorf("DataDir = %s, want %s", svc.DataDir, filepath.Dir(tc.want))
			}
			if _, err := svc.List(t.Context(), baton.DeliveryFilter{}); err != nil {
				t.Errorf("List on the new database = %v", err)
			}
		})
	}
}

// BATON_AGENT is the agent of a delivery that names none.
func TestOpenDeliveriesDefaultAgent(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"BATON_DATA_DIR": t.TempDir(), "BATON_AGENT": "codex"}
	svc := openWith(t, vars, t.TempDir(), "")
	repo := t.TempDir()
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "initial commit")
	d, _, err := svc.Create(t.Context(), delivery.Request{Repo: repo, Summary: "Add a /health endpoint"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Config.Agent != "codex" {
		t.Errorf("agent = %q, want codex from BATON_AGENT", d.Config.Agent)
	}
}

// BATON_DATABASE_URL puts the deliveries in PostgreSQL; their files stay
// in the data directory.
func TestOpenDeliveriesPostgres(t *testing.T) {
	t.Parallel()
	dsn := sqlstoretest.DSN(t, sqlstore.Postgres)
	data := t.TempDir()
	vars := map[string]string{"BATON_DATABASE_URL": dsn, "BATON_DATA_DIR": data}
	svc := openWith(t, vars, t.TempDir(), "")
	if svc.DataDir != data {
		t.Errorf("DataDir = %s, want %s", svc.DataDir, data)
	}
	if _, err := os.Stat(filepath.Join(data, "baton.db")); !os.IsNotExist(err) {
		t.Errorf("a SQLite file was made beside PostgreSQL: %v", err)
	}
	if _, err := svc.List(t.Context(), baton.DeliveryFilter{}); err != nil {
		t.Errorf("List = %v", err)
	}
}

// openWith opens the delivery service the way the binary does, with the
// environment vars and the working directory wd; db is --db.
func openWith(t *testing.T, vars map[string]string, wd, db string) *delivery.Service {
	t.Helper()
	getenv := func(k string) string { return vars[k] }
	w := deliveryWiring{getenv: getenv, workDir: wd, github: github.Access{Getenv: getenv, UserAgent: "baton/test"}}
	svc, err := w.open(t.Context(), cli.DeliveriesOptions{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc
}
