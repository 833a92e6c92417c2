package delivery_test

import (
	"context"

	"github.com/baton-agent/baton/internal/gitx/gittest"

	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/sqlstore"
)

const ghToken = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"

// githubSetup serves octo/app from githubtest, with its git remote a
// local bare repository holding main.
func githubSetup(t *testing.T, turns ...agenttest.Turn) (*harness, *githubtest.Server, string) {
	t.Helper()
	return githubSetupOn(t, sqlstore.SQLite, turns...)
}

// githubSetupOn is githubSetup on SQLite or PostgreSQL.
func githubSetupOn(t *testing.T, dialect sqlstore.Dialect, turns ...agenttest.Turn) (*harness, *githubtest.Server, string) {
	t.Helper()
	h := newHarnessOn(t, dialect, 0, turns...)
	src := sourceRepo(t)
	bare := filepath.Join(t.TempDir(), "app.git")
	gittest.Git(t, src, "clone", "-q", "--bare", src, bare)
	srv := githubtest.NewServer(t)
	srv.RequireToken(ghToken)
	srv.AddRepo("octo/app")
	srv.AddBranch("octo/app", "main", gittest.Git(t, src, "rev-parse", "main"))
	c, err := github.New(github.Options{BaseURL: srv.URL(), Token: ghToken})
	if err != nil {
		t.Fatal(err)
	}
	g := &forge.GitHub{Client: c, Repo: github.Repo{Host: "github.com", Owner: "octo", Name: "app"}, RemoteURL: bare}
	h.svc.Forge = func(context.Context, *baton.Delivery) (forge.Forge, error) { return g, nil }
	h.runner.CheckWait = forge.CheckWait{Timeout: 5 * time.Second, Appear: 100 * time.Millisecond, Poll: 20 * time.Millisecond}
	return h, srv, bare
}

func ghNew(cfg baton.DeliveryConfig) baton.Delivery {
	url := "https://github.com/octo/app/issues/12"
	return baton.Delivery{
		ID: baton.DeliveryID("octo/app", url), Summary: "GitHub Issue #12: Greet people", Repository: "octo/app", Forge: baton.ForgeGitHub,
		Endpoint: baton.PhaseDeploy, Checkpoints: []baton.Phase{},
		Refs:   []baton.Ref{{Role: baton.RoleRequest, Type: "github_issue", Label: "octo/app#12", URL: url}},
		Config: cfg,
	}
}

func TestGitHubPlanPullRequestFailureIsAWarning(t *testing.T) {
	t.Parallel()
	h, srv, bare := githubSetup(t, agenttest.Turn{Final: planText})
	srv.Fail("POST /repos/octo/app/pulls", githubtest.ServerError())
	d, _, err := h.svc.Insert(t.Context(), ghNew(cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "implement/pending" {
		t.Fatalf("plan with a failed PR creation = %s (%s), want it to succeed", got.String(), got.Error)
	}
	if _, ok := got.Ref(baton.RoleWork, "pr"); ok {
		t.Error("a work ref was added without a pull request")
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), d.ID)
	var note string
	for _, e := range log {
		if e.Phase == baton.PhasePlan && e.Status == baton.StatusSucceeded {
			note = e.Note
		}
		if strings.Contains(e.Note, ghToken) {
			t.Errorf("the token is in the phase log: %q", e.Note)
		}
	}
	if !strings.Contains(note, "warning: draft pull request not opened") {
		t.Errorf("plan note = %q, want the warning", note)
	}
	// The plan itself was pushed.
	if out := gittest.Git(t, bare, "show", "baton/"+d.ID+":docs/plan.md"); out != planText {
		t.Errorf("plan on the remote = %q", out)
	}
}

// plan opens a draft PR, review posts a PR review, verify reads check
// runs (a failure goes back to implement with a check ref), deploy marks
// the PR ready and merges it through the API.
func TestGitHubPipeline(t *testing.T) {
	t.Parallel()
	h, srv, bare := githubSetup(t,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "done"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Fine", "feedback": ""}},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app // fixed\n"}}, Final: "fixed CI"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Fine again", "feedback": ""}},
	)
	d, _, err := h.svc.Insert(t.Context(), ghNew(cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	branch := "baton/" + d.ID
	// githubtest knows branches only when told: mirror each push.
	syncHead := func() string {
		sha := gittest.Git(t, bare, "rev-parse", branch)
		srv.AddBranch("octo/app", branch, sha)
		for _, p := range srv.PullRequests("octo/app") {
			srv.UpdatePullRequest("octo/app", p.Number, func(pr *githubtest.PullRequest) { pr.HeadSHA = sha })
		}
		return sha
	}
	run := func(p baton.Phase) *baton.Delivery {
		t.Helper()
		got, err := h.runner.Run(t.Context(), d.ID, p, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.RunStatus == baton.StatusFailed {
			t.Fatalf("%s failed: %s", p, got.Error)
		}
		return got
	}
	// Plan: the branch must exist on "GitHub" when the PR is created, as
	// after the real push baton makes first.
	srv.AddBranch("octo/app", branch, strings.Repeat("f", 40))
	got := run(baton.PhasePlan)
	pr, ok := got.Ref(baton.RoleWork, "pr")
	if !ok {
		t.Fatalf("no PR ref after plan: %+v", got.Refs)
	}
	prs := srv.PullRequests("octo/app")
	if len(prs) != 1 || !prs[0].Draft || prs[0].Title != "GitHub Issue #12: Greet people" {
		t.Fatalf("PRs = %+v", prs)
	}
	run(baton.PhaseImplement)
	syncHead()
	got = run(baton.PhaseReview)
	// The verdict is kept with its transition; the server posts it.
	if n := srv.Count("POST /repos/octo/app/pulls/*/reviews"); n != 0 {
		t.Errorf("the review was posted %d times before its transition committed", n)
	}
	if r, ok := got.Ref(baton.RoleReview, "review_note"); !ok || !strings.HasPrefix(r.URL, "file://") {
		t.Errorf("review note ref = %+v", r)
	}
	h.serve()
	got = h.waitFor(d.ID, "the review posted", func(d *baton.Delivery) bool { _, ok := d.Ref(baton.RoleReview, "pr_review"); return ok })
	reviews := srv.Reviews("octo/app", prs[0].Number)
	if len(reviews) != 1 || reviews[0].Event != "COMMENT" || !strings.Contains(reviews[0].Body, "baton review: pass") {
		t.Fatalf("reviews = %+v", reviews)
	}
	if r, ok := got.Ref(baton.RoleReview, "pr_review"); !ok || !strings.HasPrefix(r.URL, pr.URL+"#pullrequestreview-") {
		t.Errorf("review ref = %+v", r)
	}
	// CI fails on the head: back to implement with a check ref.
	head := syncHead()
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "test", Status: "completed", Conclusion: "failure", DetailsURL: "https://ci.example/1"})
	got = run(baton.PhaseVerify)
	if got.String() != "implement/pending" {
		t.Fatalf("after failed checks: %s", got.String())
	}
	check, ok := got.Ref(baton.RoleCheck, "check_run")
	if !ok || !strings.HasPrefix(check.Label, "test: failure") || check.URL == "" {
		t.Errorf("check ref = %+v", check)
	}
	calls := 0
	run(baton.PhaseImplement)
	head = syncHead()
	run(baton.PhaseReview)
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "test", Status: "completed", Conclusion: "success"})
	got = run(baton.PhaseVerify)
	if got.String() != "deploy/pending" {
		t.Fatalf("after green checks: %s", got.String())
	}
	got = run(baton.PhaseDeploy)
	if got.String() != "close/succeeded" {
		t.Fatalf("after deploy: %s (%s)", got.String(), got.Error)
	}
	merged := srv.PullRequest("octo/app", prs[0].Number)
	if !merged.Merged || merged.Draft || merged.MergeMethod != "squash" {
		t.Errorf("PR after deploy: merged=%v draft=%v method=%s", merged.Merged, merged.Draft, merged.MergeMethod)
	}
	// The implement prompt after the failed checks points at them.
	runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
	for _, r := range runs {
		if r.Phase == baton.PhaseImplement && strings.Contains(r.Prompt, "- "+check.URL+"\n") {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d implement prompts carry the failed check's URL, want 1", calls)
	}
}

// A private repository on GitHub Free or Pro has no draft pull requests:
// GitHub answers 422. Plan opens a ready pull request instead, deploy
// merges it without marking it ready, and the delivery closes delivered.
// (Verify finds no CI: baton's own baton/<phase> statuses on the head,
// verify's pending one among them, are not waited for.)
func TestGitHubRepositoryWithoutDraftsDelivers(t *testing.T) {
	t.Parallel()
	h, srv, bare := githubSetup(t,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "done"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Fine", "feedback": ""}},
	)
	srv.DisallowDrafts("octo/app")
	d, _, err := h.svc.Insert(t.Context(), ghNew(cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	branch := "baton/" + d.ID
	srv.AddBranch("octo/app", branch, strings.Repeat("f", 40))
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview, baton.PhaseVerify, baton.PhaseDeploy} {
		if p == baton.PhaseReview {
			sha := gittest.Git(t, bare, "rev-parse", branch)
			srv.AddBranch("octo/app", branch, sha)
			for _, pr := range srv.PullRequests("octo/app") {
				srv.UpdatePullRequest("octo/app", pr.Number, func(x *githubtest.PullRequest) { x.HeadSHA = sha })
			}
		}
		got, err := h.runner.Run(t.Context(), d.ID, p, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.RunStatus == baton.StatusFailed {
			t.Fatalf("%s failed: %s", p, got.Error)
		}
		if p == baton.PhasePlan {
			if _, ok := got.Ref(baton.RoleWork, "pr"); !ok {
				t.Fatalf("plan opened no pull request in a repository without drafts: %+v", got.Refs)
			}
		}
		if p == baton.PhaseDeploy && got.String() != "close/succeeded" {
			t.Fatalf("after deploy: %s (%s)", got.String(), got.Error)
		}
	}
	prs := srv.PullRequests("octo/app")
	if len(prs) != 1 || !prs[0].Merged || prs[0].Draft {
		t.Fatalf("pull requests = %+v, want one ready pull request, merged", prs)
	}
	if n := srv.Count("GRAPHQL markPullRequestReadyForReview"); n != 0 {
		t.Errorf("deploy marked a ready pull request ready (%d mutations)", n)
	}
}
