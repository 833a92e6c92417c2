package delivery

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func fixture(p baton.Phase, s baton.RunStatus) baton.Delivery {
	return baton.Delivery{
		ID: "abc123def456", Seq: 1, Summary: "Fix the login bug", Repository: "/src/app", Forge: baton.ForgeLocal,
		Phase: p, RunStatus: s, Endpoint: baton.PhaseObserve,
		Checkpoints: []baton.Phase{baton.PhasePlan, baton.PhaseDeploy},
		Config:      baton.DeliveryConfig{Agent: "claude", MaxRounds: 5},
		Attempt:     3, Version: 7, CreatedAt: t0, UpdatedAt: t0,
	}
}

// The expected outcome of every action in every phase and status, with
// checkpoints plan and deploy and endpoint observe. Each row is a phase,
// each column a status (pending, running, succeeded, failed, blocked).
// "-" is a Conflict; "P/S" the new phase and status; "+q" a queued job.
// This is the specification, written independently of the code.
var specGrid = map[Action]string{
	// run: a worker claims a queued pending phase.
	ActRun: `
intake:    -                 -                  -                 -                  -
plan:      plan/running      -                  -                 -                  -
implement: implement/running -                  -                 -                  -
review:    review/running    -                  -                 -                  -
verify:    verify/running    -                  -                 -                  -
deploy:    deploy/running    -                  -                 -                  -
observe:   observe/running   -                  -                 -                  -
close:     -                 -                  -                 -                  -`,
	// forward with a pass (review, verify) or no verdict.
	ActForward: `
intake:    -   plan/pending          -  -  -
plan:      -   plan/succeeded        -  -  -
implement: -   review/pending+q      -  -  -
review:    -   verify/pending+q      -  -  -
verify:    -   deploy/pending        -  -  -
deploy:    -   deploy/succeeded      -  -  -
observe:   -   close/succeeded       -  -  -
close:     -   -                     -  -  -`,
	ActFail: `
intake:    -   intake/failed     -  -  -
plan:      -   plan/failed       -  -  -
implement: -   implement/failed  -  -  -
review:    -   review/failed     -  -  -
verify:    -   verify/failed     -  -  -
deploy:    -   deploy/failed     -  -  -
observe:   -   observe/failed    -  -  -
close:     -   -                 -  -  -`,
	ActApprove: `
intake:    -                    -  plan/pending+q       -  plan/pending+q
plan:      plan/pending+q       -  implement/pending+q  -  implement/pending+q
implement: implement/pending+q  -  review/pending+q     -  review/pending+q
review:    review/pending+q     -  verify/pending+q     -  verify/pending+q
verify:    verify/pending+q     -  deploy/pending+q     -  deploy/pending+q
deploy:    deploy/pending+q     -  observe/pending+q    -  observe/pending+q
observe:   observe/pending+q    -  close/succeeded      -  close/succeeded
close:     -                    -  -                    -  -`,
	ActReject: `
intake:    -                    -  -                    -                    -
plan:      plan/pending+q       -  plan/pending+q       plan/pending+q       plan/pending+q
implement: plan/pending+q       -  plan/pending+q       plan/pending+q       plan/pending+q
review:    implement/pending+q  -  implement/pending+q  implement/pending+q  implement/pending+q
verify:    implement/pending+q  -  implement/pending+q  implement/pending+q  implement/pending+q
deploy:    implement/pending+q  -  -                    implement/pending+q  implement/pending+q
observe:   -                    -  -                    -                    -
close:     -                    -  -                    -                    -`,
	ActRetry: `
intake:    -  -  -  -                    -
plan:      -  -  -  plan/pending+q       plan/pending+q
implement: -  -  -  implement/pending+q  implement/pending+q
review:    -  -  -  review/pending+q     review/pending+q
verify:    -  -  -  verify/pending+q     verify/pending+q
deploy:    -  -  -  deploy/pending+q     deploy/pending+q
observe:   -  -  -  observe/pending+q    observe/pending+q
close:     -  -  -  -                    -`,
	ActCancel: `
intake:    -  intake/failed     -  -  -
plan:      -  plan/failed       -  -  -
implement: -  implement/failed  -  -  -
review:    -  review/failed     -  -  -
verify:    -  verify/failed     -  -  -
deploy:    -  deploy/failed     -  -  -
observe:   -  observe/failed    -  -  -
close:     -  -                 -  -  -`,
	ActClose: `
intake:    close/failed  -  close/failed     close/failed  close/failed
plan:      close/failed  -  close/failed     close/failed  close/failed
implement: close/failed  -  close/failed     close/failed  close/failed
review:    close/failed  -  close/failed     close/failed  close/failed
verify:    close/failed  -  close/failed     close/failed  close/failed
deploy:    close/failed  -  close/failed     close/failed  close/failed
observe:   close/failed  -  close/succeeded  close/failed  close/failed
close:     -             -  -                -             -`,
	ActRelease: `
intake:    -  intake/pending+q     -  -  -
plan:      -  plan/pending+q       -  -  -
implement: -  implement/pending+q  -  -  -
review:    -  review/pending+q     -  -  -
verify:    -  verify/pending+q     -  -  -
deploy:    -  deploy/pending+q     -  -  -
observe:   -  observe/pending+q    -  -  -
close:     -  -                    -  -  -`,
	ActLose: `
intake:    -  intake/pending+q     -  -  -
plan:      -  plan/pending+q       -  -  -
implement: -  implement/pending+q  -  -  -
review:    -  review/pending+q     -  -  -
verify:    -  verify/pending+q     -  -  -
deploy:    -  deploy/pending+q     -  -  -
observe:   -  observe/pending+q    -  -  -
close:     -  -                    -  -  -`,
	// feedback from GitHub: plan again before a plan was taken, else back
	// to implement; never while running, never once merged or closed.
	ActFeedback: `
intake:    plan/pending+q       -  plan/pending+q       plan/pending+q       plan/pending+q
plan:      plan/pending+q       -  plan/pending+q       plan/pending+q       plan/pending+q
implement: implement/pending+q  -  implement/pending+q  implement/pending+q  implement/pending+q
review:    implement/pending+q  -  implement/pending+q  implement/pending+q  implement/pending+q
verify:    implement/pending+q  -  implement/pending+q  implement/pending+q  implement/pending+q
deploy:    implement/pending+q  -  implement/pending+q  implement/pending+q  implement/pending+q
observe:   -                    -  -                    -                    -
close:     -                    -  -                    -                    -`,
}

func inputFor(a Action, p baton.Phase) Input {
	in := Input{Action: a, Actor: "worker:test", Now: t0.Add(time.Minute), Attempt: 3}
	switch a {
	case ActApprove, ActReject, ActRetry, ActCancel, ActClose, ActFeedback:
		in.Actor, in.Person = "alice", true
	}
	if a == ActReject {
		in.Note = "the plan misses the migration"
	}
	if a == ActForward && (p == baton.PhaseReview || p == baton.PhaseVerify) {
		in.Verdict = baton.VerdictPass
	}
	return in
}

func TestApplyEveryActionPhaseStatus(t *testing.T) {
	t.Parallel()
	if len(specGrid) != len(Actions) {
		t.Fatalf("specGrid covers %d actions, want all %d", len(specGrid), len(Actions))
	}
	cases := 0
	for _, a := range Actions {
		rows := strings.Split(strings.TrimSpace(specGrid[a]), "\n")
		if len(rows) != len(baton.Phases) {
			t.Fatalf("%s: %d rows, want %d", a, len(rows), len(baton.Phases))
		}
		for i, row := range rows {
			f := strings.Fields(row)
			p := baton.Phases[i]
			if f[0] != string(p)+":" || len(f) != 1+len(baton.RunStatuses) {
				t.Fatalf("%s: bad row %q", a, row)
			}
			for j, s := range baton.RunStatuses {
				want := f[1+j]
				cases++
				t.Run(fmt.Sprintf("%s/%s/%s", a, p, s), func(t *testing.T) {
					d := fixture(p, s)
					d.Queued = a == ActRun // a worker only runs what is queued
					res, err := Apply(d, inputFor(a, p))
					got := "-"
					if err == nil {
						got = fmt.Sprintf("%s/%s", res.Delivery.Phase, res.Delivery.RunStatus)
						if res.Enqueue {
							got += "+q"
						}
						checkLog(t, d, res)
					} else if c := baton.ErrorCode(err); c != baton.Conflict {
						t.Fatalf("Apply = error code %s (%v), want conflict or success", c, err)
					}
					if got != want {
						t.Errorf("Apply(%s at %s/%s) = %s, want %s (err %v)", a, p, s, got, want, err)
					}
				})
			}
		}
	}
	if cases != len(Actions)*8*5 {
		t.Fatalf("ran %d cases, want %d", cases, len(Actions)*8*5)
	}
}

// checkLog asserts the invariants of every successful transition: at
// least one log entry, each naming the actor and action, the last one
// matching the new state, and the queued flag matching the enqueue.
func checkLog(t *testing.T, before baton.Delivery, res Result) {
	t.Helper()
	if len(res.Log) == 0 {
		t.Fatal("transition wrote no log entry")
	}
	for _, e := range res.Log {
		if e.Actor == "" || e.Action == "" || e.StartedAt.IsZero() {
			t.Errorf("log entry %+v lacks actor, action or start", e)
		}
	}
	last := res.Log[len(res.Log)-1]
	d := res.Delivery
	if last.Phase != d.Phase || last.Status != d.RunStatus {
		t.Errorf("last log entry %s/%s, delivery %s/%s", last.Phase, last.Status, d.Phase, d.RunStatus)
	}
	if d.Phase == baton.PhaseClose && last.EndedAt.IsZero() {
		t.Error("close entry has no end time")
	}
	if res.Enqueue != (d.RunStatus == baton.StatusPending && d.Queued) {
		t.Errorf("Enqueue = %v with %s queued=%v", res.Enqueue, d.String(), d.Queued)
	}
	if before.Version != d.Version {
		t.Error("Apply changed Version; the store owns it")
	}
}

func mustApply(t *testing.T, d baton.Delivery, in Input) Result {
	t.Helper()
	res, err := Apply(d, in)
	if err != nil {
		t.Fatalf("Apply(%s at %s) = %v", in.Action, d.String(), err)
	}
	return res
}

func TestReviewNotPassReturnsToImplement(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseReview, baton.StatusRunning)
	res := mustApply(t, d, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Verdict: baton.VerdictNotPass, Note: "missing tests",
		Refs: []baton.Ref{{Role: baton.RoleReview, Type: "review_note", Label: "review 1", URL: "file:///r/1.md"}}})
	got := res.Delivery
	if got.String() != "implement/pending" || !res.Enqueue || got.Rounds != 1 {
		t.Fatalf("not_pass review → %s enqueue=%v rounds=%d, want implement/pending queued, round 1", got.String(), res.Enqueue, got.Rounds)
	}
	if len(got.Refs) != 1 || got.Refs[0].Role != baton.RoleReview {
		t.Errorf("refs = %+v, want the review ref", got.Refs)
	}
	want := []string{"review/succeeded/not_pass", "implement/pending/"}
	var gotLog []string
	for _, e := range res.Log {
		gotLog = append(gotLog, fmt.Sprintf("%s/%s/%s", e.Phase, e.Status, e.Verdict))
	}
	if diff := cmp.Diff(want, gotLog); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestNotPassAtCheckpointBlocks(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseVerify, baton.StatusRunning)
	d.Checkpoints = append(d.Checkpoints, baton.PhaseVerify)
	res := mustApply(t, d, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Verdict: baton.VerdictNotPass, Note: "2 checks failed"})
	if res.Delivery.String() != "verify/blocked" || res.Enqueue || res.Delivery.Error == "" {
		t.Fatalf("got %s enqueue=%v error=%q, want verify/blocked with the reason", res.Delivery.String(), res.Enqueue, res.Delivery.Error)
	}
	// A person overrides, or sends it back.
	if r := mustApply(t, res.Delivery, Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0}); r.Delivery.String() != "deploy/pending" || !r.Enqueue {
		t.Errorf("approve blocked verify → %s, want deploy/pending queued", r.Delivery.String())
	}
	if r := mustApply(t, res.Delivery, Input{Action: ActReject, Actor: "alice", Person: true, Now: t0, Note: "fix it"}); r.Delivery.String() != "implement/pending" {
		t.Errorf("reject blocked verify → %s, want implement/pending", r.Delivery.String())
	}
}

// A blocked outcome (an implement that changed nothing) waits for a
// person, who sends the branch on as it stands, runs the phase again or
// sends the delivery back.
func TestBlockedOutcomeWaitsForAPerson(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseImplement, baton.StatusRunning)
	res := mustApply(t, d, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Block: true, Note: "the agent changed nothing"})
	if res.Delivery.String() != "implement/blocked" || res.Enqueue || res.Delivery.Error != "the agent changed nothing" {
		t.Fatalf("got %s enqueue=%v error=%q, want implement/blocked with the reason", res.Delivery.String(), res.Enqueue, res.Delivery.Error)
	}
	if e := res.Log[0]; e.Status != baton.StatusBlocked || e.Note != "the agent changed nothing" || len(res.Log) != 1 {
		t.Errorf("log = %+v, want one blocked entry with the reason", res.Log)
	}
	if !res.Delivery.WaitsForPerson() {
		t.Error("a blocked implement does not wait for a person")
	}
	for _, c := range []struct {
		in   Input
		want string
	}{
		{Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0}, "review/pending"},
		{Input{Action: ActRetry, Actor: "alice", Person: true, Now: t0}, "implement/pending"},
		{Input{Action: ActReject, Actor: "alice", Person: true, Now: t0, Note: "rethink it"}, "plan/pending"},
	} {
		if r := mustApply(t, res.Delivery, c.in); r.Delivery.String() != c.want || !r.Enqueue {
			t.Errorf("%s on a blocked implement → %s enqueue=%v, want %s queued", c.in.Action, r.Delivery.String(), r.Enqueue, c.want)
		}
	}
	if _, err := Apply(d, Input{Action: ActForward, Attempt: 3, Block: true, Verdict: baton.VerdictPass, Now: t0}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("a blocked outcome with a verdict: err %v, want Invalid", err)
	}
}

func TestRoundLimitBlocks(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseReview, baton.StatusRunning)
	d.Config.MaxRounds, d.Rounds = 2, 2
	res := mustApply(t, d, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Verdict: baton.VerdictNotPass})
	if res.Delivery.String() != "review/blocked" || !strings.Contains(res.Delivery.Error, "round limit 2") {
		t.Fatalf("got %s %q, want review/blocked at the round limit", res.Delivery.String(), res.Delivery.Error)
	}
}

func TestSkippedSystemPhaseAdvancesWithReason(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseVerify, baton.StatusRunning)
	d.Checkpoints = []baton.Phase{baton.PhaseVerify}
	res := mustApply(t, d, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Skipped: true, Note: "no --verify command"})
	if res.Delivery.String() != "deploy/pending" || !res.Enqueue {
		t.Fatalf("got %s, want deploy/pending queued", res.Delivery.String())
	}
	if e := res.Log[0]; e.Status != baton.StatusSkipped || e.Note != "no --verify command" || e.Verdict != "" {
		t.Errorf("skip entry = %+v, want skipped with the reason and no verdict", e)
	}
	if _, err := Apply(fixture(baton.PhaseImplement, baton.StatusRunning), Input{Action: ActForward, Attempt: 3, Skipped: true, Now: t0}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("skipping an agent phase: err %v, want Invalid", err)
	}
}

func TestCancelWinsOverLateResult(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseImplement, baton.StatusRunning)
	c := mustApply(t, d, Input{Action: ActCancel, Actor: "alice", Person: true, Now: t0})
	if c.Delivery.Error != "canceled by alice" {
		t.Errorf("error = %q", c.Delivery.Error)
	}
	for _, a := range []Action{ActForward, ActFail, ActLose} {
		if _, err := Apply(c.Delivery, Input{Action: a, Actor: "w", Now: t0, Attempt: 3}); baton.ErrorCode(err) != baton.Conflict {
			t.Errorf("late %s after cancel: err %v, want Conflict", a, err)
		}
	}
	// Retried, the old attempt's result still does not count.
	r := mustApply(t, c.Delivery, Input{Action: ActRetry, Actor: "alice", Person: true, Now: t0})
	r = mustApply(t, r.Delivery, Input{Action: ActRun, Actor: "w2", Now: t0})
	if r.Delivery.Attempt != 4 {
		t.Fatalf("attempt = %d, want 4", r.Delivery.Attempt)
	}
	if _, err := Apply(r.Delivery, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("attempt 3 result during attempt 4: err %v, want Conflict", err)
	}
}

func TestRejectNeedsReasonAndIsRefusedWhileRunning(t *testing.T) {
	t.Parallel()
	if _, err := Apply(fixture(baton.PhaseReview, baton.StatusSucceeded), Input{Action: ActReject, Actor: "a", Person: true, Now: t0}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("reject without reason: err %v, want Invalid", err)
	}
	if _, err := Apply(fixture(baton.PhaseReview, baton.StatusRunning), Input{Action: ActReject, Actor: "a", Person: true, Now: t0, Note: "x"}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("reject while running: err %v, want Conflict", err)
	}
}

// A decision is on a phase that waits for a person. Whichever decision
// on a waiting phase comes first queues the next phase; a second one,
// made on the same waiting phase, must then be refused rather than
// applied to the queued phase: that is how exactly one of many racing
// decisions wins.
func TestOneDecisionPerWaitingPhase(t *testing.T) {
	t.Parallel()
	approve := Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0}
	reject := Input{Action: ActReject, Actor: "bob", Person: true, Now: t0, Note: "not like this"}
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseReview, baton.PhaseDeploy} {
		for _, first := range []Input{approve, reject} {
			waiting := fixture(p, baton.StatusSucceeded)
			if p == baton.PhaseDeploy {
				waiting = fixture(p, baton.StatusPending) // a checkpoint waiting to start
			}
			won := mustApply(t, waiting, first).Delivery
			if won.RunStatus != baton.StatusPending || !won.Queued {
				t.Fatalf("%s on %s → %s (queued %v), want a queued phase", first.Action, waiting.String(), won.String(), won.Queued)
			}
			for _, second := range []Input{approve, reject} {
				if _, err := Apply(won, second); baton.ErrorCode(err) != baton.Conflict {
					t.Errorf("%s on %s, then %s on the queued %s: err %v, want Conflict", first.Action, waiting.String(), second.Action, won.String(), err)
				}
			}
			if _, err := Apply(won, Input{Action: ActClose, Actor: "carol", Person: true, Now: t0}); err != nil {
				t.Errorf("close of the queued %s: %v, want it closed", won.String(), err)
			}
		}
	}
}

func TestSystemPhaseAtCheckpointIsStartedByAPerson(t *testing.T) {
	t.Parallel()
	// verify passes; deploy is a checkpoint: it waits, and a person starts it.
	d := fixture(baton.PhaseVerify, baton.StatusRunning)
	res := mustApply(t, d, Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Verdict: baton.VerdictPass})
	if res.Delivery.String() != "deploy/pending" || res.Delivery.Queued || res.Enqueue {
		t.Fatalf("got %s queued=%v, want deploy/pending waiting", res.Delivery.String(), res.Delivery.Queued)
	}
	if _, err := Apply(res.Delivery, Input{Action: ActRun, Actor: "w", Now: t0}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("a worker ran a waiting checkpoint: err %v", err)
	}
	if r := mustApply(t, res.Delivery, Input{Action: ActRun, Actor: "alice", Person: true, Now: t0}); r.Delivery.String() != "deploy/running" {
		t.Errorf("person run → %s", r.Delivery.String())
	}
	a := mustApply(t, res.Delivery, Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0})
	if !a.Enqueue || !a.Delivery.Queued {
		t.Errorf("approve did not queue deploy")
	}
	if _, err := Apply(a.Delivery, Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("second approve: err %v, want Conflict", err)
	}
}

func TestLostTwiceFails(t *testing.T) {
	t.Parallel()
	d := fixture(baton.PhaseImplement, baton.StatusRunning)
	r := mustApply(t, d, Input{Action: ActLose, Actor: "reconciler", Now: t0, Attempt: 3})
	r = mustApply(t, r.Delivery, Input{Action: ActRun, Actor: "w", Now: t0})
	r = mustApply(t, r.Delivery, Input{Action: ActLose, Actor: "reconciler", Now: t0, Attempt: 4})
	if r.Delivery.String() != "implement/failed" || r.Enqueue {
		t.Fatalf("second loss → %s, want implement/failed", r.Delivery.String())
	}
}

func TestNewDelivery(t *testing.T) {
	t.Parallel()
	res := NewDelivery(fixture("", ""), "alice", t0)
	if res.Delivery.String() != "plan/pending" || !res.Enqueue {
		t.Fatalf("new delivery %s enqueue=%v, want plan/pending queued (the creator started it)", res.Delivery.String(), res.Enqueue)
	}
	if res.Log[0].Phase != baton.PhaseIntake || res.Log[0].Status != baton.StatusSucceeded || res.Log[0].Actor != "alice" {
		t.Errorf("first entry %+v, want intake succeeded by alice", res.Log[0])
	}
}

// Feedback waits for a queued plan or implement round (each piece of
// feedback gets a round of its own) and takes the place of any other
// queued phase.
func TestFeedbackWhileQueued(t *testing.T) {
	t.Parallel()
	for p, want := range map[baton.Phase]string{
		baton.PhasePlan: "-", baton.PhaseImplement: "-", baton.PhaseReview: "implement/pending+q",
		baton.PhaseVerify: "implement/pending+q", baton.PhaseDeploy: "implement/pending+q",
	} {
		d := fixture(p, baton.StatusPending)
		d.Queued = true
		res, err := Apply(d, Input{Action: ActFeedback, Actor: "github:alice", Person: true, Now: t0,
			Refs: []baton.Ref{{Role: baton.RoleReview, Type: "github_comment", URL: "https://github.com/o/r/pull/2#issuecomment-9"}}})
		got := "-"
		if err == nil {
			got = res.Delivery.String() + "+q"
			if r, ok := res.Delivery.Ref(baton.RoleReview, "github_comment"); !ok || r.URL == "" {
				t.Errorf("feedback at %s left no review ref", p)
			}
		}
		if got != want {
			t.Errorf("feedback at queued %s = %s, want %s (%v)", p, got, want, err)
		}
		fit, why := FeedbackFits(d)
		if (fit == FeedbackApplies) != (want != "-") || fit != FeedbackApplies && why == "" {
			t.Errorf("FeedbackFits(queued %s) = %v %q", p, fit, why)
		}
	}
}

// A person's decision is a field of its phase log entry, with their reason
// as they wrote it apart from the machine's note; a phase that waits for
// a person to start it says so in a field; the pipeline's own moves carry
// neither.
func TestDecisionsAreFieldsOfThePhaseLog(t *testing.T) {
	t.Parallel()
	type fields struct {
		Decision, Reason string
		Waits            bool
	}
	last := func(r Result) fields {
		e := r.Log[len(r.Log)-1]
		return fields{e.Decision, e.Reason, e.Waits}
	}
	verified := mustApply(t, fixture(baton.PhaseVerify, baton.StatusRunning), Input{Action: ActForward, Actor: "w", Now: t0, Attempt: 3, Verdict: baton.VerdictPass})
	failed := fixture(baton.PhaseImplement, baton.StatusFailed)
	for name, c := range map[string]struct {
		res  Result
		want fields
	}{
		"waits at a checkpoint": {verified, fields{Waits: true}},
		"started":               {mustApply(t, verified.Delivery, Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0, Note: "go", Reason: "go"}), fields{Decision: DecisionStarted, Reason: "go"}},
		"approved with a reason": {mustApply(t, fixture(baton.PhasePlan, baton.StatusSucceeded), Input{Action: ActApprove, Actor: "alice", Person: true, Now: t0, Reason: " the plan is right "}),
			fields{Decision: DecisionApproved, Reason: "the plan is right"}},
		"rejected": {mustApply(t, failed, Input{Action: ActReject, Actor: "bob", Person: true, Now: t0, Note: "too broad (review not posted)", Reason: "too broad"}),
			fields{Decision: DecisionRejected, Reason: "too broad"}},
		"retried with another agent": {mustApply(t, failed, Input{Action: ActRetry, Actor: "bob", Person: true, Now: t0, Config: &baton.DeliveryConfig{Agent: "codex"}}),
			fields{Decision: DecisionRetried}},
		"canceled": {mustApply(t, fixture(baton.PhaseImplement, baton.StatusRunning), Input{Action: ActCancel, Actor: "bob", Person: true, Now: t0, Note: "wrong", Reason: "wrong"}),
			fields{Decision: DecisionCanceled, Reason: "wrong"}},
		"closed": {mustApply(t, failed, Input{Action: ActClose, Actor: "alice", Person: true, Now: t0, Note: "not needed", Reason: "not needed"}),
			fields{Decision: DecisionClosed, Reason: "not needed"}},
		"a worker's failure": {mustApply(t, fixture(baton.PhaseImplement, baton.StatusRunning), Input{Action: ActFail, Actor: "w", Now: t0, Attempt: 3, Note: "boom"}), fields{}},
		"a lost worker":      {mustApply(t, fixture(baton.PhaseImplement, baton.StatusRunning), Input{Action: ActLose, Actor: "w", Now: t0, Attempt: 3}), fields{}},
	} {
		if got := last(c.res); got != c.want {
			t.Errorf("%s: last entry %+v, want %+v", name, got, c.want)
		}
	}
}
