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

// The real pi 1.x (from npm, offline against a scripted OpenAI-compatible
// model on loopback) in print mode, with baton's extension installed by
// `baton install pi`: pi loads a project's extensions only in a trusted
// project, so `-a` trusts it for the run (and doctor says so before); the
// session-start context reaches the model, the write tool's file is
// recorded, and the loop's stop blocks once (pi 1.x continues a print run
// from agent_before_settle) and ends on its promise.
func TestRealPiSession(t *testing.T) {
	t.Parallel()
	pi := realPi(t)
	home := t.TempDir()
	agentDir := t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	target := filepath.Join(repo, "hello.txt")
	const loopPrompt = "Keep greeting until DONE"

	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		switch {
		case r.ToolResults() == 0 && r.HasTool("write"):
			return harnesstest.Reply{ToolName: "write", ToolInput: map[string]any{"path": target, "content": "hello\n"}}
		case strings.Contains(r.LastUserText(), loopPrompt) && !strings.Contains(r.LastUserText(), "the working context of this project"):
			return harnesstest.Reply{Text: "The greeting is written.\n<promise>DONE</promise>"}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	writePiModels(t, agentDir, model.URL)
	batonRun(t, env, repo, "install", "pi")
	batonRun(t, env, repo, "handoff", "greet the user", "--next-prompt", "Write the greeting file")
	out0 := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", loopPrompt)
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out0[strings.Index(out0, "{"):]), &started); err != nil {
		t.Fatal(err)
	}
	if doc := batonDoctor(t, env, repo); !strings.Contains(doc, "not trusted in pi") {
		t.Errorf("doctor does not say pi will skip the untrusted project's extension:\n%s", doc)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pi.bin, "-a", "--offline", "--provider", "fake", "--model", "scripted", "-p", "Write a greeting to hello.txt")
	cmd.Dir, cmd.Env = repo, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi: %v\n%s", err, tail(out.String()))
	}
	t.Logf("pi %s made %d model requests", testedVersion(t, "pi"), len(model.Requests()))
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
	if st := loopStatus(t, env, repo, started.ID); st.Status != "done" || st.Outcome != "DONE" || st.Iteration != 2 || st.SessionID == "" {
		t.Errorf("loop after pi -p = %+v\n%s", st, tail(out.String()))
	}
}

// batonDoctor runs `baton doctor --no-probe`, which exits 1 when something
// installed cannot work, and returns what it printed.
func batonDoctor(t *testing.T, env []string, repo string) string {
	t.Helper()
	cmd := exec.Command(batonBin, "doctor", "--no-probe")
	cmd.Dir, cmd.Env = repo, env
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// A loop over its token budget pauses in the real pi's print mode, and
// the pause line reaches the person: pi -p shows an extension no UI, so
// baton's extension writes it to stderr, where a print run's user looks.
func TestRealPiBudgetPausesTheLoop(t *testing.T) {
	t.Parallel()
	pi := realPi(t)
	home, agentDir := t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		return harnesstest.Reply{Text: "Still working."}
	})
	writePiModels(t, agentDir, model.URL)
	batonRun(t, env, repo, "install", "pi")
	id := startLoop(t, env, repo, "--max-tokens", "5", "--max-iterations", "4", "Keep working")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pi.bin, "-a", "--offline", "--provider", "fake", "--model", "scripted", "-p", "Work")
	cmd.Dir, cmd.Env = repo, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi: %v\n%s", err, tail(out.String()))
	}
	st := loopStatus(t, env, repo, id)
	if st.Status != "paused" || !strings.Contains(st.Pause, "token budget is spent") {
		t.Fatalf("loop after a round over its budget = %+v\n%s", st, tail(out.String()))
	}
	if !strings.Contains(out.String(), "token budget is spent") || !strings.Contains(out.String(), "baton loop resume "+id) {
		t.Errorf("pi -p does not say the loop paused and how to resume it:\n%s", tail(out.String()))
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("the paused loop went on: %d model requests, want 1", n)
	}
}
