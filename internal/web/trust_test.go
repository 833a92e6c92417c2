package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// tokenTrap is a GitHub API stand-in that records every Authorization
// header it is sent.
type tokenTrap struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newTokenTrap(t *testing.T) *tokenTrap {
	t.Helper()
	tt := &tokenTrap{}
	tt.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tt.mu.Lock()
		tt.auth = append(tt.auth, r.Header.Get("Authorization"))
		tt.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(tt.srv.Close)
	return tt
}

func (tt *tokenTrap) seen() []string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]string(nil), tt.auth...)
}

// A hostile API caller holding the token cannot point a source at its
// own listener: api_url is refused on add and on update, a source or an
// issue on a host baton has no token for is refused, and a source whose
// API URL was written before this rule (straight into the database)
// syncs without the token ever leaving.
func TestAPICannotSendTheGitHubTokenElsewhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	trap := newTokenTrap(t)
	const secret = "ghp_serversOwnToken000000"
	// The server's intake talks to GitHub as cmd/baton wires it, with
	// a token in its environment.
	gh := github.Access{Getenv: func(k string) string { return map[string]string{"GH_TOKEN": secret}[k] }}
	e.web.Intake.GitHub = func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error) {
		return gh.Client(ctx, repo, apiURL)
	}

	var ae apiError
	if r := e.do("POST", "/api/sources", `{"repo":"octo/app","api_url":"`+trap.srv.URL+`/"}`, true, &ae); r.StatusCode != 400 || !strings.Contains(ae.Message, "baton source add --api-url") {
		t.Errorf("add with api_url = %d %+v, want 400 naming baton source add --api-url", r.StatusCode, ae)
	}
	var src struct{ ID, APIURL string }
	if r := e.do("POST", "/api/sources", `{"repo":"octo/app"}`, true, &src); r.StatusCode != 201 {
		t.Fatalf("add = %d", r.StatusCode)
	}
	if r := e.do("PATCH", "/api/sources/"+src.ID, `{"api_url":"`+trap.srv.URL+`/"}`, true, &ae); r.StatusCode != 400 || !strings.Contains(ae.Message, "api_url") {
		t.Errorf("update with api_url = %d %+v, want 400", r.StatusCode, ae)
	}
	if r := e.do("POST", "/api/sources", `{"repo":"127.0.0.1:1/o/r"}`, true, &ae); r.StatusCode != 400 || !strings.Contains(ae.Message, "BATON_GITHUB_HOSTS") {
		t.Errorf("add on an unconfigured host = %d %+v, want 400 naming BATON_GITHUB_HOSTS", r.StatusCode, ae)
	}

	body := fmt.Sprintf(`{"issue_url":%q,"summary":"x"}`, "https://ghe.evil.example/o/r/issues/1")
	if r := e.do("POST", "/api/deliveries", body, true, &ae); r.StatusCode != 400 || !strings.Contains(ae.Message, "ghe.evil.example") || !strings.Contains(ae.Message, "BATON_GITHUB_HOSTS") {
		t.Errorf("an issue on an unconfigured host = %d %+v, want 400 naming the host and BATON_GITHUB_HOSTS", r.StatusCode, ae)
	}

	// A row from before: its API URL is the attacker's listener.
	st := e.svc.Store()
	row, err := st.FindSource(t.Context(), src.ID)
	if err != nil {
		t.Fatal(err)
	}
	row.APIURL = trap.srv.URL + "/"
	if err := st.UpdateSource(t.Context(), row); err != nil {
		t.Fatal(err)
	}
	var synced struct {
		Sync baton.SyncStatus `json:"sync"`
	}
	r := e.do("POST", "/api/sources/"+src.ID+"/sync", "", true, &synced)
	if r.StatusCode != 400 || !strings.Contains(synced.Sync.Error, "plain http") {
		t.Errorf("sync through the planted API URL = %d %+v, want 400 saying plain http is refused", r.StatusCode, synced.Sync)
	}
	if got := trap.seen(); len(got) != 0 {
		t.Errorf("the attacker's listener got %d requests (Authorization %q), want none", len(got), got)
	}
}
