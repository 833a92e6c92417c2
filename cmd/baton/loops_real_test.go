package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/baton-agent/baton/internal/fsstore"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/harnesstest"
)

// realLoop is what the loop tests read of `baton loop status --json`.
type realLoop struct {
	Status     string `json:"status"`
	Outcome    string `json:"outcome"`
	Iteration  int    `json:"iteration"`
	SessionID  string `json:"session_id"`
	Pause      string `json:"pause_reason"`
	Spent      int64  `json:"spent_tokens"`
	VerifyRuns []struct {
		Passed bool `json:"passed"`
		Checks []struct {
			Command  string `json:"command"`
			ExitCode int    `json:"exit_code"`
			Confined bool   `json:"confined"`
		} `json:"checks"`
	} `json:"verify_runs"`
}

func loopStatus(t *testing.T, env []string, repo, id string) realLoop {
	t.Helper()
	out := batonRun(t, env, repo, "loop", "status", id, "--json")
	var st struct{ Loop realLoop }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st); err != nil {
		t.Fatalf("loop status --json: %v\n%s", err, out)
	}
	return st.Loop
}

func startLoop(t *testing.T, env []string, repo string, args ...string) string {
	t.Helper()
	out := batonRun(t, env, repo, append([]string{"loop", "start", "--json"}, args...)...)
	var started struct{ ID string }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &started); err != nil || started.ID == "" {
		t.Fatalf("loop start --json: %v\n%s", err, out)
	}
	return started.ID
}

// The real Claude Code states its promise before the work is done; the
// loop's verify command refutes it, the Stop hook blocks with the Failure
// section, the model fixes the work with its Write tool, and the promise
// stated again passes: the loop is done, with both verifications on
// record and the session's usage counted from its real transcript.
func TestRealClaudeVerifiedLoop(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	target := filepath.Join(repo, "verified.txt")
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case !r.HasTool("Write"):
			return harnesstest.Reply{Text: "Greeting"}
		case strings.Contains(last, "[tool_result]"):
			return harnesstest.Reply{Text: "Fixed.\n<promise>DONE</promise>"}
		case strings.Contains(r.Raw, "## Failure") && strings.Contains(r.Raw, "test -f verified.txt"):
			return harnesstest.Reply{ToolName: "Write", ToolInput: map[string]any{"file_path": target, "content": "yes\n"}}
		}
		return harnesstest.Reply{Text: "Nothing to do.\n<promise>DONE</promise>"}
	})
	batonRun(t, env, repo, "install", "claude")
	id := startLoop(t, env, repo, "--max-iterations", "5", "--verify", "test -f verified.txt", "Make verified.txt, then say DONE as a promise")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Make verified.txt", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits")
	cmd.Dir, cmd.Env = repo, claudeEnv(env, model.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\n%s", err, tail(out.String()))
	}
	sawFailure := false
	for _, r := range model.Requests() {
		sawFailure = sawFailure || strings.Contains(r.Raw, "## Failure") && strings.Contains(r.Raw, "`test -f verified.txt` failed with exit status 1")
	}
	if !sawFailure {
		t.Errorf("the model never saw the verification's Failure section\n%s", tail(out.String()))
	}
	st := loopStatus(t, env, repo, id)
	if st.Status != "done" || st.Outcome != "DONE" || st.Iteration != 2 || len(st.VerifyRuns) != 2 || st.VerifyRuns[0].Passed || !st.VerifyRuns[1].Passed {
		t.Errorf("loop after the session = %+v\n%s", st, tail(out.String()))
	}
	if len(st.VerifyRuns) == 2 && !st.VerifyRuns[1].Checks[0].Confined {
		t.Errorf("the verify command ran unconfined: %+v", st.VerifyRuns[1])
	}
	if st.Spent <= 0 {
		t.Errorf("spent tokens = %d: the usage in Claude Code's transcript was not counted", st.Spent)
	}
	t.Logf("Claude Code: %d requests, loop spent %d tokens", len(model.Requests()), st.Spent)
}

// The real Codex CLI states its promise twice; the verify command fails
// the first time (it passes once it has run before) and passes the
// second: the first stop blocks with the Failure section as Codex's next
// prompt, the second ends the loop.
func TestRealCodexVerifiedLoop(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home := t.TempDir()
	codexHome := t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome)
	repo := userRepo(t, env)
	const loopPrompt = "Check the greeting, then say DONE as a promise"
	model := harnesstest.NewResponsesServer(t, func(r *harnesstest.ResponsesRequest) string {
		return "The greeting is right.\n<promise>DONE</promise>"
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	batonRun(t, env, repo, "install", "codex")
	// Fails on its first run, passes on the next: the file it leaves is
	// in the project, which a confined verify command may write.
	id := startLoop(t, env, repo, "--max-iterations", "5", "--verify", "test -f .checked || { touch .checked; echo not yet; exit 1; }", loopPrompt)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "Check the greeting")
	cmd.Dir, cmd.Env = repo, append(env, "OPENAI_API_KEY=test-key")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, tail(out.String()))
	}
	sawFailure := false
	for _, r := range model.Requests() {
		sawFailure = sawFailure || strings.Contains(r.Raw, "hook_prompt") && strings.Contains(r.Raw, "## Failure") && strings.Contains(r.Raw, "not yet")
	}
	if !sawFailure {
		t.Errorf("Codex never gave the model the Failure section\n%s", tail(out.String()))
	}
	st := loopStatus(t, env, repo, id)
	if st.Status != "done" || st.Outcome != "DONE" || st.Iteration != 2 || len(st.VerifyRuns) != 2 || st.VerifyRuns[0].Passed || !st.VerifyRuns[1].Passed {
		t.Errorf("loop after the session = %+v\n%s", st, tail(out.String()))
	}
	if st.Spent <= 0 {
		t.Errorf("spent tokens = %d: the usage in Codex's rollout was not counted", st.Spent)
	}
	t.Logf("Codex: %d requests, loop spent %d tokens", len(model.Requests()), st.Spent)
}

// Two real Claude Code sessions run at once in one project, each with its
// own loop (bound to its session id): each stop continues only its own
// session's loop, and each loop ends on its own promise.
func TestRealClaudeTwoSessionsOwnLoops(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case !r.HasTool("Write"):
			return harnesstest.Reply{Text: "Title"}
		case strings.Contains(last, "Stop hook feedback") && strings.Contains(r.Raw, "Loop of session A"):
			return harnesstest.Reply{Text: "<promise>A DONE</promise>"}
		case strings.Contains(last, "Stop hook feedback") && strings.Contains(r.Raw, "Loop of session B"):
			return harnesstest.Reply{Text: "<promise>B DONE</promise>"}
		}
		return harnesstest.Reply{Text: "Working on it."}
	})
	batonRun(t, env, repo, "install", "claude")
	sessions := map[string]string{"A": "8d0a5f3e-1c2b-4d6e-8f70-0000000000a1", "B": "8d0a5f3e-1c2b-4d6e-8f70-0000000000b2"}
	ids := map[string]string{}
	for name, sid := range sessions {
		ids[name] = startLoop(t, append(env, "BATON_SESSION_ID="+sid), repo, "--promise", name+" DONE", "--max-iterations", "5", "Loop of session "+name+": finish it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	outs := map[string]*bytes.Buffer{}
	errs := map[string]error{}
	var mu sync.Mutex
	for name, sid := range sessions {
		var out bytes.Buffer
		outs[name] = &out
		cmd := exec.CommandContext(ctx, claude, "-p", "Work on task "+name, "--session-id", sid, "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits")
		cmd.Dir, cmd.Env = repo, claudeEnv(env, model.URL)
		cmd.Stdout, cmd.Stderr = &out, &out
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Run()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name := range sessions {
		if errs[name] != nil {
			t.Fatalf("claude session %s: %v\n%s", name, errs[name], tail(outs[name].String()))
		}
	}
	for name, sid := range sessions {
		st := loopStatus(t, env, repo, ids[name])
		if st.Status != "done" || st.Outcome != name+" DONE" || st.Iteration != 2 || st.SessionID != sid {
			t.Errorf("loop of session %s = %+v\n%s", name, st, tail(outs[name].String()))
		}
	}
	// Neither session was given the other's loop.
	for _, r := range model.Requests() {
		if strings.Contains(r.Raw, "Work on task A") && strings.Contains(r.LastUserText(), "Loop of session B") ||
			strings.Contains(r.Raw, "Work on task B") && strings.Contains(r.LastUserText(), "Loop of session A") {
			t.Errorf("a session was given the other session's loop:\n%.2000s", r.LastUserText())
		}
	}
}

// The real Claude Code's first round spends more than the loop's token
// budget: the stop pauses the loop with the reason instead of blocking,
// and resume with a larger budget makes it continuable again.
func TestRealClaudeBudgetPausesTheLoop(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		return harnesstest.Reply{Text: "Still working."}
	})
	batonRun(t, env, repo, "install", "claude")
	id := startLoop(t, env, repo, "--max-tokens", "5", "Keep working")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Work", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits")
	cmd.Dir, cmd.Env = repo, claudeEnv(env, model.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\n%s", err, tail(out.String()))
	}
	st := loopStatus(t, env, repo, id)
	if st.Status != "paused" || !strings.Contains(st.Pause, "token budget is spent") || st.Spent < 5 {
		t.Fatalf("loop after a round over its budget = %+v\n%s", st, tail(out.String()))
	}
	if !strings.Contains(out.String(), "its token budget is spent") {
		t.Errorf("Claude Code did not show the pause reason\n%s", tail(out.String()))
	}
	batonRun(t, env, repo, "loop", "resume", id, "--max-tokens", "1000000")
	if st := loopStatus(t, env, repo, id); st.Status != "active" || st.Pause != "" {
		t.Errorf("loop after resume --max-tokens = %+v", st)
	}
	if _, err := os.Stat(filepath.Join(fsstore.Open(repo, fsstore.Options{}).IndexDir(), "foreground-loops.json")); err != nil {
		t.Error(err)
	}
}
