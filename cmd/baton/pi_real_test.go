package main

import (
	"bytes"
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

// The real pi (from npm, offline against a scripted OpenAI-compatible
// model on loopback) with baton's extension installed by `baton install
// pi`: the extension loads, the session-start context reaches the model
// and the write tool's file is recorded. (Loops in print mode are not
// checked: pi returns before a follow-up can be sent there.)
func TestRealPiSession(t *testing.T) {
	pi := realPi(t)
	home := t.TempDir()
	agentDir := t.TempDir()
	env := append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir)
	repo := userRepo(t, env)
	target := filepath.Join(repo, "hello.txt")

	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		if r.ToolResults() == 0 && r.HasTool("write") {
			return harnesstest.Reply{ToolName: "write", ToolInput: map[string]any{"path": target, "content": "hello\n"}}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	models := `{"providers":{"fake":{"baseUrl":"` + model.URL + `","api":"openai-completions","apiKey":"test-key","models":[{"id":"scripted"}]}}}`
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	batonRun(t, env, repo, "install", "pi")
	batonRun(t, env, repo, "handoff", "greet the user", "--next-prompt", "Write the greeting file")
	out0 := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", "Keep greeting until DONE")
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out0[strings.Index(out0, "{"):]), &started); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pi, "--offline", "--provider", "fake", "--model", "scripted", "-p", "Write a greeting to hello.txt")
	cmd.Dir, cmd.Env = repo, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi: %v\n%s", err, tail(out.String()))
	}
	t.Logf("pi 0.73.1 made %d model requests", len(model.Requests()))
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt = %q, %v\n%s", b, err, tail(out.String()))
	}
	sawContext := false
	for _, r := range model.Requests() {
		sawContext = sawContext || strings.Contains(r.Raw, "the working context of this project is in") && strings.Contains(r.Raw, "Write the greeting file")
	}
	if !sawContext {
		t.Errorf("the model never saw baton's session-start context (the packet's Next Prompt)\n%s", tail(out.String()))
	}
	if files := batonRun(t, env, repo, "files", "--all", "--json"); !strings.Contains(files, `"hello.txt"`) {
		t.Errorf("the write was not recorded:\n%s", files)
	}
	// Print mode returns when the agent stops, so the loop cannot go on
	// here: it is neither counted nor bound, and pi says so.
	status := batonRun(t, env, repo, "loop", "status", started.ID, "--json")
	var st struct {
		Loop struct {
			Status    string `json:"status"`
			Iteration int    `json:"iteration"`
			SessionID string `json:"session_id"`
		} `json:"loop"`
	}
	if err := json.Unmarshal([]byte(status[strings.Index(status, "{"):]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Loop.Status != "active" || st.Loop.Iteration != 1 || st.Loop.SessionID != "" {
		t.Errorf("loop after pi -p = %+v", st.Loop)
	}
	if !strings.Contains(out.String(), "stays active and unbound for the next session") {
		t.Errorf("pi -p does not say the loop cannot continue:\n%s", tail(out.String()))
	}
}
