package delivery_test

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
)

// A person's message to the agent running implement stops its run at
// once and resumes the same session with the message (claude --resume):
// the resumed run is told it and finishes the work; the message is in
// the event log, a ref the next phases see, and marked as given.
func TestSayResumesTheAgentsSession(t *testing.T) {
	t.Parallel()
	// How each stand-in CLI is told to resume a session.
	for agent, flag := range map[string]string{"claude": "--resume", "codex": "resume", "droid": "-s"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			testSayResumes(t, agent, flag)
		})
	}
}

// testSayResumes stops agent mid-run with a message and checks that its
// session is resumed with it (resumeArg naming the session), except for
// Droid, whose resume needs Factory's service: its run is started again
// with the phase's prompt and the message, though its stopped run
// reported a session.
func testSayResumes(t *testing.T, agent, resumeArg string) {
	restarts := agent == "droid"
	src := sourceRepo(t)
	h := newHarness(t, 1)
	h.fake.SetScript(t, agenttest.Script{RepeatLast: true, Turns: []agenttest.Turn{
		{Final: planText},
		// Implement works until the person's message stops it.
		{Say: []string{"Writing greet.go with spaces."}, Sleep: 5 * time.Minute},
		{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n\nfunc Greet() string {\n\treturn \"hi\"\n}\n"}}, Final: "Done, with tabs."},
		{Final: map[string]string{"verdict": "pass", "summary": "Good", "feedback": ""}},
	}})
	c := cfg()
	c.Agent = agent
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Say(t.Context(), d.ID, "bob", "Use tabs"); err != nil {
		// Plan is queued: a message now is in plan's prompt.
		t.Fatalf("Say while plan is queued: %v", err)
	}
	h.work()
	h.waitFor(d.ID, "implement to run", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseImplement && d.RunStatus == baton.StatusRunning
	})
	// The agent is at work once its second call (plan, implement) is made.
	for len(h.fake.Calls(t)) < 2 {
		time.Sleep(20 * time.Millisecond) // polls a file the fake writes; no event says it
	}
	m, err := h.svc.Say(t.Context(), d.ID, "alice", "Use tabs, not spaces.")
	if err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "the delivery to pass review", func(d *baton.Delivery) bool {
		return d.Phase.Index() > baton.PhaseReview.Index() || d.WaitsForPerson()
	})
	if d.Phase.Index() <= baton.PhaseReview.Index() {
		t.Fatalf("delivery = %s (%s), want it past review", d.String(), d.Error)
	}
	calls := h.fake.Calls(t)
	plan, stopped, resumed := calls[0], calls[1], calls[2]
	if !strings.Contains(plan.Prompt, "message-") {
		t.Errorf("plan's prompt does not point at the message sent while it was queued:\n%s", plan.Prompt)
	}
	if slices.Contains(stopped.Args, resumeArg) {
		t.Errorf("the first implement run resumed something: %q", stopped.Args)
	}
	outcome := "given mid-run: the agent's session"
	if restarts {
		outcome = "given mid-run: the run was started again"
		if slices.Contains(resumed.Args, resumeArg) {
			t.Errorf("Droid was resumed (%q), which needs Factory's service: want it started again", resumed.Args)
		}
		if !strings.Contains(resumed.Prompt, d.Summary) || !strings.Contains(resumed.Prompt, "## A person's message") || !strings.Contains(resumed.Prompt, "Use tabs, not spaces.") {
			t.Errorf("Droid's run after the message has the prompt %q, want the phase's prompt and the message", resumed.Prompt)
		}
	} else {
		i := slices.Index(resumed.Args, resumeArg)
		if i < 0 || i+1 >= len(resumed.Args) || resumed.Args[i+1] == "" {
			t.Fatalf("the run after the message was not a resume: %q", resumed.Args)
		}
		if !strings.Contains(resumed.Prompt, "alice") || !strings.Contains(resumed.Prompt, "Use tabs, not spaces.") || strings.Contains(resumed.Prompt, d.Summary) {
			t.Errorf("the resumed run's prompt = %q, want the message alone (the session has the rest)", resumed.Prompt)
		}
	}
	msgs, err := h.svc.Store().Messages(t.Context(), d.ID, false)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages = %+v, %v", msgs, err)
	}
	if got := msgs[1]; got.ID != m.ID || got.DeliveredAt.IsZero() || !strings.HasPrefix(got.Outcome, outcome) {
		t.Errorf("message after delivery = %+v, want the outcome %q", got, outcome)
	}
	if got := msgs[0]; !strings.HasPrefix(got.Outcome, "given with the prompt of plan") {
		t.Errorf("message sent while plan was queued = %+v", got)
	}
	full, err := h.svc.Get(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var implement []baton.AgentRun
	for _, r := range full.AgentRuns {
		if r.Phase == baton.PhaseImplement {
			implement = append(implement, r)
		}
	}
	if len(implement) != 2 || implement[0].Status != baton.RunCanceled || !strings.Contains(implement[0].Error, "person's message") || implement[1].Status != baton.RunSucceeded {
		t.Errorf("implement's agent runs = %+v, want the stopped one and the resumed one", implement)
	}
	var ref baton.Ref
	for _, r := range d.Refs {
		if r.Type == "message" && r.Label == "message from alice" {
			ref = r
		}
	}
	u, err := url.Parse(ref.URL)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("message ref = %+v", ref)
	}
	if b, err := os.ReadFile(u.Path); err != nil || !strings.Contains(string(b), "Use tabs, not spaces.") {
		t.Errorf("the message's file = %q, %v", b, err)
	}
	evs, err := h.svc.Events(t.Context(), d.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e baton.DeliveryEvent) bool { return e.Text == "✉ alice says: Use tabs, not spaces." }) {
		t.Errorf("the event log does not record the message")
	}
}

// A message needs an agent to hear it, and words.
func TestSayRefused(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Say(t.Context(), d.ID, "alice", "   "); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Say(blank) = %v, want Invalid", err)
	}
	if _, err := h.svc.Say(t.Context(), d.ID, "alice", strings.Repeat("x", baton.MaxMessage+1)); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Say(too long) = %v, want Invalid", err)
	}
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActClose, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Say(t.Context(), d.ID, "alice", "Hello"); baton.ErrorCode(err) != baton.Conflict || !strings.Contains(baton.ErrorMessage(err), "closed") {
		t.Errorf("Say to a closed delivery = %v, want Conflict saying it is closed", err)
	}
}
