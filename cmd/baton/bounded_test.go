package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// floodAgent prints 420,000 lines as fast as it can, as an agent stuck in
// a loop does (the flood that once stored 420,000 events, 40 MiB), then
// plans.
const floodAgent = `#!/bin/sh
cat >/dev/null
seq 1 420000
echo "1. Stop flooding."
`

// The real binary running a flooding agent: the run's stored live output
// is capped, the log says so and keeps the run's end, and the phase
// still succeeds.
func TestOutputFloodIsCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: prints 420,000 lines through a delivery")
	}
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	agent := filepath.Join(t.TempDir(), "flood.sh")
	if err := os.WriteFile(agent, []byte(floodAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Flood", "--agent", "command:"+agent, "--checkpoints", "none", "--endpoint", "plan")
	cmd := exec.Command(batonBin, "delivery", "run", "1")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("delivery run: %v\n%s", err, tail(string(out)))
	}
	db, err := sqlstore.Open(context.Background(), filepath.Join(data, "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, err := db.Store().FindDeliveries(context.Background(), baton.DeliveryFilter{})
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %v, %v", ds, err)
	}
	d := ds[0]
	evs, err := db.Store().Events(context.Background(), d.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var output, bytes int
	var notes []string
	for _, e := range evs {
		if e.Run == 0 {
			continue
		}
		output++
		bytes += len(e.Text)
		if e.Kind == baton.EventNote {
			notes = append(notes, e.Text)
		}
	}
	size := 0
	for _, f := range []string{"baton.db", "baton.db-wal"} {
		if fi, err := os.Stat(filepath.Join(data, f)); err == nil {
			size += int(fi.Size())
		}
	}
	t.Logf("420,002 lines of output stored as %d events, %d bytes of text; the database is %d bytes", output, bytes, size)
	if limit := delivery.MaxRunOutput + 100 + 10; output > limit {
		t.Errorf("%d output events stored, want at most %d", output, limit)
	}
	joined := strings.Join(notes, "\n")
	if !strings.Contains(joined, "live output capped at 5000 messages") || !strings.Contains(joined, "were left out of the live log") {
		t.Errorf("the log does not say what was capped and dropped:\n%s", joined)
	}
	if last := evs[len(evs)-1]; d.String() != "close/succeeded" || !strings.Contains(lastOutput(evs), "1. Stop flooding.") {
		t.Errorf("the delivery is %s (%s), last event %q; want it closed with the plan in the kept tail", d.String(), d.Error, last.Text)
	}
}

// lastOutput is the text of the last output event.
func lastOutput(evs []baton.DeliveryEvent) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Run != 0 {
			return evs[i].Text
		}
	}
	return ""
}
