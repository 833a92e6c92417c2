package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The data directory holds webhook secrets and the API token: baton
// creates it 0700 with its database 0600, and tightens one found open to
// others, saying so in one line.
func TestDataDirIsPrivate(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	data := filepath.Join(t.TempDir(), "data")
	env := ghEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	out := batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Keep secrets", "--checkpoints", "none")
	if strings.Contains(out, "warning:") {
		t.Errorf("a new data directory warned:\n%s", out)
	}
	wantMode(t, data, 0o700)
	wantMode(t, filepath.Join(data, "baton.db"), 0o600)

	// Opened up by someone: serve tightens it, and the database files
	// SQLite makes while serve runs are private too.
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(data, "baton.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := startServe(t, env, repo, "--addr", "127.0.0.1:0", "--workers", "0")
	warning := "warning: baton's data directory " + data + " was open to other users (mode 0755): now 0700"
	if n := strings.Count(s.output(), warning); n != 1 {
		t.Errorf("serve printed the warning %d times, want once:\n%s", n, s.output())
	}
	wantMode(t, data, 0o700)
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, e.Name())
			wantMode(t, filepath.Join(data, e.Name()), 0o600)
		}
	}
	for _, name := range []string{"baton.db", "baton.db-wal", "baton.db-shm", "api-token"} {
		if _, err := os.Stat(filepath.Join(data, name)); err != nil {
			t.Errorf("%s is missing while serve runs (files: %v)", name, files)
		}
	}
	if err := s.stop(t); err != nil {
		t.Errorf("serve: %v\n%s", err, s.output())
	}
	out = batonRun(t, env, repo, "delivery", "list")
	if strings.Contains(out, "warning:") {
		t.Errorf("a private data directory warned again:\n%s", out)
	}
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %04o, want %04o", path, got, want)
	}
}
