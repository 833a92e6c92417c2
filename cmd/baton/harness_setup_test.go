package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/harnesstest"
	"github.com/baton-agent/baton/internal/testenv"
)

// The real harnesses' versions and offline setups, shared by the tests
// that run them. Each installs its npm package once (cached) and skips
// under -short.

func realHarness(t *testing.T, name, pkg, version, bin string) string {
	t.Helper()
	testenv.Heavy(t, "installs and runs "+name)
	return harnesstest.NPMBin(t, pkg, version, bin)
}

// TestPrefetch installs every harness the real-harness tests run, through
// the helpers they call, when scripts/test.sh fetches prerequisites
// before the timed run (testenv.Prefetch).
func TestPrefetch(t *testing.T) {
	t.Parallel()
	testenv.Prefetch(t)
	realClaude(t)
	realCodex(t)
	realDroid(t)
	realPi(t)
}

// The harness versions the real-harness tests run: the ones users install
// this week (npm's latest on 2026-11-29). README.md and docs/hooks.md name
// them (TestDocsNameTestedVersions), and the worker image ships Claude
// Code's and Codex's (release's TestWorkerImagePins).
// BATON_TEST_<NAME>_VERSION (CLAUDE, CODEX, DROID, PI) runs another
// version of one instead; scripts/test.sh prefetches that one then.
const (
	claudeVersion = "2.1.332"
	codexVersion  = "0.171.0"
	droidVersion  = "0.225.2"
	piVersion     = "1.6.0" // pi moved from @mariozechner/pi-coding-agent (last 0.73.1) to @earendil-works
)

// pinnedVersions maps each harness's name to the version pinned above.
var pinnedVersions = map[string]string{"claude": claudeVersion, "codex": codexVersion, "droid": droidVersion, "pi": piVersion}

// versionRE is what an override may say: a version, never a path.
var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+-]*$`)

// testedVersion is the version of harness name (claude, codex, droid, pi)
// the tests run: $BATON_TEST_<NAME>_VERSION when set, else its pin.
func testedVersion(t testing.TB, name string) string {
	t.Helper()
	env := "BATON_TEST_" + strings.ToUpper(name) + "_VERSION"
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		return pinnedVersions[name]
	}
	if !versionRE.MatchString(v) {
		t.Fatalf("%s=%q is not a version (like %s)", env, v, pinnedVersions[name])
	}
	return v
}

func realClaude(t *testing.T) string {
	return realHarness(t, "Claude Code", "@anthropic-ai/claude-code", testedVersion(t, "claude"), "claude")
}

func realCodex(t *testing.T) string {
	return realHarness(t, "Codex", "@openai/codex", testedVersion(t, "codex"), "codex")
}

func realDroid(t *testing.T) string {
	return realHarness(t, "Factory Droid", "@factory/cli-linux-x64", testedVersion(t, "droid"), "@factory/cli-linux-x64/bin/droid")
}

// piCLI is the real pi and the Node.js it runs on.
type piCLI struct {
	bin     string
	nodeDir string // put first on PATH: pi 1.x needs Node 22.19 or later
}

// env is env with pi's Node first on PATH.
func (p piCLI) env(env []string) []string {
	out := append([]string(nil), env...)
	for i, kv := range out {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			out[i] = "PATH=" + p.nodeDir + string(os.PathListSeparator) + v
			return out
		}
	}
	return append(out, "PATH="+p.nodeDir)
}

func realPi(t *testing.T) piCLI {
	testenv.Heavy(t, "installs and runs pi")
	// pi-tui 1.x's marked-cjk-friendly is not in the registry CI
	// reaches; pi's CLI is bundled and never loads it.
	bin := harnesstest.NPM{Pkg: "@earendil-works/pi-coding-agent", Version: testedVersion(t, "pi"), Bin: "pi",
		Stubs: []string{"marked-cjk-friendly@0.1.2"}}.Install(t)
	return piCLI{bin: bin, nodeDir: harnesstest.NodeDir(t, "22.23.3")}
}

// writePiModels gives pi a provider on the scripted model in its agent
// directory; select it with --provider fake --model scripted.
func writePiModels(t *testing.T, agentDir, modelURL string) {
	t.Helper()
	models := `{"providers":{"fake":{"baseUrl":"` + modelURL + `","api":"openai-completions","apiKey":"test-key","models":[{"id":"scripted"}]}}}`
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
}

// claudeEnv points Claude Code at a scripted model on loopback and turns
// off everything that would call home.
func claudeEnv(env []string, modelURL string) []string {
	return append(env, "ANTHROPIC_BASE_URL="+modelURL, "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1")
}

// writeCodexConfig writes $CODEX_HOME/config.toml: a provider on the
// scripted model, and repo trusted (Codex runs no project hook
// otherwise). It returns what it wrote.
func writeCodexConfig(t *testing.T, codexHome, modelURL, repo string) string {
	t.Helper()
	cfg := `model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "` + modelURL + `"
wire_api = "responses"

[projects."` + repo + `"]
trust_level = "trusted"
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeDroidSettings gives Droid a custom model on the scripted server
// (~/.factory/settings.json), so it runs with no sign-in; select it with
// -m custom:scripted-0.
func writeDroidSettings(t *testing.T, home, modelURL string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, ".factory"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"customModels":[{"model":"claude-sonnet-4-5","displayName":"scripted","baseUrl":"` + modelURL + `","apiKey":"test-key","provider":"anthropic"}]}`
	if err := os.WriteFile(filepath.Join(home, ".factory", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
}

// README.md and docs/hooks.md name the harness versions the tests run, so
// what a user reads as tested is what was.
func TestDocsNameTestedVersions(t *testing.T) {
	t.Parallel()
	products := map[string]string{"Claude Code": claudeVersion, "Codex CLI": codexVersion, "Factory Droid": droidVersion, "pi": piVersion}
	for _, doc := range []string{"README.md", filepath.Join("docs", "hooks.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ") // a name may wrap
		for product, v := range products {
			if !strings.Contains(text, product+" "+v) {
				t.Errorf("%s does not say %q: the real-harness tests run %s %s", doc, product+" "+v, product, v)
			}
		}
	}
}
