package modelapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// writeFile writes content to path under dir, making its directories.
func writeFile(t *testing.T, dir, path, content string) {
	t.Helper()
	p := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		h     baton.Harness
		files map[string]string
		env   []string
		want  []string
	}{
		{name: "claude default", h: baton.HarnessClaude,
			want: []string{"api.anthropic.com", "console.anthropic.com", "platform.claude.com", "claude.ai"}},
		{name: "claude base URL", h: baton.HarnessClaude, env: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:4000"},
			want: []string{"http://127.0.0.1:4000"}},
		{name: "claude settings env", h: baton.HarnessClaude,
			files: map[string]string{".claude/settings.json": `{"env":{"ANTHROPIC_BASE_URL":"https://gw.example.com/anthropic"}}`},
			want:  []string{"https://gw.example.com/anthropic"}},
		{name: "claude environment over settings", h: baton.HarnessClaude,
			files: map[string]string{".claude/settings.json": `{"env":{"ANTHROPIC_BASE_URL":"https://gw.example.com"}}`},
			env:   []string{"ANTHROPIC_BASE_URL=https://env.example.com"},
			want:  []string{"https://env.example.com"}},
		{name: "claude config dir", h: baton.HarnessClaude,
			files: map[string]string{"elsewhere/settings.json": `{"env":{"CLAUDE_CODE_USE_BEDROCK":"1","AWS_REGION":"eu-west-1"}}`},
			env:   []string{"CLAUDE_CONFIG_DIR=<home>/elsewhere"},
			want:  []string{"bedrock-runtime.eu-west-1.amazonaws.com", "sts.eu-west-1.amazonaws.com"}},
		{name: "claude vertex", h: baton.HarnessClaude, env: []string{"CLAUDE_CODE_USE_VERTEX=true", "CLOUD_ML_REGION=us-east5"},
			want: []string{"aiplatform.googleapis.com", "oauth2.googleapis.com", "us-east5-aiplatform.googleapis.com"}},
		{name: "codex default", h: baton.HarnessCodex,
			want: []string{"api.openai.com", "chatgpt.com", "auth.openai.com"}},
		{name: "codex OPENAI_BASE_URL", h: baton.HarnessCodex, env: []string{"OPENAI_BASE_URL=https://oai.example.com/v1"},
			want: []string{"https://oai.example.com/v1"}},
		{name: "codex provider", h: baton.HarnessCodex,
			files: map[string]string{".codex/config.toml": "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:5000/v1\"\nwire_api = \"responses\"\n"},
			want:  []string{"http://127.0.0.1:5000/v1"}},
		{name: "codex home and a profile on openai", h: baton.HarnessCodex,
			files: map[string]string{"ch/config.toml": "model_provider = \"az\"\n[model_providers.az]\nbase_url = \"https://x.openai.azure.com/openai\"\n[profiles.p]\nmodel_provider = \"openai\"\n[profiles.q]\nmodel_provider = \"ollama\"\n"},
			env:   []string{"CODEX_HOME=<home>/ch"},
			want:  []string{"https://x.openai.azure.com/openai", "localhost:11434", "api.openai.com", "chatgpt.com", "auth.openai.com"}},
		{name: "droid custom model", h: baton.HarnessDroid,
			files: map[string]string{".factory/settings.json": `{"customModels":[{"model":"m","baseUrl":"http://127.0.0.1:6000","provider":"anthropic"},{"model":"n"}]}`},
			want:  []string{"http://127.0.0.1:6000", "api.factory.ai", "app.factory.ai"}},
		{name: "droid default", h: baton.HarnessDroid, want: []string{"api.factory.ai", "app.factory.ai"}},
		{name: "pi models and default provider", h: baton.HarnessPi,
			files: map[string]string{
				".pi/agent/models.json":   `{"providers":{"fake":{"baseUrl":"http://127.0.0.1:7000/v1","api":"openai-completions"},"openai":{}}}`,
				".pi/agent/settings.json": `{"defaultProvider":"anthropic"}`,
			},
			want: []string{"http://127.0.0.1:7000/v1", "api.openai.com", "api.anthropic.com"}},
		{name: "pi agent dir", h: baton.HarnessPi,
			files: map[string]string{"pa/models.json": `{"providers":{"local":{"baseUrl":"http://localhost:8000/v1"}}}`},
			env:   []string{"PI_CODING_AGENT_DIR=<home>/pa"},
			want:  []string{"http://localhost:8000/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			for p, c := range tt.files {
				writeFile(t, home, p, c)
			}
			env := []string{"HOME=" + home}
			for _, kv := range tt.env {
				env = append(env, replaceHome(kv, home))
			}
			got, err := Hosts(tt.h, env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Hosts(%s) mismatch (-want +got):\n%s", tt.h, diff)
			}
		})
	}
}

// replaceHome puts home in place of <home> in kv's value.
func replaceHome(kv, home string) string {
	k, v, _ := strings.Cut(kv, "=")
	if rest, ok := strings.CutPrefix(v, "<home>"); ok {
		v = home + rest
	}
	return k + "=" + v
}

func TestHostsBadConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, home, ".codex/config.toml", "model_provider = [")
	_, err := Hosts(baton.HarnessCodex, []string{"HOME=" + home})
	if baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Hosts(codex, broken config.toml) error = %v, want Invalid", err)
	}
	big := filepath.Join(home, ".factory", "settings.json")
	writeFile(t, home, ".factory/settings.json", `{"customModels":[]}`)
	if err := os.Truncate(big, maxConfigFile+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Hosts(baton.HarnessDroid, []string{"HOME=" + home}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Hosts(droid, settings over %d bytes) error = %v, want Invalid", maxConfigFile, err)
	}
}

// FuzzConfigParsers checks each parser on any input (no panic), and that
// a base URL written into each configuration, whatever its text, is read
// back exactly.
func FuzzConfigParsers(f *testing.F) {
	f.Add([]byte(`{"env":{"ANTHROPIC_BASE_URL":"x"}}`), "http://127.0.0.1:1/v1")
	f.Add([]byte("model_provider=\"a\"\n[model_providers.a]\nbase_url=\"u\""), "https://ex.example/\"quoted\"")
	f.Add([]byte(`{"customModels":[{"baseUrl":1}]}`), "\\u0000")
	f.Fuzz(func(t *testing.T, raw []byte, url string) {
		_, _ = ClaudeSettingsEnv(raw)
		_, _, _ = CodexProviders(raw)
		_, _ = DroidModels(raw)
		_, _ = PiConfig(raw)
		if url == "" || !utf8.ValidString(url) {
			return // configuration files are text
		}
		q, _ := json.Marshal(url)
		env, err := ClaudeSettingsEnv([]byte(`{"env":{"ANTHROPIC_BASE_URL":` + string(q) + `}}`))
		if err == nil && env["ANTHROPIC_BASE_URL"] != url {
			t.Fatalf("ClaudeSettingsEnv lost %q: %q", url, env["ANTHROPIC_BASE_URL"])
		}
		if got, err := DroidModels([]byte(`{"customModels":[{"baseUrl":` + string(q) + `}]}`)); err == nil && !slices.Equal(got, []string{url}) {
			t.Fatalf("DroidModels(%q) = %q", url, got)
		}
		if got, err := PiConfig([]byte(`{"providers":{"p":{"baseUrl":` + string(q) + `}}}`)); err == nil && !slices.Equal(got, []string{url}) {
			t.Fatalf("PiConfig(%q) = %q", url, got)
		}
		// A TOML literal string holds any text but ' and control characters.
		if strconv.CanBackquote(url) && !strings.Contains(url, "'") {
			doc := "model_provider = \"p\"\n[model_providers.p]\nbase_url = '" + url + "'\n"
			if got, builtin, err := CodexProviders([]byte(doc)); err == nil && (!slices.Equal(got, []string{url}) || builtin) {
				t.Fatalf("CodexProviders(%q) = %q, %v", doc, got, builtin)
			}
		}
	})
}
