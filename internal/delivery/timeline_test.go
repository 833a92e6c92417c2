package delivery

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// The log of a delivery that was planned, approved after a while,
// implemented, reviewed, started at deploy by a person after a wait,
// deployed and closed.
func TestTimelineFoldsAttemptsAndSplitsWaits(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	entry := func(s int, p baton.Phase, st baton.RunStatus, action, actor, note string) baton.PhaseLogEntry {
		return baton.PhaseLogEntry{Phase: p, Status: st, Action: action, Actor: actor, Note: note, StartedAt: at(s)}
	}
	decided := func(e baton.PhaseLogEntry, decision, reason string) baton.PhaseLogEntry {
		e.Decision, e.Reason = decision, reason
		return e
	}
	waits := func(e baton.PhaseLogEntry) baton.PhaseLogEntry {
		e.Waits = true
		return e
	}
	log := []baton.PhaseLogEntry{
		entry(0, baton.PhaseIntake, baton.StatusSucceeded, "create", "alice", "created"),
		entry(0, baton.PhasePlan, baton.StatusPending, "create", "alice", ""),
		entry(2, baton.PhasePlan, baton.StatusRunning, "run", "worker:x", ""),
		entry(12, baton.PhasePlan, baton.StatusSucceeded, "forward", "worker:x", ""),
		decided(entry(72, baton.PhaseImplement, baton.StatusPending, "approve", "alice", "approved"), DecisionApproved, ""),
		entry(73, baton.PhaseImplement, baton.StatusRunning, "run", "worker:x", ""),
		entry(80, baton.PhaseImplement, baton.StatusFailed, "fail", "worker:x", "boom"),
		decided(entry(90, baton.PhaseImplement, baton.StatusPending, "retry", "bob", "(agent now codex)"), DecisionRetried, ""),
		entry(91, baton.PhaseImplement, baton.StatusRunning, "run", "worker:x", ""),
		decided(entry(95, baton.PhaseImplement, baton.StatusFailed, "cancel", "bob", "canceled by bob: wrong"), DecisionCanceled, "wrong"),
		decided(entry(100, baton.PhaseImplement, baton.StatusPending, "retry", "bob", "the other way"), DecisionRetried, "the other way"),
		entry(101, baton.PhaseImplement, baton.StatusRunning, "run", "worker:x", ""),
		entry(110, baton.PhaseImplement, baton.StatusSucceeded, "forward", "worker:x", "1 commit"),
		waits(entry(110, baton.PhaseDeploy, baton.StatusPending, "forward", "worker:x", checkpointNote)),
		decided(entry(170, baton.PhaseDeploy, baton.StatusPending, "approve", "alice", startedNote), DecisionStarted, ""),
		entry(171, baton.PhaseDeploy, baton.StatusRunning, "run", "worker:x", ""),
		entry(173, baton.PhaseDeploy, baton.StatusSucceeded, "forward", "worker:x", "merged"),
		decided(entry(200, baton.PhaseClose, baton.StatusSucceeded, "approve", "alice", "delivered"), DecisionApproved, ""),
	}
	for i := range log[:len(log)-1] {
		log[i].EndedAt = log[i+1].StartedAt
	}
	log[len(log)-1].EndedAt = at(200)
	got := Timeline(log, false, at(300))
	type row struct {
		Phase             string
		Attempt           int64
		Status            string
		Work, Queue, Wait float64
		Note, Decision    string
	}
	var rows []row
	for _, s := range got {
		rows = append(rows, row{s.Phase, s.Attempt, s.Status, s.WorkSeconds, s.QueueSeconds, s.PersonSeconds, s.Note, s.Decision})
	}
	want := []row{
		{"plan", 1, "succeeded", 10, 2, 60, "", "approved by alice"},
		{"implement", 1, "failed", 7, 1, 10, "boom", "retried by bob: (agent now codex)"},
		{"implement", 2, "canceled", 4, 1, 5, "canceled by bob: wrong", "retried by bob: the other way"},
		{"implement", 3, "succeeded", 9, 1, 0, "1 commit", ""},
		{"deploy", 1, "succeeded", 2, 1, 87, "merged", "approved by alice"},
		{"close", 1, "succeeded", 0, 0, 0, "delivered", ""},
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("Timeline (-want +got):\n%s", d)
	}
	if got[len(got)-1].Current || got[0].EndedAt == nil || !got[0].EndedAt.Equal(at(72)) {
		t.Errorf("a closed delivery's steps: last current %v, plan ended %v", got[len(got)-1].Current, got[0].EndedAt)
	}
}

// Phase events in the words of the dashboard's buttons, naming people
// and not workers.
func TestPhaseWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    baton.PhaseLogEntry
		want string
	}{
		{baton.PhaseLogEntry{Phase: baton.PhaseIntake, Status: baton.StatusSucceeded, Action: "create", Actor: "alice"}, "Created by alice."},
		{baton.PhaseLogEntry{Phase: baton.PhasePlan, Status: baton.StatusRunning, Action: "run", Actor: "serve:vm:5687:dbab2df2", Attempt: 3}, "Plan started."},
		{baton.PhaseLogEntry{Phase: baton.PhaseDeploy, Status: baton.StatusPending, Action: "forward", Actor: "serve:vm:1:2", Note: checkpointNote, Waits: true}, "Deploy is waiting for a person to start it."},
		{baton.PhaseLogEntry{Phase: baton.PhaseDeploy, Status: baton.StatusPending, Action: "approve", Actor: "alice", Note: startedNote, Decision: DecisionStarted}, "alice started deploy."},
		{baton.PhaseLogEntry{Phase: baton.PhaseImplement, Status: baton.StatusPending, Action: "approve", Actor: "alice", Note: "approved", Decision: DecisionApproved}, "Approved by alice. Implement is queued for a worker."},
		{baton.PhaseLogEntry{Phase: baton.PhasePlan, Status: baton.StatusPending, Action: "reject", Actor: "bob", Note: "too vague", Decision: DecisionRejected, Reason: "too vague"}, "Rejected by bob: too vague. Plan is queued for a worker."},
		{baton.PhaseLogEntry{Phase: baton.PhasePlan, Status: baton.StatusFailed, Action: "cancel", Actor: "bob", Note: "canceled by bob: wrong", Decision: DecisionCanceled, Reason: "wrong"}, "bob canceled plan: wrong."},
		{baton.PhaseLogEntry{Phase: baton.PhaseReview, Status: baton.StatusSucceeded, Action: "forward", Verdict: baton.VerdictPass, Note: "Looks right"}, "Review passed: Looks right."},
		{baton.PhaseLogEntry{Phase: baton.PhaseReview, Status: baton.StatusSucceeded, Action: "forward", Verdict: baton.VerdictNotPass, Note: "missing test"}, "Review did not pass: missing test."},
		{baton.PhaseLogEntry{Phase: baton.PhaseClose, Status: baton.StatusFailed, Action: "close", Actor: "alice", Note: "closed by alice at plan/failed: not needed", Decision: DecisionClosed, Reason: "not needed"}, "Closed by alice: not needed."},
		{baton.PhaseLogEntry{Phase: baton.PhaseClose, Status: baton.StatusSucceeded, Action: "approve", Actor: "alice", Note: "delivered", Decision: DecisionApproved}, "Delivered."},
	} {
		if got := PhaseWords(c.e); got != c.want {
			t.Errorf("PhaseWords(%s %s %s) = %q, want %q", c.e.Phase, c.e.Status, c.e.Action, got, c.want)
		}
	}
}
