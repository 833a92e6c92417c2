package goaltree

import (
	"github.com/baton-agent/baton/internal/golden"

	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/prompt"
)

// sampleInputs is an iteration with every section present: the second
// attempt at 2.2 after a failed guard, with notes and a history.
func sampleInputs() Inputs {
	n22 := leaf("2.2", 2)
	n22.Title, n22.Goal = "Reject expired tokens", "Middleware rejects a JWT whose exp is in the past with 401."
	n22.Acceptance = []string{"go test ./auth/... passes", "an expired token gets 401"}
	n22.Attempts = 1
	auth := internal("2", 2, passed(leaf("2.1", 1)), n22)
	auth.Title, auth.Goal = "Token checks", "Protected routes accept only valid tokens."
	tree := internal("root", 0, passed(leaf("1", 1)), auth, leaf("3", 3))
	tree.Title = "Add JWT authentication"
	sel := Select(tree)
	return Inputs{
		RunID: "jwt-auth", Iter: 7, Tree: tree, Selection: sel, Guard: "go test ./...",
		Limits:      DefaultConfig().Limits(),
		History:     "Added the exp check but the clock is not injected; tests use time.Now.",
		Failure:     "The guard `go test ./...` failed with exit status 1 after 2s. Its output:\n\n--- FAIL: TestExpired (0.00s)\n    jwt_test.go:40: status = 200, want 401\nFAIL",
		Assumptions: "- Tokens are HS256.\n- Clock skew of 30s is fine.",
		Questions:   "- Should refresh tokens rotate?",
	}
}

func TestPromptSectionOrderGolden(t *testing.T) {
	t.Parallel()
	in := sampleInputs()
	pack, err := buildPrompt(in, prompt.Options{})
	if err != nil {
		t.Fatalf("BuildPrompt error: %v", err)
	}
	want := []string{"contract", "goal", "history", "failure", "selected", "tree", "assumptions", "questions", "output"}
	if diff := cmp.Diff(want, pack.Keys()); diff != "" {
		t.Errorf("section order mismatch (-want +got):\n%s", diff)
	}
	if pack.Report.BudgetBytes != 40_000 {
		t.Errorf("default budget = %d, want 40000", pack.Report.BudgetBytes)
	}
	golden.CheckString(t, "prompt_full.golden", pack.Text)
}

func TestPromptTightBudgetGolden(t *testing.T) {
	t.Parallel()
	in := sampleInputs()
	full, err := buildPrompt(in, prompt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]int{} // rendered size with its separator
	for _, s := range full.Report.Sections {
		size[s.Key] = s.Bytes + len("\n\n")
	}
	outcomes := func(p *prompt.Pack) map[string]prompt.Outcome {
		m := map[string]prompt.Outcome{}
		for _, s := range p.Report.Sections {
			m[s.Key] = s.Outcome
		}
		return m
	}

	// Room for all but the tree, assumptions and questions: seed 002 drops
	// those first, in that order, and keeps history and failure.
	budget := len(full.Text) - size["tree"] - size["assumptions"] - size["questions"]
	pack, err := buildPrompt(in, prompt.Options{BudgetBytes: budget})
	if err != nil {
		t.Fatalf("BuildPrompt(budget %d) error: %v", budget, err)
	}
	want := map[string]prompt.Outcome{
		"contract": "kept", "goal": "kept", "history": "kept", "failure": "kept", "selected": "kept",
		"tree": "dropped", "assumptions": "dropped", "questions": "dropped", "output": "kept",
	}
	if diff := cmp.Diff(want, outcomes(pack)); diff != "" {
		t.Errorf("outcomes at budget %d mismatch (-want +got):\n%s", budget, diff)
	}
	pack, err = buildPrompt(in, prompt.Options{BudgetBytes: budget - 1})
	if err != nil || outcomes(pack)["history"] != "dropped" || outcomes(pack)["failure"] != "kept" {
		t.Errorf("one byte less should drop history before failure: %v, %v", outcomes(pack), err)
	}

	// Tighter still: every droppable section is gone and the last section
	// that is not a bookend is cut, on a rune boundary, with a marker.
	budget -= size["history"] + size["failure"] + 30
	pack, err = buildPrompt(in, prompt.Options{BudgetBytes: budget})
	if err != nil {
		t.Fatalf("BuildPrompt(budget %d) error: %v", budget, err)
	}
	if len(pack.Text) > budget {
		t.Errorf("pack is %d bytes, over the %d budget", len(pack.Text), budget)
	}
	want = map[string]prompt.Outcome{
		"contract": "kept", "goal": "kept", "history": "dropped", "failure": "dropped", "selected": "truncated",
		"tree": "dropped", "assumptions": "dropped", "questions": "dropped", "output": "kept",
	}
	if diff := cmp.Diff(want, outcomes(pack)); diff != "" {
		t.Errorf("outcomes at budget %d mismatch (-want +got):\n%s", budget, diff)
	}
	if !strings.Contains(pack.Text, "[truncated]\n\n## Output Contract") {
		t.Errorf("the cut is not marked before the output contract:\n%s", pack.Text)
	}
	report, _ := json.MarshalIndent(pack.Report, "", "  ")
	golden.CheckString(t, "prompt_tight.golden", pack.Text+"\n-- report --\n"+string(report)+"\n")

	// Too tight for the required sections: a clear Invalid error.
	if _, err := buildPrompt(in, prompt.Options{BudgetBytes: 500}); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "too small") {
		t.Errorf("BuildPrompt(500) = %v, want an Invalid 'too small' error", err)
	}
}

func TestPromptDecomposeContract(t *testing.T) {
	t.Parallel()
	root := leaf("root", 0)
	root.Next = nextDecompose
	in := Inputs{RunID: "r", Iter: 1, Tree: root, Selection: Select(root), Guard: "make ci", Limits: Limits{MaxChildren: 5, MaxDepth: 1, MaxAttempts: 3}}
	pack, err := buildPrompt(in, prompt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"status": "decomposed"`, "Give 1 to 5 children", "children at depth 1 must be execute nodes"} {
		if !strings.Contains(pack.Text, want) {
			t.Errorf("decompose prompt lacks %q:\n%s", want, pack.Text)
		}
	}
	if strings.Contains(pack.Text, "## History") || strings.Contains(pack.Text, "## Failure") {
		t.Errorf("empty history and failure sections were rendered:\n%s", pack.Text)
	}
}

// TestExecutorCommandGolden pins each executor's command line exactly as
// the runner starts it (agentrun.Command over the runner's Spec).
func TestExecutorCommandGolden(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.IterationTimeout = time.Minute
	for _, agent := range []string{"claude", "codex", "droid", "command:./agents/mine.sh --fast"} {
		name := strings.SplitN(agent, ":", 2)[0]
		t.Run(name, func(t *testing.T) {
			spec := agentSpec(cfg, agent, "the prompt goes on stdin", "/work/project", "/work/project/.agent/context/runner/iterations/r/3", nil, nil)
			argv, err := agentrun.Command(spec)
			if err != nil {
				t.Fatalf("Command error: %v", err)
			}
			for _, a := range argv {
				if strings.Contains(a, "the prompt") {
					t.Fatalf("argv %q carries the prompt", argv)
				}
			}
			b, _ := json.MarshalIndent(argv, "", "  ")
			golden.CheckString(t, "command/"+name+".golden", string(b)+"\n")
		})
	}
}
