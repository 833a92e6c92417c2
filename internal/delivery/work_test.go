package delivery_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// The diff a person approves at the deploy checkpoint is the change
// that lands: the delivery is merged, and the merge commit's files and
// line counts are the ones the checkpoint showed. The plan, which the
// local merge leaves out, is said apart and counted nowhere.
func TestCheckpointDiffIsWhatLands(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 1,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{
			{Path: "greet.go", Content: "package app\n\nfunc Greet(name string) string { return \"hello, \" + name }\n"},
			{Path: "greet_test.go", Content: "package app\n"},
			{Path: "README.md", Content: "# app\n\nGreets.\n"},
			{Path: "check.sh", Op: "delete"},
		}, Final: "Added greet.go"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Good", "feedback": ""}},
	)
	h.work()
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg(), baton.PhaseDeploy), "alice")
	if err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "deploy to wait for a person", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending || d.RunStatus == baton.StatusFailed
	})
	w, err := h.svc.Work(t.Context(), d.ID, forge.DefaultDiffLimits)
	if err != nil || w.Diff == nil {
		t.Fatalf("Work at the deploy checkpoint = %+v, %v; want its diff", w, err)
	}
	if !slices.Equal(w.Diff.NotMerged, []string{forge.PlanPath}) || w.Plan != planText {
		t.Errorf("Work at deploy: plan %q, not merged %q; want the plan shown apart as not merged", w.Plan, w.Diff.NotMerged)
	}
	var shown []string
	for _, f := range w.Diff.Files {
		shown = append(shown, fmt.Sprintf("%d\t%d\t%s", f.Added, f.Deleted, f.Path))
	}

	if _, err := h.svc.Decide(t.Context(), d.ID, delivery.ActApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "deploy to merge", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusSucceeded || d.RunStatus == baton.StatusFailed
	})
	if d.RunStatus != baton.StatusSucceeded {
		t.Fatalf("deploy is %s: %s", d.String(), d.Error)
	}
	merged := strings.Split(gittest.Git(t, src, "diff", "--numstat", "-M", "main~1", "main"), "\n")
	if diff := cmp.Diff(merged, shown); diff != "" {
		t.Errorf("the deploy checkpoint showed a change other than the merge commit's (-merged +shown):\n%s", diff)
	}
	added, deleted := 0, 0
	for _, line := range merged {
		var a, del int
		fmt.Sscanf(line, "%d\t%d", &a, &del)
		added, deleted = added+a, deleted+del
	}
	if len(w.Diff.Files) != len(merged) || w.Diff.Added != added || w.Diff.Deleted != deleted {
		t.Errorf("the checkpoint said %d files, +%d −%d; the merge commit has %d, +%d −%d",
			len(w.Diff.Files), w.Diff.Added, w.Diff.Deleted, len(merged), added, deleted)
	}
}

// A decision names the work commit it was shown (State.Commit): once
// the work branch is at another commit, the decision is refused, saying
// both; on the commit shown it applies.
func TestDecisionOnAMovedWorkCommitIsRefused(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0, agenttest.Turn{Final: planText})
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if d, err = h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil || d.String() != "plan/succeeded" {
		t.Fatalf("plan = %v, %v; want plan/succeeded", d, err)
	}
	w, err := h.svc.Work(t.Context(), d.ID, forge.DefaultDiffLimits)
	if err != nil || len(w.Commit) != 40 || w.Plan != planText {
		t.Fatalf("Work at the plan checkpoint = commit %q, plan %q, %v", w.Commit, w.Plan, err)
	}
	other := strings.Repeat("0", 12)
	_, err = h.svc.DecideOn(t.Context(), d.ID, delivery.Decision{Action: delivery.ActApprove, Actor: "alice", On: delivery.StateOf(d, other)})
	if baton.ErrorCode(err) != baton.Conflict || !strings.Contains(baton.ErrorMessage(err), "from "+other+" to "+w.Commit[:12]) {
		t.Errorf("approve made on work commit %s, the branch at %s: %v, want a Conflict saying both", other, w.Commit[:12], err)
	}
	got, err := h.svc.DecideOn(t.Context(), d.ID, delivery.Decision{Action: delivery.ActApprove, Actor: "alice", On: delivery.StateOf(d, w.Commit[:12])})
	if err != nil || got.Phase != baton.PhaseImplement {
		t.Errorf("approve made on the commit shown = %v, %v; want implement", got, err)
	}
}

// A person's line notes on the change and the plan are kept with the
// reject: checked against what the checkpoint showed (nothing is posted
// for a note on a file the change does not land), written into the
// review note, and each a review ref the next implement's prompt lists
// with its file and line.
func TestRejectLineNotesReachTheNextImplement(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 1,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n\nfunc Greet(name string) string { return \"hi \" + name }\n"}}, Final: "Added greet.go"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Good", "feedback": ""}},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n\nfunc Greet(name string) string { return \"hello, \" + name }\n"}}, Final: "Said hello"},
	)
	h.work()
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg(), baton.PhaseDeploy), "alice")
	if err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "deploy to wait for a person", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending || d.RunStatus == baton.StatusFailed
	})
	on := delivery.StateOf(d, "")
	for _, bad := range []struct {
		notes []baton.LineNote
		want  string
	}{
		{[]baton.LineNote{{Path: "main.go", Line: 1, Body: "x"}}, "not a file the change lands or docs/plan.md"},
		{[]baton.LineNote{{Path: forge.PlanPath, Line: 40, Body: "x"}}, "the plan has 2 lines"},
		{[]baton.LineNote{{Path: "../greet.go", Line: 1, Body: "x"}}, "not a file of the repository"},
	} {
		_, err := h.svc.DecideOn(t.Context(), d.ID, delivery.Decision{Action: delivery.ActReject, Actor: "bob", Note: "no", Notes: bad.notes, On: on})
		if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("reject with %+v = %v; want Invalid %q", bad.notes, err, bad.want)
		}
	}
	_, err = h.svc.DecideOn(t.Context(), d.ID, delivery.Decision{Action: delivery.ActApprove, Actor: "bob", Notes: []baton.LineNote{{Path: "greet.go", Line: 3, Body: "x"}}, On: on})
	if baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("approve with line notes = %v, want Invalid", err)
	}
	if notes, _ := h.svc.Store().ReviewNotes(t.Context(), d.ID); len(notes) != 1 {
		t.Fatalf("refused rejects kept %d review notes beyond the reviewer's", len(notes)-1)
	}

	notes := []baton.LineNote{{Path: "greet.go", Line: 3, Body: "say hello,\nwith a comma"}, {Path: forge.PlanPath, Line: 2, Body: "a test of the comma too"}}
	if _, err := h.svc.DecideOn(t.Context(), d.ID, delivery.Decision{Action: delivery.ActReject, Actor: "bob", Note: "Greet as the style guide says", Notes: notes, On: on}); err != nil {
		t.Fatal(err)
	}
	kept, err := h.svc.Store().ReviewNotes(t.Context(), d.ID)
	if err != nil || len(kept) != 2 {
		t.Fatalf("review notes = %+v, %v", kept, err)
	}
	body := delivery.NoteBody(&kept[1])
	for _, want := range []string{"rejected by bob", "Greet as the style guide says", "- `greet.go:3`: say hello,\n  with a comma", "- `docs/plan.md:2`: a test of the comma too"} {
		if !strings.Contains(body, want) {
			t.Errorf("the kept note reads %q, want %q in it", body, want)
		}
	}
	d = h.waitFor(d.ID, "the next implement to run", func(d *baton.Delivery) bool {
		return d.Phase != baton.PhaseImplement && d.Rounds > 0 || d.RunStatus == baton.StatusFailed
	})
	calls := h.fake.Calls(t)
	if len(calls) < 4 {
		t.Fatalf("%d agent calls, want the second implement's", len(calls))
	}
	prompt := calls[3].Prompt
	noteURL := kept[1].URL
	for _, want := range []string{"- " + noteURL + "\n", "- " + noteURL + " (a note on greet.go:3)\n", "- " + noteURL + " (a note on docs/plan.md:2)\n"} {
		if noteURL == "" || !strings.Contains(prompt, want) {
			t.Errorf("the next implement's prompt:\n%s\nwant %q in it", prompt, want)
		}
	}
}
