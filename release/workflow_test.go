package release_test

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The release workflow and the scripts it publishes with: every action
// pinned by commit; every channel built before anything is published; a
// missing or refused token stops the release before it builds; a
// prerelease moves no `latest`. The scripts run with stand-ins for npm,
// gh, git and docker that record what they are asked (nothing here may
// publish to the real registries).

type workflow struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T) (workflow, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w, string(b)
}

// Actions are pinned by commit, so a moved tag cannot change what runs
// with the release's secrets; the comment names the tag it was.
func TestWorkflowPinsActions(t *testing.T) {
	t.Parallel()
	w, text := readWorkflow(t)
	n := 0
	for job, j := range w.Jobs {
		for _, s := range j.Steps {
			if s.Uses == "" {
				continue
			}
			n++
			if !regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`).MatchString(s.Uses) {
				t.Errorf("job %s uses %s: pin it by its full commit", job, s.Uses)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(s.Uses) + ` # v\d+\.\d+\.\d+\n`).MatchString(text) {
				t.Errorf("job %s uses %s without a comment naming its tag (# vX.Y.Z)", job, s.Uses)
			}
		}
	}
	if n == 0 {
		t.Fatal("the workflow uses no actions: is it parsed right?")
	}
}

// The release job checks its tokens before anything else and publishes
// only after every channel has built: GoReleaser without publishing, the
// npm packages, then GoReleaser publishing the images and a draft, the
// check that both builds agree, and publish.sh last.
func TestWorkflowBuildsBeforeItPublishes(t *testing.T) {
	t.Parallel()
	w, _ := readWorkflow(t)
	steps := w.Jobs["release"].Steps
	index := func(what string, match func(run, uses, args string) bool) int {
		t.Helper()
		for i, s := range steps {
			if match(s.Run, s.Uses, s.With["args"]) {
				return i
			}
		}
		t.Fatalf("the release job has no step that %s", what)
		return -1
	}
	goreleaser := func(uses string) bool { return strings.HasPrefix(uses, "goreleaser/goreleaser-action@") }
	preflight := index("runs release/preflight.sh", func(run, _, _ string) bool { return strings.Contains(run, "release/preflight.sh") })
	build := index("builds with GoReleaser, publishing nothing", func(_, uses, args string) bool {
		return goreleaser(uses) && strings.Contains(args, "--skip=publish")
	})
	npm := index("packs the npm packages", func(run, _, _ string) bool { return strings.Contains(run, "npm pack") })
	release := index("runs GoReleaser's publishing", func(_, uses, args string) bool {
		return goreleaser(uses) && !strings.Contains(args, "--skip=publish")
	})
	same := index("compares the two builds' checksums", func(run, _, _ string) bool {
		return strings.Contains(run, "built-checksums.txt") && strings.Contains(run, "dist/checksums.txt") && !strings.Contains(run, "cp ")
	})
	publish := index("runs release/publish.sh", func(run, _, _ string) bool { return strings.Contains(run, "release/publish.sh") })
	for i, s := range steps[:preflight] {
		if s.Run != "" || !strings.HasPrefix(s.Uses, "actions/checkout@") && !strings.HasPrefix(s.Uses, "actions/setup-node@") {
			t.Errorf("step %d (%s%s) runs before the preflight", i, s.Name, s.Uses)
		}
	}
	if !(preflight < build && build < npm && npm < release && release < same && same < publish && publish == len(steps)-1) {
		t.Errorf("release job order: preflight %d, build %d, npm %d, GoReleaser publishing %d, same checksums %d, publish %d of %d steps",
			preflight, build, npm, release, same, publish, len(steps))
	}
	for _, s := range steps {
		if strings.Contains(s.Run, "npm publish") || strings.Contains(s.Run, "git push") || strings.Contains(s.Run, "gh release") {
			t.Errorf("step %q publishes outside release/publish.sh", s.Name)
		}
	}
}

// standIns writes stand-ins for the publishing tools into a directory
// for PATH: each logs its arguments to log, one call a line. npm says a
// package is published when it is named in $PUBLISHED, and accepts a
// token unless $NPM_REFUSES; gh says the tap takes pushes unless
// $TAP_READONLY; git clone makes an empty tap, and git clone and push
// fail unless the environment hands git the header $WANT_GIT_AUTH for
// github.com, as the real git would fail to authenticate.
func standIns(t *testing.T, log string) string {
	t.Helper()
	dir := t.TempDir()
	record := `echo "$(basename "$0") $*" >> ` + shellQuote(log) + "\n"
	for name, body := range map[string]string{
		"npm": record + `case "$1" in
whoami) [ -z "${NPM_REFUSES:-}" ] && echo releaser || { echo "E401" >&2; exit 1; } ;;
view) case " ${PUBLISHED:-} " in *" $2 "*) echo "${2##*@}" ;; *) echo "E404" >&2; exit 1 ;; esac ;;
esac`,
		"gh": record + `case "$1" in
api) [ -z "${TAP_READONLY:-}" ] && echo true || echo false ;;
esac`,
		"git": record + `if [ "$1" = clone ] || [ "$3" = push ]; then
	[ "${GIT_CONFIG_COUNT:-}" = 1 ] && [ "${GIT_CONFIG_KEY_0:-}" = http.https://github.com/.extraheader ] &&
		[ -n "${WANT_GIT_AUTH:-}" ] && [ "${GIT_CONFIG_VALUE_0:-}" = "$WANT_GIT_AUTH" ] ||
		{ echo "git: could not read Username for 'https://github.com'" >&2; exit 128; }
fi
if [ "$1" = clone ]; then for a; do d=$a; done; mkdir -p "$d"; fi
if [ "$1" = -C ] && [ "$3" = diff ]; then exit 1; fi`,
		"docker": record,
	} {
		writeFile(t, filepath.Join(dir, name), "#!/bin/sh\n"+body+"\n", 0o755)
	}
	return dir
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runScript runs a release script with the stand-ins first on PATH and
// returns its output and the calls they logged.
func runScript(t *testing.T, script string, env []string, args ...string) (string, []string, error) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "calls")
	cmd := exec.Command("sh", append([]string{filepath.Join(repo, "release", script)}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+standIns(t, log)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	b, _ := os.ReadFile(log)
	var calls []string
	if s := strings.TrimSpace(string(b)); s != "" {
		calls = strings.Split(s, "\n")
	}
	return string(out), calls, err
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	tokens := []string{"GITHUB_TOKEN=gh", "HOMEBREW_TAP_TOKEN=tap", "NODE_AUTH_TOKEN=npm"}
	for _, c := range []struct {
		name string
		env  []string
		ok   bool
		says string
	}{
		{"every token works", tokens, true, "npm publishes as releaser"},
		{"no npm token", []string{"GITHUB_TOKEN=gh", "HOMEBREW_TAP_TOKEN=tap", "NODE_AUTH_TOKEN="}, false, "NODE_AUTH_TOKEN is not set"},
		{"no tap token", []string{"GITHUB_TOKEN=gh", "HOMEBREW_TAP_TOKEN=", "NODE_AUTH_TOKEN=npm"}, false, "HOMEBREW_TAP_TOKEN is not set"},
		{"npm refuses the token", append(slices.Clone(tokens), "NPM_REFUSES=1"), false, "npm does not accept NPM_TOKEN"},
		{"the tap token cannot push", append(slices.Clone(tokens), "TAP_READONLY=1"), false, "cannot push to baton-agent/homebrew-tap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, _, err := runScript(t, "preflight.sh", c.env)
			if (err == nil) != c.ok || !strings.Contains(out, c.says) {
				t.Errorf("preflight.sh = %v\n%s\nwant ok=%v and %q", err, out, c.ok, c.says)
			}
			if !c.ok && !strings.Contains(out, "nothing was built or published") {
				t.Errorf("a failed preflight does not say that nothing happened:\n%s", out)
			}
		})
	}
}

// npmTarballs makes npm pack's files for version: two platform packages
// and the top package, each with its package.json.
func npmTarballs(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	for file, name := range map[string]string{
		"baton-agent-baton-linux-x64-" + version + ".tgz":    "@baton-agent/baton-linux-x64",
		"baton-agent-baton-darwin-arm64-" + version + ".tgz": "@baton-agent/baton-darwin-arm64",
		"baton-agent-baton-" + version + ".tgz":              "@baton-agent/baton",
	} {
		src := t.TempDir()
		writeFile(t, filepath.Join(src, "package", "package.json"), "{\n  \"name\": \""+name+"\",\n  \"version\": \""+version+"\"\n}\n", 0o644)
		if out, err := exec.Command("tar", "-czf", filepath.Join(dir, file), "-C", src, "package").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v %s", err, out)
		}
	}
	return dir
}

func TestPublish(t *testing.T) {
	t.Parallel()
	dist := t.TempDir()
	writeFile(t, filepath.Join(dist, "homebrew", "Casks", "baton.rb"), "cask \"baton\" do\nend\n", 0o644)
	// The tap token reaches git through its environment only: arguments
	// are readable by every process on the machine, and a URL with the
	// token would stay in the clone's .git/config.
	const tapToken = "ghp_tapTokenOfTheReleaser"
	tokens := []string{"GITHUB_TOKEN=gh", "HOMEBREW_TAP_TOKEN=" + tapToken, "NODE_AUTH_TOKEN=npm",
		"WANT_GIT_AUTH=Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tapToken))}
	for _, c := range []struct {
		name, version string
		env           []string
		want, not     []string
	}{
		{
			name: "a release", version: "1.2.0", env: tokens,
			want: []string{
				"npm publish .*baton-agent-baton-(linux-x64|darwin-arm64)-1.2.0.tgz --access public --provenance --tag latest",
				"npm publish .*/baton-agent-baton-1.2.0.tgz --access public --provenance --tag latest",
				"git clone .*github.com/baton-agent/homebrew-tap.git",
				"git -C .* push",
				"docker buildx imagetools create --tag ghcr.io/baton-agent/baton:latest ghcr.io/baton-agent/baton:1.2.0",
				"docker buildx imagetools create --tag ghcr.io/baton-agent/baton-worker:latest ghcr.io/baton-agent/baton-worker:1.2.0",
				"gh release edit v1.2.0 --draft=false --prerelease=false --latest=true",
			},
		},
		{
			name: "a prerelease", version: "1.2.0-rc.1", env: tokens,
			want: []string{
				"npm publish .*baton-agent-baton-linux-x64-1.2.0-rc.1.tgz --access public --provenance --tag next",
				"gh release edit v1.2.0-rc.1 --draft=false --prerelease=true --latest=false",
			},
			not: []string{"--tag latest", "git ", "imagetools", ":latest"},
		},
		{
			name: "a re-run after npm", version: "1.2.0",
			env:  append(slices.Clone(tokens), "PUBLISHED=@baton-agent/baton-linux-x64@1.2.0 @baton-agent/baton-darwin-arm64@1.2.0 @baton-agent/baton@1.2.0"),
			want: []string{"git -C .* push", "gh release edit v1.2.0 --draft=false"},
			not:  []string{"npm publish"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, calls, err := runScript(t, "publish.sh", c.env, c.version, dist, npmTarballs(t, c.version))
			if err != nil {
				t.Fatalf("publish.sh: %v\n%s", err, out)
			}
			log := strings.Join(calls, "\n")
			last := -1
			for _, w := range c.want {
				i := slices.IndexFunc(calls, regexp.MustCompile("^"+w).MatchString)
				if i < 0 {
					t.Errorf("no call %q among:\n%s", w, log)
					continue
				}
				if i < last {
					t.Errorf("%q came before the call listed ahead of it:\n%s", w, log)
				}
				last = i
			}
			if strings.Contains(log, tapToken) {
				t.Errorf("the tap token is in a command's arguments:\n%s", log)
			}
			for _, n := range c.not {
				if strings.Contains(log, n) {
					t.Errorf("a call holds %q:\n%s", n, log)
				}
			}
			if i := slices.IndexFunc(calls, func(s string) bool { return strings.HasPrefix(s, "gh release edit") }); i != len(calls)-1 {
				t.Errorf("the release went public before the last step:\n%s", log)
			}
		})
	}
}
