package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(42 * time.Minute).Truncate(time.Second)
	type call func(context.Context, *github.Client) error
	getPR := func(ctx context.Context, c *github.Client) error {
		_, err := c.PullRequest(ctx, octo, 12)
		return err
	}
	closing := func(ctx context.Context, c *github.Client) error {
		_, err := c.ClosingIssues(ctx, octo, 12)
		return err
	}
	tests := []struct {
		name    string
		route   string
		failure githubtest.Failure
		call    call
		code    baton.Code
		message string        // exact baton.ErrorMessage, when set
		contain string        // substring of the message
		reset   time.Duration // > 0: want a *RateLimitError resetting about this far ahead
		resetAt time.Time     // non-zero: want exactly this reset
	}{
		{name: "404", route: "GET /repos/octo/app/pulls/12", failure: githubtest.NotFound(), call: getPR,
			code: baton.NotFound, message: "pull request octo/app#12 not found"},
		{name: "401", route: "GET /repos/octo/app/pulls/12", failure: githubtest.Unauthorized(), call: getPR,
			code: baton.Invalid, contain: "401 Bad credentials): set GITHUB_TOKEN or GH_TOKEN, or run `gh auth login`"},
		{name: "403 primary rate limit", route: "GET /repos/octo/app/pulls/*", failure: githubtest.RateLimited(reset), call: getPR,
			code: baton.Unavailable, resetAt: reset, contain: "rate limit exceeded: retry after " + reset.UTC().Format(time.RFC3339)},
		{name: "429 retry-after", route: "GET /repos/octo/app/pulls/12", failure: githubtest.TooManyRequests(90 * time.Second), call: getPR,
			code: baton.Unavailable, reset: 90 * time.Second, contain: "secondary rate limit exceeded: retry after"},
		{name: "403 secondary", route: "GET /repos/octo/app/pulls/12", failure: githubtest.SecondaryRateLimit(30 * time.Second), call: getPR,
			code: baton.Unavailable, reset: 30 * time.Second},
		{name: "403 secondary without retry-after", route: "GET /repos/octo/app/pulls/12", failure: githubtest.SecondaryRateLimitNoRetryAfter(), call: getPR,
			code: baton.Unavailable, reset: time.Minute, contain: "secondary rate limit exceeded"},
		{name: "429 without headers", route: "GET /repos/octo/app/pulls/12", failure: githubtest.HTTPError(429, "Too Many Requests"), call: getPR,
			code: baton.Unavailable, reset: time.Minute},
		{name: "403 permission", route: "GET /repos/octo/app/pulls/12", failure: githubtest.Forbidden("Resource not accessible by integration"), call: getPR,
			code: baton.Invalid, contain: "Resource not accessible by integration"},
		{name: "500", route: "GET /repos/octo/app/pulls/12", failure: githubtest.ServerError(), call: getPR,
			code: baton.Unavailable, message: "get pull request octo/app#12: GitHub is unavailable (500 Server Error): try again later"},
		{name: "502 on GraphQL", route: "GRAPHQL closingIssuesReferences", failure: githubtest.HTTPError(502, "Bad Gateway"), call: closing,
			code: baton.Unavailable},
		{name: "GraphQL rate limit", route: "GRAPHQL *", failure: githubtest.GraphQLRateLimited(reset), call: closing,
			code: baton.Unavailable, resetAt: reset},
		{name: "GraphQL RATE_LIMIT", route: "GRAPHQL *", failure: githubtest.GraphQLRateLimit(reset), call: closing,
			code: baton.Unavailable, resetAt: reset, contain: "rate limit exceeded: retry after " + reset.UTC().Format(time.RFC3339)},
		{name: "GraphQL error with the limit spent", route: "GRAPHQL *", failure: githubtest.GraphQLExhausted(reset), call: closing,
			code: baton.Unavailable, resetAt: reset},
		{name: "GraphQL not found", call: func(ctx context.Context, c *github.Client) error {
			_, err := c.ClosingIssues(ctx, octo, 99)
			return err
		}, code: baton.NotFound, message: "pull request octo/app#99 not found (Could not resolve to a PullRequest with the number of 99.)"},
		{name: "GraphQL repository not found", call: func(ctx context.Context, c *github.Client) error {
			_, err := c.ClosingPullRequests(ctx, github.Repo{Owner: "nobody", Name: "nothing"}, 1)
			return err
		}, code: baton.NotFound, contain: "issue nobody/nothing#1 not found"},
		{name: "issue 404", call: func(ctx context.Context, c *github.Client) error {
			_, err := c.Issue(ctx, octo, 404, github.IssueOptions{})
			return err
		}, code: baton.NotFound, message: "issue octo/app#404 not found"},
		{name: "bad repo", call: func(ctx context.Context, c *github.Client) error {
			_, err := c.PullRequest(ctx, github.Repo{Owner: "..", Name: "x"}, 1)
			return err
		}, code: baton.Invalid},
		{name: "bad number", call: func(ctx context.Context, c *github.Client) error {
			_, err := c.PullRequest(ctx, octo, 0)
			return err
		}, code: baton.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := githubtest.NewServer(t)
			c := newClient(t, srv)
			srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12})
			if tt.route != "" {
				srv.Fail(tt.route, tt.failure)
			}
			before := time.Now()
			err := tt.call(t.Context(), c)
			after := time.Now()
			wantCode(t, err, tt.code)
			msg := baton.ErrorMessage(err)
			if tt.message != "" && msg != tt.message {
				t.Errorf("message = %q, want %q", msg, tt.message)
			}
			if !strings.Contains(msg, tt.contain) {
				t.Errorf("message = %q, want it to contain %q", msg, tt.contain)
			}
			var rl *github.RateLimitError
			isRL := errors.As(err, &rl)
			switch {
			case !tt.resetAt.IsZero():
				if !isRL || !rl.Reset.Equal(tt.resetAt) {
					t.Errorf("RateLimitError = %v, want reset at %v", rl, tt.resetAt)
				}
			case tt.reset > 0:
				// retry-after counts from the response's Date header, which
				// has one-second precision.
				lo, hi := before.Add(tt.reset-time.Second), after.Add(tt.reset+time.Second)
				if !isRL || rl.Reset.Before(lo) || rl.Reset.After(hi) {
					t.Errorf("RateLimitError = %v, want reset in [%v, %v]", rl, lo, hi)
				}
			case isRL:
				t.Errorf("unexpected RateLimitError %v", rl)
			}
		})
	}
}

// TestRateLimitStopsFurtherRequests: after a primary rate limit the
// client answers from what it knows until the reset, without spending
// more requests.
func TestRateLimitStopsFurtherRequests(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	c := newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1})
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	f := githubtest.RateLimited(reset)
	f.Times = 1
	srv.Fail("GET /repos/octo/app/pulls/1", f)
	for range 2 {
		_, err := c.PullRequest(t.Context(), octo, 1)
		var rl *github.RateLimitError
		if !errors.As(err, &rl) || !rl.Reset.Equal(reset) {
			t.Fatalf("PullRequest = %v, want a rate limit until %v", err, reset)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1: the second call must not reach GitHub", n)
	}
}

func TestNoTokenHint(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t)
	srv.RequireToken(testToken) // a private world
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1})
	c, err := github.New(github.Options{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PullRequest(t.Context(), octo, 1)
	wantCode(t, err, baton.NotFound)
	if msg := baton.ErrorMessage(err); !strings.Contains(msg, "no GitHub token is set") || !strings.Contains(msg, "gh auth login") {
		t.Errorf("message = %q, want a hint to set a token", msg)
	}
	_, err = c.Viewer(t.Context())
	wantCode(t, err, baton.Invalid)
}

func TestNetworkAndContextErrors(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/"
	dead.Close()
	c, err := github.New(github.Options{BaseURL: url, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PullRequest(t.Context(), octo, 1)
	wantCode(t, err, baton.Unavailable)
	if msg := baton.ErrorMessage(err); !strings.Contains(msg, "cannot reach the GitHub API") {
		t.Errorf("message = %q, want 'cannot reach the GitHub API'", msg)
	}

	srv := githubtest.NewServer(t)
	c = newClient(t, srv)
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.PullRequest(ctx, octo, 1)
	wantCode(t, err, baton.Canceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want errors.Is context.Canceled", err)
	}
}

func TestDiffCutMidStreamIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := githubtest.NewServer(t, githubtest.WithoutDiffLimits())
	c := newClient(t, srv)
	cut := func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("+line\n", 100000))
		return errors.New("connection dropped")
	}
	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 1, Diff: cut})
	rc, err := c.PullRequestDiff(t.Context(), octo, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	wantCode(t, err, baton.Unavailable)
}

func TestNewRejectsBadBaseURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"https://x-access-token:" + testToken + "@api.github.com/",
		"https://" + testToken + "@ghe.example.com/api/v3",
		"ftp://api.github.com/",
		"https://api.github.com/?token=x",
		"not a url",
	} {
		_, err := github.New(github.Options{BaseURL: u})
		wantCode(t, err, baton.Invalid)
		if strings.Contains(fmt.Sprint(err), testToken) {
			t.Errorf("New(%q) error shows the token: %v", u, err)
		}
	}
	for _, tt := range []struct{ base, rest, gql string }{
		{"", "https://api.github.com/", "https://api.github.com/graphql"},
		{"https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/graphql"},
	} {
		c, err := github.New(github.Options{BaseURL: tt.base})
		if err != nil {
			t.Fatal(err)
		}
		if c.BaseURL() != tt.rest || c.GraphQLURL() != tt.gql {
			t.Errorf("New(%q) = %s, %s; want %s, %s", tt.base, c.BaseURL(), c.GraphQLURL(), tt.rest, tt.gql)
		}
	}
}

// hostile is a server that echoes the Authorization header everywhere it
// can: error bodies, GraphQL errors, Link headers. A client that passes
// server text into its errors must scrub the token.
type hostile struct {
	mu     sync.Mutex
	status int
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	status := h.status
	h.mu.Unlock()
	auth := r.Header.Get("Authorization")
	echo := "you sent " + auth + " and " + strings.TrimPrefix(auth, "Bearer ")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Link", "<https://evil.example/next?t="+strings.TrimPrefix(auth, "Bearer ")+">; rel=\"next\"")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "5")
	}
	if r.URL.Path == "/graphql" && status == http.StatusOK {
		json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"type": "SOMETHING_ELSE", "message": echo}}})
		return
	}
	if status == http.StatusOK { // a page whose next link leaves the API
		w.Write([]byte(`[]`))
		return
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"message": echo, "documentation_url": "https://docs.github.com/" + auth,
		"errors": []map[string]any{{"resource": "PullRequest", "code": "too_large", "field": "diff", "message": echo}},
	})
}

// TestTokenNeverLeaks runs every client call against servers that echo
// the token and checks every error string, every error in the chain, and
// every formatting of the token and client.
func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	h := &hostile{}
	ts := httptest.NewServer(h)
	defer ts.Close()
	c, err := github.New(github.Options{BaseURL: ts.URL, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"Viewer":           func() error { _, err := c.Viewer(ctx); return err },
		"PullRequest":      func() error { _, err := c.PullRequest(ctx, octo, 1); return err },
		"PullRequestFiles": func() error { _, err := c.PullRequestFiles(ctx, octo, 1); return err },
		"PullRequestDiff": func() error {
			rc, err := c.PullRequestDiff(ctx, octo, 1)
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			return err
		},
		"ClosingIssues":       func() error { _, err := c.ClosingIssues(ctx, octo, 1); return err },
		"ReviewComments":      func() error { _, err := c.ReviewComments(ctx, octo, 1); return err },
		"Issue":               func() error { _, err := c.Issue(ctx, octo, 1, github.IssueOptions{RecentComments: 5}); return err },
		"IssueComments":       func() error { _, err := c.IssueComments(ctx, octo, 1); return err },
		"ClosingPullRequests": func() error { _, err := c.ClosingPullRequests(ctx, octo, 1); return err },
		"ListIssues":          func() error { _, err := c.ListIssues(ctx, octo, github.IssueFilter{Labels: []string{"a"}}); return err },
		"Checks":              func() error { _, err := c.Checks(ctx, octo, "main"); return err },
		"CreatePullRequest": func() error {
			_, err := c.CreatePullRequest(ctx, octo, github.NewPullRequest{Head: "h", Base: "main", Title: "t"})
			return err
		},
		"MarkReadyForReview": func() error { return c.MarkReadyForReview(ctx, octo, 1) },
		"CreateReview": func() error {
			_, err := c.CreateReview(ctx, octo, 1, github.NewReview{Event: github.EventComment, Body: "b"})
			return err
		},
		"CreateComment": func() error { _, err := c.CreateComment(ctx, octo, 1, "b"); return err },
		"Merge":         func() error { _, err := c.Merge(ctx, octo, 1, github.MergeOptions{}); return err },
	}
	statuses := []int{200, 401, 403, 404, 405, 406, 409, 410, 422, 429, 500, 502}
	checked := 0
	for _, status := range statuses {
		h.mu.Lock()
		h.status = status
		h.mu.Unlock()
		for name, call := range calls {
			err := call()
			if err == nil {
				continue
			}
			checked++
			for e := range errorChain(err) {
				for _, s := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
					if strings.Contains(s, testToken) {
						t.Errorf("%s with status %d: error in chain shows the token: %s", name, status, s)
					}
				}
			}
			if strings.Contains(baton.ErrorMessage(err), testToken) {
				t.Errorf("%s with status %d: message shows the token", name, status)
			}
		}
	}
	if checked < len(calls)*(len(statuses)-2) {
		t.Errorf("only %d calls failed; the hostile server should make nearly all %d fail", checked, len(calls)*len(statuses))
	}

	tok := github.Token(testToken)
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("auth", "token", tok, "client", c)
	js, _ := json.Marshal(struct{ T github.Token }{tok})
	for _, s := range []string{
		fmt.Sprint(tok), fmt.Sprintf("%s|%v|%+v|%#v|%q|%x|%X|%d|%10s", tok, tok, tok, tok, tok, tok, tok, tok, tok),
		fmt.Sprintf("%v|%+v|%#v|%s", c, c, c, c), fmt.Sprintf("%+v", github.Options{Token: tok}),
		logBuf.String(), string(js),
	} {
		if strings.Contains(s, testToken) || strings.Contains(s, fmt.Sprintf("%x", testToken)) {
			t.Errorf("formatting shows the token: %s", s)
		}
	}
	if tok.String() != "[redacted]" || tok.GoString() != `github.Token("[redacted]")` {
		t.Errorf("String, GoString = %q, %q", tok.String(), tok.GoString())
	}
	if tok.Value() != testToken {
		t.Errorf("Value() = %q, want the token", tok.Value())
	}
}

// errorChain yields err and every error reachable through Unwrap.
func errorChain(err error) func(func(error) bool) {
	return func(yield func(error) bool) {
		stack := []error{err}
		for len(stack) > 0 {
			e := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if e == nil {
				continue
			}
			if !yield(e) {
				return
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				stack = append(stack, u.Unwrap())
			case interface{ Unwrap() []error }:
				stack = append(stack, u.Unwrap()...)
			}
		}
	}
}

// TestTokenNotSentOffsite: a redirect to another host must not carry the
// token there.
func TestTokenNotSentOffsite(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var gotAuth []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"login":"elsewhere"}`))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			t.Errorf("API request without the token: %q", r.Header.Get("Authorization"))
		}
		http.Redirect(w, r, other.URL+"/user", http.StatusFound)
	}))
	defer api.Close()
	c, err := github.New(github.Options{BaseURL: api.URL, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Viewer(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gotAuth) != 1 || gotAuth[0] != "" {
		t.Errorf("redirect target got Authorization %q, want none", gotAuth)
	}
}

func TestSecondaryWait(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{0: time.Minute, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 5: 16 * time.Minute, 50: 16 * time.Minute} {
		if got := github.SecondaryWait(n); got != want {
			t.Errorf("SecondaryWait(%d) = %s, want %s", n, got, want)
		}
	}
}
