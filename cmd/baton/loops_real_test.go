package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/baton-agent/baton/internal/fsstore"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// prompt, the second ends the loop. Codex XML-escapes the hook's text in
// that prompt, so the model there sees the loop prompt's tags as
// &lt;promise&gt;: it copies them as it sees them, and the promise still
// counts. Before, baton's own Failure text reached it escaped, and a
// copied promise never matched: the loop ran to its limit.
func TestRealCodexVerifiedLoop(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home := t.TempDir()
	codexHome := t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome)
	repo := userRepo(t, env)
	const loopPrompt = "Check the greeting, then finish with <promise>DONE</promise>"
	model := harnesstest.NewResponsesServer(t, func(r *harnesstest.ResponsesRequest) string {
		if last := r.LastUserText(); strings.Contains(last, "&lt;promise&gt;DONE&lt;/promise&gt;") {
			return "Fixed.\n&lt;promise&gt;DONE&lt;/promise&gt;" // copied as shown
		}
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
		failure := strings.Contains(r.Raw, "hook_prompt") && strings.Contains(r.Raw, "## Failure") && strings.Contains(r.Raw, "not yet")
		sawFailure = sawFailure || failure
		if failure && !strings.Contains(r.LastUserText(), `You stated the promise \"DONE\"`) && !strings.Contains(r.LastUserText(), `You stated the promise "DONE"`) {
			t.Errorf("the Failure section does not name the promise plainly:\n%.2000s", r.LastUserText())
		}
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

// A Codex loop over its budget pauses, and the person running `codex
// exec` learns it: Codex shows a Stop hook's systemMessage nowhere (not
// in --json, not on stderr, not in the rollout), so baton asks the model
// to say the pause line in one more round, and that line is the session's
// last message. Before, the loop paused without a word in Codex.
func TestRealCodexBudgetPausesTheLoop(t *testing.T) {
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	model := harnesstest.NewResponsesServer(t, func(r *harnesstest.ResponsesRequest) string {
		// A model that does as it is asked: it repeats the line it is given.
		if _, line, ok := strings.Cut(r.LastUserText(), "end your turn:\n\n"); ok {
			line, _, _ = strings.Cut(line, "</hook_prompt>")
			return html.UnescapeString(strings.TrimSpace(line))
		}
		return "Still working."
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	batonRun(t, env, repo, "install", "codex")
	id := startLoop(t, env, repo, "--max-tokens", "5", "Keep working")
	out := runHarness(t, repo, env, 3*time.Minute, codex, "exec", "--json", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "Work")
	st := loopStatus(t, env, repo, id)
	if st.Status != "paused" || !strings.Contains(st.Pause, "token budget is spent") || st.Spent < 5 {
		t.Fatalf("loop after a round over its budget = %+v\n%s", st, tail(out))
	}
	var last string
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type, Text string
			} `json:"item"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			last = ev.Item.Text
		}
	}
	if !strings.Contains(last, "its token budget is spent") || !strings.Contains(last, "baton loop resume "+id) {
		t.Errorf("codex exec's last message does not say the loop paused: %q\n%s", last, tail(out))
	}
	if n := len(model.Requests()); n > 2 {
		t.Errorf("the paused loop went on: %d model requests, want 2 (the round, the pause line)", n)
	}
}

// --max-cost bites on Codex's default model: gpt-5.5 has a price now, so
// a loop over its cost budget pauses after the first round. Before, its
// tokens cost $0 (unpriced) and the loop ran to its iteration limit.
func TestRealCodexMaxCostBites(t *testing.T) {
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	model := harnesstest.NewResponsesServer(t, func(r *harnesstest.ResponsesRequest) string { return "Still working." })
	writeCodexConfig(t, codexHome, model.URL, repo) // model = "gpt-5.5"
	batonRun(t, env, repo, "install", "codex")
	// One round is 10 input and 5 output tokens: $0.0002 at gpt-5.5's price.
	id := startLoop(t, env, repo, "--max-cost", "0.0001", "--max-iterations", "4", "Keep working")
	out := runHarness(t, repo, env, 3*time.Minute, codex, "exec", "--json", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "Work")
	st := loopStatus(t, env, repo, id)
	if st.Status != "paused" || !strings.Contains(st.Pause, "cost budget is spent") {
		t.Fatalf("loop after a round over its cost budget = %+v\n%s", st, tail(out))
	}
}

// threadID is the thread.started id of a `codex exec --json` output.
func threadID(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	t.Fatalf("no thread.started in codex exec --json output:\n%s", tail(out))
	return ""
}

// Two real `codex exec` sessions run at once in one project, and each
// agent starts its own loop from its shell (`baton loop start`, as the
// baton-loop skill has it): each loop binds to its own session through
// CODEX_THREAD_ID (Codex sets no BATON_SESSION_ID), so each stop continues
// its own session's loop, and each ends on its own promise. Before,
// both loops were unbound: the second pushed the first aside, the first
// session to stop took the second's loop, and the other loop was never
// continued.
func TestRealCodexTwoSessionsOwnLoops(t *testing.T) {
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	sessions := []string{"A", "B"}
	// Neither session may stop before both have started their loops, so
	// the two loops exist side by side when the first stop comes (a
	// session run after the other would pass without binding).
	started := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
	var once sync.Map
	bothStarted := func() bool {
		for _, c := range started {
			select {
			case <-c:
			case <-time.After(2 * time.Minute):
				return false
			}
		}
		return true
	}
	model := harnesstest.NewResponsesToolServer(t, func(r *harnesstest.ResponsesRequest) harnesstest.Reply {
		last := r.LastUserText()
		for _, name := range sessions {
			if strings.Contains(last, "Loop of session "+name) {
				// Whatever loop it is fed, the model finishes that one.
				return harnesstest.Reply{Text: "<promise>" + name + " DONE</promise>"}
			}
		}
		for _, name := range sessions {
			if strings.Contains(r.Raw, "Work on task "+name) && len(r.FunctionOutputs()) == 0 {
				return harnesstest.Reply{ToolName: "exec_command", ToolInput: map[string]any{
					// By path: Codex runs commands in a login shell,
					// whose profile resets PATH.
					"cmd": batonBin + " loop start --promise '" + name + " DONE' --max-iterations 5 'Loop of session " + name + ": finish it'"}}
			}
		}
		for _, name := range sessions {
			if strings.Contains(r.Raw, "Work on task "+name) {
				if _, done := once.LoadOrStore(name, true); !done {
					close(started[name])
				}
			}
		}
		if !bothStarted() {
			return harnesstest.Reply{Text: "The other session never started its loop."}
		}
		return harnesstest.Reply{Text: "I started my loop."}
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	batonRun(t, env, repo, "install", "codex")

	outs := runSessionsAtOnce(t, repo, env, sessions, func(name string) []string {
		return []string{codex, "exec", "--json", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
			"--sandbox", "workspace-write", "Work on task " + name}
	})
	ids, out := loopsByPromise(t, env, repo, sessions)
	for _, name := range sessions {
		if ids[name] == "" {
			t.Fatalf("session %s started no loop: %s\n%s", name, out, tail(outs[name]))
		}
		thread := threadID(t, outs[name])
		st := loopStatus(t, env, repo, ids[name])
		if st.Status != "done" || st.Outcome != name+" DONE" || st.Iteration != 2 || st.SessionID != thread {
			t.Errorf("loop of session %s (thread %s) = %+v\n%s", name, thread, st, tail(outs[name]))
		}
	}
	for _, r := range model.Requests() {
		for _, pair := range [][2]string{{"A", "B"}, {"B", "A"}} {
			if strings.Contains(r.Raw, "Work on task "+pair[0]) && strings.Contains(r.LastUserText(), "Loop of session "+pair[1]) {
				t.Errorf("session %s was given session %s's loop:\n%.1000s", pair[0], pair[1], r.LastUserText())
			}
		}
	}
}

// A Droid loop paused at its budget is resumed the way its pause line
// says, and that works with a BYOK model: `droid exec -s <id>` cannot
// resume a BYOK or offline session ("Failed to fetch session"), so the
// line gives `baton loop resume <id> --rebind`, and a new `droid exec`
// (the scripted model is a BYOK custom model) continues the loop to its
// promise. Before, the line said `baton loop resume <id>` (the note
// added "in droid session <id>"), which left the loop bound to a session
// no one could resume.
func TestRealDroidPausedLoopResumesInANewSession(t *testing.T) {
	droid := realDroid(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	const loopPrompt = "Keep working, then say DONE as a promise"
	var resumed atomic.Bool
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		if resumed.Load() && strings.Contains(r.LastUserText(), loopPrompt) {
			return harnesstest.Reply{Text: "Done now.\n<promise>DONE</promise>"}
		}
		if _, line, ok := strings.Cut(r.LastUserText(), "end your turn:\n\n"); ok {
			return harnesstest.Reply{Text: strings.TrimSpace(line)} // it says the pause line, as asked
		}
		return harnesstest.Reply{Text: "Still working."}
	})
	writeDroidSettings(t, home, model.URL)
	batonRun(t, env, repo, "install", "droid")
	id := startLoop(t, env, repo, "--max-tokens", "5", "--max-iterations", "5", loopPrompt)
	out := runHarness(t, repo, env, 3*time.Minute, droid, "exec", "--auto", "low", "-m", "custom:scripted-0", "-o", "stream-json", "Work")
	st := loopStatus(t, env, repo, id)
	if st.Status != "paused" || !strings.Contains(st.Pause, "token budget is spent") {
		t.Fatalf("loop after a round over its budget = %+v\n%s", st, tail(out))
	}
	// droid exec prints no hook message: the pause line reaches the
	// person as the model's last words.
	if !strings.Contains(out, "its token budget is spent") || !strings.Contains(out, "--rebind") {
		t.Errorf("droid exec's output does not say the loop paused, nor how to resume it:\n%s", tail(out))
	}
	// The resume command, as the pause reason in `loop show` gives it.
	show := batonRun(t, env, repo, "loop", "show", id)
	_, after, ok := strings.Cut(show, "run `baton loop resume ")
	resume, _, _ := strings.Cut(after, "`")
	if !ok || !strings.HasSuffix(resume, " --rebind") {
		t.Fatalf("the pause note gives no resume command that works in a new droid session:\n%s", show)
	}
	batonRun(t, env, repo, append(append([]string{"loop", "resume"}, strings.Fields(resume)...), "--max-tokens", "0")...)
	resumed.Store(true)
	out = runHarness(t, repo, env, 3*time.Minute, droid, "exec", "--auto", "low", "-m", "custom:scripted-0", "Work more")
	if st := loopStatus(t, env, repo, id); st.Status != "done" || st.Outcome != "DONE" {
		t.Errorf("loop after resuming it into a new droid session = %+v\n%s", st, tail(out))
	}
}

// Two real pi sessions run at once in one project, each agent starting
// its own loop from pi's bash tool, which exports PI_SESSION_ID (pi takes
// no env file, so no BATON_SESSION_ID): each loop binds to its own
// session, and each session's stop continues only its own loop.
func TestRealPiTwoSessionsOwnLoops(t *testing.T) {
	pi := realPi(t)
	home, agentDir := t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	sessions := []string{"A", "B"}
	started := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
	var once sync.Map
	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		last := r.LastUserText()
		for _, name := range sessions {
			if strings.Contains(last, "Loop of session "+name) && !strings.Contains(last, "Work on task") {
				return harnesstest.Reply{Text: "<promise>" + name + " DONE</promise>"}
			}
		}
		for _, name := range sessions {
			if strings.Contains(r.Raw, "Work on task "+name) && r.ToolResults() == 0 {
				return harnesstest.Reply{ToolName: "bash", ToolInput: map[string]any{
					"command": batonBin + " loop start --promise '" + name + " DONE' --max-iterations 5 'Loop of session " + name + ": finish it'"}}
			}
		}
		for _, name := range sessions {
			if strings.Contains(r.Raw, "Work on task "+name) {
				if _, done := once.LoadOrStore(name, true); !done {
					close(started[name])
				}
			}
		}
		// Neither stops before both loops exist.
		for _, c := range started {
			select {
			case <-c:
			case <-time.After(2 * time.Minute):
				return harnesstest.Reply{Text: "The other session never started its loop."}
			}
		}
		return harnesstest.Reply{Text: "I started my loop."}
	})
	writePiModels(t, agentDir, model.URL)
	batonRun(t, env, repo, "install", "pi")

	outs := runSessionsAtOnce(t, repo, env, sessions, func(name string) []string {
		return []string{pi.bin, "-a", "--offline", "--provider", "fake", "--model", "scripted", "-p", "Work on task " + name}
	})
	ids, out := loopsByPromise(t, env, repo, sessions)
	bound := map[string]string{}
	for _, name := range sessions {
		if ids[name] == "" {
			t.Fatalf("session %s started no loop: %s\n%s", name, out, tail(outs[name]))
		}
		st := loopStatus(t, env, repo, ids[name])
		if st.Status != "done" || st.Outcome != name+" DONE" || st.SessionID == "" {
			t.Errorf("loop of session %s = %+v\n%s", name, st, tail(outs[name]))
		}
		bound[name] = st.SessionID
	}
	if bound["A"] == bound["B"] {
		t.Errorf("both loops are bound to session %q", bound["A"])
	}
	for _, r := range model.Requests() {
		for _, pair := range [][2]string{{"A", "B"}, {"B", "A"}} {
			if strings.Contains(r.Raw, "Work on task "+pair[0]) && strings.Contains(r.LastUserText(), "Loop of session "+pair[1]) {
				t.Errorf("session %s was given session %s's loop:\n%.1000s", pair[0], pair[1], r.LastUserText())
			}
		}
	}
}

// runSessionsAtOnce runs one harness process per session name at the same
// time in repo (argv gives each its command line), fails the test if one
// fails, and returns what each printed.
func runSessionsAtOnce(t *testing.T, repo string, env, sessions []string, argv func(name string) []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	outs := make([]bytes.Buffer, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, name := range sessions {
		args := argv(name)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env = repo, env
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	printed := map[string]string{}
	for i, name := range sessions {
		printed[name] = outs[i].String()
		if errs[i] != nil {
			t.Fatalf("%s (session %s): %v\n%s", filepath.Base(argv(name)[0]), name, errs[i], tail(printed[name]))
		}
	}
	return printed
}

// loopsByPromise finds the loop each session started, by its promise
// "<name> DONE", and returns them with what `loop list --json` printed.
func loopsByPromise(t *testing.T, env []string, repo string, sessions []string) (map[string]string, string) {
	t.Helper()
	var list struct {
		Loops []struct {
			ID       string   `json:"id"`
			Promises []string `json:"completion_promises"`
		} `json:"loops"`
	}
	out := batonRun(t, env, repo, "loop", "list", "--json")
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &list); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, l := range list.Loops {
		for _, name := range sessions {
			if slices.Equal(l.Promises, []string{name + " DONE"}) {
				ids[name] = l.ID
			}
		}
	}
	return ids, out
}

// A real Claude Code loop whose every round reads the same file and says
// the same thing stalls: after --stall-rounds such rounds it pauses with
// the reason, Claude Code shows it, and resume continues it.
func TestRealClaudeLoopStalls(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	readme := filepath.Join(repo, "README.md")
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		if strings.Contains(r.LastUserText(), "[tool_result]") {
			return harnesstest.Reply{Text: "The tests still fail; I will look again."}
		}
		return harnesstest.Reply{ToolName: "Read", ToolInput: map[string]any{"file_path": readme}}
	})
	batonRun(t, env, repo, "install", "claude")
	id := startLoop(t, env, repo, "--stall-rounds", "2", "Make the tests pass")
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, append([]string{"-p", "Work", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}, args...)...)
		cmd.Dir, cmd.Env = repo, claudeEnv(env, model.URL)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("claude: %v\n%s", err, tail(out.String()))
		}
		return out.String()
	}
	out := run()
	const why = "it stalled: no progress in 2 rounds in a row (no new tool call)"
	st := loopStatus(t, env, repo, id)
	if st.Status != "paused" || !strings.Contains(st.Pause, why) {
		t.Fatalf("loop after rounds that repeat = %+v, want paused: %s\n%s", st, why, tail(out))
	}
	// The first round's Read is new; the two after it repeat it.
	if st.Iteration != 3 {
		t.Errorf("the loop paused at iteration %d, want 3", st.Iteration)
	}
	if !strings.Contains(out, why) {
		t.Errorf("Claude Code did not show why the loop paused\n%s", tail(out))
	}
	batonRun(t, env, repo, "loop", "resume", id)
	if st := loopStatus(t, env, repo, id); st.Status != "active" || st.Pause != "" {
		t.Fatalf("loop after resume = %+v", st)
	}
	// The loop is bound to its session: the person resumes that session,
	// and the loop goes two rounds (one block) more before it pauses again.
	out = run("--resume", st.SessionID)
	if st := loopStatus(t, env, repo, id); st.Status != "paused" || !strings.Contains(st.Pause, why) || st.Iteration != 4 {
		t.Errorf("resumed loop = %+v, want it to go two rounds more and pause again\n%s", st, tail(out))
	}
}
