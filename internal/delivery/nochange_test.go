package delivery_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
)

// An implement whose agent changed nothing is blocked for a person, never
// a success that sends the same branch to review: approve sends the
// branch on as it stands, retry runs implement again.
func TestImplementThatChangedNothingBlocks(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Final: "Nothing needed changing."},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "Added greet.go."},
	)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement} {
		if d, err = h.runner.Run(t.Context(), d.ID, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	if d.String() != "implement/blocked" || !strings.Contains(d.Error, "the agent changed nothing") || !strings.Contains(d.Error, "approve to send the work branch to review") {
		t.Fatalf("an implement that changed nothing = %s %q, want implement/blocked saying so", d.String(), d.Error)
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), d.ID)
	if last := log[len(log)-1]; last.Status != baton.StatusBlocked || last.Note != d.Error {
		t.Errorf("the phase log ends %+v, want the block with its reason", last)
	}
	steps := delivery.Timeline(log, d.Queued, time.Now())
	if s := steps[len(steps)-1]; s.Phase != "implement" || s.Status != "blocked" || !strings.Contains(s.Note, "changed nothing") {
		t.Errorf("the timeline's last step = %+v, want the blocked implement with its reason", s)
	}

	// Retry: the agent writes this time, and implement goes on to review.
	if d, err = h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActRetry, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	if d, err = h.runner.Run(t.Context(), d.ID, baton.PhaseImplement, ""); err != nil {
		t.Fatal(err)
	}
	if d.Phase != baton.PhaseReview || d.RunStatus != baton.StatusPending {
		t.Errorf("after a retry that wrote greet.go the delivery is %s (%s), want review pending", d.String(), d.Error)
	}
}

// Codex whose every edit fails (its own sandbox refusing, as it did inside
// baton's box): the failed edit is shown failed, live and in the block.
func TestImplementWithFailedEditsBlocks(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "Added greet.go."},
	)
	c := cfg()
	c.Agent, c.AgentArgs = "codex", []string{"--sandbox", "read-only"}
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement} {
		if d, err = h.runner.Run(t.Context(), d.ID, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	if d.String() != "implement/blocked" || !strings.Contains(d.Error, "1 of its 1 tool calls failed: edit failed: update ") {
		t.Fatalf("an implement whose edits failed = %s %q, want implement/blocked naming the failed edit", d.String(), d.Error)
	}
	evs, err := h.svc.Events(t.Context(), d.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var failed, claimed bool
	for _, e := range evs {
		failed = failed || e.Kind == baton.EventNote && strings.HasPrefix(e.Text, "✗ edit failed: update ")
		claimed = claimed || e.Kind == baton.EventTool && strings.HasPrefix(e.Text, "→ edit")
	}
	if !failed || claimed {
		t.Errorf("live events: a failed edit note %v, an edit tool line %v; want the failure shown, never as an edit\n%v", failed, claimed, evs)
	}
}

// With checkpoints on and a reviewer that keeps rejecting, an agent that
// changes nothing used to run five "succeeded" implement rounds until the
// round limit; now the first one stops for a person.
func TestNoChangeStopsBeforeTheRoundLimit(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 1)
	h.fake.SetScript(t, agenttest.Script{RepeatLast: true, Turns: []agenttest.Turn{
		{Final: planText},
		{Final: "I could not write anything."},
		{Final: map[string]string{"verdict": "not_pass", "summary": "Nothing is there", "feedback": "Write greet.go"}},
		{Final: "I could not write anything."},
		{Final: map[string]string{"verdict": "not_pass", "summary": "Nothing is there", "feedback": "Write greet.go"}},
	}})
	h.work()
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg(), baton.PhasePlan, baton.PhaseDeploy), "alice")
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor(d.ID, "the plan to wait for approval", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded
	})
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActApprove, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "a person to be needed", func(d *baton.Delivery) bool { return d.WaitsForPerson() || d.RunStatus == baton.StatusFailed })
	if d.String() != "implement/blocked" || d.Rounds != 0 {
		t.Errorf("the delivery stopped at %s after %d rounds (%s), want implement/blocked before any round", d.String(), d.Rounds, d.Error)
	}
	if n := len(h.fake.Calls(t)); n != 2 {
		t.Errorf("the agent ran %d times, want 2 (plan, one implement)", n)
	}
}
