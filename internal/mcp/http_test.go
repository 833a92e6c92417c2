package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/testenv"
)

// httpSession opens an MCP session on the server at url with raw HTTP,
// the way any client does, and returns a function that posts one message
// in it with ctx.
func httpSession(t *testing.T, url string) (post func(ctx context.Context, body string) (*http.Response, error), id string) {
	t.Helper()
	post = func(ctx context.Context, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := post(t.Context(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+protocolVersion+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if id = resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize over HTTP = %s, session %q", resp.Status, id)
	}
	resp, err = post(t.Context(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return post, id
}

// A session that makes no request for SessionIdle is closed, and its id
// then answers 404, which tells a client to start a new session.
func TestHTTPSessionsExpireWhenIdle(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	srv, err := New(Options{Root: dir, WorkDir: dir, Watch: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.HTTPHandler(HTTPOptions{SessionIdle: 100 * time.Millisecond}))
	t.Cleanup(ts.Close)
	post, _ := httpSession(t, ts.URL)
	sessions := func() int {
		n := 0
		for range srv.SDK().Sessions() {
			n++
		}
		return n
	}
	if n := sessions(); n != 1 {
		t.Fatalf("%d sessions after initialize", n)
	}
	if !testenv.Until(10*time.Second, nil, func() bool { return sessions() == 0 }) {
		t.Fatal("after 10s the idle session is still open")
	}
	resp, err := post(t.Context(), `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call in an expired session = %s, want 404", resp.Status)
	}
}

// A call whose HTTP request ends (the client hung up) is cancelled: its
// GitHub fetch, stalled here, ends at once instead of running on.
func TestHTTPCallEndsWithItsRequest(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	gh := githubtest.NewServer(t)
	gh.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash on start"})
	stalled := gh.Stall("GET /repos/octo/app/issues/7")
	open := func(context.Context, github.Repo, string) (*github.Client, error) {
		return github.New(github.Options{BaseURL: gh.URL(), Token: "t"})
	}
	srv, err := New(Options{Root: dir, WorkDir: dir, GitHub: open, Watch: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.HTTPHandler(HTTPOptions{}))
	t.Cleanup(ts.Close)
	post, _ := httpSession(t, ts.URL)

	ctx, hangUp := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fix_issue_brief","arguments":{"issue":"7","repo":"octo/app"}}}`); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-stalled.Arrived():
	case <-time.After(10 * time.Second):
		t.Fatal("the brief never asked GitHub for the issue")
	}
	hangUp()
	<-done
	select {
	case <-stalled.Abandoned():
	case <-time.After(10 * time.Second):
		t.Fatal("10 s after the client hung up, the call's GitHub request is still waiting")
	}
}
