package delivery_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// Verify runs on the work commit, checked out afresh: what the agent left
// in its worktree and did not commit (here an ignored build output that
// makes the check pass) is not what verify judges, since it is not what
// would be merged.
func TestVerifyRunsOnTheWorkCommit(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	write(t, src+"/.gitignore", "build/\n")
	gittest.Git(t, src, "add", "-A")
	gittest.Git(t, src, "commit", "-qm", "ignore build")
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}, {Path: "build/ok", Content: "built by hand\n"}}, Final: "Done."},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Good", "feedback": ""}},
	)
	c := cfg()
	c.VerifyCommand = "test -f build/ok"
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview, baton.PhaseVerify} {
		if d, err = h.runner.Run(t.Context(), d.ID, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), d.ID)
	var verdict baton.Verdict
	for _, e := range log {
		if e.Phase == baton.PhaseVerify && e.Verdict != "" {
			verdict = e.Verdict
		}
	}
	if verdict != baton.VerdictNotPass || d.Phase != baton.PhaseImplement {
		t.Errorf("verify of a commit without build/ok: verdict %q, delivery %s (%s); want not_pass, back to implement", verdict, d.String(), d.Error)
	}
}

// Deploy merges exactly the commit verify ran on: a work branch that moved
// after verify (a push to the pull request) is refused, not merged
// unverified.
func TestDeployMergesTheVerifiedCommit(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	greet := "package app\n\nfunc Greet(name string) string { return \"hello, \" + name }\n"
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: greet}}, Final: "Done."},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Good", "feedback": ""}},
	)
	c := cfg()
	c.VerifyCommand = "sh check.sh"
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, c, baton.PhaseDeploy), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview, baton.PhaseVerify} {
		if d, err = h.runner.Run(t.Context(), d.ID, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	if d.Phase != baton.PhaseDeploy {
		t.Fatalf("after verify the delivery is %s (%s), want deploy", d.String(), d.Error)
	}
	verified := gittest.Git(t, src, "rev-parse", "baton/"+d.ID)
	// Someone pushes to the work branch while deploy waits for approval.
	gittest.Git(t, src, "checkout", "-q", "baton/"+d.ID)
	write(t, src+"/greet.go", "package app\n\nfunc Greet(string) string { return \"pwned\" }\n")
	gittest.Git(t, src, "commit", "-qam", "a late push")
	gittest.Git(t, src, "checkout", "-q", "main")
	if d, err = h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActApprove, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	if d, err = h.runner.Run(t.Context(), d.ID, baton.PhaseDeploy, ""); err != nil {
		t.Fatal(err)
	}
	if d.String() != "deploy/failed" || !strings.Contains(d.Error, "moved after verify ran on "+verified[:12]) {
		t.Fatalf("deploy of a branch that moved after verify = %s %q, want failed naming the verified commit", d.String(), d.Error)
	}
	if n := gittest.Git(t, src, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("main has %s commits after the refused deploy, want 1: the unverified push was merged", n)
	}
}
