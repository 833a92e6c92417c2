package github

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestParseRepo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Repo
		code baton.Code
	}{
		{in: "octo/app", want: Repo{"github.com", "octo", "app"}},
		{in: " octo/app.git ", want: Repo{"github.com", "octo", "app"}},
		{in: "my-org/my.repo_2", want: Repo{"github.com", "my-org", "my.repo_2"}},
		{in: "octocat_acme/app", want: Repo{"github.com", "octocat_acme", "app"}},
		{in: "GHE.Example.com/team/svc", want: Repo{"ghe.example.com", "team", "svc"}},
		{in: "https://github.com/octo/app", want: Repo{"github.com", "octo", "app"}},
		{in: "git@github.com:octo/app.git", want: Repo{"github.com", "octo", "app"}},
		{in: "", code: baton.Invalid},
		{in: "octo", code: baton.Invalid},
		{in: "octo/", code: baton.Invalid},
		{in: "/app", code: baton.Invalid},
		{in: "a/b/c/d", code: baton.Invalid},
		{in: "../app", code: baton.Invalid},
		{in: "octo/..", code: baton.Invalid},
		{in: "-octo/app", code: baton.Invalid},
		{in: "octo/app?x=1", code: baton.Invalid},
		{in: "octo/app#1", code: baton.Invalid},
		{in: "oc to/app", code: baton.Invalid},
		{in: "bad_host!/o/r", code: baton.Invalid},
	}
	for _, tt := range tests {
		got, err := ParseRepo(tt.in)
		if c := baton.ErrorCode(err); c != tt.code {
			t.Errorf("ParseRepo(%q) error = %v, want code %q", tt.in, err, tt.code)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRepo(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseRemoteURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Repo
	}{
		{"https://github.com/octo/app", Repo{"github.com", "octo", "app"}},
		{"https://github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"https://github.com/octo/app/", Repo{"github.com", "octo", "app"}},
		{"https://github.com:443/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"http://github.com/octo/app", Repo{"github.com", "octo", "app"}},
		{"https://x-access-token:ghs_secret@github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"https://www.github.com/octo/app", Repo{"github.com", "octo", "app"}},
		{"git@github.com:octo/app.git", Repo{"github.com", "octo", "app"}},
		{"git@github.com:octo/app", Repo{"github.com", "octo", "app"}},
		{"github.com:octo/app.git", Repo{"github.com", "octo", "app"}},
		{"git@github.com:/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"ssh://git@github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"ssh://git@github.com:22/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"ssh://git@ssh.github.com:443/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"git+ssh://git@github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"git://github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"https://ghe.corp.example/team/svc.git", Repo{"ghe.corp.example", "team", "svc"}},
		{"https://ghe.corp.example:8443/team/svc.git", Repo{"ghe.corp.example:8443", "team", "svc"}},
		{"git@ghe.corp.example:team/svc.git", Repo{"ghe.corp.example", "team", "svc"}},
		{"ssh://git@GHE.corp.example:2222/team/svc.git", Repo{"ghe.corp.example", "team", "svc"}},
	}
	for _, tt := range tests {
		got, err := parseRemoteURL(tt.in)
		if err != nil {
			t.Errorf("ParseRemoteURL(%q) = %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRemoteURL(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{
		"", "/home/me/app", "./app", "file:///srv/git/app.git", "https://github.com/octo",
		"https://github.com/octo/app/pulls/1", "https://github.com/", "ftp://github.com/octo/app",
		"https://ghp_leak123456@github.com/onlyowner", "git@github.com:", "::", "https://github.com/../etc",
	} {
		_, err := parseRemoteURL(bad)
		if baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseRemoteURL(%q) error = %v, want Invalid", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "ghp_leak123456") {
			t.Errorf("ParseRemoteURL(%q) error shows the credentials: %v", bad, err)
		}
	}
}

// gitRepo makes a real git repository in a temp dir, with origin set to
// remote unless it is empty.
func gitRepo(t *testing.T, remote string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	if remote != "" {
		run("remote", "add", "origin", remote)
	}
	return dir
}

func TestRepoFromRemote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		remote string
		want   Repo
	}{
		{"https://github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"https://x-access-token:ghs_SECRET@github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"git@github.com:octo/app.git", Repo{"github.com", "octo", "app"}},
		{"ssh://git@github.com/octo/app.git", Repo{"github.com", "octo", "app"}},
		{"git@ghe.corp.example:team/svc.git", Repo{"ghe.corp.example", "team", "svc"}},
		{"https://ghe.corp.example/team/svc", Repo{"ghe.corp.example", "team", "svc"}},
	}
	for _, tt := range tests {
		dir := gitRepo(t, tt.remote)
		sub := filepath.Join(dir, "nested", "deeper")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := repoFromRemote(t.Context(), sub)
		if err != nil {
			t.Errorf("RepoFromRemote(origin %q) = %v", tt.remote, err)
			continue
		}
		if got != tt.want {
			t.Errorf("RepoFromRemote(origin %q) = %+v, want %+v", tt.remote, got, tt.want)
		}
	}

	_, err := repoFromRemote(t.Context(), gitRepo(t, ""))
	if baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("RepoFromRemote(no origin) = %v, want NotFound", err)
	}
	_, err = repoFromRemote(t.Context(), t.TempDir())
	if baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("RepoFromRemote(not a repository) = %v, want NotFound", err)
	}
	_, err = repoFromRemote(t.Context(), gitRepo(t, "https://user:ghp_SECRETSECRET@gitlab.example/onlyone"))
	if baton.ErrorCode(err) != baton.Invalid || strings.Contains(err.Error(), "ghp_SECRETSECRET") {
		t.Errorf("RepoFromRemote(non-GitHub origin with credentials) = %v, want Invalid without the credentials", err)
	}
}

func TestNextLink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		h    string
		want string
		ok   bool
	}{
		{`<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last"`,
			"https://api.github.com/repositories/1/issues?page=2", true},
		{`<https://x/?page=1>; rel="prev", <https://x/?page=3>; rel="next", <https://x/?page=9>; rel="last", <https://x/?page=1>; rel="first"`,
			"https://x/?page=3", true},
		{`<https://x/?page=9>; rel="last"`, "", false},
		{`<https://x/?a=1,2&page=2>; rel=next`, "https://x/?a=1,2&page=2", true},
		{`<https://x/?page=2>; title="a, b; c"; rel="last next"`, "https://x/?page=2", true},
		{`<https://x/?page=2>;REL="Next"`, "https://x/?page=2", true},
		{``, "", false},
		{`garbage`, "", false},
		{`<https://x/?page=2`, "", false},
		{`< 0>rel=next`, "", false}, // a parameter needs its ";"
		{`<https://x/?page=2> ; rel="next"`, "https://x/?page=2", true},
	}
	for _, tt := range tests {
		got, ok := nextLink(tt.h)
		if got != tt.want || ok != tt.ok {
			t.Errorf("nextLink(%q) = %q, %v; want %q, %v", tt.h, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTokenFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if tok, src := TokenFromEnv(getenv); tok != "" || src != "" {
		t.Errorf("TokenFromEnv(empty) = %q, %q", tok.Value(), src)
	}
	env["GITHUB_TOKEN"] = "from-github"
	if tok, src := TokenFromEnv(getenv); tok.Value() != "from-github" || src != "GITHUB_TOKEN" {
		t.Errorf("TokenFromEnv = %q, %q; want GITHUB_TOKEN", tok.Value(), src)
	}
	env["GH_TOKEN"] = " from-gh\n"
	if tok, src := TokenFromEnv(getenv); tok.Value() != "from-gh" || src != "GH_TOKEN" {
		t.Errorf("TokenFromEnv = %q, %q; want GH_TOKEN first, as gh does", tok.Value(), src)
	}
	if tok, _ := TokenFromEnv(nil); tok != "" {
		t.Errorf("TokenFromEnv(nil) = %q", tok.Value())
	}
}

// fakeGH puts a scripted gh on PATH (and nothing else) that prints token
// for `gh auth token --hostname host`, and fails like the real gh
// otherwise. It logs its arguments to a file for assertions.
func fakeGH(t *testing.T, host, token string) (argsLog string) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	sh, _ := exec.LookPath("sh")
	dir := t.TempDir()
	argsLog = filepath.Join(dir, "args.log")
	script := `#!` + sh + `
echo "$*" >> '` + argsLog + `'
if [ "$1 $2 $3 $4" = "auth token --hostname ` + host + `" ]; then
  printf '%s\n' '` + token + `'
  exit 0
fi
echo "no oauth token found for $4" >&2
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	return argsLog
}

func TestResolveTokenFromGH(t *testing.T) {
	const tok = "gho_FromTheKeyring0123456789"
	argsLog := fakeGH(t, "github.com", tok)
	noEnv := func(string) string { return "" }

	got, src, err := resolveToken(t.Context(), noEnv, "")
	if err != nil || got.Value() != tok || src != "gh auth token" {
		t.Fatalf("ResolveToken = %q, %q, %v; want the gh token", got.Value(), src, err)
	}
	if b, _ := os.ReadFile(argsLog); strings.TrimSpace(string(b)) != "auth token --hostname github.com" {
		t.Errorf("gh called with %q, want auth token --hostname github.com", b)
	}

	// The environment wins and gh is not asked.
	os.Remove(argsLog)
	got, src, err = resolveToken(t.Context(), func(k string) string { return map[string]string{"GITHUB_TOKEN": "env-tok"}[k] }, "")
	if err != nil || got.Value() != "env-tok" || src != "GITHUB_TOKEN" {
		t.Errorf("ResolveToken with GITHUB_TOKEN = %q, %q, %v", got.Value(), src, err)
	}
	if _, err := os.Stat(argsLog); err == nil {
		t.Error("gh was run although GITHUB_TOKEN was set")
	}

	// gh knows no token for a GHE host: Invalid, wrapping ErrNoToken, with
	// gh's reason and a hint naming the host.
	_, _, err = resolveToken(t.Context(), noEnv, "ghe.corp.example")
	if baton.ErrorCode(err) != baton.Invalid || !errors.Is(err, ErrNoToken) {
		t.Fatalf("ResolveToken(ghe) = %v, want Invalid ErrNoToken", err)
	}
	for _, want := range []string{"gh auth login --hostname ghe.corp.example", "no oauth token found for ghe.corp.example"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ResolveToken(ghe) = %v, want it to mention %q", err, want)
		}
	}
	got, src, err = resolveToken(t.Context(), func(k string) string {
		return map[string]string{"GH_ENTERPRISE_TOKEN": "ghe-tok", "GH_TOKEN": "dotcom-tok"}[k]
	}, "ghe.corp.example")
	if err != nil || got.Value() != "ghe-tok" || src != "GH_ENTERPRISE_TOKEN" {
		t.Errorf("ResolveToken(ghe) with GH_ENTERPRISE_TOKEN = %q, %q, %v", got.Value(), src, err)
	}
}

func TestResolveTokenWithoutGH(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no gh anywhere
	_, _, err := resolveToken(t.Context(), func(string) string { return "" }, "")
	if baton.ErrorCode(err) != baton.Invalid || !errors.Is(err, ErrNoToken) {
		t.Fatalf("ResolveToken = %v, want Invalid ErrNoToken", err)
	}
	if msg := baton.ErrorMessage(err); !strings.Contains(msg, "set GITHUB_TOKEN or GH_TOKEN, or run `gh auth login`") {
		t.Errorf("message = %q, want a hint", msg)
	}
}

func TestTokenFromGHRejectsOddOutput(t *testing.T) {
	fakeGH(t, "github.com", "two words-would-break-the-header")
	_, err := tokenFromGH(t.Context(), "")
	if err == nil || strings.Contains(err.Error(), "words-would-break") {
		t.Errorf("TokenFromGH = %v, want an error that does not echo gh's output", err)
	}
}

func TestRepoString(t *testing.T) {
	t.Parallel()
	r := Repo{Host: "ghe.example", Owner: "o", Name: "r"}
	if diff := cmp.Diff("o/r", r.String()); diff != "" {
		t.Error(diff)
	}
}
