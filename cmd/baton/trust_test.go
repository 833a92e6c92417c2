package main

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// authTrap is a GitHub API stand-in on loopback that records the
// Authorization header of every request and answers an empty list.
type authTrap struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newAuthTrap(t *testing.T) *authTrap {
	t.Helper()
	a := &authTrap{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.auth = append(a.auth, r.Header.Get("Authorization"))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *authTrap) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auth...)
}

// batonFails runs the binary, wants it to fail, and returns its output.
func batonFails(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("baton %s succeeded, want a failure\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// The github.com token goes to github.com's API only, and an Enterprise
// host's token to that host only. Through the real binary: an issue on a
// host nobody configured is refused before anything is sent (delivery
// create, a brief); a source's API URL must be https, or loopback http
// with the test switch; an Enterprise source listed in
// BATON_GITHUB_HOSTS syncs with its own token and never sees GH_TOKEN.
func TestGitHubTokenGoesOnlyToItsHost(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	trap := newAuthTrap(t)
	const dotcom, enterprise = "ghp_dotcomToken0000", "ghe_enterpriseToken0000"
	host := strings.TrimPrefix(trap.srv.URL, "http://")
	env := ghEnv(home, "BATON_DATA_DIR="+data, "GH_TOKEN="+dotcom, "GH_ENTERPRISE_TOKEN="+enterprise)
	repo := userRepo(t, env)

	out := batonFails(t, env, repo, "delivery", "create", "--issue", "http://"+host+"/o/r/issues/1", "--summary", "exfiltrate")
	if !strings.Contains(out, host+" is not a GitHub host baton is configured for") || !strings.Contains(out, "BATON_GITHUB_HOSTS") {
		t.Errorf("delivery create on an unconfigured host said:\n%s", out)
	}
	out = batonFails(t, env, repo, "fix-issue", "http://"+host+"/o/r/issues/1")
	if !strings.Contains(out, "BATON_GITHUB_HOSTS") {
		t.Errorf("fix-issue on an unconfigured host said:\n%s", out)
	}
	out = batonFails(t, append(env, "BATON_GITHUB_HOSTS=ghe.example"), repo, "source", "add", "ghe.example/o/r", "--api-url", trap.srv.URL+"/")
	if !strings.Contains(out, "plain http") || !strings.Contains(out, "BATON_GITHUB_ALLOW_HTTP_LOOPBACK") {
		t.Errorf("source add with a plain-http API URL said:\n%s", out)
	}
	if got := trap.seen(); len(got) != 0 {
		t.Fatalf("the listener got %d requests (Authorization %q), want none", len(got), got)
	}

	gheEnv := append(env, "BATON_GITHUB_HOSTS=ghe.example", "BATON_GITHUB_ALLOW_HTTP_LOOPBACK=1")
	batonRun(t, gheEnv, repo, "source", "add", "ghe.example/o/r", "--api-url", trap.srv.URL+"/")
	batonRun(t, gheEnv, repo, "source", "sync", "ghe.example/o/r")
	got := trap.seen()
	if len(got) == 0 {
		t.Fatal("the Enterprise sync sent nothing")
	}
	for _, h := range got {
		if h != "Bearer "+enterprise {
			t.Errorf("the Enterprise API saw Authorization %q, want its own token only", h)
		}
	}
}
