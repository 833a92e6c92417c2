package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/harnesstest"
)

// The real Codex CLI (from npm, against a scripted Responses API on
// loopback) with baton installed by `baton install codex`, in a trusted
// project: the session-start context reaches the model, the loop's Stop
// hook blocks once and re-feeds the loop prompt, and the promise ends the
// loop.
func TestRealCodexSession(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home := t.TempDir()
	codexHome := t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome)
	repo := userRepo(t, env)
	const loopPrompt = "Check the greeting, then say DONE as a promise"

	model := harnesstest.NewResponsesServer(t, func(r *harnesstest.ResponsesRequest) string {
		if strings.Contains(r.LastUserText(), loopPrompt) && strings.Contains(r.Raw, "hook_prompt") {
			return "The greeting is right.\n<promise>DONE</promise>"
		}
		return "Looking at the greeting."
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	batonRun(t, env, repo, "install", "codex")
	out0 := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", loopPrompt)
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out0[strings.Index(out0, "{"):]), &started); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The hooks are not trusted in Codex's review dialog here (it is
	// interactive), so this call runs them explicitly; baton doctor says
	// the same to a user.
	cmd := exec.CommandContext(ctx, codex, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "Check the greeting")
	cmd.Dir, cmd.Env = repo, append(env, "OPENAI_API_KEY=test-key")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, tail(out.String()))
	}
	t.Logf("Codex %s made %d model requests", testedVersion(t, "codex"), len(model.Requests()))
	sawContext := false
	for _, r := range model.Requests() {
		sawContext = sawContext || strings.Contains(r.Raw, "the working context of this project is in")
	}
	if !sawContext {
		t.Errorf("the model never saw baton's session-start context\n%s", tail(out.String()))
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
		t.Errorf("loop after the session = %+v\n%s\n%s", st.Loop, status, tail(out.String()))
	}
}
