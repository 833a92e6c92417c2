package delivery

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

// A decision made on a state applies to that state only: the same
// decision on the delivery once it moved is a Conflict that says what
// it was and what it is now, and changes nothing.
func TestDecisionOnAMovedStateIsRefused(t *testing.T) {
	t.Parallel()
	waiting := fixture(baton.PhasePlan, baton.StatusSucceeded)
	on := StateOf(&waiting, "")
	if on.String() != "plan/succeeded/3" {
		t.Fatalf("StateOf(plan/succeeded, attempt 3) = %q, want plan/succeeded/3", on)
	}
	approve := Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0, On: on}
	moved := mustApply(t, waiting, approve).Delivery // implement, queued
	claimed := mustApply(t, moved, Input{Action: ActRun, Actor: "worker:1", Now: t0}).Delivery
	blocked := mustApply(t, claimed, Input{Action: ActForward, Actor: "worker:1", Now: t0, Attempt: claimed.Attempt, Block: true, Note: "no change"}).Delivery
	replanned := mustApply(t, waiting, Input{Action: ActReject, Actor: "bob", Person: true, Now: t0, Note: "again"}).Delivery
	replanned.Attempt++ // the plan ran again and waits at its checkpoint
	replanned.RunStatus, replanned.Queued = baton.StatusSucceeded, false
	for _, cur := range []baton.Delivery{moved, claimed, blocked, replanned} {
		for _, in := range []Input{
			approve,
			{Action: ActReject, Actor: "bob", Person: true, Now: t0, Note: "no", On: on},
			{Action: ActClose, Actor: "carol", Person: true, Now: t0, On: on},
		} {
			_, err := Apply(cur, in)
			want := "it was plan/succeeded (attempt 3), it is now " + StateOf(&cur, "").Words()
			if baton.ErrorCode(err) != baton.Conflict || !strings.Contains(baton.ErrorMessage(err), want) {
				t.Errorf("%s made on %s, applied to %s (attempt %d): %v, want a Conflict saying %q", in.Action, on, cur.String(), cur.Attempt, err, want)
			}
		}
	}
	// The zero State decides on whatever the state is.
	if _, err := Apply(blocked, Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0}); err != nil {
		t.Errorf("approve with no state on %s: %v", blocked.String(), err)
	}
	// A start names the pending checkpoint it starts; once a person
	// started it (queued), it is another state.
	deploy := fixture(baton.PhaseDeploy, baton.StatusPending)
	start := StateOf(&deploy, "")
	started := mustApply(t, deploy, Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0, On: start}).Delivery
	if got := StateOf(&started, "").String(); got != "deploy/queued/3" {
		t.Errorf("a started checkpoint's state is %q, want deploy/queued/3", got)
	}
	if _, err := Apply(started, Input{Action: ActReject, Actor: "bob", Person: true, Now: t0, Note: "no", On: start}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("reject made on the waiting deploy, applied once it was started: %v, want Conflict", err)
	}
}

func TestParseState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want State
	}{
		{"", State{}},
		{"plan/succeeded/1", State{Phase: baton.PhasePlan, Stand: "succeeded", Attempt: 1}},
		{`"deploy/pending/4@1a2b3c4d5e6f"`, State{Phase: baton.PhaseDeploy, Stand: "pending", Attempt: 4, Commit: "1a2b3c4d5e6f"}},
		{`W/"implement/queued/0"`, State{Phase: baton.PhaseImplement, Stand: "queued", Attempt: 0}},
	} {
		got, err := ParseState(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseState(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"plan", "plan/succeeded", "plan/succeeded/x", "plan/succeeded/-1", "plan/succeeded/01", "nope/succeeded/1",
		"plan/waiting/1", "plan/succeeded/1@", "plan/succeeded/1@abc", "plan/succeeded/1@ABCDEF12", "plan/succeeded/1/2", `"plan/succeeded/1`} {
		if s, err := ParseState(bad); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseState(%q) = %+v, %v; want Invalid", bad, s, err)
		}
	}
}

// FuzzParseState: whatever parses is a state that String writes back
// as its text (less an entity tag's quotes), and reads again as itself.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"", "plan/succeeded/1", `"deploy/pending/4@1a2b3c4d5e6f"`, `W/"review/blocked/12"`, "close/failed/0", "plan/succeeded/1@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseState(text)
		if err != nil {
			return
		}
		bare := strings.TrimSpace(text)
		bare = strings.TrimPrefix(bare, "W/")
		bare = strings.TrimSuffix(strings.TrimPrefix(bare, `"`), `"`)
		if s.String() != bare {
			t.Fatalf("ParseState(%q) = %+v, written back as %q", text, s, s.String())
		}
		again, err := ParseState(s.String())
		if err != nil || again != s {
			t.Fatalf("ParseState(%q) = %+v, read back as %+v, %v", text, s, again, err)
		}
	})
}

// A person's cancel leaves the delivery canceled, a field every list
// reads; whatever moves it next clears it. Its phase log entry's outcome
// is canceled, and a close before the end is closed: never failed.
func TestCanceledIsAField(t *testing.T) {
	t.Parallel()
	running := fixture(baton.PhaseImplement, baton.StatusRunning)
	res := mustApply(t, running, Input{Action: ActCancel, Actor: "alice", Person: true, Now: t0, Note: "wrong"})
	if !res.Delivery.Canceled || res.Delivery.RunStatus != baton.StatusFailed {
		t.Errorf("cancel → %s canceled=%v, want failed and canceled", res.Delivery.String(), res.Delivery.Canceled)
	}
	if got := Outcome(res.Log[0]); got != OutcomeCanceled {
		t.Errorf("the cancel's outcome = %q, want canceled", got)
	}
	retried := mustApply(t, res.Delivery, Input{Action: ActRetry, Actor: "alice", Person: true, Now: t0}).Delivery
	if retried.Canceled {
		t.Error("a retried delivery still says canceled")
	}
	closed := mustApply(t, res.Delivery, Input{Action: ActClose, Actor: "alice", Person: true, Now: t0})
	if closed.Delivery.Canceled || Outcome(closed.Log[0]) != OutcomeClosed {
		t.Errorf("close of a canceled delivery: canceled=%v, outcome %q; want closed", closed.Delivery.Canceled, Outcome(closed.Log[0]))
	}
	failed := mustApply(t, running, Input{Action: ActFail, Actor: "worker:1", Now: t0, Attempt: running.Attempt, Note: "canceled by alice: a forged reason"})
	if failed.Delivery.Canceled || Outcome(failed.Log[0]) != baton.StatusFailed {
		t.Errorf("a failure whose note reads like a cancel: canceled=%v, outcome %q; want failed", failed.Delivery.Canceled, Outcome(failed.Log[0]))
	}
}
