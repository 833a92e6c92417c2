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

// The real Claude Code (from npm), against a scripted model on loopback,
// with baton installed by `baton install claude`: session start gives the
// model baton's context, the Write tool's file is recorded, the loop's
// Stop hook blocks once and re-feeds the loop prompt, and the promise
// ends loop and session.
func TestRealClaudeCodeSession(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	target := filepath.Join(repo, "hello.txt")

	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case !r.HasTool("Write"):
			return harnesstest.Reply{Text: "Greeting"} // side requests: titles, topics
		case strings.Contains(last, "Stop hook feedback"):
			return harnesstest.Reply{Text: "The greeting is written.\n<promise>DONE</promise>"}
		case strings.Contains(last, "[tool_result]"):
			return harnesstest.Reply{Text: "I wrote hello.txt."}
		}
		return harnesstest.Reply{ToolName: "Write", ToolInput: map[string]any{"file_path": target, "content": "hello\n"}}
	})

	batonRun(t, env, repo, "install", "claude")
	var started struct {
		ID string `json:"id"`
	}
	out0 := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", "Write the greeting, then say DONE as a promise")
	if err := json.Unmarshal([]byte(out0[strings.Index(out0, "{"):]), &started); err != nil || started.ID == "" {
		t.Fatalf("loop start --json: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Write a greeting to hello.txt", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits")
	cmd.Dir = repo
	cmd.Env = claudeEnv(env, model.URL)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, tail(out.String()), tail(errb.String()))
	}

	if b, err := os.ReadFile(target); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	t.Logf("Claude Code %s made %d model requests", testedVersion(t, "claude"), len(model.Requests()))
	var sawContext, sawLoopPrompt bool
	for _, r := range model.Requests() {
		sawContext = sawContext || strings.Contains(r.Raw, "the working context of this project is in")
		sawLoopPrompt = sawLoopPrompt || strings.Contains(r.Raw, "Stop hook feedback") && strings.Contains(r.Raw, "Write the greeting, then say DONE as a promise")
	}
	if !sawContext {
		t.Error("the model never saw baton's session-start context")
	}
	if !sawLoopPrompt {
		t.Error("the Stop hook never re-fed the loop prompt")
	}
	// The loop prompt reaches the model once per block (plus once in the
	// session-start context): Claude Code repeats a Stop's reason, so
	// the reason only points at the prompt, given as additional context.
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Raw
	if n := strings.Count(last, "Write the greeting, then say DONE as a promise"); n != 2 {
		t.Errorf("the request after the block carries the loop prompt %d times, want 2 (the session-start context and the block)", n)
	}
	t.Logf("the request after the block: %d bytes", len(last))
	files := batonRun(t, env, repo, "files", "--all", "--json")
	if !strings.Contains(files, `"hello.txt"`) {
		t.Errorf("the Write was not recorded:\n%s", files)
	}
	var st struct {
		Loop struct {
			Status    string `json:"status"`
			Outcome   string `json:"outcome"`
			Iteration int    `json:"iteration"`
			SessionID string `json:"session_id"`
		} `json:"loop"`
	}
	status := batonRun(t, env, repo, "loop", "status", started.ID, "--json")
	if err := json.Unmarshal([]byte(status[strings.Index(status, "{"):]), &st); err != nil {
		t.Fatalf("loop status --json: %v\n%s", err, status)
	}
	if st.Loop.Status != "done" || st.Loop.Outcome != "DONE" || st.Loop.Iteration != 2 || st.Loop.SessionID == "" {
		t.Errorf("loop after the session = %+v\n%s", st.Loop, status)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
