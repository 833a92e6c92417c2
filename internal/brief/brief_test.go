package brief

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

// briefGitHub is a fake GitHub with one issue (7) and one pull request
// (24), and an opener for it.
func briefGitHub(t *testing.T) (*githubtest.Server, github.Opener) {
	t.Helper()
	srv := githubtest.NewServer(t)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash on start", Body: "It panics in main."})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 24, Title: "Fix the crash", Body: "Fixes #7",
		Diff: githubtest.DiffText("diff --git a/main.go b/main.go\n--- a/main.go\n+++ b/main.go\n@@ -1 +1,2 @@\n package main\n+// fixed\n")})
	return srv, func(context.Context, github.Repo, string) (*github.Client, error) {
		return github.New(github.Options{BaseURL: srv.URL(), Token: "t"})
	}
}

func TestReview(t *testing.T) {
	t.Parallel()
	srv, open := briefGitHub(t)
	octo := github.Repo{Host: "github.com", Owner: "octo", Name: "app"}
	b, err := Review(t.Context(), ReviewRequest{GitHub: open, Repo: github.OpenRequest{FromURL: &octo}, Number: 24})
	if err != nil {
		t.Fatal(err)
	}
	if b.Repo != octo || b.Context.PR.Title != "Fix the crash" || !strings.Contains(b.Pack.Text, "+// fixed") {
		t.Errorf("Review(#24) = repo %v, context %+v, brief:\n%s", b.Repo, b.Context, b.Pack.Text)
	}
	// Named by URL: the suggested commands name it too.
	if !strings.Contains(b.Pack.Text, "--repo octo/app") {
		t.Errorf("Review of a named repository suggests no --repo:\n%s", b.Pack.Text)
	}

	srv.ResetRequests()
	noToken := func(context.Context, github.Repo, string) (*github.Client, error) {
		return nil, baton.WrapError(baton.Invalid, github.ErrNoToken, "no GitHub token")
	}
	for _, tt := range []struct {
		name  string
		req   ReviewRequest
		code  baton.Code
		fetch bool
	}{
		{"no number", ReviewRequest{GitHub: open, Repo: github.OpenRequest{Repo: "octo/app"}}, baton.Invalid, false},
		{"a negative diff budget", ReviewRequest{GitHub: noToken, Repo: github.OpenRequest{Repo: "octo/app"}, Number: 24, DiffBudget: -1}, baton.Invalid, false},
		{"no token", ReviewRequest{GitHub: noToken, Repo: github.OpenRequest{Repo: "octo/app"}, Number: 24}, baton.Invalid, false},
		{"a pull request GitHub does not have", ReviewRequest{GitHub: open, Repo: github.OpenRequest{Repo: "octo/app"}, Number: 99}, baton.NotFound, true},
	} {
		_, err := Review(t.Context(), tt.req)
		if baton.ErrorCode(err) != tt.code || IsFetchError(err) != tt.fetch {
			t.Errorf("%s: Review error %v (fetch error %v), want code %q, fetch error %v", tt.name, err, IsFetchError(err), tt.code, tt.fetch)
		}
	}
	// Only the missing pull request was asked for: the others were
	// refused before any request.
	for _, r := range srv.Requests() {
		if !strings.Contains(r.Path, "/pulls/99") && r.GraphQLField == "" {
			t.Errorf("a refused review made the request %s", r)
		}
	}
}

func TestIssue(t *testing.T) {
	t.Parallel()
	srv, open := briefGitHub(t)
	st := fsstore.Open(t.TempDir(), fsstore.Options{})
	if _, err := st.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.Root(), "plan.md"), []byte("# plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ConfirmFiles(t.Context(), st.Root(), []string{"plan.md", "gone.md"}, "", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	repo := github.OpenRequest{Repo: "octo/app"}

	b, err := Issue(t.Context(), IssueRequest{Task: FixIssue, GitHub: open, Repo: repo, Number: 7, Comments: DefaultComments, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if b.Repo.String() != "octo/app" || b.Input.Issue.Issue.Title != "Crash on start" || !strings.Contains(b.Pack.Text, "It panics in main.") {
		t.Errorf("Issue(fix #7) = repo %v, input %+v:\n%s", b.Repo, b.Input, b.Pack.Text)
	}
	// Relevant files come from the store; a file that does not exist is
	// left out rather than pointed at.
	if want := []RelevantFile{{Path: "plan.md", Confirmed: true}}; !slices.Equal(b.Input.RelevantFiles, want) || !strings.Contains(b.Pack.Text, "plan.md") {
		t.Errorf("Issue relevant files = %+v, want %+v", b.Input.RelevantFiles, want)
	}

	srv.ResetRequests()
	b, err = Issue(t.Context(), IssueRequest{Task: ImplementFeature, Request: "add a --dry-run flag"})
	if err != nil || !strings.Contains(b.Pack.Text, "add a --dry-run flag") || b.Repo != (github.Repo{}) {
		t.Errorf("Issue(feature in words) = %v, %v", b, err)
	}
	for _, tt := range []struct {
		name  string
		req   IssueRequest
		code  baton.Code
		fetch bool
	}{
		{"too many comments", IssueRequest{Task: FixIssue, GitHub: open, Repo: repo, Number: 7, Comments: 101}, baton.Invalid, false},
		{"fix-issue without an issue", IssueRequest{Task: FixIssue, Request: "crash"}, baton.Invalid, false},
		{"an issue and a request", IssueRequest{Task: ImplementFeature, GitHub: open, Repo: repo, Number: 7, Request: "x"}, baton.Invalid, false},
		{"neither", IssueRequest{Task: ImplementFeature, Request: "  "}, baton.Invalid, false},
		{"an unknown task", IssueRequest{Task: "review", Request: "x"}, baton.Invalid, false},
		{"without GitHub access", IssueRequest{Task: FixIssue, Repo: repo, Number: 7}, baton.Internal, false},
	} {
		_, err := Issue(t.Context(), tt.req)
		if baton.ErrorCode(err) != tt.code || IsFetchError(err) != tt.fetch {
			t.Errorf("%s: Issue error %v (fetch error %v), want code %q, fetch error %v", tt.name, err, IsFetchError(err), tt.code, tt.fetch)
		}
	}
	if log := srv.RequestLog(); len(log) != 0 {
		t.Errorf("requests that fail their checks reached GitHub: %v", log)
	}
	// A pull request's number is a fetch error that says what was meant.
	_, err = Issue(t.Context(), IssueRequest{Task: FixIssue, GitHub: open, Repo: repo, Number: 24})
	if !IsFetchError(err) || !strings.Contains(err.Error(), "review-pr") {
		t.Errorf("Issue(fix #24, a pull request) = %v, want a fetch error pointing to review-pr", err)
	}
	if errors.Is(err, github.ErrNoToken) {
		t.Errorf("Issue error %v wraps ErrNoToken", err)
	}
}
