package github_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

const testToken = "ghp_T0kenThatMustNeverLeak1234567890"

var octo = github.Repo{Host: "github.com", Owner: "octo", Name: "app"}

// newClient returns a client for srv with the test token; the server
// requires that token.
func newClient(t *testing.T, srv *githubtest.Server) *github.Client {
	t.Helper()
	srv.RequireToken(testToken)
	c, err := github.New(github.Options{BaseURL: srv.URL(), Token: testToken, UserAgent: "baton-test"})
	if err != nil {
		t.Fatalf("github.New: %v", err)
	}
	return c
}

func wantCode(t *testing.T, err error, code baton.Code) {
	t.Helper()
	if got := baton.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

func TestPullRequest(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	added := srv.AddPullRequest("octo/app", githubtest.PullRequest{
		Number: 12, Title: "Fix the frobnicator", Body: "Fixes #3", Author: "alice",
		Head: "fix-frob", Base: "main", Labels: []string{"bug"},
		Files: []githubtest.File{
			{Filename: "a.go", Additions: 3, Deletions: 1, Patch: "@@ -1 +1,3 @@\n-x\n+y\n+z\n+w\n"},
			{Filename: "b.go", Status: "added", Additions: 10},
		},
	})

	pr, err := c.PullRequest(t.Context(), octo, 12)
	if err != nil {
		t.Fatalf("PullRequest: %v", err)
	}
	mergeable := true
	want := &github.PullRequest{
		Repo: octo, Number: 12, NodeID: added.NodeID, Title: "Fix the frobnicator", Body: "Fixes #3",
		State: "open", Mergeable: &mergeable, MergeableState: "clean", Author: "alice",
		URL:       "https://github.com/octo/app/pull/12",
		Head:      github.Branch{Ref: "fix-frob", SHA: added.HeadSHA, Repo: octo},
		Base:      github.Branch{Ref: "main", SHA: added.BaseSHA, Repo: octo},
		Additions: 13, Deletions: 1, ChangedFiles: 2, Commits: 1, Labels: []string{"bug"},
		CreatedAt: added.CreatedAt, UpdatedAt: added.UpdatedAt,
	}
	if diff := cmp.Diff(want, pr); diff != "" {
		t.Errorf("PullRequest(octo/app#12) mismatch (-want +got):\n%s", diff)
	}
	if got, want := srv.RequestLog(), []string{"GET /repos/octo/app/pulls/12"}; !cmp.Equal(got, want) {
		t.Errorf("requests = %q, want %q", got, want)
	}
	req := srv.Requests()[0]
	if got := req.Header.Get("Authorization"); got != "Bearer [redacted]" {
		t.Errorf("recorded Authorization = %q, want the redacted bearer token", got)
	}
	if got := req.Header.Get("User-Agent"); got != "baton-test" {
		t.Errorf("User-Agent = %q, want baton-test", got)
	}
}

func TestPullRequestFilesPaginates(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 5, Files: githubtest.GenerateFiles(250)})

	files, err := c.PullRequestFiles(t.Context(), octo, 5)
	if err != nil {
		t.Fatalf("PullRequestFiles: %v", err)
	}
	if len(files) != 250 {
		t.Fatalf("PullRequestFiles returned %d files, want 250", len(files))
	}
	for i, f := range files {
		if want := fmt.Sprintf("gen/file%05d.go", i+1); f.Path != want || f.Additions != 1 || f.Status != "modified" {
			t.Fatalf("file %d = %+v, want %s, modified, +1", i, f, want)
		}
	}
	wantLog := []string{
		"GET /repos/octo/app/pulls/5/files?per_page=100",
		"GET /repos/octo/app/pulls/5/files?page=2&per_page=100",
		"GET /repos/octo/app/pulls/5/files?page=3&per_page=100",
	}
	if diff := cmp.Diff(wantLog, srv.RequestLog()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}

func TestPullRequestFilesStopsAtGitHubsCap(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 5, Files: githubtest.GenerateFiles(3100)})
	pr, err := c.PullRequest(t.Context(), octo, 5)
	if err != nil {
		t.Fatal(err)
	}
	files, err := c.PullRequestFiles(t.Context(), octo, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3000 || pr.ChangedFiles != 3100 {
		t.Errorf("got %d files of ChangedFiles=%d, want 3000 of 3100 (GitHub lists at most 3000)", len(files), pr.ChangedFiles)
	}
	if n := srv.Count("GET /repos/octo/app/pulls/5/files"); n != 30 {
		t.Errorf("file list requests = %d, want 30", n)
	}
}

func TestPullRequestDiff(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	files := []githubtest.File{
		{Filename: "main.go", Additions: 1, Deletions: 1, Patch: "@@ -1 +1 @@\n-old\n+new\n"},
		{Filename: "gone.txt", Status: "removed", Deletions: 1, Patch: "@@ -1 +0,0 @@\n-bye\n"},
	}
	added := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 8, Files: files})

	rc, err := c.PullRequestDiff(t.Context(), octo, 8)
	if err != nil {
		t.Fatalf("PullRequestDiff: %v", err)
	}
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read diff: %v", err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("close diff: %v", err)
	}
	var want bytes.Buffer
	if err := githubtest.FileDiff(added.Files)(&want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("diff mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(got), "diff --git a/main.go b/main.go\n") || !strings.Contains(string(got), "+++ /dev/null\n") {
		t.Errorf("diff lacks git headers:\n%s", got)
	}
	req := srv.Requests()[0]
	if req.Path != "/repos/octo/app/pulls/8" || req.Header.Get("Accept") != github.DiffMediaType {
		t.Errorf("request = %s Accept %q, want the pull request endpoint with %s", req, req.Header.Get("Accept"), github.DiffMediaType)
	}
}

// TestPullRequestDiffStreams reads a 100 MB diff of 5000 files and checks
// that the bytes arrive intact while far less than the diff is allocated:
// nothing between the server's generator and this reader buffers it.
func TestPullRequestDiffStreams(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("streams 100 MB")
	}
	const size = 100 << 20
	srv := githubtest.NewServer(t, githubtest.WithoutDiffLimits())
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 9, Diff: githubtest.LargeDiff(5000, size)})

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rc, err := c.PullRequestDiff(t.Context(), octo, 9)
	if err != nil {
		t.Fatalf("PullRequestDiff: %v", err)
	}
	defer rc.Close()
	// Count file headers across read boundaries without allocating: the
	// last few bytes of each read are kept in front of the next one.
	const keep = len("\ndiff --git ") - 1
	buf := make([]byte, keep+64<<10)
	var files, carried int
	var n int64
	for {
		k, err := rc.Read(buf[carried:])
		window := buf[:carried+k]
		files += bytes.Count(window, []byte("\ndiff --git "))
		carried = min(keep, len(window))
		copy(buf, window[len(window)-carried:])
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read diff after %d bytes: %v", n, err)
		}
	}
	runtime.ReadMemStats(&after)
	if n != size {
		t.Errorf("read %d bytes, want %d", n, size)
	}
	if files+1 != 5000 { // the first header has no newline before it
		t.Errorf("saw %d file headers, want 5000", files+1)
	}
	t.Logf("streamed %d bytes, %d file headers, allocated %d KB", n, files+1, (after.TotalAlloc-before.TotalAlloc)>>10)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("allocated %d MB while streaming a %d MB diff: something buffers it", alloc>>20, size>>20)
	}
}

func TestPullRequestDiffTooLarge(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 4, Files: githubtest.GenerateFiles(301)})
	_, err := c.PullRequestDiff(t.Context(), octo, 4)
	wantCode(t, err, baton.Invalid)
	if !errors.Is(err, github.ErrDiffTooLarge) {
		t.Errorf("PullRequestDiff = %v, want ErrDiffTooLarge", err)
	}
}

// TestReviewPRBudget is the review-pr brief's goal: metadata, files, diff
// and linked issues of a pull request with under 100 files in 4 requests.
func TestReviewPRBudget(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 3, Title: "Frobnicator breaks"})
	srv.AddIssue("octo/app", githubtest.Issue{Number: 4, Title: "Also this"})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12, Files: githubtest.GenerateFiles(99), ClosingIssues: []int{3, 4}})
	ctx := t.Context()

	if _, err := c.PullRequest(ctx, octo, 12); err != nil {
		t.Fatal(err)
	}
	files, err := c.PullRequestFiles(ctx, octo, 12)
	if err != nil || len(files) != 99 {
		t.Fatalf("PullRequestFiles = %d files, %v; want 99", len(files), err)
	}
	rc, err := c.PullRequestDiff(ctx, octo, 12)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	issues, err := c.ClosingIssues(ctx, octo, 12)
	if err != nil {
		t.Fatal(err)
	}
	want := []github.LinkedIssue{
		{Repo: octo, Number: 3, Title: "Frobnicator breaks", URL: "https://github.com/octo/app/issues/3", State: "open"},
		{Repo: octo, Number: 4, Title: "Also this", URL: "https://github.com/octo/app/issues/4", State: "open"},
	}
	if diff := cmp.Diff(want, issues); diff != "" {
		t.Errorf("ClosingIssues mismatch (-want +got):\n%s", diff)
	}
	wantLog := []string{
		"GET /repos/octo/app/pulls/12",
		"GET /repos/octo/app/pulls/12/files?per_page=100",
		"GET /repos/octo/app/pulls/12",
		"GRAPHQL closingIssuesReferences",
	}
	if diff := cmp.Diff(wantLog, srv.RequestLog()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}

func TestClosingIssuesPaginates(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	var nums []int
	for i := 1; i <= 150; i++ {
		srv.AddIssue("octo/app", githubtest.Issue{Number: i})
		nums = append(nums, i)
	}
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 200, ClosingIssues: nums})
	issues, err := c.ClosingIssues(t.Context(), octo, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 150 || issues[149].Number != 150 || issues[0].Title != "Issue 1" {
		t.Errorf("ClosingIssues returned %d issues, want 150 in order", len(issues))
	}
	if n := srv.Count("GRAPHQL closingIssuesReferences"); n != 2 {
		t.Errorf("GraphQL requests = %d, want 2", n)
	}
}

func TestClosingIssuesNone(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1})
	issues, err := c.ClosingIssues(t.Context(), octo, 1)
	if err != nil || issues == nil || len(issues) != 0 {
		t.Errorf("ClosingIssues = %#v, %v; want an empty, non-nil list", issues, err)
	}
}

func TestIssueWithRecentComments(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash on start", Body: "Steps...", Author: "bob",
		Labels: []string{"bug", "p1"}})
	for i := 1; i <= 250; i++ {
		srv.AddComment("octo/app", 7, githubtest.Comment{Body: fmt.Sprintf("comment %d", i)})
	}
	tests := []struct {
		recent    int
		wantFirst int // first comment number returned
		wantLog   []string
	}{
		{0, 0, []string{"GET /repos/octo/app/issues/7"}},
		{30, 221, []string{"GET /repos/octo/app/issues/7", "GET /repos/octo/app/issues/7/comments?page=3&per_page=100"}},
		{60, 191, []string{"GET /repos/octo/app/issues/7", "GET /repos/octo/app/issues/7/comments?page=2&per_page=100",
			"GET /repos/octo/app/issues/7/comments?page=3&per_page=100"}},
		{1000, 1, []string{"GET /repos/octo/app/issues/7", "GET /repos/octo/app/issues/7/comments?page=1&per_page=100",
			"GET /repos/octo/app/issues/7/comments?page=2&per_page=100", "GET /repos/octo/app/issues/7/comments?page=3&per_page=100"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.recent), func(t *testing.T) {
			srv.ResetRequests()
			is, err := c.Issue(t.Context(), octo, 7, github.IssueOptions{RecentComments: tt.recent})
			if err != nil {
				t.Fatal(err)
			}
			if is.Title != "Crash on start" || is.Author != "bob" || is.State != "open" || is.CommentCount != 250 ||
				!cmp.Equal(is.Labels, []string{"bug", "p1"}) || is.URL != "https://github.com/octo/app/issues/7" || is.IsPullRequest {
				t.Errorf("Issue = %+v", is)
			}
			wantN := min(tt.recent, 250)
			if len(is.Comments) != wantN {
				t.Fatalf("got %d comments, want %d", len(is.Comments), wantN)
			}
			if wantN > 0 {
				if first, last := is.Comments[0].Body, is.Comments[wantN-1].Body; first != fmt.Sprintf("comment %d", tt.wantFirst) || last != "comment 250" {
					t.Errorf("comments run %q..%q, want comment %d..comment 250", first, last, tt.wantFirst)
				}
			}
			if diff := cmp.Diff(tt.wantLog, srv.RequestLog()); diff != "" {
				t.Errorf("requests mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIssueDetectsClosedUpstream(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 2})
	srv.UpdateIssue("octo/app", 2, func(is *githubtest.Issue) { is.State, is.StateReason = "closed", "not_planned" })
	is, err := c.Issue(t.Context(), octo, 2, github.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if is.State != "closed" || is.StateReason != "not_planned" || is.ClosedAt.IsZero() {
		t.Errorf("Issue = state %q reason %q closed %v, want closed/not_planned", is.State, is.StateReason, is.ClosedAt)
	}
}

func TestIssueCommentsAndReviewComments(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 3})
	for i := 1; i <= 120; i++ {
		srv.AddComment("octo/app", 3, githubtest.Comment{Body: fmt.Sprintf("c%d", i), Author: "carol"})
	}
	first := srv.AddReviewComment("octo/app", 3, githubtest.ReviewComment{Path: "a.go", Line: 10, Body: "nit: rename",
		DiffHunk: "@@ -1,3 +1,4 @@"})
	srv.AddReviewComment("octo/app", 3, githubtest.ReviewComment{Path: "a.go", Line: 10, Body: "done", InReplyTo: first.ID, Author: "alice"})
	srv.AddReviewComment("octo/app", 3, githubtest.ReviewComment{Path: "b.go", StartLine: 2, Line: 5, Side: "LEFT", Body: "why?"})
	srv.AddReviewComment("octo/app", 3, githubtest.ReviewComment{Path: "c.go", Body: "outdated"})

	comments, err := c.IssueComments(t.Context(), octo, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 120 || comments[119].Body != "c120" || comments[0].Author != "carol" ||
		!strings.HasPrefix(comments[0].URL, "https://github.com/octo/app/pull/3#issuecomment-") {
		t.Errorf("IssueComments = %d comments, first %+v", len(comments), comments[0])
	}
	rcs, err := c.ReviewComments(t.Context(), octo, 3)
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Path, Body, Side, Author string
		Line, StartLine          int
		Reply                    bool
		Commit                   string
	}
	var got []view
	for _, rc := range rcs {
		got = append(got, view{rc.Path, rc.Body, rc.Side, rc.Author, rc.Line, rc.StartLine, rc.InReplyTo == first.ID, rc.CommitID})
		if !strings.HasPrefix(rc.URL, "https://github.com/octo/app/pull/3#discussion_r") || rc.ID == 0 || rc.ReviewID == 0 {
			t.Errorf("review comment %+v lacks URL or ids", rc)
		}
	}
	want := []view{
		{"a.go", "nit: rename", "RIGHT", "octocat", 10, 0, false, pr.HeadSHA},
		{"a.go", "done", "RIGHT", "alice", 10, 0, true, pr.HeadSHA},
		{"b.go", "why?", "LEFT", "octocat", 5, 2, false, pr.HeadSHA},
		{"c.go", "outdated", "RIGHT", "octocat", 0, 0, false, pr.HeadSHA},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReviewComments mismatch (-want +got):\n%s", diff)
	}
	if rcs[0].DiffHunk != "@@ -1,3 +1,4 @@" {
		t.Errorf("DiffHunk = %q", rcs[0].DiffHunk)
	}
	if n := srv.Count("GET /repos/octo/app/issues/3/comments"); n != 2 {
		t.Errorf("comment list requests = %d, want 2", n)
	}
}

func TestClosingPullRequests(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, Title: "First try", State: "closed", ClosingIssues: []int{1}})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 3, Title: "Second try", Draft: true, ClosingIssues: []int{1}})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 4, Title: "Unrelated"})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 5, Title: "Landed", Merged: true, ClosingIssues: []int{1}})

	prs, err := c.ClosingPullRequests(t.Context(), octo, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []github.LinkedPullRequest{
		{Repo: octo, Number: 2, Title: "First try", URL: "https://github.com/octo/app/pull/2", State: "closed"},
		{Repo: octo, Number: 3, Title: "Second try", URL: "https://github.com/octo/app/pull/3", State: "open", Draft: true},
		{Repo: octo, Number: 5, Title: "Landed", URL: "https://github.com/octo/app/pull/5", State: "merged"},
	}
	if diff := cmp.Diff(want, prs); diff != "" {
		t.Errorf("ClosingPullRequests mismatch (-want +got):\n%s", diff)
	}
	_, err = c.ClosingPullRequests(t.Context(), octo, 4) // a pull request, not an issue
	wantCode(t, err, baton.NotFound)
}

func TestListIssues(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 130; i++ {
		labels := []string{"agent"}
		if i%2 == 0 {
			labels = append(labels, "Bug")
		}
		srv.AddIssue("octo/app", githubtest.Issue{Number: i, Labels: labels, CreatedAt: base.Add(time.Duration(i) * time.Hour)})
	}
	srv.UpdateIssue("octo/app", 130, func(is *githubtest.Issue) { is.State = "closed" })
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 131, Labels: []string{"agent", "bug"}})

	got, err := c.ListIssues(t.Context(), octo, github.IssueFilter{Labels: []string{"agent", "bug"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 64 { // even numbers 2..128 open; 130 closed; 131 is a pull request
		t.Fatalf("ListIssues returned %d issues, want 64", len(got))
	}
	if got[0].Number != 128 || got[63].Number != 2 {
		t.Errorf("ListIssues order runs #%d..#%d, want newest #128 first to #2", got[0].Number, got[63].Number)
	}
	all, err := c.ListIssues(t.Context(), octo, github.IssueFilter{State: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 130 {
		t.Errorf("ListIssues(all) = %d, want 130 (pull requests left out)", len(all))
	}
	if n := srv.Count("GET /repos/octo/app/issues"); n != 1+2 {
		t.Errorf("list requests = %d, want 1 + 2 pages", n)
	}
	_, err = c.ListIssues(t.Context(), octo, github.IssueFilter{State: "merged"})
	wantCode(t, err, baton.Invalid)
}

func TestChecks(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Head: "feature/x"})
	sha := pr.HeadSHA

	// No checks yet: success with nothing listed.
	sum, err := c.Checks(t.Context(), octo, sha)
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != github.CheckSuccess || len(sum.Checks) != 0 {
		t.Errorf("Checks with none = %+v, want success and no checks", sum)
	}

	for i := 0; i < 130; i++ {
		srv.AddCheckRun("octo/app", sha, githubtest.CheckRun{Name: fmt.Sprintf("job-%03d", i), Status: "completed", Conclusion: "success"})
	}
	slow := srv.AddCheckRun("octo/app", sha, githubtest.CheckRun{Name: "integration", Status: "in_progress", DetailsURL: "https://ci.example/42"})
	srv.AddStatus("octo/app", sha, githubtest.Status{Context: "ci/legacy", State: "pending"})
	srv.AddStatus("octo/app", sha, githubtest.Status{Context: "ci/legacy", State: "success", TargetURL: "https://legacy.example/1"})
	srv.AddStatus("octo/app", sha, githubtest.Status{Context: "lint", State: "success"})

	srv.ResetRequests()
	sum, err = c.Checks(t.Context(), octo, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != github.CheckPending || len(sum.Checks) != 133 {
		t.Fatalf("Checks = %s with %d checks, want pending with 133", sum.State, len(sum.Checks))
	}
	if p := sum.Pending(); len(p) != 1 || p[0].Name != "integration" || p[0].DetailsURL != "https://ci.example/42" {
		t.Errorf("Pending = %+v, want the integration run", p)
	}
	wantLog := []string{
		"GET /repos/octo/app/commits/feature/x/check-runs?per_page=100",
		"GET /repos/octo/app/commits/feature/x/check-runs?page=2&per_page=100",
		"GET /repos/octo/app/commits/feature/x/status?per_page=100",
	}
	if diff := cmp.Diff(wantLog, srv.RequestLog()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}

	// The run fails, then a status fails too.
	srv.UpdateCheckRun("octo/app", slow.ID, func(cr *githubtest.CheckRun) { cr.Status, cr.Conclusion = "completed", "timed_out" })
	srv.AddStatus("octo/app", sha, githubtest.Status{Context: "lint", State: "error", TargetURL: "https://lint.example/9"})
	sum, err = c.Checks(t.Context(), octo, sha)
	if err != nil {
		t.Fatal(err)
	}
	type failing struct {
		Kind github.CheckKind
		Name string
		URL  string
	}
	var got []failing
	for _, f := range sum.Failing() {
		got = append(got, failing{f.Kind, f.Name, f.URL})
	}
	want := []failing{
		{github.KindCheckRun, "integration", fmt.Sprintf("https://github.com/octo/app/runs/%d", slow.ID)},
		{github.KindStatus, "lint", "https://lint.example/9"},
	}
	if sum.State != github.CheckFailure || !cmp.Equal(want, got) {
		t.Errorf("Checks = %s, failing %+v; want failure, %+v", sum.State, got, want)
	}

	// Fixed: the run turns green and the status passes.
	srv.UpdateCheckRun("octo/app", slow.ID, func(cr *githubtest.CheckRun) { cr.Conclusion = "success" })
	srv.AddStatus("octo/app", sha, githubtest.Status{Context: "lint", State: "success"})
	sum, err = c.Checks(t.Context(), octo, sha)
	if err != nil || sum.State != github.CheckSuccess {
		t.Errorf("Checks after fix = %v, %v; want success", sum.State, err)
	}

	_, err = c.Checks(t.Context(), octo, "no-such-branch")
	wantCode(t, err, baton.Invalid)
	_, err = c.Checks(t.Context(), octo, "../../etc")
	wantCode(t, err, baton.Invalid)
}

func TestCreatePullRequestAndMarkReady(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddBranch("octo/app", "baton/issue-7", "")
	ctx := t.Context()

	pr, err := c.CreatePullRequest(ctx, octo, github.NewPullRequest{Head: "baton/issue-7", Base: "main", Title: "Fix #7",
		Body: "Body with \"quotes\", `ticks` and\nnewlines; $(rm -rf /)", Draft: true})
	if err != nil {
		t.Fatalf("CreatePullRequest: %v", err)
	}
	if !pr.Draft || pr.Author != githubtest.DefaultViewer || pr.Head.Ref != "baton/issue-7" || pr.URL != fmt.Sprintf("https://github.com/octo/app/pull/%d", pr.Number) {
		t.Errorf("CreatePullRequest = %+v", pr)
	}
	stored := srv.PullRequest("octo/app", pr.Number)
	if stored.Body != "Body with \"quotes\", `ticks` and\nnewlines; $(rm -rf /)" || !stored.Draft {
		t.Errorf("stored pull request body %q draft %v, want the exact body as a draft", stored.Body, stored.Draft)
	}

	_, err = c.CreatePullRequest(ctx, octo, github.NewPullRequest{Head: "baton/issue-7", Base: "main", Title: "again"})
	wantCode(t, err, baton.Conflict)
	_, err = c.CreatePullRequest(ctx, octo, github.NewPullRequest{Head: "not-pushed", Base: "main", Title: "x"})
	wantCode(t, err, baton.Invalid)

	srv.ResetRequests()
	if err := c.MarkReadyForReview(ctx, octo, pr.Number); err != nil {
		t.Fatalf("MarkReadyForReview: %v", err)
	}
	if srv.PullRequest("octo/app", pr.Number).Draft {
		t.Error("pull request is still a draft after MarkReadyForReview")
	}
	want := []string{fmt.Sprintf("GET /repos/octo/app/pulls/%d", pr.Number), "GRAPHQL markPullRequestReadyForReview"}
	if diff := cmp.Diff(want, srv.RequestLog()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
	srv.ResetRequests()
	if err := c.MarkReadyForReview(ctx, octo, pr.Number); err != nil {
		t.Fatalf("MarkReadyForReview again: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("MarkReadyForReview on a ready pull request made %d requests, want 1", n)
	}

	closed := srv.AddPullRequest("octo/app", githubtest.PullRequest{Draft: true, State: "closed"})
	err = c.MarkReadyForReview(ctx, octo, closed.Number)
	wantCode(t, err, baton.Invalid)
}

func TestCreateReviewAndComment(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12, Author: "alice"})
	mine := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 13, Author: githubtest.DefaultViewer})
	ctx := t.Context()

	me, err := c.Viewer(ctx)
	if err != nil || me.Login != githubtest.DefaultViewer || me.URL != "https://github.com/hubot" {
		t.Fatalf("Viewer = %+v, %v", me, err)
	}

	body := "Verdict: changes needed.\n\n- \"quoted\" `code` $(not a shell)"
	rv, err := c.CreateReview(ctx, octo, 12, github.NewReview{Event: github.EventRequestChanges, Body: body, CommitID: pr.HeadSHA})
	if err != nil {
		t.Fatalf("CreateReview: %v", err)
	}
	if rv.State != "CHANGES_REQUESTED" || rv.Author != githubtest.DefaultViewer || rv.CommitID != pr.HeadSHA ||
		rv.URL != fmt.Sprintf("https://github.com/octo/app/pull/12#pullrequestreview-%d", rv.ID) {
		t.Errorf("CreateReview = %+v", rv)
	}
	posted := srv.Reviews("octo/app", 12)
	if len(posted) != 1 || posted[0].Body != body || posted[0].Event != "REQUEST_CHANGES" {
		t.Errorf("posted reviews = %+v, want one REQUEST_CHANGES with the exact body", posted)
	}

	if _, err := c.CreateReview(ctx, octo, 12, github.NewReview{Event: github.EventApprove}); err != nil {
		t.Errorf("approve: %v", err)
	}
	_, err = c.CreateReview(ctx, octo, mine.Number, github.NewReview{Event: github.EventApprove})
	wantCode(t, err, baton.Invalid)
	if !strings.Contains(err.Error(), "approve your own pull request") {
		t.Errorf("own approval error = %v, want GitHub's reason", err)
	}

	srv.ResetRequests()
	_, err = c.CreateReview(ctx, octo, 12, github.NewReview{Event: github.EventComment})
	wantCode(t, err, baton.Invalid)
	_, err = c.CreateReview(ctx, octo, 12, github.NewReview{Event: "LGTM", Body: "x"})
	wantCode(t, err, baton.Invalid)
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("invalid reviews made %d requests, want 0", n)
	}

	cm, err := c.CreateComment(ctx, octo, 12, body)
	if err != nil {
		t.Fatalf("CreateComment: %v", err)
	}
	if cm.Body != body || cm.Author != githubtest.DefaultViewer || cm.URL != fmt.Sprintf("https://github.com/octo/app/pull/12#issuecomment-%d", cm.ID) {
		t.Errorf("CreateComment = %+v", cm)
	}
	if got := srv.Comments("octo/app", 12); len(got) != 1 || got[0].Body != body {
		t.Errorf("stored comments = %+v", got)
	}
	_, err = c.CreateComment(ctx, octo, 12, "  ")
	wantCode(t, err, baton.Invalid)
}

func TestMerge(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1})
	pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, ClosingIssues: []int{1}})
	ctx := t.Context()

	// The head moved after checks were read: refuse.
	_, err := c.Merge(ctx, octo, 2, github.MergeOptions{SHA: strings.Repeat("0", 40)})
	wantCode(t, err, baton.Conflict)

	res, err := c.Merge(ctx, octo, 2, github.MergeOptions{SHA: pr.HeadSHA})
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	got := srv.PullRequest("octo/app", 2)
	if !res.Merged || res.SHA != got.MergeCommitSHA || got.MergeMethod != "squash" || got.State != "closed" {
		t.Errorf("Merge = %+v, stored %+v; want a squash merge", res, got)
	}
	if is, err := c.Issue(ctx, octo, 1, github.IssueOptions{}); err != nil || is.State != "closed" {
		t.Errorf("linked issue after merge = %v, %v; want closed", is, err)
	}
	_, err = c.Merge(ctx, octo, 2, github.MergeOptions{})
	wantCode(t, err, baton.Conflict) // already merged: 405

	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 3, MergeableState: "dirty"})
	_, err = c.Merge(ctx, octo, 3, github.MergeOptions{Method: github.MergeRebase})
	wantCode(t, err, baton.Conflict)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 4, Draft: true})
	_, err = c.Merge(ctx, octo, 4, github.MergeOptions{})
	wantCode(t, err, baton.Conflict)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 5})
	if _, err := c.Merge(ctx, octo, 5, github.MergeOptions{Method: github.MergeCommit}); err != nil {
		t.Fatal(err)
	}
	if m := srv.PullRequest("octo/app", 5).MergeMethod; m != "merge" {
		t.Errorf("merge method = %q, want merge", m)
	}
	_, err = c.Merge(ctx, octo, 5, github.MergeOptions{Method: "fast-forward"})
	wantCode(t, err, baton.Invalid)
}

func TestEnterpriseServer(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t, githubtest.Enterprise())
	c := newClient(t, srv)
	if !strings.HasSuffix(c.BaseURL(), "/api/v3/") || !strings.HasSuffix(c.GraphQLURL(), "/api/graphql") {
		t.Fatalf("BaseURL %s GraphQLURL %s, want /api/v3/ and /api/graphql", c.BaseURL(), c.GraphQLURL())
	}
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "On GHE"})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, ClosingIssues: []int{1}})
	if _, err := c.PullRequest(t.Context(), octo, 2); err != nil {
		t.Fatal(err)
	}
	issues, err := c.ClosingIssues(t.Context(), octo, 2)
	if err != nil || len(issues) != 1 || issues[0].Title != "On GHE" {
		t.Errorf("ClosingIssues on GHE = %+v, %v", issues, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Files: githubtest.GenerateFiles(150)})
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := c.PullRequestFiles(context.Background(), octo, 1)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := len(srv.Requests()); n != 16 {
		t.Errorf("requests = %d, want 16", n)
	}
}

// BenchmarkPullRequestDiff measures streaming a 10 MB diff from the fake
// through the client (bytes/s and allocations per diff).
func BenchmarkPullRequestDiff(b *testing.B) {
	const size = 10 << 20
	srv := githubtest.NewServer(b, githubtest.WithoutDiffLimits())
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Diff: githubtest.LargeDiff(500, size)})
	c, err := github.New(github.Options{BaseURL: srv.URL(), Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		rc, err := c.PullRequestDiff(context.Background(), octo, 1)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		rc.Close()
	}
}

func TestCreateReviewWithLineComments(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12, Author: "alice", Files: []githubtest.File{
		{Filename: "auth/jwt.go", Additions: 2, Deletions: 1, Patch: "@@ -10,3 +10,4 @@ func Check() {\n \tok := parse()\n-\treturn ok\n+\tif !ok {\n+\t\treturn false\n \t}"},
	}})
	ctx := t.Context()

	rv, err := c.CreateReview(ctx, octo, 12, github.NewReview{Event: github.EventComment, Body: "see the lines", Comments: []github.LineComment{
		{Path: "auth/jwt.go", Line: 12, Body: "what of an expired token?"},
		{Path: "auth/jwt.go", Line: 11, Side: "LEFT", Body: "this was right"},
	}})
	if err != nil {
		t.Fatalf("CreateReview: %v", err)
	}
	got, err := c.ReviewComments(ctx, octo, 12)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ReviewID != rv.ID || got[0].Path != "auth/jwt.go" || got[0].Line != 12 || got[0].Side != "RIGHT" ||
		got[0].Body != "what of an expired token?" || !strings.HasSuffix(got[0].DiffHunk, "+\t\treturn false") ||
		got[1].Line != 11 || got[1].Side != "LEFT" || !strings.Contains(got[0].URL, "/pull/12#discussion_r") {
		t.Fatalf("review comments = %+v", got)
	}

	// A line the diff does not show, or a file it does not change: GitHub
	// refuses the whole review.
	for _, lc := range []github.LineComment{{Path: "auth/jwt.go", Line: 40, Body: "x"}, {Path: "main.go", Line: 1, Body: "x"}} {
		_, err = c.CreateReview(ctx, octo, 12, github.NewReview{Event: github.EventComment, Body: "x", Comments: []github.LineComment{lc}})
		wantCode(t, err, baton.Invalid)
		if !strings.Contains(err.Error(), "could not be resolved") {
			t.Errorf("comment on %s:%d: %v, want GitHub's reason", lc.Path, lc.Line, err)
		}
	}
	if n := len(srv.Reviews("octo/app", 12)); n != 1 {
		t.Errorf("%d reviews stored, want the one accepted", n)
	}
	_, err = c.CreateReview(ctx, octo, 12, github.NewReview{Event: github.EventComment, Body: "x", Comments: []github.LineComment{{Path: "a.go", Line: 0, Body: "x"}}})
	wantCode(t, err, baton.Invalid)
}
