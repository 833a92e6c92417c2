package agentrun

import (
	"errors"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t)
	dir := t.TempDir()
	tests := []struct {
		name     string
		spec     Spec
		sentinel error
		code     baton.Code
	}{
		{"installed claude", Spec{Agent: "claude", Env: fake.Env()}, nil, ""},
		{"installed command", Spec{Agent: fake.CommandAgent()}, nil, ""},
		{"missing on PATH", Spec{Agent: "droid", Env: []string{"PATH=" + dir}}, ErrNotInstalled, baton.NotFound},
		{"missing command", Spec{Agent: "command:./no-such-agent", Dir: dir}, ErrNotInstalled, baton.NotFound},
		{"unknown agent", Spec{Agent: "gemini"}, ErrInvalidSpec, baton.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.spec)
			if tt.sentinel == nil {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", tt.spec.Agent, err)
				}
				return
			}
			if !errors.Is(err, tt.sentinel) || baton.ErrorCode(err) != tt.code {
				t.Fatalf("Check(%q) = %v (code %q), want %v with code %q", tt.spec.Agent, err, baton.ErrorCode(err), tt.sentinel, tt.code)
			}
		})
	}
	// Check agrees with Run, which starts nothing for a missing agent.
	s := Spec{Agent: "droid", Prompt: "x", Env: []string{"PATH=" + dir}}
	if _, err := Run(t.Context(), s); !errors.Is(err, ErrNotInstalled) || baton.ErrorMessage(err) != baton.ErrorMessage(Check(s)) {
		t.Errorf("Run and Check disagree on a missing agent: Run %v, Check %v", err, Check(s))
	}
}
