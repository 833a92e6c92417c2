package agentrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/testenv"
)

// agents lists every executor; "command" stands for the fake run as a
// command agent.
var agents = []string{"claude", "codex", "droid", "pi", "command"}

// spec returns a Spec that runs fake as agent in a fresh directory.
func spec(t *testing.T, fake *agenttest.Fake, agent string) Spec {
	t.Helper()
	if agent == "command" {
		agent = fake.CommandAgent()
	}
	return Spec{
		Agent:  agent,
		Prompt: "Implement Add in calc.go.",
		Dir:    t.TempDir(),
		Env:    fake.Env(),
		LogDir: t.TempDir(),
	}
}

func TestRunSuccess(t *testing.T) {
	t.Parallel()
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			fake := agenttest.New(t, agenttest.Turn{
				Files:    []agenttest.File{{Path: "pkg/calc.go", Content: "package calc\n"}, {Path: "pkg/calc.go", Op: "append", Content: "func Add(a, b int) int { return a + b }\n"}},
				Commands: []agenttest.Command{{Argv: []string{"touch", "ran.txt"}}},
				Say:      []string{"Looking at calc.go."},
				Final:    "Added Add to calc.go.",
				CostUSD:  0.25, InputTokens: 100, OutputTokens: 20, CacheReadTokens: 1000, NumTurns: 4,
				Model: "model-x",
			})
			var live syncBuffer
			s := spec(t, fake, agent)
			s.SystemPrompt = "You are the implementer."
			s.Live = &live
			if agent == "codex" {
				// Codex names its model only in its session file.
				s.Env = append(s.Env, "CODEX_HOME="+t.TempDir())
			}
			s.Prompt = strings.Repeat("Implement Add in calc.go. ", 8000) // 200 KB: more than a pipe buffer
			res, err := Run(t.Context(), s)
			if err != nil {
				t.Fatalf("Run error: %v", err)
			}
			if res.FinalText != "Added Add to calc.go." || res.ExitCode != 0 || res.IsError || res.Structured != nil {
				t.Errorf("Run = FinalText %q, ExitCode %d, IsError %v, Structured %q; want the final text, 0, false, nil", res.FinalText, res.ExitCode, res.IsError, res.Structured)
			}
			b, err := os.ReadFile(filepath.Join(s.Dir, "pkg/calc.go"))
			if err != nil || string(b) != "package calc\nfunc Add(a, b int) int { return a + b }\n" {
				t.Errorf("calc.go = %q, %v; want the scripted content", b, err)
			}
			if _, err := os.Stat(filepath.Join(s.Dir, "ran.txt")); err != nil {
				t.Errorf("scripted command did not run in Dir: %v", err)
			}

			// Usage, as each CLI reports it.
			type usage struct {
				Session                string
				Model                  string
				Cost                   float64
				In, Out, Cached, Turns int64
			}
			got := usage{res.SessionID, res.Model, res.CostUSD, res.InputTokens, res.OutputTokens, res.CacheReadTokens, int64(res.NumTurns)}
			want := map[string]usage{
				"claude": {"fake-session-0001", "model-x", 0.25, 1100, 20, 1000, 4},
				"codex":  {"fake-session-0001", "model-x", 0, 1100, 20, 1000, 1},
				"droid":  {"fake-session-0001", "model-x", 0, 1100, 20, 1000, 4},
				// pi counts its assistant messages: a tool call each, the
				// assistant's text and the answer.
				"pi":      {"fake-session-0001", "model-x", 0.25, 1100, 20, 1000, 5},
				"command": {"", "", 0, 0, 0, 0, 0},
			}[agent]
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("usage mismatch (-want +got):\n%s", diff)
			}

			// What the agent received.
			calls := fake.Calls(t)
			if len(calls) != 1 {
				t.Fatalf("fake got %d calls, want 1", len(calls))
			}
			c := calls[0]
			wantPrompt, wantSystem := s.Prompt, s.SystemPrompt
			if agent == "codex" || agent == "command" {
				wantPrompt, wantSystem = s.SystemPrompt+"\n\n"+s.Prompt, ""
			}
			if c.Prompt != wantPrompt || c.SystemPrompt != wantSystem {
				t.Errorf("agent got prompt of %d bytes and system prompt %q; want %d bytes and %q", len(c.Prompt), c.SystemPrompt, len(wantPrompt), wantSystem)
			}
			for _, a := range c.Args {
				if strings.Contains(a, "Implement Add") {
					t.Errorf("prompt found in argv %q", c.Args)
				}
			}
			if c.Dir != s.Dir {
				t.Errorf("agent ran in %q, want %q", c.Dir, s.Dir)
			}

			// Logs.
			prompt, err := os.ReadFile(filepath.Join(s.LogDir, PromptFile))
			if err != nil || string(prompt) != wantPrompt {
				t.Errorf("%s holds %d bytes (%v), want the %d bytes sent", PromptFile, len(prompt), err, len(wantPrompt))
			}
			out := EventsLog
			if agent == "command" {
				out = StdoutLog
			}
			if b, err := os.ReadFile(filepath.Join(s.LogDir, out)); err != nil || len(b) == 0 {
				t.Errorf("%s is empty or missing: %v", out, err)
			}
			if _, err := os.Stat(filepath.Join(s.LogDir, StderrLog)); err != nil {
				t.Errorf("%s missing: %v", StderrLog, err)
			}
			if b, err := os.ReadFile(filepath.Join(s.LogDir, ArgvFile)); err != nil || !strings.Contains(string(b), `"`+res.Argv[0]+`"`) {
				t.Errorf("%s = %s, %v; want the argv", ArgvFile, b, err)
			}
			if !strings.Contains(live.String(), "Looking at calc.go.") {
				t.Errorf("live view = %q, want the assistant's text", live.String())
			}
			if !strings.Contains(live.String(), "Added Add to calc.go.") {
				t.Errorf("live view = %q, want the final message", live.String())
			}
		})
	}
}

func TestRunSchema(t *testing.T) {
	t.Parallel()
	done := map[string]string{"status": "done", "summary": "Add implemented"}
	tests := []struct {
		name    string
		final   any
		wantErr error
	}{
		{"valid", done, nil},
		{"fails the schema", map[string]string{"status": "finished"}, ErrBadOutput},
		{"not JSON", "I finished the task.", ErrBadOutput},
	}
	for _, agent := range agents {
		for _, tt := range tests {
			t.Run(agent+"/"+tt.name, func(t *testing.T) {
				fake := agenttest.New(t, agenttest.Turn{Final: tt.final})
				s := spec(t, fake, agent)
				s.OutputSchema = []byte(testSchema)
				res, err := Run(t.Context(), s)
				if !errors.Is(err, tt.wantErr) || (err != nil && baton.ErrorCode(err) != baton.Unavailable) {
					t.Fatalf("Run error = %v, want %v (Unavailable)", err, tt.wantErr)
				}
				if tt.wantErr == nil {
					if diff := cmp.Diff(`{"status":"done","summary":"Add implemented"}`, string(res.Structured)); diff != "" {
						t.Errorf("Structured mismatch (-want +got):\n%s", diff)
					}
				}
				if res.FinalText == "" {
					t.Errorf("FinalText is empty; the agent's answer must be kept even when it is rejected")
				}
				c := fake.Calls(t)[0]
				if agent != "droid" && agent != "pi" && (c.Schema == nil || Validate(c.Schema, []byte(`{"status":"retry","summary":""}`)) != nil) {
					t.Errorf("agent got schema %s, want the output schema", c.Schema)
				}
			})
		}
	}
}

func TestRunAgentFailure(t *testing.T) {
	t.Parallel()
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			fake := agenttest.New(t, agenttest.Turn{
				IsError: true, Subtype: "error_max_turns", Errors: []string{"Reached maximum number of turns (3)"},
				Stderr: "warming up\nfatal: out of turns\n",
			})
			res, err := Run(t.Context(), spec(t, fake, agent))
			if !errors.Is(err, ErrAgentFailed) || baton.ErrorCode(err) != baton.Unavailable {
				t.Fatalf("Run error = %v, want ErrAgentFailed (Unavailable)", err)
			}
			want := 1
			if agent == "pi" {
				want = 0 // pi exits 0 when its model request failed, saying so in its output
			}
			if res.ExitCode != want {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, want)
			}
			if agent != "command" && (!res.IsError || !strings.Contains(strings.Join(res.Errors, "\n"), "Reached maximum number of turns (3)")) {
				t.Errorf("IsError = %v, Errors = %q; want the agent's error", res.IsError, res.Errors)
			}
			if !strings.Contains(err.Error(), "out of turns") {
				t.Errorf("error %q does not carry the stderr tail", err)
			}
		})
	}
}

func TestRunNonZeroExitAfterResult(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{Final: "done anyway", ExitCode: 2})
	res, err := Run(t.Context(), spec(t, fake, "claude"))
	if !errors.Is(err, ErrAgentFailed) || res.ExitCode != 2 || res.FinalText != "done anyway" {
		t.Fatalf("Run = %d, %q, %v; want exit 2, the final text and ErrAgentFailed", res.ExitCode, res.FinalText, err)
	}
}

func TestRunNoResult(t *testing.T) {
	t.Parallel()
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			turn := agenttest.Turn{Say: []string{"Half way there."}, NoResult: true}
			if agent == "codex" || agent == "command" {
				// A codex agent_message is its answer once the turn completes;
				// a command agent's stdout is. Without them, nothing remains.
				turn.Say = nil
			}
			fake := agenttest.New(t, turn)
			s := spec(t, fake, agent)
			if agent == "codex" {
				// A stale answer from an earlier run must not pass for this one.
				if err := os.WriteFile(filepath.Join(s.LogDir, LastMessageFile), []byte("old answer"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Run(t.Context(), s)
			if !errors.Is(err, ErrNoResult) || baton.ErrorCode(err) != baton.Unavailable {
				t.Fatalf("Run error = %v, want ErrNoResult (Unavailable)", err)
			}
			if agent == "claude" && res.FinalText != "Half way there." {
				t.Errorf("FinalText = %q, want the last assistant text", res.FinalText)
			}
			if strings.Contains(res.FinalText, "old answer") {
				t.Errorf("FinalText = %q came from a stale last-message file", res.FinalText)
			}
		})
	}
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			fake := agenttest.New(t, agenttest.Turn{
				Commands: []agenttest.Command{{Argv: []string{"sleep", "300"}, Background: true, PIDFile: "child.pid"}},
				Say:      []string{"Starting a long job."},
				Sleep:    5 * time.Minute,
				Final:    "never printed",
			})
			s := spec(t, fake, agent)
			s.Timeout = 500 * time.Millisecond
			start := time.Now()
			res, err := Run(t.Context(), s)
			if !errors.Is(err, ErrTimeout) || baton.ErrorCode(err) != baton.Unavailable {
				t.Fatalf("Run error = %v, want ErrTimeout (Unavailable)", err)
			}
			if d := time.Since(start); d > DefaultKillGrace {
				t.Errorf("Run took %v; SIGINT should have ended it well before the kill grace", d)
			}
			if res == nil || res.Argv == nil || res.Duration < s.Timeout {
				t.Fatalf("Result = %+v, want the partial result of a run that lasted at least the timeout", res)
			}
			if agent == "claude" {
				// claude records an error result when interrupted.
				if res.SessionID == "" || !res.IsError || res.ExitCode != 130 {
					t.Errorf("claude result: session %q, IsError %v, exit %d; want a session, true, 130", res.SessionID, res.IsError, res.ExitCode)
				}
			}
			waitGone(t, readPID(t, filepath.Join(s.Dir, "child.pid")))
		})
	}
}

func TestRunTimeoutKillsStubbornAgent(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{
		Commands:        []agenttest.Command{{Argv: []string{"sleep", "300"}, Background: true, PIDFile: "child.pid"}},
		Sleep:           5 * time.Minute,
		IgnoreInterrupt: true,
	})
	s := spec(t, fake, "claude")
	s.Timeout = 300 * time.Millisecond
	s.KillGrace = 300 * time.Millisecond
	res, err := Run(t.Context(), s)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Run error = %v, want ErrTimeout", err)
	}
	if res.ExitCode != -1 || res.SessionID != "fake-session-0001" {
		t.Errorf("ExitCode = %d, SessionID = %q; want -1 (killed) and the session from the partial stream", res.ExitCode, res.SessionID)
	}
	if res.Duration > 10*time.Second {
		t.Errorf("Duration = %v, want about timeout + grace", res.Duration)
	}
	waitGone(t, readPID(t, filepath.Join(s.Dir, "child.pid")))
}

// cancelOnWrite cancels a context when the live view first says want: the
// agent is then running, with no sleep in the test.
type cancelOnWrite struct {
	mu     sync.Mutex
	want   string
	seen   strings.Builder
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen.Write(p)
	if strings.Contains(c.seen.String(), c.want) {
		c.cancel()
	}
	return len(p), nil
}

func TestRunCanceled(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"claude", "codex", "command"} {
		t.Run(agent, func(t *testing.T) {
			fake := agenttest.New(t, agenttest.Turn{Say: []string{"Working on it."}, Sleep: 5 * time.Minute})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := spec(t, fake, agent)
			s.Live = &cancelOnWrite{want: "Working on it.", cancel: cancel}
			res, err := Run(ctx, s)
			if !errors.Is(err, context.Canceled) || baton.ErrorCode(err) != baton.Canceled {
				t.Fatalf("Run error = %v, want context.Canceled (Canceled)", err)
			}
			if res.ExitCode != 130 {
				t.Errorf("ExitCode = %d, want 130 (the agent ended on SIGINT)", res.ExitCode)
			}
		})
	}
}

func TestRunContextDeadline(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{Sleep: 5 * time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, spec(t, fake, "codex"))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run error = %v, want ErrTimeout wrapping context.DeadlineExceeded", err)
	}
}

func TestRunCanceledBeforeStart(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{Final: "x"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := Run(ctx, spec(t, fake, "claude"))
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run = %v, %v; want a Result and context.Canceled", res, err)
	}
	if calls := fake.Calls(t); len(calls) != 0 {
		t.Errorf("agent was started %d times, want 0", len(calls))
	}
}

func TestRunHugeLines(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			turn := agenttest.Turn{
				Say:    []string{"a" + big},
				Events: []string{`{"type":"mystery","blob":"` + big + big + `"}`},
				Final:  "final " + big,
			}
			if agent == "command" || agent == "droid" {
				turn.Events = nil // not an event stream
			}
			fake := agenttest.New(t, turn)
			res, err := Run(t.Context(), spec(t, fake, agent))
			if err != nil {
				t.Fatalf("Run error: %v", err)
			}
			want := "final " + big
			if res.FinalText != want {
				t.Errorf("FinalText has %d bytes, want %d", len(res.FinalText), len(want))
			}
			if (agent == "claude" || agent == "codex") && res.UnknownEvents != 1 {
				t.Errorf("UnknownEvents = %d, want 1 (the 2 MiB mystery event)", res.UnknownEvents)
			}
		})
	}
}

func TestRunUnknownEvents(t *testing.T) {
	t.Parallel()
	events := []string{"plain text noise", `{"type":"brand_new_event","x":1}`, `{"type":"assistant"`, `[1,2,3]`}
	for _, agent := range []string{"claude", "codex"} {
		t.Run(agent, func(t *testing.T) {
			fake := agenttest.New(t, agenttest.Turn{Events: events, Final: "ok"})
			res, err := Run(t.Context(), spec(t, fake, agent))
			if err != nil || res.FinalText != "ok" {
				t.Fatalf("Run = %q, %v; want ok, nil", res.FinalText, err)
			}
			if res.UnknownEvents != len(events) {
				t.Errorf("UnknownEvents = %d, want %d", res.UnknownEvents, len(events))
			}
		})
	}
}

func TestRunLogCap(t *testing.T) {
	t.Parallel()
	line := `{"type":"filler","data":"` + strings.Repeat("x", 1000) + `"}`
	fake := agenttest.New(t, agenttest.Turn{
		Events: []string{line, line, line, line, line, line, line, line},
		Stderr: strings.Repeat("e", 5000),
		Final:  "survives the cap",
	})
	s := spec(t, fake, "claude")
	s.MaxLogBytes = 4096
	res, err := Run(t.Context(), s)
	if err != nil || res.FinalText != "survives the cap" {
		t.Fatalf("Run = %q, %v; parsing must not depend on the log cap", res.FinalText, err)
	}
	for _, name := range []string{EventsLog, StderrLog} {
		b, err := os.ReadFile(filepath.Join(s.LogDir, name))
		if err != nil {
			t.Fatal(err)
		}
		note := "[baton: log truncated at 4096 bytes;"
		if name == EventsLog {
			note = `{"type":"baton_log_truncated","limit_bytes":4096,`
		}
		if len(b) > 4096+200 || !strings.Contains(string(b), note) {
			t.Errorf("%s: %d bytes, note present %v; want at most the cap plus a note", name, len(b), strings.Contains(string(b), note))
		}
	}
}

func TestRunNotInstalled(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	for _, agent := range []string{"claude", "codex", "droid"} {
		t.Run(agent, func(t *testing.T) {
			res, err := Run(t.Context(), Spec{Agent: agent, Prompt: "p", Env: []string{"PATH=" + empty}})
			if !errors.Is(err, ErrNotInstalled) || baton.ErrorCode(err) != baton.NotFound {
				t.Fatalf("Run error = %v, want ErrNotInstalled (NotFound)", err)
			}
			msg := baton.ErrorMessage(err)
			if !strings.Contains(msg, agent+" is not installed") || !strings.Contains(msg, "--agent command:<argv>") {
				t.Errorf("message %q should name %s and suggest another --agent", msg, agent)
			}
			for _, other := range []string{"claude", "codex", "droid"} {
				if other != agent && !strings.Contains(msg, "--agent "+other) {
					t.Errorf("message %q does not suggest --agent %s", msg, other)
				}
			}
			if res == nil || res.ExitCode != -1 {
				t.Errorf("Result = %+v, want a non-nil result with ExitCode -1", res)
			}
		})
	}
	t.Run("command", func(t *testing.T) {
		_, err := Run(t.Context(), Spec{Agent: "command:./missing.sh --fast", Prompt: "p", Dir: empty})
		if !errors.Is(err, ErrNotInstalled) || !strings.Contains(baton.ErrorMessage(err), "./missing.sh") {
			t.Fatalf("Run error = %v, want ErrNotInstalled naming ./missing.sh", err)
		}
	})
}

func TestRunInvalidSpec(t *testing.T) {
	t.Parallel()
	res, err := Run(t.Context(), Spec{Agent: "gpt", Prompt: "p"})
	if !errors.Is(err, ErrInvalidSpec) || baton.ErrorCode(err) != baton.Invalid || res == nil {
		t.Fatalf("Run = %v, %v; want a Result and ErrInvalidSpec (Invalid)", res, err)
	}
}

// A child that keeps the agent's stdout open must not keep Run waiting once
// the agent has exited, nor outlive the run.
func TestRunBackgroundChildHoldingStdout(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{
		Commands: []agenttest.Command{{Argv: []string{"sleep", "300"}, Background: true, InheritOutput: true, PIDFile: "child.pid"}},
		Final:    map[string]string{"status": "done"},
	})
	s := spec(t, fake, "command")
	start := time.Now()
	res, err := Run(t.Context(), s)
	if err != nil || string(res.Structured) != `{"status":"done"}` {
		t.Fatalf("Run = %q, %v; want the final object", res.Structured, err)
	}
	if d := time.Since(start); d > DefaultKillGrace {
		t.Errorf("Run took %v with a child holding stdout, want well under %v", d, DefaultKillGrace)
	}
	waitGone(t, readPID(t, filepath.Join(s.Dir, "child.pid")))
}

// A command agent's Model and schema reach it through the environment.
func TestRunCommandAgentEnv(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{Final: map[string]string{"status": "done", "summary": "s"}})
	s := spec(t, fake, "command")
	s.Model = "local-7b"
	s.OutputSchema = []byte(testSchema)
	s.LogDir = "" // the schema file then lives in a temporary directory
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	c := fake.Calls(t)[0]
	if c.Model != "local-7b" || c.Schema == nil || res.Model != "local-7b" {
		t.Errorf("agent saw model %q and schema %s; result model %q; want local-7b, the schema, local-7b", c.Model, c.Schema, res.Model)
	}
}

// Consecutive runs take consecutive turns, as a runner's attempts do.
func TestRunAttempts(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t,
		agenttest.Turn{Final: map[string]string{"status": "retry", "summary": "tests fail"}},
		agenttest.Turn{Final: map[string]string{"status": "done", "summary": "tests pass"}},
	)
	s := spec(t, fake, "codex")
	s.OutputSchema = []byte(testSchema)
	var got []string
	for i := 0; i < 2; i++ {
		s.Prompt = "attempt " + strconv.Itoa(i+1)
		res, err := Run(t.Context(), s)
		if err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
		got = append(got, string(res.Structured))
	}
	want := []string{`{"status":"retry","summary":"tests fail"}`, `{"status":"done","summary":"tests pass"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
	if c := fake.Calls(t); len(c) != 2 || c[1].Prompt != "attempt 2" {
		t.Errorf("calls = %+v, want two, the second with prompt \"attempt 2\"", c)
	}
	if _, err := Run(t.Context(), s); !errors.Is(err, ErrAgentFailed) {
		t.Errorf("third run of a two-turn script: %v, want ErrAgentFailed (script exhausted)", err)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone fails unless pid exits within 30 s. Death after SIGKILL is
// asynchronous and the process is not ours to wait for, so this polls
// /proc with a deadline; a zombie counts as gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	var b []byte
	if !testenv.Until(30*time.Second, nil, func() bool {
		var err error
		if b, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		i := strings.LastIndexByte(string(b), ')')
		return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
	}) {
		t.Fatalf("process %d still running after the run ended: %s", pid, b)
	}
}

// syncBuffer is a bytes.Buffer safe for the live view's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A command agent given by a relative path runs from Spec.Dir.
func TestRunRelativeCommand(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{Final: "relative ok"})
	s := spec(t, fake, "command")
	if err := os.Symlink(filepath.Join(fake.BinDir, "fakeagent"), filepath.Join(s.Dir, "my-agent")); err != nil {
		t.Fatal(err)
	}
	s.Agent = "command:./my-agent --fast"
	res, err := Run(t.Context(), s)
	if err != nil || res.FinalText != "relative ok" {
		t.Fatalf("Run = %q, %v; want the agent in Dir to answer", res.FinalText, err)
	}
	if c := fake.Calls(t); len(c) != 1 || c[0].Agent != "command" || !cmp.Equal(c[0].Args, []string{"--fast"}) {
		t.Errorf("calls = %+v, want one command call with --fast", c)
	}
}

// baton does not bypass Codex's trust, but a project whose baton hooks
// Codex will skip is said so, in the live view and the result, even when
// its hooks file is read-only (the installer's reader refused such a file,
// and the note went missing).
func TestCodexHooksNeverSilentlyOff(t *testing.T) {
	t.Parallel()
	fake := agenttest.New(t, agenttest.Turn{Final: "ok"}, agenttest.Turn{Final: "ok"})
	s := spec(t, fake, "codex")
	codexHome := t.TempDir()
	s.Env = append(s.Env, "CODEX_HOME="+codexHome, "HOME="+t.TempDir())
	if err := os.MkdirAll(filepath.Join(s.Dir, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/usr/local/bin/baton hook stop --harness codex"}]}]}}`
	if err := os.WriteFile(filepath.Join(s.Dir, ".codex", "hooks.json"), []byte(hooks), 0o444); err != nil {
		t.Fatal(err)
	}
	var live syncBuffer
	s.Live = &live
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "is not a trusted project") || !strings.Contains(live.String(), "will not run this project's hooks") {
		t.Errorf("notes = %q, live = %q", res.Notes, live.String())
	}
	cfg := "[projects.\"" + s.Dir + "\"]\ntrust_level = \"trusted\"\n[hooks.state.\"" + filepath.Join(s.Dir, ".codex", "hooks.json") + ":Stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n"
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := Run(t.Context(), s); err != nil || len(res.Notes) != 0 {
		t.Errorf("a trusted project's run: notes %q, %v", res.Notes, err)
	}
}

// A command agent that names a session in a JSON line is resumed with
// it: the message alone on stdin, the session in BATON_AGENT_RESUME.
func TestRunCommandAgentSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	body := "#!/bin/sh\ncat > \"$0.stdin\"\nprintf '{\"session_id\":\"s-42\",\"resumed\":\"%s\"}\\n' \"$BATON_AGENT_RESUME\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Agent: "command:" + script, Prompt: "Implement Add.", SystemPrompt: "You implement.", Dir: dir}
	first, err := Run(t.Context(), s)
	if err != nil || first.SessionID != "s-42" || !strings.Contains(first.FinalText, `"resumed":""`) {
		t.Fatalf("first run = %+v, %v; want session s-42, not resumed", first, err)
	}
	s.Prompt, s.Resume = "A person says: use tabs.", first.SessionID
	second, err := Run(t.Context(), s)
	if err != nil || !strings.Contains(second.FinalText, `"resumed":"s-42"`) {
		t.Fatalf("resumed run = %+v, %v; want BATON_AGENT_RESUME=s-42", second, err)
	}
	if b, err := os.ReadFile(script + ".stdin"); err != nil || string(b) != "A person says: use tabs." {
		t.Errorf("the resumed run's stdin = %q, %v; want the message alone", b, err)
	}
}
