package goaltree

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestParseConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatalf("ParseConfig(empty) error: %v", err)
	}
	want := Config{Agent: "claude", MaxAttempts: 3, MaxIterations: 50, IterationTimeout: 30 * time.Minute, PromptBudget: 40000, LogMaxBytes: 10 << 20, MaxChildren: 8, MaxDepth: 4}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
	if want.MaxAttempts == want.MaxIterations {
		t.Error("attempts per node and iterations per run must be separate limits")
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	in := `
agent = "command:./agent.sh --fast"
model = "big"
agent_args = ["--max-turns", "80"]
pass_env = ["GH_TOKEN"]
guard = "go test ./... && go vet ./..."
max_attempts = 5
max_iterations = 7
iteration_timeout = "1h30m"
prompt_budget = 20000
prompt_budget_tokens = 6000
log_max_bytes = 4096
max_children = 3
max_depth = 2
`
	c, err := parseConfig([]byte(in))
	if err != nil {
		t.Fatalf("ParseConfig error: %v", err)
	}
	want := Config{Agent: "command:./agent.sh --fast", Model: "big", AgentArgs: []string{"--max-turns", "80"}, PassEnv: []string{"GH_TOKEN"}, Guard: "go test ./... && go vet ./...",
		MaxAttempts: 5, MaxIterations: 7, IterationTimeout: 90 * time.Minute, PromptBudget: 20000, PromptBudgetTokens: 6000, LogMaxBytes: 4096, MaxChildren: 3, MaxDepth: 2}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("ParseConfig mismatch (-want +got):\n%s", diff)
	}
	again, err := parseConfig(encodeConfig(c))
	if err != nil {
		t.Fatalf("ParseConfig(EncodeConfig(c)) error: %v\n%s", err, encodeConfig(c))
	}
	if diff := cmp.Diff(c, again); diff != "" {
		t.Errorf("EncodeConfig round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestParseConfigErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, key string }{
		{`max_attempts = 0`, "max_attempts"},
		{`max_iterations = -1`, "max_iterations"},
		{`prompt_budget = 0`, "prompt_budget"},
		{`prompt_budget_tokens = 0`, "prompt_budget_tokens"},
		{`log_max_bytes = -5`, "log_max_bytes"},
		{`max_children = 0`, "max_children"},
		{`max_depth = 0`, "max_depth"},
		{`max_depth = 99`, "max_depth"},
		{`iteration_timeout = "0s"`, "iteration_timeout"},
		{`iteration_timeout = "-5m"`, "iteration_timeout"},
		{`iteration_timeout = "soon"`, "iteration_timeout"},
		{`agent = ""`, "agent"},
		{`max_attempt = 3`, "max_attempt"},
		{`max_attempts = "three"`, "max_attempts"},
		{`guard = [1, 2]`, "guard"},
		{`[guard]`, "guard"},
		{`pass_env = ["GH TOKEN"]`, "pass_env"},
	}
	for _, tt := range tests {
		_, err := parseConfig([]byte(tt.in))
		if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("ParseConfig(%s) = %v, want an Invalid error naming %s", tt.in, err, tt.key)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("agent = \"codex\"\nmax_attempts = 2\niteration_timeout = \"10m\"\n"))
	f.Add(encodeConfig(DefaultConfig()))
	f.Add([]byte("agent_args = [\"a\", \"\\u0000\"]\nguard = 'x'\n"))
	f.Add([]byte("[x]\ny = 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseConfig error %v is not Invalid", err)
			}
			return
		}
		if c.Agent == "" || c.MaxAttempts <= 0 || c.MaxIterations <= 0 || c.IterationTimeout <= 0 || c.PromptBudget <= 0 ||
			c.PromptBudgetTokens < 0 || c.LogMaxBytes <= 0 || c.MaxChildren <= 0 || c.MaxDepth <= 0 {
			t.Fatalf("ParseConfig accepted %+v", c)
		}
		again, err := parseConfig(encodeConfig(c))
		if err != nil {
			t.Fatalf("ParseConfig(EncodeConfig(%+v)) error: %v", c, err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
		}
	})
}
