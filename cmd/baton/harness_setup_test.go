package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/harnesstest"
)

// The real harnesses' versions and offline setups, shared by the tests
// that run them. Each installs its npm package once (cached) and skips
// under -short.

func realHarness(t *testing.T, name, pkg, version, bin string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("installs and runs " + name)
	}
	return harnesstest.NPMBin(t, pkg, version, bin)
}

func realClaude(t *testing.T) string {
	return realHarness(t, "Claude Code", "@anthropic-ai/claude-code", "2.1.330", "claude")
}

func realCodex(t *testing.T) string {
	return realHarness(t, "Codex", "@openai/codex", "0.169.0", "codex")
}

func realDroid(t *testing.T) string {
	return realHarness(t, "Factory Droid", "@factory/cli-linux-x64", "0.225.2", "@factory/cli-linux-x64/bin/droid")
}

func realPi(t *testing.T) string {
	return realHarness(t, "pi", "@mariozechner/pi-coding-agent", "0.73.1", "pi")
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
