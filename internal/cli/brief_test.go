package cli

import (
	"github.com/baton-agent/baton/internal/golden"

	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

const testToken = "ghp_TestTokenThatMustNeverBeShown0001"

var fixtureTime = time.Date(2026, 11, 20, 14, 30, 0, 0, time.UTC)

// newGitHub starts a fake GitHub that requires testToken and points the
// environment of e at it, as GITHUB_API_URL and GITHUB_TOKEN do for a user.
func newGitHub(e *env, opts ...githubtest.Option) *githubtest.Server {
	e.t.Helper()
	srv := githubtest.NewServer(e.t, opts...)
	srv.RequireToken(testToken)
	e.setEnv(srv.Env()...)
	e.vars["GITHUB_TOKEN"] = testToken
	return srv
}

const jwtPatch = `@@ -10,6 +10,9 @@ func Parse(raw string) (*Claims, error) {
 	c, err := decode(raw)
 	if err != nil {
 		return nil, err
 	}
+	if c.Expired(time.Now()) {
+		return nil, ErrExpired
+	}
 	return c, nil
 }
@@ -40,3 +43,3 @@ func (c *Claims) Expired(now time.Time) bool {
-	return now.After(c.Exp)
+	return !now.Before(c.Exp)
 }`

// addReviewFixture adds pull request 12 of octo/app: a modified file with
// two hunks, an added test, a rename, a lock file and a binary file, and
// the issue it closes.
func addReviewFixture(srv *githubtest.Server) {
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Expired tokens are accepted", CreatedAt: fixtureTime})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{
		Number: 12,
		Title:  "Reject expired JWTs",
		Body:   "Tokens past their `exp` were accepted.\n\nFixes #7.",
		Author: "alice",
		Head:   "fix-jwt-expiry",
		Files: []githubtest.File{
			{Filename: "internal/auth/jwt.go", Additions: 4, Deletions: 1, Patch: jwtPatch},
			{Filename: "internal/auth/jwt_test.go", Status: "added", Additions: 3, Patch: "@@ -0,0 +1,3 @@\n+package auth\n+\n+func TestExpired(t *testing.T) { t.Skip(\"wip — später\") }"},
			{Filename: "docs/auth.md", PreviousFilename: "docs/tokens.md", Status: "renamed", Additions: 1, Deletions: 1, Patch: "@@ -1 +1 @@\n-# Tokens\n+# Auth"},
			{Filename: "go.sum", Additions: 2, Patch: "@@ -1,1 +1,3 @@\n github.com/a/b v1.0.0 h1:aaa=\n+github.com/golang-jwt/jwt/v5 v5.2.1 h1:bbb=\n+github.com/golang-jwt/jwt/v5 v5.2.1/go.mod h1:ccc="},
			{Filename: "assets/logo.png"},
		},
		ClosingIssues: []int{7},
		CreatedAt:     fixtureTime,
		UpdatedAt:     fixtureTime,
	})
}

// checkoutOf makes e.dir a git repository whose origin is remote.
func (e *env) checkoutOf(remote string) {
	e.t.Helper()
	e.gitRepo()
	e.git("remote", "add", "origin", remote)
}

func TestReviewPRGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addReviewFixture(srv)
	e.checkoutOf("https://github.com/octo/app.git")

	r := e.ok("", "", "review-pr", "12")
	golden.CheckString(t, "review_pr.golden.md", r.stdout)
	if r.stderr != "" {
		t.Errorf("review-pr wrote to stderr: %s", r.stderr)
	}
	// At most 4 requests for a pull request with under 100 files: the
	// metadata, one page of files, the diff, the linked issues. They run
	// concurrently, so compare them sorted.
	got := srv.RequestLog()
	slices.Sort(got)
	want := []string{
		"GET /repos/octo/app/pulls/12",
		"GET /repos/octo/app/pulls/12",
		"GET /repos/octo/app/pulls/12/files?per_page=100",
		"GRAPHQL closingIssuesReferences",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("review-pr requests (-want +got):\n%s", diff)
	}
	var accepts []string
	for _, req := range srv.Requests() {
		if req.Path == "/repos/octo/app/pulls/12" {
			accepts = append(accepts, req.Header.Get("Accept"))
		}
	}
	slices.Sort(accepts)
	if len(accepts) != 2 || accepts[0] != "application/vnd.github.diff" || !strings.Contains(accepts[1], "json") {
		t.Errorf("pull request Accept headers = %q, want one for JSON and one for the diff", accepts)
	}
}

func TestReviewPRJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addReviewFixture(srv)
	r := e.ok("", "", "review-pr", "#12", "--repo", "octo/app", "--json")
	golden.CheckString(t, "review_pr.golden.json", r.stdout)
	var doc struct {
		SchemaVersion int    `json:"schema_version"`
		Prompt        string `json:"prompt"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != 1 || !strings.HasPrefix(doc.Prompt, "## Task: Review PR #12") {
		t.Errorf("--json: schema_version %d, prompt %.40q", doc.SchemaVersion, doc.Prompt)
	}
	if !strings.HasPrefix(r.stdout, "{\n  \"schema_version\": 1,") {
		t.Errorf("--json does not start with schema_version")
	}
}

// manyFileDiff is a pull request whose files each have a long first hunk,
// so a small diff budget must share itself out.
func manyFilePR(n int) githubtest.PullRequest {
	pr := githubtest.PullRequest{Number: 30, Title: "Translate the messages", Author: "bob", Head: "i18n", CreatedAt: fixtureTime, UpdatedAt: fixtureTime}
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "@@ -1,0 +1,12 @@")
		for j := range 12 {
			fmt.Fprintf(&b, "\n+msg%d_%d = \"Übersetzung Nummer %d — größer\"", i, j, j)
		}
		name := fmt.Sprintf("i18n/de_%02d.toml", i)
		if i == 1 {
			name = "web/package-lock.json"
		}
		pr.Files = append(pr.Files, githubtest.File{Filename: name, Status: "added", Additions: 12, Patch: b.String()})
	}
	return pr
}

func TestReviewPRTruncatedGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	srv.AddPullRequest("octo/app", manyFilePR(6))
	r := e.ok("", "", "review-pr", "30", "--repo", "octo/app", "--diff-budget", "2100")
	golden.CheckString(t, "review_pr_truncated.golden.md", r.stdout)
	for _, want := range []string{
		"[Diff truncated at 2.1KB. Use 'read <path>' for specific files.]",
		"`gh pr diff 30 --repo octo/app` prints the whole diff.",
		"Cut short (the first lines are above):",
		"lock file)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("truncated brief lacks %q", want)
		}
	}
	if !utf8.ValidString(r.stdout) {
		t.Errorf("truncated brief is not valid UTF-8")
	}
}

// Every budget, whatever byte it ends on among multi-byte characters,
// cuts the diff at a line boundary and keeps the text valid UTF-8.
func TestReviewPRTruncationMultiByte(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	srv.AddPullRequest("octo/app", manyFilePR(3))
	for budget := 900; budget < 1000; budget += 7 {
		r := e.ok("", "", "review-pr", "30", "--repo", "octo/app", "--diff-budget", fmt.Sprint(budget), "--json")
		var doc struct {
			Prompt string `json:"prompt"`
			Diff   struct {
				ShownBytes int `json:"shown_bytes"`
				Truncated  bool
			} `json:"diff"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(doc.Prompt) || doc.Diff.ShownBytes > budget || !doc.Diff.Truncated {
			t.Fatalf("budget %d: valid UTF-8 %v, shown %d bytes, truncated %v", budget, utf8.ValidString(doc.Prompt), doc.Diff.ShownBytes, doc.Diff.Truncated)
		}
		_, after, _ := strings.Cut(doc.Prompt, "````diff\n")
		if after == "" {
			_, after, _ = strings.Cut(doc.Prompt, "```diff\n")
		}
		diffText, _, _ := strings.Cut(after, "\n```")
		for _, line := range strings.Split(diffText, "\n") {
			if strings.HasPrefix(line, "+msg") && !strings.HasSuffix(line, "größer\"") {
				t.Fatalf("budget %d: a line was cut: %q", budget, line)
			}
		}
	}
}

func TestReviewPRPaginatedFilesAndTooLargeDiff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	pr := githubtest.PullRequest{Number: 40, Title: "Regenerate", Files: githubtest.GenerateFiles(350), CreatedAt: fixtureTime, UpdatedAt: fixtureTime}
	srv.AddPullRequest("octo/app", pr)
	r := e.ok("", "", "review-pr", "40", "--repo", "octo/app")
	// 350 files: four pages; GitHub refuses a diff of over 300 files, so
	// the diff is rebuilt from the patches without another request.
	if n := srv.Count("GET /repos/octo/app/pulls/40/files"); n != 4 {
		t.Errorf("files pages requested = %d, want 4", n)
	}
	if n := len(srv.Requests()); n != 7 {
		t.Errorf("requests = %d, want 7 (pull request, 4 pages of files, the refused diff, linked issues):\n%s", n, strings.Join(srv.RequestLog(), "\n"))
	}
	for _, want := range []string{
		"350 files changed, 350 insertions(+), 0 deletions(-)",
		"GitHub will not render a diff this large, so this one is rebuilt from each file's patch",
		"diff --git a/gen/file00001.go b/gen/file00001.go",
		"+// change 350",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("brief of a 350-file pull request lacks %q", want)
		}
	}
}

// Any failure leaves stdout empty, prints one error line and exits 1.
func TestReviewPRFailuresLeaveStdoutEmpty(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(42 * time.Minute)
	cutDiff := githubtest.Diff(func(w io.Writer) error {
		io.WriteString(w, "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n")
		return errors.New("connection dropped")
	})
	tests := []struct {
		name  string
		setup func(*githubtest.Server)
		want  string // in the error message
	}{
		{"pull request not found", func(s *githubtest.Server) { s.Fail("GET /repos/octo/app/pulls/12", githubtest.NotFound()) }, "not found"},
		{"files 500", func(s *githubtest.Server) { s.Fail("GET /repos/octo/app/pulls/12/files", githubtest.ServerError()) }, "GitHub is unavailable"},
		{"rate limited", func(s *githubtest.Server) { s.Fail("GET /repos/octo/app/pulls/12", githubtest.RateLimited(reset)) }, "retry after " + reset.UTC().Format("2006-01-02T15:04")},
		{"graphql rate limited", func(s *githubtest.Server) {
			s.Fail("GRAPHQL closingIssuesReferences", githubtest.GraphQLRateLimited(reset))
		}, "retry after"},
		{"linked issues 500", func(s *githubtest.Server) { s.Fail("GRAPHQL closingIssuesReferences", githubtest.ServerError()) }, "unavailable"},
		{"forbidden", func(s *githubtest.Server) {
			s.Fail("GET /repos/octo/app/pulls/12/files", githubtest.Forbidden("Resource not accessible by integration"))
		}, "refused access"},
		{"bad credentials", func(s *githubtest.Server) { s.Fail("*  /repos/*/*/pulls/*", githubtest.Unauthorized()) }, "GITHUB_TOKEN"},
		{"diff cut mid-stream", func(s *githubtest.Server) {
			s.UpdatePullRequest("octo/app", 12, func(p *githubtest.PullRequest) { p.Diff = cutDiff })
		}, "octo/app#12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			srv := newGitHub(e)
			addReviewFixture(srv)
			tt.setup(srv)
			r := e.run("", "", "review-pr", "12", "--repo", "octo/app")
			if r.code != ExitError {
				t.Errorf("exit code = %d, want %d", r.code, ExitError)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "baton: ") || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", r.stderr, tt.want)
			}
			if strings.Contains(r.stderr, testToken) {
				t.Errorf("stderr shows the token")
			}
		})
	}
}

// The token never appears in output, even when GitHub echoes it back.
func TestReviewPRTokenMasking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addReviewFixture(srv)
	srv.Fail("GET /repos/octo/app/pulls/12/files", githubtest.HTTPError(422, "token "+testToken+" is not allowed here"))
	r := e.run("", "", "review-pr", "12", "--repo", "octo/app", "--json")
	if r.code != ExitError || r.stdout != "" {
		t.Errorf("exit %d, stdout %q; want exit 1 and nothing", r.code, r.stdout)
	}
	if strings.Contains(r.stderr, testToken) || !strings.Contains(r.stderr, "[redacted]") {
		t.Errorf("stderr = %q, want the token redacted", r.stderr)
	}
	for _, req := range srv.Requests() {
		if strings.Contains(fmt.Sprint(req.Header), testToken) {
			t.Errorf("request log shows the token: %v", req.Header)
		}
	}
}

func TestReviewPRRepoFromRemote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		remote string
		code   int
		want   string // request path prefix or error text
	}{
		{"https://github.com/octo/app.git", ExitOK, ""},
		{"https://x-access-token:s3cr3t@github.com/octo/app", ExitOK, ""},
		{"git@github.com:octo/app.git", ExitOK, ""},
		{"ssh://git@ssh.github.com:443/octo/app.git", ExitOK, ""},
		{"https://gitlab.com/octo", ExitError, "bad git remote"},
		{"", ExitError, "no origin remote"},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			e := newEnv(t)
			srv := newGitHub(e)
			addReviewFixture(srv)
			e.gitRepo()
			if tt.remote != "" {
				e.git("remote", "add", "origin", tt.remote)
			}
			e.write("sub/dir/x.txt", "x")
			r := e.run("sub/dir", "", "review-pr", "12")
			if r.code != tt.code {
				t.Fatalf("exit = %d, want %d; stderr %s", r.code, tt.code, r.stderr)
			}
			if tt.code != ExitOK {
				if r.stdout != "" || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "--repo") {
					t.Errorf("stdout %q, stderr %q; want nothing and an error about %q that suggests --repo", r.stdout, r.stderr, tt.want)
				}
				if strings.Contains(r.stderr, "s3cr3t") {
					t.Errorf("stderr shows the remote's credentials")
				}
				return
			}
			if srv.Count("GET /repos/octo/app/pulls/12") != 2 {
				t.Errorf("requests = %v, want octo/app's pull request", srv.RequestLog())
			}
			if strings.Contains(r.stdout, "--repo") {
				t.Errorf("a brief for the checkout's own repository suggests --repo")
			}
		})
	}
}

func TestBriefUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"review-pr"}, "takes a pull request number"},
		{[]string{"review-pr", "abc"}, `got "abc"`},
		{[]string{"review-pr", "0"}, `got "0"`},
		{[]string{"review-pr", "https://github.com/octo/app/issues/3"}, "pull request URL"},
		{[]string{"review-pr", "12", "--diff-budget", "-1"}, `"-1" is not a size`},
		{[]string{"review-pr", "12", "--budget", "-5"}, `"-5" is not a size`},
		{[]string{"review-pr", "12", "--budget-tokens", "-1"}, "a token budget of -1"},
		{[]string{"fix-issue", "crash"}, "fix-issue takes an issue number"},
		{[]string{"fix-issue", "7", "--comments", "101"}, "comments must be between 0 and 100 (got 101)"},
		{[]string{"implement-feature", " "}, "implement-feature needs an issue (a number or URL) or the request in words"},
		{[]string{"review-pr", "https://github.com/octo/app/pull/3", "--repo", "other/repo"}, "the URL names octo/app but --repo names other/repo"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			e := newEnv(t)
			srv := newGitHub(e)
			r := e.run("", "", tt.args...)
			if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("baton %v = exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, r.code, r.stdout, r.stderr, tt.want)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("a usage error made %d requests", n)
			}
		})
	}
}

func TestReviewPRNoToken(t *testing.T) {
	e := newEnv(t)
	srv := newGitHub(e)
	delete(e.vars, "GITHUB_TOKEN")
	t.Setenv("PATH", t.TempDir()) // no gh to ask either
	r := e.run("", "", "review-pr", "12", "--repo", "octo/app")
	if r.code != ExitError || r.stdout != "" || !strings.Contains(r.stderr, "no GitHub token") || !strings.Contains(r.stderr, "gh auth login") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and how to provide a token", r.code, r.stdout, r.stderr)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("requests made without a token: %v", srv.RequestLog())
	}
}

// addIssueFixture adds issue 7 with 15 comments and a pull request that
// closes it.
func addIssueFixture(srv *githubtest.Server) {
	srv.AddIssue("octo/app", githubtest.Issue{
		Number: 7, Title: "Expired tokens are accepted", Author: "carol", Labels: []string{"bug", "security"},
		Body:      "Steps:\n\n1. Log in\n2. Wait an hour\n3. Call `/api/me`: it answers 200.\n\nExpected 401.",
		CreatedAt: fixtureTime,
	})
	for i := 1; i <= 15; i++ {
		srv.AddComment("octo/app", 7, githubtest.Comment{
			Author: []string{"dave", "carol"}[i%2], Body: fmt.Sprintf("Comment %d: still happens on v1.%d.\n\n```\n$ curl /api/me\n200 OK\n```", i, i),
			CreatedAt: fixtureTime.Add(time.Duration(i) * time.Hour),
		})
	}
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12, Title: "Reject expired JWTs", Author: "alice", ClosingIssues: []int{7}, CreatedAt: fixtureTime, UpdatedAt: fixtureTime})
}

func TestFixIssueGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addIssueFixture(srv)
	e.checkoutOf("git@github.com:octo/app.git")
	r := e.ok("", "", "fix-issue", "7", "--comments", "3")
	golden.CheckString(t, "fix_issue.golden.md", r.stdout)
	got := srv.RequestLog()
	slices.Sort(got)
	want := []string{
		"GET /repos/octo/app/issues/7",
		"GET /repos/octo/app/issues/7/comments?page=1&per_page=100",
		"GRAPHQL closedByPullRequestsReferences",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fix-issue requests (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.stdout, "the 3 most recent of 15") || !strings.Contains(r.stdout, "Comment 15:") || strings.Contains(r.stdout, "Comment 12:") {
		t.Errorf("fix-issue --comments 3 does not show exactly the three newest comments")
	}
}

func TestFixIssueJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addIssueFixture(srv)
	r := e.ok("", "", "fix-issue", "https://github.com/octo/app/issues/7", "--comments", "2", "--json")
	golden.CheckString(t, "fix_issue.golden.json", r.stdout)
}

func TestFixIssueOnPullRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addIssueFixture(srv)
	r := e.run("", "", "fix-issue", "12", "--repo", "octo/app")
	if r.code != ExitError || r.stdout != "" || !strings.Contains(r.stderr, "is a pull request, not an issue: run `baton review-pr 12`") {
		t.Errorf("fix-issue on a pull request = exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A small budget drops the oldest comments first, keeping the newest.
func TestFixIssueBudgetDropsOldComments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addIssueFixture(srv)
	full := e.ok("", "", "fix-issue", "7", "--repo", "octo/app", "--comments", "15")
	budget := len(full.stdout) - 200
	r := e.ok("", "", "fix-issue", "7", "--repo", "octo/app", "--comments", "15", "--budget", fmt.Sprint(budget), "--json")
	var doc struct {
		Prompt        string `json:"prompt"`
		CommentsShown int    `json:"comments_shown"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Prompt) > budget || doc.CommentsShown >= 15 || doc.CommentsShown < 10 {
		t.Errorf("budget %d: prompt %d bytes with %d comments; want it within budget, with the oldest few dropped", budget, len(doc.Prompt), doc.CommentsShown)
	}
	if !strings.Contains(doc.Prompt, "Comment 15:") || strings.Contains(doc.Prompt, "Comment 1:") {
		t.Errorf("the newest comment must stay and the oldest go")
	}
	if !strings.Contains(doc.Prompt, fmt.Sprintf("the %d most recent of 15", doc.CommentsShown)) {
		t.Errorf("the prompt does not say how many comments it shows")
	}
}

func TestImplementFeatureGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addIssueFixture(srv)
	e.checkoutOf("https://github.com/octo/app")
	e.ok("", "", "init")
	e.write("internal/auth/session.go", "package auth\n")
	e.ok("", "", "files", "add", "--missing-ok", "internal/auth/jwt.go", "internal/auth/session.go", "internal/auth/gone.go")

	r := e.ok("", "", "implement-feature", "7", "--comments", "1")
	golden.CheckString(t, "implement_feature_issue.golden.md", r.stdout)

	srv.ResetRequests()
	r = e.ok("", "", "implement-feature", "add a --dry-run flag to baton install")
	golden.CheckString(t, "implement_feature_text.golden.md", r.stdout)
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("implement-feature from text made %d requests", n)
	}
	if strings.Contains(r.stdout, "gone.go") {
		t.Errorf("a relevant file that no longer exists is listed")
	}
}

// When the whole prompt is over --budget (or --budget-tokens), the diff
// gives way first, at a line boundary, and every other section stays.
func TestReviewPRPromptBudgetCutsTheDiffFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	srv.AddPullRequest("octo/app", manyFilePR(6))
	full := e.ok("", "", "review-pr", "30", "--repo", "octo/app")
	type doc struct {
		Prompt string `json:"prompt"`
		Report struct {
			Bytes    int `json:"bytes"`
			Tokens   int `json:"tokens"`
			Sections []struct {
				Key     string `json:"key"`
				Outcome string `json:"outcome"`
			} `json:"sections"`
		} `json:"report"`
		Diff struct {
			AllowanceBytes int  `json:"allowance_bytes"`
			Truncated      bool `json:"truncated"`
		} `json:"diff"`
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"bytes", []string{"--budget", fmt.Sprint(len(full.stdout) - 1000)}},
		{"tokens", []string{"--budget-tokens", "1500"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.ok("", "", append([]string{"review-pr", "30", "--repo", "octo/app", "--json"}, tt.args...)...)
			var d doc
			if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
				t.Fatal(err)
			}
			for _, s := range d.Report.Sections {
				if s.Outcome != "kept" {
					t.Errorf("section %s %s; want every section kept and the diff cut instead", s.Key, s.Outcome)
				}
			}
			if !d.Diff.Truncated || d.Diff.AllowanceBytes >= 51200 {
				t.Errorf("diff allowance %d, truncated %v; want it cut below the diff budget", d.Diff.AllowanceBytes, d.Diff.Truncated)
			}
			if tt.name == "bytes" && len(d.Prompt) > len(full.stdout)-1000 {
				t.Errorf("prompt %d bytes, over the budget", len(d.Prompt))
			}
			if tt.name == "tokens" && (d.Report.Tokens > 1500 || d.Report.Tokens < 1300) {
				t.Errorf("prompt %d tokens; want just under 1500", d.Report.Tokens)
			}
		})
	}
}

func TestIssueBriefFailuresLeaveStdoutEmpty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		route string
		fail  githubtest.Failure
		want  string
	}{
		{"issue not found", "GET /repos/octo/app/issues/7", githubtest.NotFound(), "issue octo/app#7 not found"},
		{"comments 500", "GET /repos/octo/app/issues/7/comments", githubtest.ServerError(), "GitHub is unavailable"},
		{"linked pull requests rate limited", "GRAPHQL closedByPullRequestsReferences", githubtest.GraphQLRateLimited(time.Now().Add(time.Hour)), "retry after"},
		{"secondary rate limit", "GET /repos/octo/app/issues/7", githubtest.TooManyRequests(90 * time.Second), "secondary rate limit"},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"fix-issue", "implement-feature"} {
			t.Run(cmd+" "+tt.name, func(t *testing.T) {
				e := newEnv(t)
				srv := newGitHub(e)
				addIssueFixture(srv)
				srv.Fail(tt.route, tt.fail)
				r := e.run("", "", cmd, "7", "--repo", "octo/app")
				if r.code != ExitError || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, one line with %q", r.code, r.stdout, r.stderr, tt.want)
				}
			})
		}
	}
}
