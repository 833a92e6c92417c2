package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

// Through the real binary, a team set-up with a GitHub App and no token:
// the App's id in the environment, its key a systemd credential. A source
// syncs as the App's installation (a verified JWT, then an installation
// token on every request); doctor names the App per source with the
// installation's permissions, and the key never shows.
func TestGitHubAppIdentity(t *testing.T) {
	t.Parallel()
	home, data, creds := t.TempDir(), t.TempDir(), t.TempDir()
	key, keyPEM := githubtest.TestAppKey()
	if err := os.WriteFile(filepath.Join(creds, "github-app-key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := githubtest.NewServer(t)
	srv.RequireToken("ghp_nobody_has_this_token_000000000000")
	srv.AddApp(githubtest.App{ID: 77, Slug: "team-baton", Key: &key.PublicKey})
	inst := srv.Install(77, "octo/app")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 3, Title: "Add a health endpoint", Labels: []string{"baton"}})
	env := ghEnv(home, append(srv.Env(), "BATON_DATA_DIR="+data, "BATON_GITHUB_APP_ID=77", "CREDENTIALS_DIRECTORY="+creds, "BATON_AGENT=command:true")...)
	repo := userRepo(t, env)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(batonBin, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if strings.Contains(string(out), "PRIVATE KEY") {
			t.Fatalf("baton %s printed the key", strings.Join(args, " "))
		}
		return string(out)
	}
	run("source", "add", "octo/app", "--setup", "npm ci", "--setup-egress-allow", "registry.npmjs.org")
	run("source", "sync", "octo/app")
	if out := run("delivery", "list"); !strings.Contains(out, "Add a health endpoint") {
		t.Errorf("the source's issue made no delivery:\n%s", out)
	}
	// The delivery runs the source's set-up.
	if out := run("delivery", "show", "1"); !strings.Contains(out, "set-up:      `npm ci`") || !strings.Contains(out, "the set-up alone reaches registry.npmjs.org") {
		t.Errorf("the source's delivery lacks its set-up:\n%s", out)
	}
	want := fmt.Sprintf("POST /app/installations/%d/access_tokens", inst)
	if n := srv.Count("POST /app/installations/*/access_tokens"); n != 1 || !strings.Contains(strings.Join(srv.RequestLog(), "\n"), want) {
		t.Errorf("token mints: %d, requests %q", n, srv.RequestLog())
	}
	out := run("doctor", "--no-probe")
	if !strings.Contains(out, "github: GitHub App 77 on github.com") {
		t.Errorf("doctor --no-probe does not name the App:\n%s", out)
	}
	var rep struct {
		GitHub struct {
			Sources []struct {
				Repo     string
				Identity struct {
					Kind, Source, Account string
					May                   []string
				}
				Setup struct{ Commands []string }
			}
		} `json:"github"`
	}
	cmd := exec.Command(batonBin, "doctor", "--json")
	cmd.Dir, cmd.Env = repo, env
	b, _ := cmd.Output() // doctor exits 1 when a harness is broken; the report is what counts
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, b)
	}
	if len(rep.GitHub.Sources) != 1 {
		t.Fatalf("doctor's sources = %+v", rep.GitHub.Sources)
	}
	if su := rep.GitHub.Sources[0].Setup; len(su.Commands) != 1 || su.Commands[0] != "npm ci" {
		t.Errorf("doctor's set-up of octo/app's deliveries = %+v, want the source's", su)
	}
	id := rep.GitHub.Sources[0].Identity
	if id.Kind != "app" || id.Account != "team-baton[bot]" || !strings.Contains(id.Source, fmt.Sprintf("installation %d", inst)) ||
		!strings.Contains(strings.Join(id.May, ", "), "issues: write") {
		t.Errorf("doctor's identity of octo/app = %+v", id)
	}
}

// serve and worker take the App from flags too, and refuse a bad one
// before they start.
func TestGitHubAppFlags(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	env := ghEnv(home, "BATON_DATA_DIR="+data)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--github-app-id", "seven"}, `--github-app-id "seven": want the App's numeric id`},
		{[]string{"worker", "--github-app-id", "7", "--github-app-key-file", filepath.Join(data, "missing.pem")}, "--github-app-key-file names"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--github-app-id", "0"}, "want the App's numeric id"},
	} {
		if out := batonFails(t, env, data, tc.args...); !strings.Contains(out, tc.want) {
			t.Errorf("baton %s said:\n%s\nwant %q", strings.Join(tc.args, " "), out, tc.want)
		}
	}
}

// A GitHub App's key file that cannot be read stops every command that
// would act on GitHub, naming the file, instead of reading as "the key is
// not set"; the same for a database URL's file, which would otherwise
// send the command to the default SQLite file. Commands that touch
// neither run as usual.
func TestSecretFileThatCannotBeReadIsNamedByEveryCommand(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	srv := githubtest.NewServer(t)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 3, Title: "Add a health endpoint", Labels: []string{"baton"}})
	base := ghEnv(home, append(srv.Env(), "BATON_DATA_DIR="+data)...)
	repo := userRepo(t, base)
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(batonBin, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(base, "source", "add", "octo/app")
	missing := filepath.Join(data, "missing.pem")
	env := append(base, "BATON_GITHUB_APP_ID=77", "BATON_GITHUB_APP_KEY_FILE="+missing)
	for _, args := range [][]string{{"source", "sync", "octo/app"}, {"fix-issue", "3", "--repo", "octo/app"}} {
		out := batonFails(t, env, repo, args...)
		if !strings.Contains(out, "BATON_GITHUB_APP_KEY_FILE names "+missing) || !strings.Contains(out, "no such file") || strings.Contains(out, "is not set") {
			t.Errorf("baton %s said:\n%s\nwant the key file named", strings.Join(args, " "), out)
		}
	}
	if out := run(env, "packet", "list"); strings.Contains(out, "missing.pem") {
		t.Errorf("packet list, which needs no GitHub, complained of the key:\n%s", out)
	}
	dbEnv := append(base, "BATON_DATABASE_URL_FILE="+filepath.Join(data, "missing-url"))
	if out := batonFails(t, dbEnv, repo, "delivery", "list"); !strings.Contains(out, "BATON_DATABASE_URL_FILE names") {
		t.Errorf("delivery list with an unreadable database URL file said:\n%s", out)
	}
}
