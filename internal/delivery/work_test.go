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
