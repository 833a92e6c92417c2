package githubtest_test

import (
	"testing"

	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

// TestDeliveryFlow shows how another package's test drives the client
// against the fake: the delivery forge's path from a pushed branch to a
// merged pull request, with CI turning green in between.
func TestDeliveryFlow(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.RequireToken("test-token")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash on start", Labels: []string{"agent"}})
	srv.AddBranch("octo/app", "baton/7", "") // the agent's push

	c, err := github.New(github.Options{BaseURL: srv.URL(), Token: "test-token"})
	if err != nil {
		t.Fatal(err)
	}
	repo := github.Repo{Owner: "octo", Name: "app"}
	ctx := t.Context()

	pr, err := c.CreatePullRequest(ctx, repo, github.NewPullRequest{Head: "baton/7", Base: "main", Title: "Fix crash", Body: "Fixes #7", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	// The fake does not read bodies for "Fixes #7"; link the issue as
	// GitHub would.
	srv.UpdatePullRequest("octo/app", pr.Number, func(p *githubtest.PullRequest) { p.ClosingIssues = []int{7} })
	if err := c.MarkReadyForReview(ctx, repo, pr.Number); err != nil {
		t.Fatal(err)
	}

	run := srv.AddCheckRun("octo/app", pr.Head.SHA, githubtest.CheckRun{Name: "test", Status: "in_progress"})
	if sum, err := c.Checks(ctx, repo, pr.Head.SHA); err != nil || sum.State != github.CheckPending {
		t.Fatalf("Checks = %v, %v; want pending", sum, err)
	}
	srv.UpdateCheckRun("octo/app", run.ID, func(cr *githubtest.CheckRun) { cr.Status, cr.Conclusion = "completed", "success" })
	if sum, err := c.Checks(ctx, repo, pr.Head.SHA); err != nil || sum.State != github.CheckSuccess {
		t.Fatalf("Checks = %v, %v; want success", sum, err)
	}

	if _, err := c.Merge(ctx, repo, pr.Number, github.MergeOptions{SHA: pr.Head.SHA}); err != nil {
		t.Fatal(err)
	}
	if got := srv.PullRequest("octo/app", pr.Number); !got.Merged || got.MergeMethod != "squash" {
		t.Errorf("pull request after merge: merged %v by %q", got.Merged, got.MergeMethod)
	}
	if is, err := c.Issue(ctx, repo, 7, github.IssueOptions{}); err != nil || is.State != "closed" {
		t.Errorf("issue after merge: %v, %v; want closed", is, err)
	}
	if open, err := c.ListIssues(ctx, repo, github.IssueFilter{Labels: []string{"agent"}}); err != nil || len(open) != 0 {
		t.Errorf("open agent issues after merge = %v, %v; want none", open, err)
	}
}
