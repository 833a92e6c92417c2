package github

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton"
)

// authRecorder is an API server that records the Authorization header of
// every request it gets, and answers each as GitHub answers GET /user.
type authRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthRecorder(t *testing.T) *authRecorder {
	t.Helper()
	a := &authRecorder{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Header.Get("Authorization"))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"login":"hubot","id":1}`))
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *authRecorder) URL() string { return a.srv.URL + "/" }

func (a *authRecorder) headers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// A host nobody configured gets no client, so no request and no token:
// not through GITHUB_API_URL, not through an API URL a source names, not
// with the github.com token standing in for an Enterprise one.
func TestAccessSendsNoTokenToUnconfiguredHosts(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no gh to ask
	rec := newAuthRecorder(t)
	const dotcom = "ghp_dotcomToken0123456789"
	cases := []struct {
		name   string
		env    map[string]string
		repo   Repo
		apiURL string
		want   string // in the error
	}{
		{"enterprise host not listed", map[string]string{"GH_TOKEN": dotcom, "GH_ENTERPRISE_TOKEN": "ghe", AllowHTTPLoopbackVar: "1"},
			Repo{Host: "evil.example", Owner: "o", Name: "r"}, rec.URL(), "add evil.example to BATON_GITHUB_HOSTS"},
		{"listed host, only the github.com token", map[string]string{"GH_TOKEN": dotcom, hostsVar: "ghe.example", AllowHTTPLoopbackVar: "1"},
			Repo{Host: "ghe.example", Owner: "o", Name: "r"}, rec.URL(), "no GitHub token for ghe.example"},
		{"plain http without the switch", map[string]string{"GH_TOKEN": dotcom},
			Repo{Host: DefaultHost, Owner: "o", Name: "r"}, rec.URL(), "plain http"},
		{"plain http GITHUB_API_URL without the switch", map[string]string{"GH_TOKEN": dotcom, APIURLVar: rec.URL()},
			Repo{Host: DefaultHost, Owner: "o", Name: "r"}, "", "plain http"},
		{"github.com token to another https host", map[string]string{"GH_TOKEN": dotcom},
			Repo{Host: DefaultHost, Owner: "o", Name: "r"}, "https://collector.example/", "only to https://api.github.com/"},
		{"enterprise token to another https host", map[string]string{"GH_ENTERPRISE_TOKEN": "ghe", hostsVar: "ghe.example"},
			Repo{Host: "ghe.example", Owner: "o", Name: "r"}, "https://collector.example/api/v3/", "not on ghe.example"},
		{"http to a non-loopback host with the switch", map[string]string{"GH_TOKEN": dotcom, AllowHTTPLoopbackVar: "1"},
			Repo{Host: DefaultHost, Owner: "o", Name: "r"}, "http://api.github.com/", "plain http"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Access{Getenv: envOf(tc.env)}
			c, err := a.Client(t.Context(), tc.repo, tc.apiURL)
			if err == nil {
				_, _ = c.Viewer(t.Context())
				t.Fatalf("Client(%s, %q) = a client, want an error", tc.repo.Host, tc.apiURL)
			}
			if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Client(%s, %q) = %v, want Invalid mentioning %q", tc.repo.Host, tc.apiURL, err, tc.want)
			}
			if strings.Contains(err.Error(), dotcom) {
				t.Errorf("the error shows the token: %v", err)
			}
			if cerr := a.CheckAPIURL(tc.repo, tc.apiURL); cerr == nil && !errors.Is(err, ErrNoToken) {
				t.Errorf("CheckAPIURL(%s, %q) = nil, but Client refused: %v", tc.repo.Host, tc.apiURL, err)
			}
		})
	}
	if h := rec.headers(); len(h) != 0 {
		t.Errorf("the listener got %d requests (Authorization %q), want none", len(h), h)
	}
}

// An Enterprise host that is listed gets its own token and never the
// github.com one; github.com gets its own through GITHUB_API_URL.
func TestAccessSendsEachHostItsOwnToken(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ghe, dotcom := newAuthRecorder(t), newAuthRecorder(t)
	env := map[string]string{
		"GH_TOKEN": "ghp_dotcom", "GH_ENTERPRISE_TOKEN": "ghe_own", hostsVar: "ghe.example, other.example",
		APIURLVar: dotcom.URL(), AllowHTTPLoopbackVar: "1",
	}
	a := Access{Getenv: envOf(env)}
	c, err := a.Client(t.Context(), Repo{Host: "ghe.example", Owner: "o", Name: "r"}, ghe.URL())
	if err != nil {
		t.Fatalf("Client(ghe.example) = %v", err)
	}
	if tok, _ := c.Token(t.Context()); tok.Value() != "ghe_own" {
		t.Fatalf("Client(ghe.example) sends another token")
	}
	if _, err := c.Viewer(t.Context()); err != nil {
		t.Fatal(err)
	}
	c, err = a.Client(t.Context(), Repo{Host: DefaultHost, Owner: "o", Name: "r"}, "")
	if err != nil {
		t.Fatalf("Client(github.com) = %v", err)
	}
	if tok, _ := c.Token(t.Context()); tok.Value() != "ghp_dotcom" {
		t.Fatalf("Client(github.com) sends another token")
	}
	if _, err := c.Viewer(t.Context()); err != nil {
		t.Fatal(err)
	}
	if h := ghe.headers(); len(h) != 1 || h[0] != "Bearer ghe_own" {
		t.Errorf("the Enterprise API saw Authorization %q, want only its own token", h)
	}
	if h := dotcom.headers(); len(h) != 1 || h[0] != "Bearer ghp_dotcom" {
		t.Errorf("GITHUB_API_URL saw Authorization %q, want the github.com token", h)
	}
}

func TestResolveAPIURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	getenv := envOf(env)
	check := func(apiURL, host, want string) {
		t.Helper()
		got, err := resolveAPIURL(apiURL, getenv, host)
		if err != nil || got != want {
			t.Errorf("ResolveAPIURL(%q, %q) = %q, %v; want %q", apiURL, host, got, err, want)
		}
	}
	refuse := func(apiURL, host, why string) {
		t.Helper()
		got, err := resolveAPIURL(apiURL, getenv, host)
		if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), why) {
			t.Errorf("ResolveAPIURL(%q, %q) = %q, %v; want Invalid mentioning %q", apiURL, host, got, err, why)
		}
	}
	check("", "", "https://api.github.com/")
	check("", "ghe.corp.example", "https://ghe.corp.example/api/v3/")
	check("https://api.octo.ghe.com", "octo.ghe.com", "https://api.octo.ghe.com/")
	check("https://GHE.corp.example:443/api/v3", "ghe.corp.example", "https://GHE.corp.example:443/api/v3/")
	refuse("https://flag.example/api/v3", "", "not github.com's")
	refuse("https://ghe.corp.example.evil/api/v3/", "ghe.corp.example", "not on ghe.corp.example")
	refuse("http://ghe.corp.example/api/v3/", "ghe.corp.example", "plain http")

	// GITHUB_API_URL is github.com's, and an Enterprise host's only when
	// it is on that host (GitHub Actions on GHES).
	env[APIURLVar] = "https://proxy.example/gh/"
	check("", "", "https://proxy.example/gh/")
	check("https://proxy.example/other/", "", "https://proxy.example/other/")
	check("", "ghe.corp.example", "https://ghe.corp.example/api/v3/")
	env[APIURLVar] = "https://ghe.corp.example/api/v3"
	check("", "ghe.corp.example", "https://ghe.corp.example/api/v3/")

	// Plain http only to loopback, only with the switch.
	env[APIURLVar] = "http://127.0.0.1:9/"
	refuse("", "", "plain http")
	env[AllowHTTPLoopbackVar] = "1"
	check("", "", "http://127.0.0.1:9/")
	check("http://localhost:9/", "ghe.corp.example", "http://localhost:9/")
	refuse("http://10.0.0.1/", "", "plain http")
	refuse("https://user:pw@api.github.com/", "", "credentials")
}

func TestResolveTokenNeverLendsTheGitHubToken(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, _, err := resolveToken(t.Context(), envOf(map[string]string{"GH_TOKEN": "ghp_dotcom", "GITHUB_TOKEN": "ghp_2"}), "ghe.corp.example")
	if !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "GH_ENTERPRISE_TOKEN") {
		t.Errorf("ResolveToken(ghe) with only GH_TOKEN = %v, want ErrNoToken naming GH_ENTERPRISE_TOKEN", err)
	}
}

func TestHostsFromEnv(t *testing.T) {
	t.Parallel()
	h, err := HostsFromEnv(envOf(map[string]string{gHHostVar: "GHE.one.example", hostsVar: "two.example:8443, three.example:443\tgithub.com"}))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"github.com": true, "": true, "ghe.one.example": true, "two.example:8443": true, "three.example": true,
		"two.example": false, "evil.example": false, "one.example": false, "ghe.one.example.evil": false,
	} {
		if got := h.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	if err := (Hosts{}).Check("evil.example"); err == nil || !strings.Contains(err.Error(), "add evil.example to BATON_GITHUB_HOSTS") {
		t.Errorf("Check(evil.example) = %v, want it to say what to configure", err)
	}
	for _, bad := range []string{"https://ghe.example/", "ghe.example/o", "user@ghe.example", "ghe example:x"} {
		if _, err := HostsFromEnv(envOf(map[string]string{hostsVar: bad})); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), hostsVar) {
			t.Errorf("BATON_GITHUB_HOSTS=%q: %v, want Invalid naming the variable", bad, err)
		}
	}
}

// FuzzParseHosts: every host returned is a valid, normalized host name
// that the input spells (case aside), and a list re-read from the output
// is the same list.
func FuzzParseHosts(f *testing.F) {
	for _, s := range []string{"ghe.example.com", "a.example, b.example:8443", "A.Example:443\tb", "https://x/", ",,", "www.github.com", "x."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := parseHosts(s)
		if err != nil {
			return
		}
		for _, h := range hosts {
			if !validHost(h) || h != strings.ToLower(h) || strings.HasSuffix(h, ":443") {
				t.Fatalf("ParseHosts(%q) gave %q, not a normalized host", s, h)
			}
			name, _, _ := strings.Cut(h, ":")
			if h != DefaultHost && !strings.Contains(strings.ToLower(s), name) {
				t.Fatalf("ParseHosts(%q) gave %q, which the input does not name", s, h)
			}
		}
		again, err := parseHosts(strings.Join(hosts, ","))
		if err != nil || strings.Join(again, ",") != strings.Join(hosts, ",") {
			t.Fatalf("ParseHosts(%q) = %q, re-read as %q, %v", s, hosts, again, err)
		}
	})
}
