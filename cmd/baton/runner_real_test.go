package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/harnesstest"
)

// The goal-tree runner with the real Codex 0.171.0 in baton's default box,
// against a scripted Responses API: the root is decomposed into one leaf,
// and the leaf is done with Codex's own apply_patch and shell, passing the
// guard. Before Codex was told it was boxed, its own sandbox could not
// start inside baton's: every edit failed, the guard never passed and the
// run got stuck.
func TestRealCodexGoalTree(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	goal := "---\nid: greet\n---\n# Greet the world\n\nWrite greeting.txt saying hello, world.\n\n## Acceptance\n- greeting.txt says hello, world\n"
	if err := os.WriteFile(filepath.Join(repo, "GOAL.md"), []byte(goal), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "GOAL.md"}, {"commit", "-qm", "goal"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	const patch = "*** Begin Patch\n*** Add File: greeting.txt\n+hello, world\n*** End Patch\n"
	model := harnesstest.NewResponsesToolServer(t, func(r *harnesstest.ResponsesRequest) harnesstest.Reply {
		switch {
		case strings.Contains(r.Raw, "This is a decompose node"):
			return harnesstest.Reply{Text: `{"status":"decomposed","summary":"One step.","children":[{"title":"Write the greeting","goal":"Write greeting.txt saying hello, world.","acceptance":["greeting.txt says hello, world"],"next":"execute"}]}`}
		case !strings.Contains(r.Raw, `"custom_tool_call_output"`):
			return harnesstest.Reply{Item: map[string]any{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_ap_1", "name": "apply_patch", "input": patch, "status": "completed"}}
		case !strings.Contains(r.Raw, `"function_call_output"`):
			return harnesstest.Reply{ToolName: "exec_command", ToolInput: map[string]any{"cmd": "cat greeting.txt"}}
		}
		return harnesstest.Reply{Text: `{"status":"done","summary":"greeting.txt says hello, world.","children":null}`}
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	env = boxedAgentEnv(t, env, codex)

	batonRun(t, env, repo, "run", "init", "--guard", "grep -qx 'hello, world' greeting.txt", "--agent", "codex")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, "run", "loop", "--max-iterations", "4")
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("baton run loop: %v\n%s\n%s", err, tail(string(out)), modelTail(rawRequests(model)))
	}
	status := batonRun(t, env, repo, "run", "status", "--json")
	var st struct {
		State  string `json:"state"`
		Counts struct {
			Passed int `json:"passed"`
			Stuck  int `json:"stuck"`
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(status[strings.Index(status, "{"):]), &st); err != nil {
		t.Fatalf("run status --json: %v\n%s", err, status)
	}
	if st.State != "complete" || st.Counts.Passed != 1 || st.Counts.Stuck != 0 {
		t.Errorf("the run ended %+v, want complete with its one leaf passed\n%s\n%s", st, status, tail(string(out)))
	}
	if !strings.Contains(string(out), "the agent runs confined") {
		t.Errorf("the runner's agent did not run confined:\n%s", tail(string(out)))
	}
	show := exec.Command("git", "show", "HEAD:greeting.txt")
	show.Dir, show.Env = repo, env
	if b, err := show.CombinedOutput(); err != nil || string(b) != "hello, world\n" {
		t.Errorf("greeting.txt in the runner's last commit = %q, %v", b, err)
	}
}

// rawRequests is every request a Responses server got, as sent.
func rawRequests(s *harnesstest.ResponsesServer) []string {
	var raws []string
	for _, r := range s.Requests() {
		raws = append(raws, r.Raw)
	}
	return raws
}

// The goal-tree runner with the real pi 1.5.2 (--agent pi) in baton's
// default box, against a scripted chat completions API: pi keeps its
// agent directory (models.json, sessions) where the box shows it, reaches
// the model API its models.json names, and decomposes and does the leaf
// with its own write and bash tools.
func TestRealPiGoalTree(t *testing.T) {
	pi := realPi(t)
	home, agentDir := t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	goal := "---\nid: greet\n---\n# Greet the world\n\nWrite greeting.txt saying hello, world.\n\n## Acceptance\n- greeting.txt says hello, world\n"
	if err := os.WriteFile(filepath.Join(repo, "GOAL.md"), []byte(goal), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "GOAL.md"}, {"commit", "-qm", "goal"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		switch {
		case strings.Contains(r.Raw, "This is a decompose node"):
			return harnesstest.Reply{Text: `{"status":"decomposed","summary":"One step.","children":[{"title":"Write the greeting","goal":"Write greeting.txt saying hello, world.","acceptance":["greeting.txt says hello, world"],"next":"execute"}]}`}
		case r.ToolResults() == 0:
			return harnesstest.Reply{ToolName: "write", ToolInput: map[string]any{"path": "greeting.txt", "content": "hello, world\n"}}
		case r.ToolResults() == 1:
			return harnesstest.Reply{ToolName: "bash", ToolInput: map[string]any{"command": "cat greeting.txt"}}
		}
		return harnesstest.Reply{Text: `{"status":"done","summary":"greeting.txt says hello, world.","children":null}`}
	})
	writePiModels(t, agentDir, model.URL)
	env = boxedAgentEnv(t, env, pi.bin)

	batonRun(t, env, repo, "run", "init", "--guard", "grep -qx 'hello, world' greeting.txt", "--agent", "pi")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, "run", "loop", "--max-iterations", "4")
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	var raws []string
	for _, r := range model.Requests() {
		raws = append(raws, r.Raw)
	}
	if err != nil {
		t.Fatalf("baton run loop: %v\n%s\n%s", err, tail(string(out)), modelTail(raws))
	}
	status := batonRun(t, env, repo, "run", "status", "--json")
	if !strings.Contains(status, `"state": "complete"`) && !strings.Contains(status, `"state":"complete"`) {
		t.Errorf("the run did not complete:\n%s\n%s", status, tail(string(out)))
	}
	if !strings.Contains(string(out), "the agent runs confined") || !strings.Contains(string(out), "→ write: greeting.txt") {
		t.Errorf("pi did not run confined, or its tool calls were not shown:\n%s", tail(string(out)))
	}
	show := exec.Command("git", "show", "HEAD:greeting.txt")
	show.Dir, show.Env = repo, env
	if b, err := show.CombinedOutput(); err != nil || string(b) != "hello, world\n" {
		t.Errorf("greeting.txt in the runner's last commit = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(agentDir, "sessions")); err == nil {
		t.Error("a boxed pi wrote sessions into the user's agent directory")
	}
}
