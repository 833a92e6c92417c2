package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/harnesstest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// The real Claude Code as a confined delivery agent: it plans and
// implements with its own tools (its session files under ~/.claude
// written as usual), while its Bash tool, told by the model to read
// baton's API token and to write beside the worktree, is refused.
func TestRealClaudeConfinedDelivery(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	claude := realClaude(t)
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	token := filepath.Join(data, "api-token")
	if err := os.WriteFile(token, []byte("baton_stolen_if_you_see_this\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	attack := "cat " + token + "; touch " + filepath.Join(data, "planted") + "; echo attack-done"

	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case !r.HasTool("Bash"):
			return harnesstest.Reply{Text: "Title"} // side requests
		case strings.Contains(r.Raw, "You are the planner"):
			return harnesstest.Reply{Text: "1. Write feature.txt."}
		case strings.Contains(last, "attack-done"):
			return harnesstest.Reply{Text: "Implemented feature.txt."}
		case strings.Contains(last, "[tool_result]"):
			return harnesstest.Reply{ToolName: "Bash", ToolInput: map[string]any{"command": attack, "description": "look around"}}
		}
		return harnesstest.Reply{ToolName: "Write", ToolInput: map[string]any{"file_path": "feature.txt", "content": "confined work\n"}}
	})
	env = claudeEnv(env, model.URL)
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + filepath.Dir(claude) + string(os.PathListSeparator) + p
		}
	}

	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Add feature.txt", "--agent", "claude",
		"--checkpoints", "none", "--endpoint", "implement")
	for _, phase := range []string{"plan", "implement"} {
		cmd := exec.Command(batonBin, "delivery", "run", "1", "--sandbox", "required")
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("delivery run (%s): %v\n%s", phase, err, tail(string(out)))
		}
	}

	// The Bash tool's result, as Claude Code sent it back to the model.
	var result string
	for _, r := range model.Requests() {
		if s := r.LastUserText(); strings.Contains(s, "attack-done") {
			result = s
		}
	}
	if result == "" {
		t.Fatalf("the model never got the result of the attack; %d requests", len(model.Requests()))
	}
	t.Logf("the attack, as the model saw it: %s", result)
	if strings.Contains(result, "baton_stolen") || !strings.Contains(result, "Permission denied") {
		t.Errorf("the confined Bash tool's result:\n%s", result)
	}
	if _, err := os.Stat(filepath.Join(data, "planted")); err == nil {
		t.Error("the confined agent wrote into baton's data directory")
	}
	// Its own work was committed (by baton) and pushed to the work branch.
	cmd := exec.Command("sh", "-c", "git show $(git for-each-ref --format='%(refname)' refs/heads/baton/):feature.txt")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "confined work\n" {
		t.Errorf("feature.txt on the work branch = %q, %v", out, err)
	}
}

// The real Codex CLI as a confined planner: it reads the user's
// configuration and writes its sessions in the agent home (never the
// user's CODEX_HOME), and its last message to the run's own temporary
// directory, never to baton's data directory.
func TestRealCodexConfinedPlan(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	codex := realCodex(t)
	home, data, codexHome := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(gitEnv(home, "BATON_DATA_DIR="+data), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	model := harnesstest.NewResponsesServer(t, func(r *harnesstest.ResponsesRequest) string {
		return "1. Write feature.txt.\n2. Test it."
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + filepath.Dir(codex) + string(os.PathListSeparator) + p
		}
	}
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Add feature.txt", "--agent", "codex",
		"--checkpoints", "none", "--endpoint", "plan")
	cmd := exec.Command(batonBin, "delivery", "run", "1", "--sandbox", "required")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("delivery run: %v\n%s", err, tail(string(out)))
	}
	cmd = exec.Command("sh", "-c", "git show $(git for-each-ref --format='%(refname)' refs/heads/baton/):docs/plan.md")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "1. Write feature.txt.") {
		t.Errorf("docs/plan.md on the work branch = %q, %v", out, err)
	}
	if sessions, _ := filepath.Glob(filepath.Join(data, "agent-home", ".codex", "sessions", "*")); len(sessions) == 0 {
		t.Error("Codex kept no session in the agent home: it could not write its own files")
	}
	if sessions, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*")); len(sessions) != 0 {
		t.Errorf("Codex wrote sessions into the user's CODEX_HOME: %v", sessions)
	}
}
