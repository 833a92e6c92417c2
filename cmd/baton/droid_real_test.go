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

// The real Factory Droid (from npm, offline with a custom model pointed at
// a scripted model on loopback), with baton installed by `baton install
// droid`: the hooks file is read (Droid ignored the wrapped shape baton
// used to write, and no hook ran at all), session start gives the model
// baton's context, the Create tool's file is recorded, the loop's Stop
// hook blocks once, and the promise (read from Droid's transcript, since
// Droid sends no last_assistant_message) ends the loop.
func TestRealDroidSession(t *testing.T) {
	t.Parallel()
	droid := realDroid(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	target := filepath.Join(repo, "hello.txt")
	const loopPrompt = "Write the greeting, then say DONE as a promise"

	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		created := strings.Contains(r.Raw, `"tool_result"`)
		switch {
		case !created:
			return harnesstest.Reply{ToolName: "Create", ToolInput: map[string]any{"file_path": target, "content": "hello\n"}}
		case strings.Contains(r.LastUserText(), loopPrompt):
			return harnesstest.Reply{Text: "The greeting is written.\n<promise>DONE</promise>"}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	writeDroidSettings(t, home, model.URL)

	batonRun(t, env, repo, "install", "droid")
	out0 := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", loopPrompt)
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out0[strings.Index(out0, "{"):]), &started); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, droid, "exec", "--auto", "low", "-m", "custom:scripted-0", "Write a greeting to hello.txt")
	cmd.Dir, cmd.Env = repo, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("droid exec: %v\n%s", err, tail(out.String()))
	}
	t.Logf("Droid %s made %d model requests", testedVersion(t, "droid"), len(model.Requests()))

	if b, err := os.ReadFile(target); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	sawContext, sawLoopPrompt := false, false
	for _, r := range model.Requests() {
		sawContext = sawContext || strings.Contains(r.Raw, "the working context of this project is in")
		sawLoopPrompt = sawLoopPrompt || strings.Contains(r.Raw, `"tool_result"`) && strings.Contains(r.LastUserText(), loopPrompt)
	}
	if !sawContext {
		t.Error("the model never saw baton's session-start context: Droid ran no SessionStart hook")
	}
	if !sawLoopPrompt {
		t.Error("the Stop hook never re-fed the loop prompt")
	}
	if files := batonRun(t, env, repo, "files", "--all", "--json"); !strings.Contains(files, `"hello.txt"`) {
		t.Errorf("the Create was not recorded:\n%s", files)
	}
	status := batonRun(t, env, repo, "loop", "status", started.ID, "--json")
	var st struct {
		Loop struct {
			Status, Outcome string
			Iteration       int
		} `json:"loop"`
	}
	if err := json.Unmarshal([]byte(status[strings.Index(status, "{"):]), &st); err != nil {
		t.Fatal(err)
	}
	if st.Loop.Status != "done" || st.Loop.Outcome != "DONE" || st.Loop.Iteration != 2 {
		t.Errorf("loop after the session = %+v\n%s", st.Loop, status)
	}
	// Droid keeps its usage beside the transcript: the loop counted it.
	if l := loopStatus(t, env, repo, started.ID); l.Spent <= 0 {
		t.Errorf("the loop counted no tokens from Droid's session settings: %+v", l)
	}
}
