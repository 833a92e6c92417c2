package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/diskspace"
	"github.com/baton-agent/baton/internal/diskspace/diskspacetest"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/testenv"
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

// spaceAgent fills the disk when asked to, and otherwise does its work.
// What it writes does not compress, so committing it needs room too.
const spaceAgent = `#!/bin/sh
prompt=$(cat)
case "$BATON_PHASE:$prompt" in
plan:*) echo "1. Do it." ;;
implement:*Fill*) head -c 300000000 /dev/urandom > big.bin; echo "wrote big.bin" ;;
implement:*) echo feature > feature.txt; echo "wrote feature.txt" ;;
review:*) echo '{"verdict":"pass","summary":"ok","feedback":""}' ;;
esac
`

// A full disk under baton serve: the agent that filled it fails its
// phase with a message that says so, baton frees what the agent left,
// and the server goes on by itself, with no restart and nothing deleted
// by hand: the next delivery closes; while something else fills the
// disk, a queued phase waits instead of failing, and runs once there is
// room.
func TestDiskFullFailsThePhaseAndServeRecovers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: fills a file system")
	}
	mount := diskspacetest.Mount(t, 96<<20)
	home, data := t.TempDir(), filepath.Join(mount, "data")
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(spaceAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	serve, url := startServe(t, env, repo, "--addr", "127.0.0.1:0", "--agent", "command:"+agent, "--poll", "100ms")
	tok, err := os.ReadFile(filepath.Join(data, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	create := func(summary string) string {
		t.Helper()
		var created struct {
			Delivery struct {
				ID string `json:"id"`
			} `json:"delivery"`
		}
		body := fmt.Sprintf(`{"repo":%q,"summary":%q,"checkpoints":[],"endpoint":"review"}`, repo, summary)
		if code := apiCall(t, "POST", url+"/api/deliveries", token, body, &created); code != http.StatusCreated {
			t.Fatalf("create %q = %d\n%s", summary, code, serve.output())
		}
		return created.Delivery.ID
	}
	type state struct {
		Delivery struct {
			Phase     string `json:"phase"`
			RunStatus string `json:"run_status"`
			Error     string `json:"error"`
		} `json:"delivery"`
	}
	wait := func(id, what string, done func(state) bool) state {
		t.Helper()
		var st state
		if !testenv.Until(2*time.Minute, nil, func() bool { // asks serve's API
			apiCall(t, "GET", url+"/api/deliveries/"+id, token, "", &st)
			return done(st)
		}) {
			t.Fatalf("%s did not happen within 2m: %+v\n%s", what, st, serve.output())
		}
		return st
	}
	ended := func(s state) bool {
		return s.Delivery.RunStatus == "failed" || s.Delivery.RunStatus == "blocked" || s.Delivery.Phase == "close"
	}

	// The agent fills the disk: its phase fails and says why.
	full := create("Fill the disk")
	st := wait(full, "the filling delivery to end", ended)
	if st.Delivery.Phase != "implement" || st.Delivery.RunStatus != "failed" || !strings.Contains(st.Delivery.Error, "was full") || !strings.Contains(st.Delivery.Error, "baton delivery retry") {
		t.Fatalf("the delivery whose agent filled the disk is %s/%s: %q; want implement failed saying the disk is full", st.Delivery.Phase, st.Delivery.RunStatus, st.Delivery.Error)
	}
	if free, _ := diskspace.Free(mount); free < 32<<20 {
		t.Errorf("%d bytes free after the phase failed: baton did not free what the agent left", free)
	}

	// The server carries on by itself.
	if st := wait(create("Add a feature"), "the next delivery to end", ended); st.Delivery.Phase != "close" {
		t.Fatalf("the next delivery ended %+v, want it closed\n%s", st, serve.output())
	}

	// Something else fills the disk: a queued phase waits, then runs once
	// there is room again.
	filler := filepath.Join(mount, "filler")
	diskspacetest.FillTo(t, filler, 4<<20)
	waiting := create("Add another feature")
	if !testenv.Until(time.Minute, nil, func() bool {
		return strings.Contains(serve.output(), waiting+" plan waits: the disk holding baton's data directory")
	}) {
		t.Fatalf("serve never said the phase waits for room\n%s", serve.output())
	}
	var st2 state
	apiCall(t, "GET", url+"/api/deliveries/"+waiting, token, "", &st2)
	if st2.Delivery.Phase != "plan" || st2.Delivery.RunStatus != "pending" {
		t.Errorf("a phase queued on a full disk is %s/%s (%s), want plan/pending", st2.Delivery.Phase, st2.Delivery.RunStatus, st2.Delivery.Error)
	}
	// A person who runs it now is told why it cannot.
	cmd := exec.Command(batonBin, "delivery", "run", waiting)
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is full (") || !strings.Contains(string(out), "free some space, then run it again") {
		t.Errorf("delivery run on a full disk: %v\n%s", err, out)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if st := wait(waiting, "the waiting delivery to end", ended); st.Delivery.Phase != "close" {
		t.Errorf("the delivery that waited for room ended %+v, want it closed\n%s", st, serve.output())
	}
}
