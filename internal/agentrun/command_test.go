package agentrun

import (
	"github.com/baton-agent/baton/internal/golden"

	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sandbox"
)

const testSchema = `{
  "type": "object",
  "properties": {"status": {"enum": ["done", "retry"]}, "summary": {"type": "string"}},
  "required": ["status", "summary"],
  "additionalProperties": false
}`

// TestCommandGolden pins every executor's command line. Review changes to
// these files like code: they are what the real CLIs receive.
func TestCommandGolden(t *testing.T) {
	t.Parallel()
	full := Spec{
		Prompt:       "never in argv",
		SystemPrompt: "You are the implementer. Work without asking questions.",
		Dir:          "/work/repo",
		OutputSchema: []byte(testSchema),
		Model:        "some-model",
		LogDir:       "/logs/run-1",
	}
	tests := []struct {
		name string
		spec Spec
	}{
		{"claude_minimal", Spec{Agent: "claude", Prompt: "secret prompt"}},
		{"claude_full", with(full, "claude", "--max-turns", "30")},
		{"claude_user_permissions", with(Spec{Prompt: "secret prompt"}, "claude", "--permission-mode", "plan", "--allowedTools=Read")},
		{"codex_minimal", Spec{Agent: "codex", Prompt: "secret prompt"}},
		{"codex_full", with(full, "codex", "-c", `model_reasoning_effort="high"`)},
		{"codex_user_sandbox", with(Spec{Prompt: "secret prompt", LogDir: "/logs"}, "codex", "--sandbox", "read-only")},
		{"droid_minimal", Spec{Agent: "droid", Prompt: "secret prompt"}},
		{"droid_full", with(full, "droid", "-r", "high")},
		{"droid_user_autonomy", with(Spec{Prompt: "secret prompt"}, "droid", "--skip-permissions-unsafe")},
		{"pi_minimal", Spec{Agent: "pi", Prompt: "secret prompt"}},
		{"pi_full", with(full, "pi", "--thinking", "high")},
		{"command_quoted", with(full, `command:./agent.sh --fast "two words" 'it''s' a\ b`, "--extra")},
		{"claude_resume", resume(full, "claude", "3f1c2a9e-5b7d-4e2a-9c1f-0a8b7c6d5e4f")},
		{"codex_resume", resume(full, "codex", "019a0b1c-2d3e-7f40-8a91-b2c3d4e5f607")},
		{"droid_resume", resume(full, "droid", "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918")},
		{"pi_resume", resume(full, "pi", "a1b2c3d4-e5f6-4789-8abc-def012345678")},
	}
	if sandbox.Probe().Available() {
		// Inside baton's box Codex is told not to start its own.
		tests = append(tests, struct {
			name string
			spec Spec
		}{"codex_boxed", Spec{Agent: "codex", Prompt: "secret prompt", Confine: &sandbox.Confinement{Mode: sandbox.ModeAuto}}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, err := Command(tt.spec)
			if err != nil {
				t.Fatalf("Command(%+v) error: %v", tt.spec, err)
			}
			for _, a := range argv {
				if tt.spec.Prompt != "" && strings.Contains(a, tt.spec.Prompt) {
					t.Fatalf("Command argv %q contains the prompt", argv)
				}
			}
			golden.Check(t, "command/"+tt.name+".golden", mustJSON(t, argv))
		})
	}
}

func resume(s Spec, agent, session string) Spec {
	s.Agent, s.Resume = agent, session
	return s
}

func with(s Spec, agent string, extra ...string) Spec {
	s.Agent = agent
	s.ExtraArgs = extra
	return s
}

func TestCommandInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
	}{
		{"no agent", Spec{}},
		{"unknown agent", Spec{Agent: "gemini"}},
		{"empty command", Spec{Agent: "command:"}},
		{"blank command", Spec{Agent: "command:   "}},
		{"unterminated quote", Spec{Agent: `command:./a.sh "oops`}},
		{"schema not JSON", Spec{Agent: "claude", OutputSchema: []byte(`{"type":`)}},
		{"schema not an object", Spec{Agent: "codex", OutputSchema: []byte(`["object"]`)}},
		// A session id comes from an agent's output: it must not become a flag.
		{"resume a flag", Spec{Agent: "codex", Resume: "--dangerously-bypass-approvals-and-sandbox"}},
		{"resume a path", Spec{Agent: "pi", Resume: "../../etc/passwd"}},
		{"resume with a space", Spec{Agent: "claude", Resume: "a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, err := Command(tt.spec)
			if !errors.Is(err, ErrInvalidSpec) || baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("Command(%+v) = %q, %v; want an Invalid error wrapping ErrInvalidSpec", tt.spec, argv, err)
			}
		})
	}
}

func TestHasFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--sandbox", "read-only"}, true},
		{[]string{"--sandbox=read-only"}, true},
		{[]string{"-s", "read-only"}, true},
		{[]string{"-sx"}, false},
		{[]string{"--sandboxes"}, false},
		{[]string{"--", "--sandbox"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := hasFlag(tt.args, "--sandbox", "-s"); got != tt.want {
			t.Errorf("hasFlag(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
