package github_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

const appID = 4242

// appEnv is an environment naming a GitHub App (and no token), pointed at
// srv for github.com.
func appEnv(srv *githubtest.Server, keyPEM []byte) func(string) string {
	m := map[string]string{github.AppIDVar: fmt.Sprint(appID), github.AppKeyVar: string(keyPEM)}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func appServer(t *testing.T) (*githubtest.Server, []byte) {
	t.Helper()
	key, keyPEM := githubtest.TestAppKey()
	srv := githubtest.NewServer(t)
	srv.RequireToken("ghp_no_person_token_is_given_here_0000")
	srv.AddApp(githubtest.App{ID: appID, Slug: "baton-app", Key: &key.PublicKey})
	return srv, keyPEM
}

// With an App configured, a repository's client finds the App's
// installation (a JWT the server verifies), mints its token once and
// shares it with every client of the process; what it posts is the App
// bot's, and Viewer names the bot without a request.
func TestAppActsAsItsInstallation(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no gh to fall back on
	srv, keyPEM := appServer(t)
	inst := srv.Install(appID, "octo/app")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash"})
	a := github.Access{Getenv: appEnv(srv, keyPEM), Apps: &github.Apps{}}
	ctx := t.Context()

	c, err := a.Client(ctx, octo, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(ctx, octo, 7, github.IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := a.Client(ctx, octo, "")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := again.CreateComment(ctx, octo, 7, "On it.")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /repos/octo/app/installation",
		fmt.Sprintf("POST /app/installations/%d/access_tokens", inst),
		"GET /repos/octo/app/issues/7",
		"POST /repos/octo/app/issues/7/comments",
	}
	if diff := cmp.Diff(want, srv.RequestLog()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if cm.Author != "baton-app[bot]" {
		t.Errorf("the comment's author = %q, want the App's bot", cm.Author)
	}
	for _, r := range srv.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer [redacted]" {
			t.Errorf("%s sent Authorization %q, want a bearer credential", r, got)
		}
	}
	srv.ResetRequests()
	v, err := c.Viewer(ctx)
	if err != nil || !v.App || v.Login != "baton-app[bot]" || v.String() != "baton-app[bot] (GitHub App)" {
		t.Errorf("Viewer = %+v, %v; want the App's bot", v, err)
	}
	id, err := c.Identity(ctx)
	if err != nil || id.Kind != "app" || !strings.Contains(id.Source, fmt.Sprintf("GitHub App %d, installation %d", appID, inst)) ||
		!strings.Contains(strings.Join(id.May, ","), "pull_requests: write") {
		t.Errorf("Identity = %+v, %v", id, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("Viewer and Identity of an App sent %d requests", n)
	}
	tok, err := c.Token(ctx)
	if err != nil || !strings.HasPrefix(tok.Value(), "ghs_") {
		t.Errorf("Token = %v, want the installation's", err)
	}
}

// Every request the App makes, the token mint included (ghinstallation
// sends it, past go-github), carries baton's User-Agent and the API
// version baton's other requests ask for; its JWTs say they were issued a
// minute ago, as GitHub advises against clock drift.
func TestAppRequestsCarryBatonHeadersAndABackdatedJWT(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	srv, keyPEM := appServer(t)
	srv.Install(appID, "octo/app")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash"})
	a := github.Access{Getenv: appEnv(srv, keyPEM), UserAgent: "baton/v9.8.7", Apps: &github.Apps{}}
	start := time.Now()
	c, err := a.Client(t.Context(), octo, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(t.Context(), octo, 7, github.IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests %v, want the installation, the token and the issue", srv.RequestLog())
	}
	version := reqs[0].Header.Get("X-GitHub-Api-Version")
	if version == "" {
		t.Fatalf("go-github's installation lookup sent no API version")
	}
	jwts := 0
	for _, r := range reqs {
		if ua, v := r.Header.Get("User-Agent"), r.Header.Get("X-GitHub-Api-Version"); ua != "baton/v9.8.7" || v != version {
			t.Errorf("%s: User-Agent %q, API version %q; want baton/v9.8.7 and %s", r, ua, v, version)
		}
		if r.JWTIssuedAt.IsZero() {
			continue
		}
		jwts++
		if ago := start.Sub(r.JWTIssuedAt); ago < time.Minute-time.Second || ago > time.Minute+5*time.Second {
			t.Errorf("%s: the JWT's iat is %s before the request, want a minute", r, ago.Round(time.Second))
		}
	}
	if jwts != 2 {
		t.Errorf("%d requests carried a JWT, want the installation lookup and the token mint", jwts)
	}
}

// An installation on a whole account still yields tokens for one
// repository each: the token baton holds for octo/app (and the one a
// hostile caller might get out of it) reads nothing of octo/secrets,
// though the App is installed there too.
func TestAppTokensReachOneRepository(t *testing.T) {
	t.Parallel()
	srv, keyPEM := appServer(t)
	srv.Install(appID, "octo/app", "octo/secrets")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7})
	srv.AddIssue("octo/secrets", githubtest.Issue{Number: 1, Title: "The launch codes"})
	a := github.Access{Getenv: appEnv(srv, keyPEM), Apps: &github.Apps{}}
	ctx := t.Context()
	c, err := a.Client(ctx, octo, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(ctx, octo, 7, github.IssueOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok.Value())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("repos/octo/app/issues/7"); code != http.StatusOK {
		t.Fatalf("the token on its own repository: %d", code)
	}
	if code := get("repos/octo/secrets/issues/1"); code != http.StatusNotFound {
		t.Errorf("octo/app's token read octo/secrets: %d, want 404", code)
	}
	secrets := github.Repo{Host: "github.com", Owner: "octo", Name: "secrets"}
	other, err := a.Client(ctx, secrets, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Issue(ctx, secrets, 1, github.IssueOptions{}); err != nil {
		t.Errorf("octo/secrets' own client: %v", err)
	}
	var reach [][]string
	for _, m := range srv.MintedTokens() {
		reach = append(reach, m.Repositories)
	}
	if diff := cmp.Diff([][]string{{"octo/app"}, {"octo/secrets"}}, reach); diff != "" {
		t.Errorf("minted tokens reach (-want +got):\n%s", diff)
	}
}

// A token with less than a minute left is minted again before the
// request that would carry it; every request goes through.
func TestAppRefreshesTokens(t *testing.T) {
	t.Parallel()
	srv, keyPEM := appServer(t)
	srv.Install(appID, "octo/app")
	srv.SetTokenLifetime(30 * time.Second)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 7})
	c, err := github.Access{Getenv: appEnv(srv, keyPEM)}.Client(t.Context(), octo, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Issue(t.Context(), octo, 7, github.IssueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.MintedTokens()); n != 3 {
		t.Errorf("%d tokens minted for 3 requests with tokens that expire within the minute, want 3", n)
	}
	srv.SetTokenLifetime(time.Hour)
	for range 3 {
		if _, err := c.Issue(t.Context(), octo, 7, github.IssueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.MintedTokens()); n != 4 {
		t.Errorf("%d tokens minted in all, want one more for an hour's token", n)
	}
}

// An App not installed on the repository, or whose key is not its own,
// gets no client, with a message that says what to do.
func TestAppRefusals(t *testing.T) {
	t.Parallel()
	srv, keyPEM := appServer(t)
	srv.Install(appID, "octo/app")
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	for _, tc := range []struct {
		name string
		key  []byte
		repo github.Repo
		code baton.Code
		want string
	}{
		{"not installed", keyPEM, github.Repo{Host: "github.com", Owner: "octo", Name: "other"}, baton.NotFound, "is not installed on octo/other"},
		{"another key", otherPEM, octo, baton.Invalid, "check --github-app-id and that the key file is this App's private key"},
		{"not a key", []byte("-----BEGIN NOTHING-----\nxx\n-----END NOTHING-----\n"), octo, baton.Invalid, "not an RSA private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := github.Access{Getenv: appEnv(srv, tc.key)}.Client(t.Context(), tc.repo, "")
			if baton.ErrorCode(err) != tc.code || !strings.Contains(baton.ErrorMessage(err), tc.want) {
				t.Errorf("Client = %v, want %s saying %q", err, tc.code, tc.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
	half := map[string]string{github.AppIDVar: "1"}
	if _, err := (github.Access{Getenv: func(k string) string { return half[k] }}).Client(t.Context(), octo, ""); baton.ErrorCode(err) != baton.Invalid ||
		!strings.Contains(err.Error(), "--github-app-key-file") {
		t.Errorf("an App id without a key = %v, want Invalid naming --github-app-key-file", err)
	}
}

// The App's JWT and its tokens go to the host's configured API URL only:
// not to a host nobody configured, not through a redirect.
func TestAppCredentialsStayOnTheirHost(t *testing.T) {
	t.Parallel()
	_, keyPEM := githubtest.TestAppKey()
	var mu sync.Mutex
	var trapped []string
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		trapped = append(trapped, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(trap.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, trap.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	env := map[string]string{
		github.AppIDVar: fmt.Sprint(appID), github.AppKeyVar: string(keyPEM),
		github.APIURLVar: redirect.URL + "/", github.AllowHTTPLoopbackVar: "1",
	}
	a := github.Access{Getenv: func(k string) string { return env[k] }}
	if _, err := a.Client(t.Context(), octo, ""); err == nil {
		t.Fatal("a lookup answered by a redirect elsewhere gave a client")
	}
	// An App registered on github.com acts there only: an Enterprise
	// host nobody configured gets nothing, and one that is configured
	// gets its own token.
	if _, err := a.Client(t.Context(), github.Repo{Host: "ghe.example", Owner: "o", Name: "r"}, ""); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("an unconfigured host = %v, want Invalid", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(trapped) != 0 {
		t.Errorf("another host got %d requests (Authorization %q)", len(trapped), trapped)
	}
}
