package forge_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

func newGitHub(t *testing.T) (*forge.GitHub, *githubtest.Server) {
	t.Helper()
	srv := githubtest.NewServer(t)
	srv.RequireToken(token)
	srv.AddRepo("octo/app")
	c, err := github.New(github.Options{BaseURL: srv.URL(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return &forge.GitHub{Client: c, Repo: github.Repo{Host: "github.com", Owner: "octo", Name: "app"}}, srv
}

func ghDelivery() *baton.Delivery {
	return &baton.Delivery{
		ID: "0123456789ab", Summary: "GitHub Issue #12: Sessions expire too early", Repository: "octo/app", Forge: baton.ForgeGitHub,
		Refs: []baton.Ref{{Role: baton.RoleRequest, Type: "github_issue", Label: "octo/app#12", URL: "https://github.com/octo/app/issues/12"}},
	}
}

func TestGitHubDraftPRReviewChecksMerge(t *testing.T) {
	t.Parallel()
	g, srv := newGitHub(t)
	ctx := t.Context()
	d := ghDelivery()
	srv.AddBranch("octo/app", "main", "")
	head := srv.AddBranch("octo/app", d.WorkBranch(), "")

	// Plan success opens a draft pull request: the work ref.
	ref, err := g.OpenWork(ctx, d, "main", "Sessions expire too early", "1. Fix the TTL.")
	if err != nil {
		t.Fatal(err)
	}
	prs := srv.PullRequests("octo/app")
	if len(prs) != 1 || !prs[0].Draft || prs[0].Head != d.WorkBranch() || prs[0].Base != "main" || prs[0].Body != "1. Fix the TTL." {
		t.Fatalf("pull requests = %+v, want one draft from the work branch", prs)
	}
	want := baton.Ref{Role: baton.RoleWork, Type: "pr", Label: "octo/app#" + itoa(prs[0].Number), URL: "https://github.com/octo/app/pull/" + itoa(prs[0].Number)}
	if ref != want {
		t.Errorf("work ref = %+v, want %+v", ref, want)
	}
	d.AddRef(ref)
	// Opening it again (plan re-run after a reject) keeps the pull request.
	if again, err := g.OpenWork(ctx, d, "main", "t", "b"); err != nil || again != ref {
		t.Errorf("second OpenWork = %+v, %v; want the same ref", again, err)
	}

	// The verdict is posted as a COMMENT review; its page is the review ref.
	revs, err := g.PostReview(ctx, d, forge.Review{Verdict: baton.VerdictNotPass, Summary: "No test for the TTL", Feedback: "Add one.", Author: "reviewer agent (claude)"}, "")
	if err != nil || len(revs) != 1 {
		t.Fatal(revs, err)
	}
	rev := revs[0]
	reviews := srv.Reviews("octo/app", prs[0].Number)
	if len(reviews) != 1 || reviews[0].Event != "COMMENT" || !strings.Contains(reviews[0].Body, "not_pass") || !strings.Contains(reviews[0].Body, "Add one.") {
		t.Fatalf("reviews = %+v", reviews)
	}
	if rev.Role != baton.RoleReview || !strings.Contains(rev.URL, "/pull/"+itoa(prs[0].Number)+"#pullrequestreview-") {
		t.Errorf("review ref = %+v", rev)
	}

	// Checks: one failed check run and one failed status become check refs
	// with names and URLs; a passing one does not.
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "test", Status: "completed", Conclusion: "failure", DetailsURL: "https://ci.example/test"})
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "lint", Status: "completed", Conclusion: "success"})
	srv.AddStatus("octo/app", head, githubtest.Status{Context: "ci/legacy", State: "error", TargetURL: "https://ci.example/legacy"})
	res, ok, err := g.Checks(ctx, d, head, forge.CheckWait{Timeout: time.Second, Poll: 10 * time.Millisecond})
	if err != nil || !ok {
		t.Fatal(err)
	}
	if res.Total != 3 || len(res.Failed) != 2 || len(res.Pending) != 0 {
		t.Fatalf("checks = %+v", res)
	}
	if f := res.Failed[0]; f.Role != baton.RoleCheck || f.Type != "check_run" || !strings.HasPrefix(f.Label, "test: failure") || f.URL == "" {
		t.Errorf("failed check ref = %+v", f)
	}
	if f := res.Failed[1]; f.Type != "status" || f.URL != "https://ci.example/legacy" {
		t.Errorf("failed status ref = %+v", f)
	}

	// Merge: the draft is marked ready, then squash-merged at the verified
	// head.
	m, err := g.Merge(ctx, d, nil, "main", head, "")
	if err != nil {
		t.Fatal(err)
	}
	pr := srv.PullRequest("octo/app", prs[0].Number)
	if !pr.Merged || pr.Draft || pr.MergeMethod != "squash" {
		t.Errorf("after merge: merged=%v draft=%v method=%q", pr.Merged, pr.Draft, pr.MergeMethod)
	}
	if m.Role != baton.RoleWork || m.Type != "commit" || !strings.HasSuffix(m.URL, pr.MergeCommitSHA) {
		t.Errorf("merge ref = %+v", m)
	}
}

func TestGitHubChecksWaitForRunningChecks(t *testing.T) {
	t.Parallel()
	g, srv := newGitHub(t)
	head := srv.AddBranch("octo/app", "baton/0123456789ab", "")
	d := ghDelivery()
	// No checks at all: no CI on this head once Appear passes.
	res, ok, err := g.Checks(t.Context(), d, head, forge.CheckWait{Appear: 30 * time.Millisecond, Poll: 10 * time.Millisecond})
	if err != nil || !ok || res.Total != 0 {
		t.Fatalf("no checks: %+v %v %v", res, ok, err)
	}
	// A running check is waited for until it completes.
	cr := srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "build", Status: "in_progress"})
	go func() {
		// The CI run takes a moment: the wait below must see it running
		// first. Not a wait for anything.
		time.Sleep(100 * time.Millisecond)
		srv.UpdateCheckRun("octo/app", cr.ID, func(c *githubtest.CheckRun) { c.Status, c.Conclusion = "completed", "success" })
	}()
	res, _, err = g.Checks(t.Context(), d, head, forge.CheckWait{Timeout: 10 * time.Second, Poll: 10 * time.Millisecond})
	if err != nil || res.Total != 1 || len(res.Failed) != 0 || len(res.Pending) != 0 {
		t.Fatalf("after the check completed: %+v %v", res, err)
	}
	// Still running at the timeout: reported as pending.
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "e2e", Status: "queued"})
	res, _, err = g.Checks(t.Context(), d, head, forge.CheckWait{Timeout: 50 * time.Millisecond, Poll: 10 * time.Millisecond})
	if err != nil || len(res.Pending) != 1 || res.Pending[0] != "e2e" {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	// baton's own phase statuses are not CI; a check that only borrows
	// the prefix is.
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "baton/verify", Status: "completed", Conclusion: "failure"})
	srv.AddCheckRun("octo/app", head, githubtest.CheckRun{Name: "baton/lint", Status: "completed", Conclusion: "failure"})
	res, _, err = g.Checks(t.Context(), d, head, forge.CheckWait{Timeout: 50 * time.Millisecond, Poll: 10 * time.Millisecond})
	if err != nil || len(res.Failed) != 1 || !strings.HasPrefix(res.Failed[0].Label, "baton/lint") {
		t.Fatalf("with baton/verify and baton/lint failing: %+v %v", res, err)
	}
}

// No error and no git argument ever carries the token.
func TestGitHubTokenNeverInErrors(t *testing.T) {
	t.Parallel()
	g, srv := newGitHub(t)
	d := ghDelivery()
	srv.AddBranch("octo/app", "main", "")
	srv.AddBranch("octo/app", d.WorkBranch(), "")
	srv.Fail("POST /repos/octo/app/pulls", githubtest.ServerError())
	_, err := g.OpenWork(t.Context(), d, "main", "t", "b")
	if err == nil || baton.ErrorCode(err) != baton.Unavailable {
		t.Fatalf("OpenWork against a failing server = %v, want Unavailable", err)
	}
	bad, _ := github.New(github.Options{BaseURL: srv.URL(), Token: token + "x"})
	g2 := &forge.GitHub{Client: bad, Repo: g.Repo}
	_, err2 := g2.PostReview(t.Context(), d, forge.Review{Verdict: baton.VerdictPass, Author: "a"}, "")
	_, _, err3 := g2.Checks(t.Context(), d, strings.Repeat("a", 40), forge.CheckWait{})
	for _, e := range []error{err, err2, err3} {
		if e == nil {
			t.Fatal("want an error")
		}
		if strings.Contains(e.Error(), token) || strings.Contains(baton.ErrorMessage(e), token) {
			t.Errorf("error shows the token: %v", e)
		}
	}
	url, env, err := g.Remote(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(url, token) || url != "https://github.com/octo/app.git" {
		t.Errorf("remote URL %q", url)
	}
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, token) {
		t.Error("the token is in git's environment in clear: want it only base64 in an extra header")
	}
	if !strings.Contains(joined, "extraheader") {
		t.Errorf("git env = %v, want an auth header", env)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// The draft setting: auto falls back to a ready pull request where the
// repository has no drafts, always refuses (saying what to set), never
// asks for none.
func TestGitHubDraftSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode      baton.DraftMode
		drafts    bool // the repository allows drafts
		wantDraft bool
		wantPosts int
		wantErr   bool
	}{
		{mode: "", drafts: true, wantDraft: true, wantPosts: 1},
		{mode: baton.DraftAuto, drafts: false, wantDraft: false, wantPosts: 2},
		{mode: baton.DraftAlways, drafts: false, wantPosts: 1, wantErr: true},
		{mode: baton.DraftNever, drafts: true, wantDraft: false, wantPosts: 1},
		{mode: baton.DraftNever, drafts: false, wantDraft: false, wantPosts: 1},
	} {
		t.Run(fmt.Sprintf("%s/drafts=%v", tc.mode, tc.drafts), func(t *testing.T) {
			g, srv := newGitHub(t)
			d := ghDelivery()
			d.Config.Draft = tc.mode
			if !tc.drafts {
				srv.DisallowDrafts("octo/app")
			}
			srv.AddBranch("octo/app", d.WorkBranch(), "")
			_, err := g.OpenWork(t.Context(), d, "main", "t", "b")
			if n := srv.Count("POST /repos/octo/app/pulls"); n != tc.wantPosts {
				t.Errorf("%d pull request creations, want %d", n, tc.wantPosts)
			}
			if tc.wantErr {
				if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(baton.ErrorMessage(err), "set draft to auto or never") {
					t.Fatalf("OpenWork = %v, want Invalid saying what to set", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			prs := srv.PullRequests("octo/app")
			if len(prs) != 1 || prs[0].Draft != tc.wantDraft {
				t.Fatalf("pull requests = %+v, want one with draft=%v", prs, tc.wantDraft)
			}
		})
	}
}

// An implement round pushes: the phase starts on one head and ends on
// another. Its start's pending status, or in-progress check run, on the
// head it started from ends with it, round after round, so no commit of
// the pull request shows baton/implement in progress for good.
func TestPhaseThatMovesTheHeadEndsWhereItStarted(t *testing.T) {
	t.Parallel()
	for _, app := range []bool{false, true} {
		t.Run(map[bool]string{false: "token", true: "app"}[app], func(t *testing.T) {
			t.Parallel()
			g, srv := newGitHub(t)
			if app {
				key, keyPEM := githubtest.TestAppKey()
				srv.AddApp(githubtest.App{ID: 9, Slug: "baton-team", Key: &key.PublicKey})
				srv.Install(9, "octo/app")
				a, err := github.NewApp(9, keyPEM, "")
				if err != nil {
					t.Fatal(err)
				}
				in, err := a.Installation(t.Context(), srv.URL(), g.Repo)
				if err != nil {
					t.Fatal(err)
				}
				if g.Client, err = github.New(github.Options{BaseURL: srv.URL(), Installation: in}); err != nil {
					t.Fatal(err)
				}
			}
			d := ghDelivery()
			heads := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)}
			pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Title: "t", Head: d.WorkBranch(), HeadSHA: heads[0], Base: "main"})
			d.AddRef(baton.Ref{Role: baton.RoleWork, Type: "pr", Label: "octo/app#" + itoa(pr.Number), URL: "https://github.com/octo/app/pull/" + itoa(pr.Number)})
			for round := range 2 {
				rep, ok, err := g.ReportPhase(t.Context(), d, forge.PhaseReport{Phase: baton.PhaseImplement, State: "pending", Description: "implement running"})
				if err != nil || !ok {
					t.Fatalf("round %d: start report = %v, %v", round+1, ok, err)
				}
				srv.UpdatePullRequest("octo/app", pr.Number, func(p *githubtest.PullRequest) { p.HeadSHA = heads[round+1] })
				rep.State, rep.Description = "success", "implement succeeded"
				if _, ok, err := g.ReportPhase(t.Context(), d, rep); err != nil || !ok {
					t.Fatalf("round %d: end report = %v, %v", round+1, ok, err)
				}
			}
			var got []string
			if app {
				for _, cr := range srv.CheckRuns("octo/app") {
					got = append(got, cr.HeadSHA[:1]+" "+cr.Name+" "+cr.Status+" "+cr.Conclusion+": "+cr.Title)
				}
			} else {
				for _, h := range heads {
					for _, st := range srv.Statuses("octo/app", h) {
						got = append(got, h[:1]+" "+st.Context+" "+st.State+": "+st.Description)
					}
				}
			}
			want := []string{
				"a baton/implement completed success: implement succeeded (the work moved on to bbbbbbb)",
				"b baton/implement completed success: implement succeeded",
				"b baton/implement completed success: implement succeeded (the work moved on to ccccccc)",
				"c baton/implement completed success: implement succeeded",
			}
			if !app {
				want = []string{
					"a baton/implement pending: implement running",
					"a baton/implement success: implement succeeded (the work moved on to bbbbbbb)",
					"b baton/implement success: implement succeeded",
					"b baton/implement pending: implement running",
					"b baton/implement success: implement succeeded (the work moved on to ccccccc)",
					"c baton/implement success: implement succeeded",
				}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("what the pull request's commits show:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// A reject's line notes become the review's line comments, each ref'd
// at its own URL; notes GitHub cannot place still reach the pull
// request, listed in the review's body.
func TestGitHubRejectLineNotes(t *testing.T) {
	t.Parallel()
	g, srv := newGitHub(t)
	ctx := t.Context()
	pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 7, Author: "alice", Files: []githubtest.File{
		{Filename: "auth/jwt.go", Additions: 2, Patch: "@@ -1,2 +1,4 @@\n package auth\n+\n+const TTL = 60\n func x() {}"},
		{Filename: "docs/plan.md", Status: "added", Additions: 2, Patch: "@@ -0,0 +1,2 @@\n+# Plan\n+1. Fix the TTL."},
	}})
	d := ghDelivery()
	d.AddRef(baton.Ref{Role: baton.RoleWork, Type: "pr", Label: "octo/app#7", URL: "https://github.com/octo/app/pull/7"})
	lines := []baton.LineNote{{Path: "auth/jwt.go", Line: 3, Body: "60 what? seconds?"}, {Path: "docs/plan.md", Line: 2, Body: "say which TTL"}}
	refs, err := g.PostReview(ctx, d, forge.Review{Summary: "Units are unclear", Author: "ana", Reject: true, Lines: lines}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := srv.ReviewComments("octo/app", pr.Number)
	if len(got) != 2 || got[0].Path != "auth/jwt.go" || got[0].Line != 3 || got[0].Body != "60 what? seconds?" || got[1].Path != "docs/plan.md" || got[1].Line != 2 {
		t.Fatalf("line comments = %+v", got)
	}
	body := srv.Reviews("octo/app", pr.Number)[0].Body
	if !strings.Contains(body, "- `auth/jwt.go:3`: 60 what? seconds?") || !strings.Contains(body, "rejected by ana") {
		t.Errorf("review body = %q, want the notes listed", body)
	}
	want := []baton.Ref{
		{Role: baton.RoleReview, Type: "pr_review", Label: "rejected by ana", URL: fmt.Sprintf("https://github.com/octo/app/pull/7#pullrequestreview-%d", got[0].ReviewID)},
		{Role: baton.RoleReview, Type: baton.RefReviewLine, Label: "auth/jwt.go:3", URL: fmt.Sprintf("https://github.com/octo/app/pull/7#discussion_r%d", got[0].ID)},
		{Role: baton.RoleReview, Type: baton.RefReviewLine, Label: "docs/plan.md:2", URL: fmt.Sprintf("https://github.com/octo/app/pull/7#discussion_r%d", got[1].ID)},
	}
	if fmt.Sprint(refs) != fmt.Sprint(want) {
		t.Errorf("refs = %+v\nwant %+v", refs, want)
	}

	// A line the diff does not show: the review is posted without line
	// comments, its body listing the note, and the note's ref is the
	// review.
	refs, err = g.PostReview(ctx, d, forge.Review{Summary: "Again", Author: "ana", Reject: true, Lines: []baton.LineNote{{Path: "auth/jwt.go", Line: 90, Body: "far away"}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	reviews := srv.Reviews("octo/app", pr.Number)
	if len(reviews) != 2 || !strings.Contains(reviews[1].Body, "`auth/jwt.go:90`: far away") || len(srv.ReviewComments("octo/app", pr.Number)) != 2 {
		t.Fatalf("reviews = %+v", reviews)
	}
	if len(refs) != 2 || refs[1].URL != refs[0].URL || refs[1].Label != "auth/jwt.go:90" {
		t.Errorf("refs = %+v, want the note's ref at the review", refs)
	}
}
