package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/golden"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/loop"
)

// stopOut is Claude's Stop answer. Reason is what the model is given to
// continue with: a block's reason points at the hook's additional context,
// which carries the loop prompt, and stop reads it from there.
type stopOut struct {
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	SystemMessage string `json:"systemMessage"`
	Specific      struct {
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// stop runs a Claude Stop for session with the given message (nil: the
// field is absent) and decodes the answer; an empty stdout is the zero
// stopOut.
func (e *env) stop(session, cwd string, msg *string, active bool) stopOut {
	e.t.Helper()
	p := map[string]any{"session_id": session, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": active,
		"transcript_path": e.dir + "/.transcripts/t.jsonl"}
	if msg != nil {
		p["last_assistant_message"] = *msg
	}
	b, _ := json.Marshal(p)
	r := e.hook("claude", "stop", string(b))
	if r.code != 0 || r.stderr != "" {
		e.t.Fatalf("stop hook exit %d, stderr %q", r.code, r.stderr)
	}
	var o stopOut
	if r.stdout != "" {
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			e.t.Fatalf("stop hook printed %q: %v", r.stdout, err)
		}
	}
	if o.Decision == "block" {
		if o.Reason != harness.ClaudeStopPointer || o.Specific.AdditionalContext == "" {
			e.t.Fatalf("a block must point at its additional context, which carries the prompt: %q", r.stdout)
		}
		o.Reason = o.Specific.AdditionalContext
	}
	return o
}

func ptr(s string) *string { return &s }

// startLoop starts a loop bound to session s1 and returns its id.
func (e *env) startLoop(args ...string) string {
	e.t.Helper()
	e.vars["BATON_SESSION_ID"] = "s1"
	defer delete(e.vars, "BATON_SESSION_ID")
	e.ok("", "", append([]string{"loop", "start"}, args...)...)
	return e.foreground()
}

// The ralph-loop plugin's bugs (reference/prior-art-lessons.md §4.3),
// each as a Stop regression.
func TestStopRegressions(t *testing.T) {
	t.Parallel()
	t.Run("cwd in a subdirectory finds the loop", func(t *testing.T) {
		// anthropics/claude-plugins-official#88, #394, #3989, #4909
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		if o := e.stop("s1", e.dir+"/internal/auth", ptr("working"), false); o.Decision != "block" || o.Reason != "fix it" {
			t.Fatalf("stop from a subdirectory = %+v", o)
		}
		// Even a cwd outside the project finds it through CLAUDE_PROJECT_DIR.
		e.vars["CLAUDE_PROJECT_DIR"] = e.dir
		if o := e.stop("s1", t.TempDir(), ptr("working"), false); o.Decision != "block" {
			t.Fatalf("stop from outside with CLAUDE_PROJECT_DIR = %+v", o)
		}
		if l := e.loop(id); l.Iteration != 3 {
			t.Errorf("iteration = %d, want 3", l.Iteration)
		}
	})
	t.Run("another session's stop is never blocked and never touches the loop", func(t *testing.T) {
		// claude-plugins-official#1542 and the session_id fix
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		before := e.read(".agent/context/loops/" + id + ".md")
		for _, msg := range []*string{ptr("working"), ptr("<promise>DONE</promise>"), nil} {
			if o := e.stop("s2", e.dir, msg, false); o != (stopOut{}) {
				t.Fatalf("stop from another session answered %+v", o)
			}
		}
		if after := e.read(".agent/context/loops/" + id + ".md"); after != before {
			t.Errorf("another session's stop changed the loop file:\n%s", after)
		}
	})
	t.Run("an unbound loop binds to the first session that stops", func(t *testing.T) {
		e := newEnv(t)
		e.gitRepo()
		e.ok("", "", "loop", "start", "fix it") // no BATON_SESSION_ID: unbound
		id := e.foreground()
		if o := e.stop("s7", e.dir, ptr("x"), false); o.Decision != "block" {
			t.Fatalf("first stop = %+v", o)
		}
		if l := e.loop(id); l.SessionID != "s7" {
			t.Errorf("session after first stop = %q, want s7", l.SessionID)
		}
		if o := e.stop("s8", e.dir, ptr("x"), false); o != (stopOut{}) {
			t.Errorf("stop from a second session = %+v", o)
		}
	})
	t.Run("a tool-use-only last turn continues", func(t *testing.T) {
		// claude-code#81825: ralph deleted its state on the first stop
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		e.writeTranscript("t.jsonl", claudeLine("msg_1", textBlock("Editing now.")), claudeLine("msg_1", toolUseBlock))
		if o := e.stop("s1", e.dir, nil, false); o.Decision != "block" {
			t.Fatalf("stop after a tool-use-only line = %+v", o)
		}
		// And the promise in an earlier line of the same message counts.
		e.writeTranscript("t.jsonl", claudeLine("msg_2", textBlock("<promise>DONE</promise>")), claudeLine("msg_2", toolUseBlock))
		if o := e.stop("s1", e.dir, nil, true); o.Decision != "" || !strings.Contains(o.SystemMessage, "done (DONE)") {
			t.Fatalf("stop with the promise before a tool_use line = %+v", o)
		}
		if l := e.loop(id); l.Status != baton.LoopDone {
			t.Errorf("status = %s", l.Status)
		}
	})
	t.Run("a lagging transcript loses to last_assistant_message", func(t *testing.T) {
		// claude-plugins-official#1761, #3632: the flush race
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		// The transcript still shows an older turn (or nothing at all).
		e.writeTranscript("t.jsonl", `{"type":"user","message":{"role":"user","content":"go"}}`)
		if o := e.stop("s1", e.dir, ptr("All done. <promise>DONE</promise>"), false); !strings.Contains(o.SystemMessage, "done (DONE)") {
			t.Fatalf("stop = %+v", o)
		}
		e2 := newEnv(t)
		e2.gitRepo()
		id2 := e2.startLoop("fix it")
		e2.writeTranscript("t.jsonl", claudeLine("msg_old", textBlock("<promise>DONE</promise>")))
		if o := e2.stop("s1", e2.dir, ptr("still working"), false); o.Decision != "block" {
			t.Fatalf("a stale promise in the transcript ended the loop: %+v", o)
		}
		if e.loop(id).Status != baton.LoopDone || e2.loop(id2).Status != baton.LoopActive {
			t.Error("wrong final states")
		}
	})
	t.Run("no transcript and no message continues and deletes nothing", func(t *testing.T) {
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		if o := e.stop("s1", e.dir, nil, false); o.Decision != "block" {
			t.Fatalf("stop = %+v", o)
		}
		if l := e.loop(id); l.Status != baton.LoopActive || l.Iteration != 2 {
			t.Errorf("loop = %s, iteration %d", l.Status, l.Iteration)
		}
	})
	t.Run("a bare promise without tags does not complete", func(t *testing.T) {
		// claude-code#81827
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		if o := e.stop("s1", e.dir, ptr("DONE"), false); o.Decision != "block" {
			t.Fatalf("bare promise = %+v", o)
		}
		if e.loop(id).Status != baton.LoopActive {
			t.Error("a bare promise ended the loop")
		}
	})
	t.Run("--max-iterations=3 is a limit, not prompt text", func(t *testing.T) {
		// claude-code#18646: 484 iterations burned a quota
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix", "the", "tests", "--max-iterations=3")
		l := e.loop(id)
		if l.Prompt != "fix the tests" || l.MaxIterations != 3 {
			t.Fatalf("loop = prompt %q, max %d", l.Prompt, l.MaxIterations)
		}
		var msgs []string
		for i := 0; i < 3; i++ {
			o := e.stop("s1", e.dir, ptr("not yet"), true)
			msgs = append(msgs, o.Decision+": "+o.SystemMessage)
		}
		want := []string{
			"block: baton loop " + id + ": iteration 2/3 — finish with <promise>DONE</promise>",
			"block: baton loop " + id + ": iteration 3/3 — finish with <promise>DONE</promise>",
			": baton loop " + id + ": stopped after 3 iterations (the limit) without a promise; the loop is done, outcome max_iterations",
		}
		if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
			t.Errorf("stops =\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
		}
		if l := e.loop(id); l.Status != baton.LoopDone || l.Outcome != baton.OutcomeMaxIterations {
			t.Errorf("loop = %s %q", l.Status, l.Outcome)
		}
		if o := e.stop("s1", e.dir, ptr("more"), false); o != (stopOut{}) {
			t.Errorf("stop after the loop ended = %+v", o)
		}
	})
	t.Run("unknown flags are errors, never prompt text", func(t *testing.T) {
		e := newEnv(t)
		e.gitRepo()
		r := e.run("", "", "loop", "start", "fix", "--max-iteration", "3")
		if r.code != ExitUsage || !strings.Contains(r.stderr, "unknown flag: --max-iteration") {
			t.Errorf("unknown flag = exit %d, %q", r.code, r.stderr)
		}
		if r := e.run("", "", "loop", "start", "--promise", "DONE"); r.code != ExitUsage || !strings.Contains(r.stderr, "needs a prompt") {
			t.Errorf("no prompt = exit %d, %q", r.code, r.stderr)
		}
		if r := e.run("", "", "loop", "start", "x", "--max-iterations", "-2"); r.code != ExitUsage {
			t.Errorf("negative limit = exit %d", r.code)
		}
		if _, err := e.store().ForegroundLoopID(""); err != nil {
			t.Fatal(err)
		}
		if id := e.foreground(); id != "" {
			t.Errorf("a failed start left foreground loop %q", id)
		}
		r = e.ok("", "", "loop", "start", "x", "--max-iterations", "0")
		if !strings.Contains(r.stderr, "no iteration limit") {
			t.Errorf("unbounded loop warning missing: %q", r.stderr)
		}
	})
	t.Run("multi-word promises", func(t *testing.T) {
		// claude-plugins-official#1562
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it", "--promise", "ALL TESTS PASS", "--promise=NEEDS HUMAN HELP")
		if l := e.loop(id); strings.Join(l.CompletionPromises, "|") != "ALL TESTS PASS|NEEDS HUMAN HELP" {
			t.Fatalf("promises = %q", l.CompletionPromises)
		}
		if o := e.stop("s1", e.dir, ptr("<promise>ALL TESTS</promise>"), false); o.Decision != "block" {
			t.Fatalf("a partial promise completed: %+v", o)
		}
		if o := e.stop("s1", e.dir, ptr("stuck\n<promise>\n  NEEDS   HUMAN\nHELP </promise>"), true); !strings.Contains(o.SystemMessage, "done (NEEDS HUMAN HELP)") {
			t.Fatalf("stop = %+v", o)
		}
		if l := e.loop(id); l.Outcome != "NEEDS HUMAN HELP" {
			t.Errorf("outcome = %q", l.Outcome)
		}
	})
	t.Run("multi-line prompts with --- lines survive verbatim", func(t *testing.T) {
		// claude-code#16037, #15824 and ralph's "everything after the second ---"
		e := newEnv(t)
		e.gitRepo()
		prompt := "Port the handlers.\n---\n## Rules\n```\n---\n```\n$HOME `rm -rf` \"quotes\" 'single'\n"
		e.vars["BATON_SESSION_ID"] = "s1"
		e.ok("", prompt, "loop", "start", "--prompt-file", "-")
		delete(e.vars, "BATON_SESSION_ID")
		if o := e.stop("s1", e.dir, ptr("x"), false); o.Reason != strings.TrimRight(prompt, "\n") {
			t.Fatalf("reason = %q, want the prompt verbatim", o.Reason)
		}
	})
	t.Run("two loops of one session: only the foreground one continues", func(t *testing.T) {
		e := newEnv(t)
		e.gitRepo()
		a := e.startLoop("loop A")
		e.vars["BATON_SESSION_ID"] = "s1"
		r := e.run("", "", "loop", "start", "loop B")
		delete(e.vars, "BATON_SESSION_ID")
		if !strings.Contains(r.stderr, "loop "+a+" stays active but is no longer the foreground loop") {
			t.Errorf("switch notice missing: %q", r.stderr)
		}
		b := e.foreground()
		if o := e.stop("s1", e.dir, ptr("x"), false); o.Reason != "loop B" {
			t.Fatalf("stop continued %+v, want loop B", o)
		}
		if e.loop(a).Iteration != 1 {
			t.Error("the background loop advanced")
		}
		e.ok("", "", "loop", "activate", "loop-a") // a unique slug prefix
		if o := e.stop("s1", e.dir, ptr("x"), false); o.Reason != "loop A" {
			t.Fatalf("after activate, stop continued %+v", o)
		}
		if e.loop(b).Iteration != 2 || e.loop(a).Iteration != 2 {
			t.Errorf("iterations = A %d, B %d", e.loop(a).Iteration, e.loop(b).Iteration)
		}
	})
	t.Run("pause, resume, cancel", func(t *testing.T) {
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		e.ok("", "", "loop", "pause")
		if o := e.stop("s1", e.dir, ptr("x"), false); o != (stopOut{}) {
			t.Fatalf("a paused loop answered %+v", o)
		}
		if r := e.run("", "", "loop", "pause", id); r.code != ExitError || !strings.Contains(r.stderr, "is paused; pause does not apply") {
			t.Errorf("double pause = exit %d, %q", r.code, r.stderr)
		}
		e.ok("", "", "loop", "resume", id)
		if o := e.stop("s1", e.dir, ptr("x"), false); o.Decision != "block" {
			t.Fatalf("a resumed loop answered %+v", o)
		}
		r := e.ok("", "", "loop", "cancel", "--json")
		var j struct {
			Status, Outcome string
			Foreground      bool
		}
		if err := json.Unmarshal([]byte(r.stdout), &j); err != nil || j.Status != "cancelled" || j.Outcome != "cancelled" || j.Foreground {
			t.Fatalf("cancel --json = %s (%v)", r.stdout, err)
		}
		if o := e.stop("s1", e.dir, ptr("x"), false); o != (stopOut{}) {
			t.Fatalf("a cancelled loop answered %+v", o)
		}
		l := e.loop(id) // the file stays
		if l.Status != baton.LoopCancelled || !strings.Contains(l.Notes, "pause at iteration 1 (active -> paused)") || !strings.Contains(l.Notes, "cancel at iteration 2") {
			t.Errorf("cancelled loop = %s, notes %q", l.Status, l.Notes)
		}
		if r := e.run("", "", "loop", "resume", id); r.code != ExitError {
			t.Errorf("resume of a cancelled loop = exit %d", r.code)
		}
		if r := e.run("", "", "loop", "activate", id); r.code != ExitError || !strings.Contains(r.stderr, "is cancelled") {
			t.Errorf("activate of a cancelled loop = exit %d, %q", r.code, r.stderr)
		}
	})
	t.Run("the block cap ends the chain and keeps the loop", func(t *testing.T) {
		// claude-plugins-official#5312: stop_hook_active was ignored
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it", "--max-iterations", "0")
		e.vars["CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"] = "3"
		for i, active := range []bool{false, true, true} {
			if o := e.stop("s1", e.dir, ptr("x"), active); o.Decision != "block" {
				t.Fatalf("stop %d = %+v", i, o)
			}
		}
		o := e.stop("s1", e.dir, ptr("x"), true)
		if o.Decision != "" || !strings.Contains(o.SystemMessage, "after 3 consecutive stop-hook blocks") {
			t.Fatalf("stop at the cap = %+v", o)
		}
		if l := e.loop(id); l.Status != baton.LoopActive || l.Iteration != 4 {
			t.Fatalf("loop at the cap = %s, iteration %d", l.Status, l.Iteration)
		}
		// The user's next message starts a new turn: the loop goes on.
		if o := e.stop("s1", e.dir, ptr("x"), false); o.Decision != "block" {
			t.Fatalf("stop in a new turn = %+v", o)
		}
		if l := e.loop(id); l.Iteration != 5 || l.ConsecutiveBlocks != 1 {
			t.Errorf("loop after a new turn = iteration %d, blocks %d", l.Iteration, l.ConsecutiveBlocks)
		}
	})
	t.Run("a stop after compaction continues the loop", func(t *testing.T) {
		// claude-plugins-official#274
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		e.hook("claude", "pre-compact", `{"session_id":"s1","cwd":"`+e.dir+`","trigger":"auto"}`)
		e.hook("claude", "session-start", `{"session_id":"s1","cwd":"`+e.dir+`","source":"compact"}`)
		// The compact session start restated the saved packet, so the
		// block carries the prompt alone.
		if o := e.stop("s1", e.dir, ptr("x"), false); o.Decision != "block" || o.Reason != "fix it" {
			t.Fatalf("stop after compaction = %+v", o)
		}
		if l := e.loop(id); l.Status != baton.LoopActive || l.Iteration != 2 || l.CompactedPacket != "" {
			t.Errorf("loop = %s, iteration %d, compacted_packet %q", l.Status, l.Iteration, l.CompactedPacket)
		}
	})
	t.Run("a stop after a compaction nothing restated names the saved packet once", func(t *testing.T) {
		// Droid: SessionStart(resume) comes before PreCompact, and no
		// source=compact start follows.
		e := newEnv(t)
		e.gitRepo()
		id := e.startLoop("fix it")
		droidStop := func() stopOut {
			t.Helper()
			r := e.hook("droid", "stop", `{"session_id":"s1","cwd":"`+e.dir+`","hook_event_name":"Stop","stop_hook_active":false}`)
			var o stopOut
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &o) != nil {
				t.Fatalf("droid stop: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			return o
		}
		e.hook("droid", "session-start", `{"session_id":"s1","cwd":"`+e.dir+`","source":"resume"}`)
		e.hook("droid", "pre-compact", `{"session_id":"s1","cwd":"`+e.dir+`","trigger":"manual"}`)
		saved := e.loop(id).CompactedPacket
		if saved == "" {
			t.Fatal("pre-compact did not note its packet on the loop")
		}
		o := droidStop()
		if o.Decision != "block" || o.Reason != "fix it\n\n"+loop.CompactedLine(saved) {
			t.Fatalf("first stop after compaction = %+v", o)
		}
		if o := droidStop(); o.Decision != "block" || o.Reason != "fix it" {
			t.Fatalf("second stop after compaction = %+v", o)
		}
		if l := e.loop(id); l.Iteration != 3 || l.CompactedPacket != "" {
			t.Errorf("loop = iteration %d, compacted_packet %q", l.Iteration, l.CompactedPacket)
		}
	})
}

// Hooks fail open: bad input, a missing store, a corrupt loop.
func TestHooksFailOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name, stdin string
		args        []string
		stderr      string
	}{
		{"not JSON", "<html>", []string{"hook", "stop", "--harness", "claude"}, "the payload is not a JSON object"},
		{"a JSON array", "[1]", []string{"hook", "stop", "--harness", "codex"}, "the payload is not a JSON object"},
		{"oversized stdin", `{"x":"` + strings.Repeat("a", 16<<20) + `"}`, []string{"hook", "post-tool-use", "--harness", "claude"}, "over 16 MiB"},
		{"missing store", `{"session_id":"s","cwd":"` + e.dir + `"}`, []string{"hook", "stop", "--harness", "claude"}, "no context store at " + e.dir},
		{"unknown harness", `{}`, []string{"hook", "stop", "--harness", "cursor"}, `--harness "cursor" is not one of`},
		{"missing harness", `{}`, []string{"hook", "stop"}, `--harness "" is not one of`},
		{"unknown event", `{}`, []string{"hook", "notify", "--harness", "claude"}, "unknown hook event"},
		{"unknown flag", `{}`, []string{"hook", "stop", "--harness", "claude", "--verbose"}, "unknown flag --verbose"},
		{"global flag before hook", `{}`, []string{"--root", e.dir, "hook", "stop", "--harness=droid"}, "no context store at " + e.dir},
	}
	for _, c := range cases {
		r := e.run("", c.stdin, c.args...)
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, c.stderr) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 0, no stdout, one line with %q", c.name, r.code, r.stdout, r.stderr, c.stderr)
		}
	}
	// A corrupt loop file: the stop is allowed, with one line on stderr.
	e.gitRepo()
	e.startLoop("x")
	e.write(".agent/context/loops/"+e.foreground()+".md", "---\nbroken")
	r := e.hook("claude", "stop", `{"session_id":"s1","cwd":"`+e.dir+`"}`)
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "is corrupt") {
		t.Errorf("corrupt loop: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := e.run("", "", "hook", "--help"); r.code != 0 || !strings.Contains(r.stdout, "fails open") && !strings.Contains(r.stdout, "never breaks") {
		t.Errorf("hook --help = exit %d, %q", r.code, r.stdout)
	}
}

func TestLoopListStatusJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	a := e.startLoop("loop A", "--promise", "DONE", "--promise", "BLOCKED")
	e.ok("", "", "loop", "start", "loop B", "--max-iterations", "7", "--max-tokens", "5000", "--verify", "true")
	r := e.ok("", "", "loop", "list")
	golden.CheckString(t, "loop_list.golden.txt", r.stdout)
	r = e.ok("", "", "loop", "list", "--json")
	// The view every edge shows (loop.View; the MCP tools' and the
	// dashboard's goldens show the same fields).
	golden.CheckString(t, "loop_list.golden.json", e.scrub(r.stdout))
	var list struct {
		SchemaVersion int `json:"schema_version"`
		Foreground    string
		Loops         []loop.View
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.SchemaVersion != 1 || len(list.Loops) != 2 || list.Foreground == a {
		t.Fatalf("loop list --json = %s (%v)", r.stdout, err)
	}
	// Each loop whole, as loop status --json has it: the index holds
	// only what the table shows.
	if b := list.Loops[0]; b.MaxTokens != 5000 || len(b.Verify) != 1 || b.Verify[0] != "true" {
		t.Errorf("loop list --json loses loop B's budget and verify commands: max_tokens %d, verify %q", b.MaxTokens, b.Verify)
	}
	r = e.ok("", "", "loop", "status", a)
	golden.CheckString(t, "loop_status.golden.txt", e.scrub(r.stdout))
	r = e.ok("", "", "loop", "status", "--json")
	golden.CheckString(t, "loop_status.golden.json", e.scrub(r.stdout))
	if !strings.HasPrefix(r.stdout, "{\n  \"schema_version\": 1,") || !strings.Contains(r.stdout, `"prompt": "loop B"`) {
		t.Errorf("loop status --json = %s", r.stdout)
	}
	// Cancelling the unbound loop leaves s1's: outside a session, the only
	// foreground loop is the current one.
	e.ok("", "", "loop", "cancel")
	r = e.ok("", "", "loop", "status")
	if !strings.HasPrefix(r.stdout, "loop "+a+" (foreground)") {
		t.Errorf("status with one session's loop left = %q", r.stdout)
	}
	e.ok("", "", "loop", "cancel")
	r = e.ok("", "", "loop", "status")
	if !strings.HasPrefix(r.stdout, "no foreground loop") {
		t.Errorf("status without a foreground loop = %q", r.stdout)
	}
}

// Two sessions in one project each run their own loop: each stop,
// session-start and pre-compact acts only on its session's loop, and a
// loop started outside any session waits for the first session without
// a loop of its own.
func TestTwoSessionsRunTheirOwnLoops(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	start := func(session, prompt string) string {
		e.vars["BATON_SESSION_ID"] = session
		defer delete(e.vars, "BATON_SESSION_ID")
		var l struct{ ID string }
		if err := json.Unmarshal([]byte(e.ok("", "", "loop", "start", "--json", prompt).stdout), &l); err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	a := start("s1", "loop A")
	b := start("s2", "loop B")
	for round := 0; round < 2; round++ {
		if o := e.stop("s1", e.dir, ptr("working"), false); o.Reason != "loop A" {
			t.Fatalf("s1's stop = %+v, want loop A", o)
		}
		if o := e.stop("s2", e.dir, ptr("working"), false); o.Reason != "loop B" {
			t.Fatalf("s2's stop = %+v, want loop B", o)
		}
	}
	if la, lb := e.loop(a), e.loop(b); la.Iteration != 3 || lb.Iteration != 3 {
		t.Fatalf("iterations = %d, %d; want 3 each", la.Iteration, lb.Iteration)
	}
	// Pre-compact notes the compaction on its own session's loop only.
	e.hook("claude", "pre-compact", `{"session_id":"s2","cwd":"`+e.dir+`","trigger":"auto"}`)
	if la, lb := e.loop(a), e.loop(b); la.CompactedPacket != "" || lb.CompactedPacket == "" {
		t.Errorf("compacted packet on A %q, on B %q; want only B's", la.CompactedPacket, lb.CompactedPacket)
	}
	// Session start tells each session its own loop.
	for session, want := range map[string]string{"s1": a, "s2": b} {
		r := e.ok("", `{"session_id":"`+session+`","cwd":"`+e.dir+`","source":"compact"}`, "hook", "session-start", "--harness", "claude")
		if !strings.Contains(r.stdout, "Foreground loop "+want+": active, iteration 3/20, bound to this session") {
			t.Errorf("session-start for %s:\n%s", session, r.stdout)
		}
	}
	// B ends on its promise; A goes on.
	if o := e.stop("s2", e.dir, ptr("<promise>DONE</promise>"), false); !strings.Contains(o.SystemMessage, "done (DONE)") {
		t.Fatalf("s2's promise = %+v", o)
	}
	if o := e.stop("s1", e.dir, ptr("working"), false); o.Reason != "loop A" {
		t.Fatalf("s1's stop after B ended = %+v", o)
	}
	// A loop started outside a session is taken by s2, which has none
	// now, and never by s1.
	c := start("", "loop C")
	if o := e.stop("s1", e.dir, ptr("working"), false); o.Reason != "loop A" {
		t.Fatalf("s1's stop with an unbound loop waiting = %+v, want loop A", o)
	}
	if o := e.stop("s2", e.dir, ptr("working"), false); o.Reason != "loop C" {
		t.Fatalf("s2's stop = %+v, want loop C", o)
	}
	if l := e.loop(c); l.SessionID != "s2" {
		t.Errorf("loop C bound to %q, want s2", l.SessionID)
	}
	fg, err := e.store().Foreground()
	if err != nil || fg.Unbound != "" || fg.Of("s1") != a || fg.Of("s2") != c {
		t.Errorf("foreground loops = %+v, %v", fg, err)
	}
	// activate --rebind hands A to a new session (after /clear, say).
	e.vars["BATON_SESSION_ID"] = "s3"
	e.ok("", "", "loop", "activate", a, "--rebind")
	delete(e.vars, "BATON_SESSION_ID")
	if o := e.stop("s1", e.dir, ptr("working"), false); o != (stopOut{}) {
		t.Errorf("s1's stop after A moved to s3 = %+v, want nothing", o)
	}
	if o := e.stop("s3", e.dir, ptr("working"), false); o.Reason != "loop A" {
		t.Errorf("s3's stop = %+v, want loop A", o)
	}
}

// A loop with verify commands believes its promise only when they pass:
// a failing command makes the next round's prompt end with a Failure
// section (the command and the end of its output) and counts the round;
// once it passes, the loop is done. loop show gives each run's result.
func TestStopVerifiesThePromise(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	id := e.startLoop("Make done.txt", "--verify", "echo checking; test -f done.txt", "--verify", "true", "--max-iterations", "5")
	if l := e.loop(id); len(l.Verify) != 2 {
		t.Fatalf("verify commands = %q", l.Verify)
	}
	o := e.stop("s1", e.dir, ptr("All done.\n<promise>DONE</promise>"), false)
	if o.Decision != "block" || !strings.HasPrefix(o.Reason, "Make done.txt\n\n## Failure\n\n") ||
		!strings.Contains(o.Reason, "`echo checking; test -f done.txt` failed with exit status 1") || !strings.Contains(o.Reason, "checking") {
		t.Fatalf("stop with a promise the check refutes = %+v", o)
	}
	l := e.loop(id)
	if l.Status != baton.LoopActive || l.Iteration != 2 || len(l.VerifyRuns) != 1 || l.VerifyRuns[0].Passed || len(l.VerifyRuns[0].Checks) != 1 {
		t.Fatalf("loop after a failed verification = %+v", l)
	}
	e.write("done.txt", "yes\n")
	o = e.stop("s1", e.dir, ptr("<promise>DONE</promise>"), true)
	if o.Decision != "" || !strings.Contains(o.SystemMessage, "done (DONE) at iteration 2/5, verified (2 commands passed)") {
		t.Fatalf("stop with a promise the checks confirm = %+v", o)
	}
	r := e.ok("", "", "loop", "show", id)
	if !strings.Contains(r.stdout, "verify:     `echo checking; test -f done.txt`, `true` (within 5m0s)") ||
		!strings.Contains(r.stdout, "iteration 1: failed; `echo checking; test -f done.txt` exit 1") || !strings.Contains(r.stdout, "iteration 2: passed;") {
		t.Errorf("loop show:\n%s", r.stdout)
	}
	var j struct{ Loop loop.View }
	if err := json.Unmarshal([]byte(e.ok("", "", "loop", "status", id, "--json").stdout), &j); err != nil {
		t.Fatal(err)
	}
	if runs := j.Loop.VerifyRuns; len(runs) != 2 || runs[0].Passed || !runs[1].Passed || runs[1].Checks[1].Command != "true" || j.Loop.Status != "done" {
		t.Errorf("loop status --json verify runs = %+v", runs)
	}
}

// A loop started from a packet verifies with the packet's validators, and
// refuses a verify timeout the Stop hook's time limit could not hold.
func TestLoopFromPacketTakesItsValidators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "ship it", "--next-prompt", "Finish the release", "--validator", "test -f released.txt")
	var j struct{ Verify []string }
	if err := json.Unmarshal([]byte(e.ok("", "", "loop", "start", "--from-packet", "latest", "--json").stdout), &j); err != nil || len(j.Verify) != 1 || j.Verify[0] != "test -f released.txt" {
		t.Fatalf("loop from a packet verifies with %q (%v)", j.Verify, err)
	}
	if err := json.Unmarshal([]byte(e.ok("", "", "loop", "start", "--from-packet", "latest", "--verify", "true", "--json").stdout), &j); err != nil || len(j.Verify) != 1 || j.Verify[0] != "true" {
		t.Errorf("--verify beside --from-packet = %q (%v)", j.Verify, err)
	}
	if r := e.run("", "", "loop", "start", "x", "--verify", "true", "--verify-timeout", "11m"); r.code != 2 || !strings.Contains(r.stderr, "10m0s") {
		t.Errorf("--verify-timeout 11m = exit %d, %s", r.code, r.stderr)
	}
}

// Budgets count what the session's transcript says it spent since the
// loop started, only once; at a budget the loop pauses with a one-line
// reason, and resume with a larger budget continues it.
func TestStopBudgets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	usage := func(id string, in, out int, at time.Time) string {
		return fmt.Sprintf(`{"type":"assistant","timestamp":%q,"message":{"id":%q,"model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"working"}],"usage":{"input_tokens":%d,"output_tokens":%d}}}`,
			at.Format(time.RFC3339), id, in, out)
	}
	// Before the loop: the session's own work, not the loop's.
	e.writeTranscript("t.jsonl", usage("m0", 90000, 9000, e.now.Add(-time.Hour)))
	id := e.startLoop("Keep going", "--max-tokens", "1000", "--max-cost", "1", "--stall-rounds", "10") // the stops make no tool calls: a stall is not what this tests
	e.writeTranscript("t.jsonl", usage("m0", 90000, 9000, e.now.Add(-time.Hour)), usage("m1", 500, 100, e.now.Add(time.Minute)))
	if o := e.stop("s1", e.dir, ptr("working"), false); o.Decision != "block" {
		t.Fatalf("stop under budget = %+v", o)
	}
	if l := e.loop(id); l.Spent.Total() != 600 || l.Spent.CostUSD < 0.0029 || l.Spent.CostUSD > 0.00301 {
		t.Fatalf("spent after one stop = %+v, want 600 tokens, $0.003", l.Spent)
	}
	// A second stop with nothing new spends nothing more.
	e.stop("s1", e.dir, ptr("working"), true)
	e.writeTranscript("t.jsonl", usage("m0", 90000, 9000, e.now.Add(-time.Hour)), usage("m1", 500, 100, e.now.Add(time.Minute)), usage("m2", 400, 100, e.now.Add(2*time.Minute)))
	o := e.stop("s1", e.dir, ptr("working"), true)
	if o.Decision != "" || !strings.Contains(o.SystemMessage, "paused at iteration 3/20: its token budget is spent (1100 of 1000 tokens)") {
		t.Fatalf("stop over the token budget = %+v", o)
	}
	if l := e.loop(id); l.Status != baton.LoopPaused || !strings.Contains(l.PauseReason, "token budget") {
		t.Fatalf("loop over budget = %s, %q", l.Status, l.PauseReason)
	}
	if o := e.stop("s1", e.dir, ptr("working"), false); o != (stopOut{}) {
		t.Errorf("a paused loop's stop = %+v", o)
	}
	// What the session spends while the loop is paused is not the loop's.
	e.writeTranscript("t.jsonl", usage("m0", 90000, 9000, e.now.Add(-time.Hour)), usage("m1", 500, 100, e.now.Add(time.Minute)), usage("m2", 400, 100, e.now.Add(2*time.Minute)),
		usage("m3", 4000, 500, e.now.Add(3*time.Minute)))
	e.now = e.now.Add(4 * time.Minute)
	offset := e.loop(id).Usage.Offset
	r := e.ok("", "", "loop", "resume", id, "--max-tokens", "5000")
	if !strings.Contains(r.stdout, "paused -> active") {
		t.Fatalf("resume --max-tokens: %+v", r)
	}
	if u := e.loop(id).Usage; u.Offset != offset || offset == 0 || u.Droid {
		t.Errorf("resume moved the transcript cursor to %d from %d (droid %v): the next stop would read it again", u.Offset, offset, u.Droid)
	}
	if o := e.stop("s1", e.dir, ptr("working"), false); o.Decision != "block" {
		t.Errorf("stop after resume with more tokens = %+v", o)
	}
	if l := e.loop(id); l.Spent.Total() != 1100 {
		t.Errorf("spent after the pause = %d tokens, want 1100: the paused session's 4500 are not the loop's", l.Spent.Total())
	}
	// Active time: the clock stood still while paused.
	e.ok("", "", "loop", "resume", id, "--max-duration", "1h")
	e.now = e.now.Add(61 * time.Minute)
	if o := e.stop("s1", e.dir, ptr("working"), false); !strings.Contains(o.SystemMessage, "its time budget is spent (active 1h1m0s of 1h0m0s)") {
		t.Errorf("stop after an hour = %+v", o)
	}
	if r := e.ok("", "", "loop", "show", id); !strings.Contains(r.stdout, "spent:      1100 tokens of 5000, $0.01 of $1.00, active 1h1m0s of 1h0m0s") {
		t.Errorf("loop show spent line:\n%s", r.stdout)
	}
}

// Droid keeps the session's running totals beside its transcript: a loop
// counts what they grew by from its start, and, after a pause, from its
// resume: what the session spent while the loop was paused is not the
// loop's.
func TestStopBudgetsDroidTotals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	tr := filepath.Join(e.dir, ".transcripts", "d.jsonl")
	e.writeTranscript("d.jsonl", fmt.Sprintf(`{"type":"session_start","id":"s1","timestamp":%q}`, e.now.Add(-time.Hour).Format(time.RFC3339)))
	totals := func(input int) {
		t.Helper()
		e.write(filepath.Join(".transcripts", "d.settings.json"), fmt.Sprintf(`{"model":"custom:scripted-0","tokenUsage":{"inputTokens":%d,"outputTokens":0,"cacheCreationTokens":0,"cacheReadTokens":0}}`, input))
	}
	stop := func() stopOut {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": e.dir, "hook_event_name": "Stop", "stop_hook_active": false, "transcript_path": tr})
		r := e.hook("droid", "stop", string(b))
		var o stopOut
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &o) != nil {
			t.Fatalf("droid stop: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		return o
	}
	totals(1000) // the session's work before the loop
	e.vars["BATON_TRANSCRIPT_PATH"], e.vars["BATON_HARNESS"] = tr, "droid"
	id := e.startLoop("Keep going", "--max-tokens", "500")
	delete(e.vars, "BATON_TRANSCRIPT_PATH")
	delete(e.vars, "BATON_HARNESS")
	totals(1300)
	if o := stop(); o.Decision != "block" || e.loop(id).Spent.Total() != 300 {
		t.Fatalf("first stop = %+v, spent %d; want a block and 300 tokens", o, e.loop(id).Spent.Total())
	}
	totals(1700)
	// droid exec shows no hook message: the model is asked to say the
	// pause line, which names the resume that works in a new session.
	if o := stop(); o.Decision != "block" || !strings.Contains(o.Reason, "Reply with only this line") ||
		!strings.Contains(o.Reason, "token budget is spent (700 of 500 tokens)") || !strings.Contains(o.Reason, "--rebind") ||
		e.loop(id).Status != baton.LoopPaused {
		t.Fatalf("stop over the budget = %+v", o)
	}
	totals(5000) // the session works on while the loop is paused
	e.now = e.now.Add(time.Minute)
	e.ok("", "", "loop", "resume", id, "--max-tokens", "2000")
	totals(5100)
	if o := stop(); o.Decision != "block" {
		t.Errorf("stop after resume = %+v", o)
	}
	if n := e.loop(id).Spent.Total(); n != 800 {
		t.Errorf("spent after the pause = %d tokens, want 800: the 3300 spent while paused are not the loop's", n)
	}
}

// baton search finds packets and loops by their words, as text and as
// JSON, and opts the project in to its transcripts.
func TestSearchCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "Move sessions to JWT", "--next-prompt", "Rotate the refresh tokens on use")
	e.startLoop("Port the token signer")
	r := e.ok("", "", "search", "tokens")
	if !strings.Contains(r.stdout, "packet 20261122T093400Z-move-sessions-to-jwt  Move sessions to JWT") || !strings.Contains(r.stdout, "«tokens»") {
		t.Errorf("search tokens:\n%s", r.stdout)
	}
	var j struct {
		SchemaVersion int `json:"schema_version"`
		Results       []struct{ Kind, ID, Path, Snippet string }
	}
	if err := json.Unmarshal([]byte(e.ok("", "", "search", "token", "--kind", "loop", "--json").stdout), &j); err != nil || j.SchemaVersion != 1 || len(j.Results) != 1 || j.Results[0].Kind != "loop" || !strings.HasSuffix(j.Results[0].Path, ".md") {
		t.Errorf("search --kind loop --json = %+v, %v", j, err)
	}
	if r := e.ok("", "", "search", "nothingmatchesthis"); !strings.Contains(r.stdout, "nothing matches") || !strings.Contains(r.stdout, "--transcripts on") {
		t.Errorf("search without results:\n%s", r.stdout)
	}
	if r := e.ok("", "", "search", "--transcripts", "on"); !strings.Contains(r.stdout, "search transcripts on") {
		t.Errorf("search --transcripts on:\n%s", r.stdout)
	}
	if r := e.run("", "", "search", "x", "--kind", "tweet"); r.code != 2 {
		t.Errorf("search --kind tweet = exit %d", r.code)
	}
	if r := e.run("", "", "search"); r.code != 2 {
		t.Errorf("search without words = exit %d", r.code)
	}
}

// A loop started from an agent's shell binds to that agent's session
// through the variable its harness sets there, so two concurrent
// sessions each keep their own loop, and each one's stop continues its
// own. Codex and pi export no BATON_SESSION_ID (no env file): before,
// both loops were unbound and the second pushed the first aside.
func TestLoopStartBindsToHarnessSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ harness, envVar string }{
		{"codex", "CODEX_THREAD_ID"},
		{"pi", "PI_SESSION_ID"},
		{"claude", "CLAUDE_CODE_SESSION_ID"},
	} {
		t.Run(tt.harness, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.gitRepo()
			ids := map[string]string{}
			for _, s := range []string{"sess-a", "sess-b"} {
				e.vars[tt.envVar] = s
				r := e.ok("", "", "loop", "start", "--json", "--promise", "DONE", "loop of "+s)
				delete(e.vars, tt.envVar)
				var l struct {
					ID        string `json:"id"`
					SessionID string `json:"session_id"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
					t.Fatalf("loop start --json printed %q: %v", r.stdout, err)
				}
				if l.SessionID != s {
					t.Errorf("loop started in %s's shell (%s=%s) is bound to %q", tt.harness, tt.envVar, s, l.SessionID)
				}
				if strings.Contains(r.stderr, "no longer the foreground loop") {
					t.Errorf("the second session's loop pushed the first aside: %q", r.stderr)
				}
				ids[s] = l.ID
			}
			for _, s := range []string{"sess-b", "sess-a"} {
				payload, _ := json.Marshal(map[string]any{"session_id": s, "cwd": e.dir, "hook_event_name": "Stop", "last_assistant_message": "working"})
				r := e.hook(tt.harness, "stop", string(payload))
				if !strings.Contains(r.stdout, "loop of "+s) {
					t.Errorf("%s's stop did not continue its own loop: %q %q", s, r.stdout, r.stderr)
				}
				if l := e.loop(ids[s]); l.Iteration != 2 {
					t.Errorf("loop of %s at iteration %d, want 2", s, l.Iteration)
				}
			}
		})
	}
}

// A loop whose rounds repeat (the same test run, the same failure, over
// and over) pauses after --stall-rounds of them with the reason; a round
// with a new tool call is progress; resume continues for as many more.
func TestStopStallPausesTheLoop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	id := e.startLoop("Make the tests pass", "--stall-rounds", "2")
	var lines []string
	round := func(blocks ...string) stopOut {
		t.Helper()
		lines = append(lines, claudeLine(fmt.Sprintf("m%d", len(lines)), blocks...))
		e.writeTranscript("t.jsonl", lines...)
		return e.stop("s1", e.dir, ptr("Still failing."), true)
	}
	goTest := `{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}`
	edit := `{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"a.go","old_string":"x","new_string":"y"}}`
	if o := round(goTest, edit); o.Decision != "block" {
		t.Fatalf("first round = %+v, want a block", o)
	}
	if o := round(goTest); o.Decision != "block" {
		t.Fatalf("a round with no new tool call (1 of 2) = %+v, want a block", o)
	}
	if o := round(goTest, `{"type":"tool_use","id":"t3","name":"Read","input":{"file_path":"b.go"}}`); o.Decision != "block" {
		t.Fatalf("a round with a new tool call = %+v, want a block", o)
	}
	if l := e.loop(id); l.Stall.Rounds != 0 {
		t.Fatalf("after a new tool call the loop counts %d rounds without progress, want 0", l.Stall.Rounds)
	}
	round(goTest)
	o := round(goTest)
	const why = "it stalled: no progress in 2 rounds in a row (no new tool call)"
	if o.Decision != "" || !strings.Contains(o.SystemMessage, why) || !strings.Contains(o.SystemMessage, "`baton loop resume "+id+"` continues it") {
		t.Fatalf("second round without progress = %+v, want the loop paused with %q", o, why)
	}
	if l := e.loop(id); l.Status != baton.LoopPaused || !strings.Contains(l.PauseReason, why) {
		t.Fatalf("stalled loop = %s, %q", l.Status, l.PauseReason)
	}
	if r := e.ok("", "", "loop", "show", id); !strings.Contains(r.stdout, why) {
		t.Errorf("loop show does not say why the loop paused:\n%s", r.stdout)
	}
	e.ok("", "", "loop", "resume", id)
	if o := round(goTest); o.Decision != "block" {
		t.Errorf("first round after resume = %+v, want a block: resume gives the loop its rounds again", o)
	}
	if o := round(goTest); o.Decision != "" || !strings.Contains(o.SystemMessage, why) {
		t.Errorf("second round without progress after resume = %+v, want a pause", o)
	}
}
