package delivery_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
)

// A delivery whose implement rounds go back and forth between the same
// two versions of a file, and whose reviewer says the same thing each
// time, is blocked for a person after --stall-rounds such rounds, with
// the reason, long before the round limit; a reject sends it on.
func TestStalledRoundsBlockTheDelivery(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 1)
	write := func(content string) agenttest.Turn {
		return agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: content}}, Final: "Changed greet.go."}
	}
	review := agenttest.Turn{Final: map[string]string{"verdict": "not_pass", "summary": "Still no test", "feedback": "Add greet_test.go"}}
	a, b := "package app\n\nfunc Greet() string { return \"hi\" }\n", "package app\n\nfunc Greet() string { return \"hello\" }\n"
	h.fake.SetScript(t, agenttest.Script{RepeatLast: true, Turns: []agenttest.Turn{
		{Final: planText},
		write(a), review, // round 1: a new tree
		write(b), review, // round 2: a new tree
		write(a), review, // round 3: a tree seen before, the same feedback: 1
		write(b), review, // round 4: 2, stalled
		// After the person's reject: a new tree is progress again.
		write("package app\n\nfunc Greet() string { return \"hello, world\" }\n"), review,
		{Final: "I could not write anything."},
	}})
	h.work()
	c := cfg()
	c.MaxRounds, c.StallRounds = 10, 2
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	if err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "a person to be needed", func(d *baton.Delivery) bool { return d.WaitsForPerson() })
	const why = "stalled: no progress in 2 rounds in a row (no file changed, the same review feedback)"
	if d.String() != "review/blocked" || !strings.HasPrefix(d.Error, why) || d.Rounds != 3 {
		t.Fatalf("delivery = %s after %d rounds (%q), want review/blocked after 3 rounds: %s", d.String(), d.Rounds, d.Error, why)
	}
	log, err := h.svc.Store().PhaseLog(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last.Status != baton.StatusBlocked || !strings.HasPrefix(last.Note, why) {
		t.Errorf("last phase log entry = %s %q, want blocked with %q", last.Status, last.Note, why)
	}
	// The person resumes it: reject sends it back to implement with their word.
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActReject, Actor: "alice", Person: true, Note: "write the test first"}); err != nil {
		t.Fatal(err)
	}
	// A new tree is progress: the review sends it back to implement (round
	// 4) instead of stalling; the script's last implement then writes
	// nothing, which stops it there.
	d = h.waitFor(d.ID, "the delivery to go on", func(d *baton.Delivery) bool { return d.Rounds > 3 && d.WaitsForPerson() })
	if d.Rounds != 4 || d.String() != "implement/blocked" || strings.Contains(d.Error, "stalled") {
		t.Errorf("after the reject: %s after %d rounds (%q), want implement/blocked after round 4", d.String(), d.Rounds, d.Error)
	}
}
