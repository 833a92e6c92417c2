package githubtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

// get sends a request with a token and returns status, headers and body.
func get(t *testing.T, srv *githubtest.Server, method, path, accept, body string) (int, http.Header, []byte) {
	t.Helper()
	url := srv.URL() + strings.TrimPrefix(path, "/")
	if path == "graphql" {
		url = srv.GraphQLURL()
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer secret-token")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// at walks a decoded JSON value by keys and indexes.
func at(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func TestPullRequestShape(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	pr := srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12, Title: "T", Author: "alice", Head: "feat",
		Files: []githubtest.File{{Filename: "a.go", Additions: 2, Deletions: 1}}})
	srv.AddComment("octo/app", 12, githubtest.Comment{Body: "hi"})

	status, hdr, body := get(t, srv, "GET", "/repos/octo/app/pulls/12", "application/vnd.github+json", "")
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q", status, hdr.Get("Content-Type"))
	}
	m := decode(t, body)
	checks := []struct {
		path []any
		want any
	}{
		{[]any{"number"}, 12.0},
		{[]any{"state"}, "open"},
		{[]any{"title"}, "T"},
		{[]any{"body"}, nil}, // GitHub sends null for an empty body
		{[]any{"user", "login"}, "alice"},
		{[]any{"user", "type"}, "User"},
		{[]any{"html_url"}, "https://github.com/octo/app/pull/12"},
		{[]any{"diff_url"}, "https://github.com/octo/app/pull/12.diff"},
		{[]any{"url"}, srv.URL() + "repos/octo/app/pulls/12"},
		{[]any{"node_id"}, pr.NodeID},
		{[]any{"head", "ref"}, "feat"},
		{[]any{"head", "sha"}, pr.HeadSHA},
		{[]any{"head", "label"}, "octo:feat"},
		{[]any{"head", "repo", "full_name"}, "octo/app"},
		{[]any{"base", "ref"}, "main"},
		{[]any{"merged"}, false},
		{[]any{"merged_at"}, nil},
		{[]any{"mergeable"}, true},
		{[]any{"mergeable_state"}, "clean"},
		{[]any{"draft"}, false},
		{[]any{"additions"}, 2.0},
		{[]any{"deletions"}, 1.0},
		{[]any{"changed_files"}, 1.0},
		{[]any{"comments"}, 1.0},
		{[]any{"_links", "html", "href"}, "https://github.com/octo/app/pull/12"},
	}
	for _, c := range checks {
		if got := at(m, c.path...); !cmp.Equal(got, c.want) {
			t.Errorf("pull request JSON %v = %#v, want %#v", c.path, got, c.want)
		}
	}
	for _, k := range []string{"labels", "assignees", "requested_reviewers", "created_at", "updated_at", "merge_commit_sha", "closed_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("pull request JSON lacks %q", k)
		}
	}
	if got := hdr.Get("X-Ratelimit-Remaining"); got == "" || got == "0" {
		t.Errorf("x-ratelimit-remaining = %q, want a positive count", got)
	}
}

func TestIssueShapesAndPullRequestsInIssueAPI(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "Bug", Labels: []string{"bug"}, State: "closed", StateReason: "completed"})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2})

	_, _, body := get(t, srv, "GET", "/repos/octo/app/issues/1", "", "")
	is := decode(t, body)
	for _, c := range []struct {
		path []any
		want any
	}{
		{[]any{"state"}, "closed"}, {[]any{"state_reason"}, "completed"}, {[]any{"labels", 0, "name"}, "bug"},
		{[]any{"html_url"}, "https://github.com/octo/app/issues/1"}, {[]any{"pull_request"}, nil},
		{[]any{"user", "login"}, githubtest.DefaultAuthor},
	} {
		if got := at(is, c.path...); !cmp.Equal(got, c.want) {
			t.Errorf("issue JSON %v = %#v, want %#v", c.path, got, c.want)
		}
	}
	_, _, body = get(t, srv, "GET", "/repos/octo/app/issues/2", "", "")
	pr := decode(t, body)
	if at(pr, "pull_request", "html_url") != "https://github.com/octo/app/pull/2" {
		t.Errorf("a pull request through the issue API lacks pull_request.html_url: %s", body)
	}
	_, _, body = get(t, srv, "GET", "/repos/octo/app/issues?state=all", "", "")
	var list []map[string]any
	json.Unmarshal(body, &list)
	if len(list) != 2 {
		t.Errorf("issue list has %d entries, want the issue and the pull request", len(list))
	}
}

func TestPaginationLinks(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Files: githubtest.GenerateFiles(250)})
	base := srv.URL() + "repos/octo/app/pulls/1/files"

	_, hdr, body := get(t, srv, "GET", "/repos/octo/app/pulls/1/files", "", "")
	var files []map[string]any
	json.Unmarshal(body, &files)
	if len(files) != 30 || hdr.Get("Link") != fmt.Sprintf(`<%s?page=2>; rel="next", <%s?page=9>; rel="last"`, base, base) {
		t.Errorf("default page: %d files, Link %q; want 30 and next/last", len(files), hdr.Get("Link"))
	}
	_, hdr, body = get(t, srv, "GET", "/repos/octo/app/pulls/1/files?per_page=100&page=2", "", "")
	json.Unmarshal(body, &files)
	want := fmt.Sprintf(`<%[1]s?page=1&per_page=100>; rel="prev", <%[1]s?page=3&per_page=100>; rel="next", <%[1]s?page=3&per_page=100>; rel="last", <%[1]s?page=1&per_page=100>; rel="first"`, base)
	if len(files) != 100 || hdr.Get("Link") != want {
		t.Errorf("page 2: %d files, Link\n%s\nwant\n%s", len(files), hdr.Get("Link"), want)
	}
	if at(files[0], "filename") != "gen/file00101.go" || at(files[0], "changes") != 1.0 || at(files[0], "patch") == nil {
		t.Errorf("page 2 starts with %v", files[0])
	}
	_, hdr, body = get(t, srv, "GET", "/repos/octo/app/pulls/1/files?per_page=100&page=3", "", "")
	json.Unmarshal(body, &files)
	if len(files) != 50 || strings.Contains(hdr.Get("Link"), `rel="next"`) {
		t.Errorf("last page: %d files, Link %q; want 50 and no next", len(files), hdr.Get("Link"))
	}
}

func TestDiffMediaType(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Diff: githubtest.DiffText("diff --git a/x b/x\n")})
	for _, accept := range []string{"application/vnd.github.diff", "application/vnd.github.v3.diff"} {
		status, hdr, body := get(t, srv, "GET", "/repos/octo/app/pulls/1", accept, "")
		if status != 200 || string(body) != "diff --git a/x b/x\n" || !strings.HasPrefix(hdr.Get("Content-Type"), "application/vnd.github.diff") {
			t.Errorf("Accept %s: %d %q %q", accept, status, hdr.Get("Content-Type"), body)
		}
	}
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, Files: []githubtest.File{{Filename: "big", Additions: 20001}}})
	status, _, body := get(t, srv, "GET", "/repos/octo/app/pulls/2", "application/vnd.github.diff", "")
	if status != 406 || at(decode(t, body), "errors", 0, "code") != "too_large" {
		t.Errorf("a 20,001-line diff: %d %s, want 406 too_large", status, body)
	}
}

func TestLargeDiffIsExactAndWellFormed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		files int
		size  int64
	}{{1, 256}, {3, 1000}, {7, 64 * 1024}, {100, 1 << 20}} {
		var buf bytes.Buffer
		if err := githubtest.LargeDiff(tt.files, tt.size)(&buf); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != tt.size {
			t.Errorf("LargeDiff(%d, %d) wrote %d bytes", tt.files, tt.size, buf.Len())
		}
		if n := strings.Count(buf.String(), "diff --git "); n != tt.files {
			t.Errorf("LargeDiff(%d, %d) has %d file headers", tt.files, tt.size, n)
		}
		// Each hunk header's line count matches the lines that follow.
		for _, file := range strings.Split(buf.String(), "diff --git ")[1:] {
			head, lines, _ := strings.Cut(file, " @@\n")
			var count int
			fmt.Sscanf(head[strings.LastIndex(head, "+1,")+3:], "%d", &count)
			if got := strings.Count(lines, "\n"); got != count || !strings.HasPrefix(lines, "+") {
				t.Fatalf("LargeDiff(%d, %d): hunk says %d lines, has %d", tt.files, tt.size, count, got)
			}
		}
	}
}

func TestFailuresAndRecording(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1})
	reset := time.Unix(2000000000, 0)
	f := githubtest.RateLimited(reset)
	f.Times = 2
	srv.Fail("GET /repos/octo/*/pulls/*", f)

	for i, want := range []int{403, 403, 200} {
		status, hdr, _ := get(t, srv, "GET", "/repos/octo/app/pulls/1", "", "")
		if status != want {
			t.Errorf("request %d: status %d, want %d", i, status, want)
		}
		if want == 403 && (hdr.Get("X-Ratelimit-Remaining") != "0" || hdr.Get("X-Ratelimit-Reset") != "2000000000") {
			t.Errorf("rate-limited response headers %v", hdr)
		}
	}
	srv.Fail("GRAPHQL closingIssuesReferences", githubtest.ServerError())
	status, _, _ := get(t, srv, "POST", "graphql", "", `{"query":"query { repository { pullRequest { closingIssuesReferences(first: 1) { totalCount } } } }"}`)
	if status != 500 {
		t.Errorf("GraphQL with injected failure: %d, want 500", status)
	}
	srv.ClearFailures()

	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("recorded %d requests, want 4", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer [redacted]" {
		t.Errorf("recorded Authorization %q, want it redacted", got)
	}
	for _, r := range reqs {
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, "secret-token") {
					t.Errorf("recorded header %s shows the token", k)
				}
			}
		}
	}
	if reqs[3].GraphQLField != "closingIssuesReferences" || reqs[3].String() != "GRAPHQL closingIssuesReferences" {
		t.Errorf("GraphQL request recorded as %+v", reqs[3])
	}
	if n := srv.Count("* /repos/octo/app/pulls/1"); n != 3 {
		t.Errorf("Count = %d, want 3", n)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1})
	do := func(method, path, auth string) int {
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL()+path, strings.NewReader(`{"body":"x"}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Without RequireToken: public reads work anonymously; writes and /user do not.
	for _, c := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "repos/octo/app/issues/1", "", 200},
		{"POST", "repos/octo/app/issues/1/comments", "", 401},
		{"GET", "user", "", 401},
		{"GET", "user", "token anything", 200},
	} {
		if got := do(c.method, c.path, c.auth); got != c.want {
			t.Errorf("open server: %s %s auth %q = %d, want %d", c.method, c.path, c.auth, got, c.want)
		}
	}
	srv.RequireToken("right")
	for _, c := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "repos/octo/app/issues/1", "", 404}, // private repositories hide
		{"GET", "repos/octo/app/issues/1", "Bearer wrong", 401},
		{"GET", "repos/octo/app/issues/1", "Bearer right", 200},
		{"GET", "repos/octo/app/issues/1", "token right", 200},
		{"GET", "repos/octo/app/issues/1", "Basic cmlnaHQ=", 401},
	} {
		if got := do(c.method, c.path, c.auth); got != c.want {
			t.Errorf("private server: %s %s auth %q = %d, want %d", c.method, c.path, c.auth, got, c.want)
		}
	}
}

func TestGraphQLShapes(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "Bug"})
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, ClosingIssues: []int{1}})
	q := func(query string, vars map[string]any) map[string]any {
		b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		status, _, body := get(t, srv, "POST", "graphql", "", string(b))
		if status != 200 {
			t.Fatalf("GraphQL status %d: %s", status, body)
		}
		return decode(t, body)
	}
	const closing = `query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { closingIssuesReferences(first: $first, after: $after) { totalCount } } } }`
	m := q(closing, map[string]any{"owner": "octo", "name": "app", "number": 2, "first": 100})
	conn := at(m, "data", "repository", "pullRequest", "closingIssuesReferences")
	if at(conn, "totalCount") != 1.0 || at(conn, "nodes", 0, "title") != "Bug" || at(conn, "pageInfo", "hasNextPage") != false {
		t.Errorf("closingIssuesReferences = %v", conn)
	}
	m = q(closing, map[string]any{"owner": "octo", "name": "app", "number": 9, "first": 100})
	if at(m, "data", "repository", "pullRequest") != nil || at(m, "errors", 0, "type") != "NOT_FOUND" ||
		at(m, "errors", 0, "message") != "Could not resolve to a PullRequest with the number of 9." {
		t.Errorf("missing pull request = %v", m)
	}
	m = q(closing, map[string]any{"owner": "octo", "name": "nope", "number": 2, "first": 100})
	if at(m, "errors", 0, "path", 0) != "repository" || at(m, "data", "repository") != nil {
		t.Errorf("missing repository = %v", m)
	}
	m = q(closing, map[string]any{"owner": "octo", "name": "app", "number": 2, "first": 101})
	if at(m, "errors", 0, "message") == nil {
		t.Errorf("first: 101 accepted: %v", m)
	}
	m = q(`query { viewer { login } }`, nil)
	if at(m, "errors", 0, "message") == nil {
		t.Errorf("an unsupported query got no error: %v", m)
	}
	// GraphQL needs authentication even when REST reads do not.
	resp, err := http.Post(srv.GraphQLURL(), "application/json", strings.NewReader(`{"query":"{ viewer { login } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("anonymous GraphQL = %d, want 401", resp.StatusCode)
	}
}

func TestEnterprisePaths(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t, githubtest.Enterprise())
	srv.AddIssue("octo/app", githubtest.Issue{Number: 1})
	if !strings.HasSuffix(srv.URL(), "/api/v3/") || !strings.HasSuffix(srv.GraphQLURL(), "/api/graphql") {
		t.Fatalf("URL %s, GraphQLURL %s", srv.URL(), srv.GraphQLURL())
	}
	status, _, body := get(t, srv, "GET", "/repos/octo/app/issues/1", "", "")
	if status != 200 || !strings.HasPrefix(at(decode(t, body), "html_url").(string), strings.TrimSuffix(srv.URL(), "/api/v3/")) {
		t.Errorf("GHE issue: %d %s", status, body)
	}
	resp, err := http.Get(strings.TrimSuffix(srv.URL(), "api/v3/") + "repos/octo/app/issues/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a path outside /api/v3 = %d, want 404", resp.StatusCode)
	}
	if got := srv.RequestLog()[0]; got != "GET /repos/octo/app/issues/1" {
		t.Errorf("recorded path %q, want it without the /api/v3 prefix", got)
	}
}

func TestModelHelpers(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddRepo("octo/app")
	if sha := srv.Branch("octo/app", githubtest.DefaultBranch); len(sha) != 40 {
		t.Errorf("new repository's main branch = %q, want a SHA", sha)
	}
	if sha := srv.Branch("octo/app", "nope"); sha != "" {
		t.Errorf("missing branch = %q, want empty", sha)
	}
	srv.SetViewer("baton-bot")
	_, _, body := get(t, srv, "GET", "/user", "", "")
	if at(decode(t, body), "login") != "baton-bot" {
		t.Errorf("GET /user = %s, want baton-bot", body)
	}

	path := t.TempDir() + "/big.diff"
	if err := githubtest.LargeDiff(4, 4096)(fileWriter(t, path)); err != nil {
		t.Fatal(err)
	}
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Diff: githubtest.DiffFile(path)})
	_, _, served := get(t, srv, "GET", "/repos/octo/app/pulls/1", "application/vnd.github.diff", "")
	if len(served) != 4096 || !bytes.HasPrefix(served, []byte("diff --git a/gen/large000001.txt")) {
		t.Errorf("DiffFile served %d bytes: %.40q", len(served), served)
	}

	srv.AddBranch("octo/app", "topic", "")
	status, _, _ := get(t, srv, "POST", "/repos/octo/app/pulls", "", `{"title":"New","head":"topic","base":"main"}`)
	if status != 201 {
		t.Fatalf("create pull request: %d", status)
	}
	var numbers []int
	for _, p := range srv.PullRequests("octo/app") {
		numbers = append(numbers, p.Number)
	}
	if !cmp.Equal(numbers, []int{1, 2}) || srv.PullRequests("octo/app")[1].Author != "baton-bot" {
		t.Errorf("PullRequests = %v, want #1 and the created #2 by the viewer", numbers)
	}

	srv.AddIssue("octo/app", githubtest.Issue{Number: 5})
	srv.UpdateIssue("octo/app", 5, func(is *githubtest.Issue) { is.State = "closed" })
	if is := srv.Issue("octo/app", 5); is.State != "closed" || is.ClosedAt.IsZero() {
		t.Errorf("Issue after UpdateIssue = %+v, want closed with ClosedAt", is)
	}
	status, _, body = get(t, srv, "POST", "/repos/octo/app/issues/5/comments", "", `{"body":`)
	if status != 400 || at(decode(t, body), "message") != "Problems parsing JSON" {
		t.Errorf("malformed JSON: %d %s", status, body)
	}
}

// fileWriter creates path and closes it when the test ends.
func fileWriter(t *testing.T, path string) io.Writer {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A stalled route holds its request until the client gives up, and says
// so; other routes answer.
func TestStall(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash"})
	srv.AddIssue("octo/app", githubtest.Issue{Number: 8, Title: "Slow"})
	stalled := srv.Stall("GET /repos/octo/app/issues/7")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"repos/octo/app/issues/7", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-stalled.Arrived()
	if resp, err := http.Get(srv.URL() + "repos/octo/app/issues/8"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("another route while one is stalled: %v, %v", resp, err)
	}
	select {
	case <-stalled.Abandoned():
		t.Fatal("abandoned before the client gave up")
	default:
	}
	cancel()
	<-stalled.Abandoned()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the stalled request ended with %v", err)
	}
}
