package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// A delivery's event log holds its phase changes and its agent's output,
// numbered 1, 2, ... without gaps, on both databases.
func TestEventLog(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			h := newHarnessOn(t, dialect, 0, agenttest.Turn{
				Commands: []agenttest.Command{{Argv: []string{"true"}}},
				Say:      []string{"Reading the code."},
				Final:    planText,
			})
			d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), cfg()), "alice")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil {
				t.Fatal(err)
			}
			evs, err := h.svc.Events(t.Context(), d.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for i, e := range evs {
				if e.Seq != int64(i+1) || e.DeliveryID != d.ID || e.At.IsZero() {
					t.Errorf("event %d = %+v, want seq %d of %s with a time", i, e, i+1, d.ID)
				}
				kinds = append(kinds, string(e.Kind)+":"+string(e.Phase))
			}
			// Created (intake succeeded, plan queued), claimed, the agent's
			// tool call and text, then plan succeeded and implement queued.
			if !slices.Contains(kinds, "tool:plan") || !slices.Contains(kinds, "text:plan") || kinds[0] != "phase:intake" {
				t.Errorf("event kinds = %v", kinds)
			}
			text := ""
			for _, e := range evs {
				text += e.Text + "\n"
			}
			// Phase changes in plain words, naming no worker.
			for _, want := range []string{"Reading the code.", "Created by alice.", "Plan started.", "Plan succeeded.", "Implement is queued for a worker."} {
				if !strings.Contains(text, want) {
					t.Errorf("events lack %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "worker:test") {
				t.Errorf("events name the worker:\n%s", text)
			}
			if after, err := h.svc.Events(t.Context(), d.ID, 3, 2); err != nil || len(after) != 2 || after[0].Seq != 4 {
				t.Errorf("Events(after 3, limit 2) = %v, %v", after, err)
			}
		})
	}
}

// Followers get every event after the one they name, in order, once:
// replayed from the database and then live, as this process commits
// them. Many followers share one reader.
func TestFeedFollow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	feed := delivery.NewFeed(h.svc, time.Hour) // no polling: only this process's wake-ups
	defer feed.Close()
	before, _ := h.svc.Events(t.Context(), d.ID, 0, 0)

	const followers = 20
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make([][]int64, followers)
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	stop := errors.New("enough")
	for i := range followers {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			after := int64(i % 2) // half resume after event 1
			first := true
			err := feed.Follow(ctx, d.ID, after, 0, func(evs []baton.DeliveryEvent) error {
				for _, e := range evs {
					got[i] = append(got[i], e.Seq)
				}
				if first && got[i][len(got[i])-1] == int64(len(before)) {
					first = false
					ready.Done()
				}
				if len(got[i]) > 0 && got[i][len(got[i])-1] >= int64(len(before))+4 {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) {
				t.Errorf("Follow = %v", err)
			}
		}()
	}
	ready.Wait()
	// At least four more events: the plan is claimed and fails (the fake
	// agent has no turn scripted), is retried, and the delivery closed.
	if _, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil {
		t.Fatal(err)
	}
	for _, a := range []delivery.Action{delivery.ActRetry, delivery.ActClose} {
		if _, err := h.svc.Decide(t.Context(), d.ID, a, "bob", ""); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("followers did not get the live events")
	}
	for i, seqs := range got {
		start := int64(i%2) + 1
		for j, s := range seqs {
			if s != start+int64(j) {
				t.Fatalf("follower %d got %v, want consecutive numbers from %d", i, seqs, start)
			}
		}
	}
}

// Events written by another process (a worker elsewhere) reach followers
// through polling.
func TestFeedPollsOtherWriters(t *testing.T) {
	t.Parallel()
	dsn := sqlstoretest.DSN(t, sqlstore.SQLite)
	open := func() *delivery.Service {
		h := newHarnessDSN(t, dsn)
		return h.svc
	}
	reader, writer := open(), open()
	d, _, err := writer.Insert(t.Context(), newDelivery(sourceRepo(t), cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	feed := delivery.NewFeed(reader, 20*time.Millisecond)
	defer feed.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var last int64
	acted := false
	err = feed.Follow(ctx, d.ID, 0, 10*time.Millisecond, func(evs []baton.DeliveryEvent) error {
		if len(evs) > 0 {
			last = evs[len(evs)-1].Seq
		}
		if !acted {
			acted = true
			if _, err := writer.Decide(ctx, d.ID, delivery.ActClose, "bob", ""); err != nil {
				return err
			}
		}
		if len(evs) > 0 && evs[len(evs)-1].Phase == baton.PhaseClose {
			return errors.New("closed")
		}
		return nil
	})
	if err == nil || err.Error() != "closed" {
		t.Fatalf("Follow = %v after event %d, want the close event from the other writer", err, last)
	}
}

// newHarnessDSN opens a service on an existing database, as another
// process would.
func newHarnessDSN(t *testing.T, dsn string) *harness {
	t.Helper()
	q, err := queue.Open(t.Context(), dsn, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	svc := &delivery.Service{Queue: q, DataDir: t.TempDir()}
	return &harness{t: t, svc: svc, q: q}
}

// An agent that floods its output stores the run's first MaxRunOutput
// messages, a note at the cap, a note saying how much was left out, and
// the last of it: the database holds no more than for a working agent,
// and the end of the run (its answer) is still there to read.
func TestRunOutputIsCapped(t *testing.T) {
	t.Parallel()
	const flood = delivery.MaxRunOutput + 7000
	lines := make([]string, flood)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i+1)
	}
	h := newHarness(t, 0, agenttest.Turn{Events: lines, Final: "FLOOD-END"})
	// A loaded machine's database falls behind the flood: with room for
	// all of it, nothing is dropped and the cap alone decides.
	h.svc.LiveBacklog = flood + 10
	d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), baton.DeliveryConfig{Agent: h.fake.CommandAgent(), PhaseTimeout: time.Minute}), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil {
		t.Fatal(err)
	}
	evs, err := h.svc.Events(t.Context(), d.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []baton.DeliveryEvent
	for _, e := range evs {
		if e.Run != 0 && e.Kind != baton.EventNote || strings.Contains(e.Text, "capped") || strings.Contains(e.Text, "left out") {
			out = append(out, e)
		}
	}
	texts := func(es []baton.DeliveryEvent) []string {
		var s []string
		for _, e := range es {
			s = append(s, e.Text)
		}
		return s
	}
	got := texts(out)
	stored := 0
	for _, e := range out {
		if e.Kind == baton.EventText {
			stored++
		}
	}
	// Besides the flood and the answer, baton's own line (how the agent
	// runs) is output of the run.
	written := flood + 1
	if strings.HasPrefix(got[0], "baton: ") {
		written++
	}
	for _, e := range evs {
		if strings.Contains(e.Text, "not shown live") {
			t.Fatalf("output dropped with room for all of it: %q", e.Text)
		}
	}
	// The first MaxRunOutput and the last 100 are kept.
	if want := delivery.MaxRunOutput + 100; stored != want {
		t.Errorf("%d output messages stored for %d written, want %d", stored, written, want)
	}
	capAt := slices.IndexFunc(got, func(s string) bool { return strings.HasPrefix(s, "! live output capped at 5000 messages") })
	leftOut := slices.IndexFunc(got, func(s string) bool {
		return strings.HasPrefix(s, fmt.Sprintf("! %d output messages (", written-delivery.MaxRunOutput-100)) && strings.HasSuffix(s, "left out of the live log; the last 100 follow")
	})
	if capAt != delivery.MaxRunOutput || leftOut != capAt+1 {
		t.Fatalf("the cap note at %d, the left-out note at %d, want them at %d and %d; around the cap: %q", capAt, leftOut, delivery.MaxRunOutput, delivery.MaxRunOutput+1, got[max(0, capAt-2):min(len(got), capAt+3)])
	}
	if last := got[len(got)-2:]; last[0] != fmt.Sprintf("line %d", flood) || last[1] != "FLOOD-END" {
		t.Errorf("the stored output ends %q, want the last line and the answer", last)
	}
}
