package agenttest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
)

// runFake starts the fake under name in dir with stdin, the way a real
// caller would, and returns stdout, stderr and the exit status.
func runFake(t *testing.T, f *agenttest.Fake, dir, name, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(f.BinDir, name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), f.Env()...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// jsonLines decodes JSONL output into maps.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func types(events []map[string]any) []string {
	var ts []string
	for _, e := range events {
		ts = append(ts, e["type"].(string))
	}
	return ts
}

func TestClaudeArgvChecks(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t, agenttest.Turn{Final: "x"})
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"stream-json needs --verbose", []string{"-p", "--output-format", "stream-json"}, "requires --verbose"},
		{"unknown option", []string{"-p", "--frobnicate"}, "unknown option '--frobnicate'"},
		{"bad permission mode", []string{"-p", "--permission-mode", "yolo"}, "argument 'yolo' is invalid"},
		{"schema not JSON", []string{"-p", "--json-schema", "{"}, "not valid JSON"},
		{"missing value", []string{"-p", "--model"}, "argument missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runFake(t, f, dir, "claude", "prompt", tt.args...)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("claude %q: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.want)
			}
		})
	}
	if calls := f.Calls(t); len(calls) != 0 {
		t.Errorf("rejected invocations consumed %d turns, want 0", len(calls))
	}
}

func TestClaudeStreamJSON(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t, agenttest.Turn{
		Files: []agenttest.File{{Path: "a.txt", Content: "hi"}},
		Say:   []string{"On it."},
		Final: map[string]any{"status": "done", "summary": "wrote a.txt"},
	})
	dir := t.TempDir()
	out, _, code := runFake(t, f, dir, "claude", "Write a.txt",
		"-p", "--output-format", "stream-json", "--verbose", "--json-schema", `{"type":"object"}`,
		"--permission-mode", "acceptEdits", "--append-system-prompt", "Be brief.")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ev := jsonLines(t, out)
	want := []string{"system", "assistant", "user", "assistant", "assistant", "result"}
	if diff := cmp.Diff(want, types(ev)); diff != "" {
		t.Errorf("event types mismatch (-want +got):\n%s", diff)
	}
	res := ev[len(ev)-1]
	if diff := cmp.Diff(map[string]any{"status": "done", "summary": "wrote a.txt"}, res["structured_output"]); diff != "" {
		t.Errorf("structured_output mismatch (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hi" {
		t.Errorf("a.txt = %q, %v", b, err)
	}
	c := f.Calls(t)[0]
	if c.Prompt != "Write a.txt" || c.SystemPrompt != "Be brief." || string(c.Schema) != `{"type":"object"}` || c.Agent != "claude" {
		t.Errorf("call = %+v", c)
	}
}

func TestClaudeDeniesUngrantedTools(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t, agenttest.Turn{
		Files:    []agenttest.File{{Path: "a.txt", Content: "hi"}},
		Commands: []agenttest.Command{{Argv: []string{"touch", "b.txt"}}},
		Final:    "tried",
	})
	dir := t.TempDir()
	out, _, code := runFake(t, f, dir, "claude", "p", "-p", "--output-format", "stream-json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ev := jsonLines(t, out)
	if denials := ev[len(ev)-1]["permission_denials"].([]any); len(denials) != 2 {
		t.Errorf("permission_denials = %v, want the Write and the Bash call", denials)
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s exists, but no permission was granted", name)
		}
	}
}

func TestClaudeJSONFormats(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t, agenttest.Turn{Final: "answer"}, agenttest.Turn{Final: "answer"}, agenttest.Turn{Final: "answer"})
	dir := t.TempDir()
	out, _, _ := runFake(t, f, dir, "claude", "p", "-p", "--output-format", "json")
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil || obj["result"] != "answer" {
		t.Errorf("json output %q: want one result object", out)
	}
	out, _, _ = runFake(t, f, dir, "claude", "p", "-p", "--output-format", "json", "--verbose")
	var arr []map[string]any
	if err := json.Unmarshal([]byte(out), &arr); err != nil || len(arr) < 2 {
		t.Errorf("json --verbose output %q: want an array of messages", out)
	}
	out, _, _ = runFake(t, f, dir, "claude", "p", "-p")
	if out != "answer\n" {
		t.Errorf("text output = %q, want the final text", out)
	}
}

func TestCodex(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t,
		agenttest.Turn{
			Files:    []agenttest.File{{Path: "a.txt", Content: "hi"}},
			Commands: []agenttest.Command{{Argv: []string{"false"}, AllowFail: true}},
			Final:    "all done", InputTokens: 10, CacheReadTokens: 5, OutputTokens: 3,
		},
		agenttest.Turn{Files: []agenttest.File{{Path: "c.txt", Content: "no"}}, Final: "refused"},
	)
	dir := t.TempDir()
	_, stderr, code := runFake(t, f, dir, "codex", "p", "exec", "--json", "-")
	if code != 1 || !strings.Contains(stderr, "--skip-git-repo-check was not specified") {
		t.Errorf("outside a git repo: exit %d, stderr %q; want the repo check", code, stderr)
	}
	if _, stderr, code := runFake(t, f, dir, "codex", "p", "exec", "--bogus"); code != 2 || !strings.Contains(stderr, "unexpected argument '--bogus'") {
		t.Errorf("unknown flag: exit %d, stderr %q", code, stderr)
	}
	if err := exec.Command("git", "init", "-q", dir).Run(); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(t.TempDir(), "last.txt")
	out, _, code := runFake(t, f, dir, "codex", "the prompt", "exec", "--json", "--sandbox", "workspace-write", "-o", last, "-")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	ev := jsonLines(t, out)
	want := []string{"thread.started", "turn.started", "item.completed", "item.started", "item.completed", "item.completed", "turn.completed"}
	if diff := cmp.Diff(want, types(ev)); diff != "" {
		t.Errorf("event types mismatch (-want +got):\n%s", diff)
	}
	usage := ev[len(ev)-1]["usage"].(map[string]any)
	if usage["input_tokens"] != 15.0 || usage["cached_input_tokens"] != 5.0 {
		t.Errorf("usage = %v, want input 15 (cached included), cached 5", usage)
	}
	if b, _ := os.ReadFile(last); string(b) != "all done" {
		t.Errorf("-o file = %q, want the final message", b)
	}
	// The default sandbox is read-only: the edit is refused.
	out, _, _ = runFake(t, f, dir, "codex", "p", "exec", "--json", "-")
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err == nil || !strings.Contains(out, `"status":"failed"`) {
		t.Errorf("read-only sandbox wrote c.txt or did not report a failed file_change: %s", out)
	}
}

func TestDroid(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t,
		agenttest.Turn{Files: []agenttest.File{{Path: "a.txt", Content: "hi"}}, Final: "x"},
		agenttest.Turn{Final: "from a file prompt"},
	)
	dir := t.TempDir()
	out, stderr, code := runFake(t, f, dir, "droid", "p", "exec", "-o", "json")
	if code != 1 || !strings.Contains(stderr, "autonomy level") || !strings.Contains(out, `"is_error": true`) {
		t.Errorf("edit without --auto: exit %d, stdout %q, stderr %q; want a fail-fast error result", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err == nil {
		t.Errorf("a.txt written without --auto")
	}
	if _, stderr, code := runFake(t, f, dir, "droid", "p", "exec", "--auto", "low", "--skip-permissions-unsafe"); code != 2 || !strings.Contains(stderr, "cannot be combined") {
		t.Errorf("--auto with --skip-permissions-unsafe: exit %d, %q", code, stderr)
	}
	prompt := filepath.Join(t.TempDir(), "prompt.md")
	if err := os.WriteFile(prompt, []byte("prompt from file"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runFake(t, f, dir, "droid", "", "exec", "-o", "json", "-f", prompt)
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res["result"] != "from a file prompt" {
		t.Errorf("droid -f: exit %d, output %q", code, out)
	}
	if c := f.Calls(t); len(c) != 2 || c[1].Prompt != "prompt from file" {
		t.Errorf("calls = %+v, want the file's prompt recorded", c)
	}
}

func TestScriptExhaustedAndRepeatLast(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t, agenttest.Turn{Final: "once"})
	dir := t.TempDir()
	if out, _, code := runFake(t, f, dir, "fakeagent", "p"); code != 0 || out != "once\n" {
		t.Fatalf("first run: exit %d, %q", code, out)
	}
	if _, stderr, code := runFake(t, f, dir, "fakeagent", "p"); code != 3 || !strings.Contains(stderr, "script exhausted") {
		t.Errorf("second run of a one-turn script: exit %d, %q; want 3 and \"script exhausted\"", code, stderr)
	}
	f.SetScript(t, agenttest.Script{Turns: []agenttest.Turn{{Final: "again"}}, RepeatLast: true})
	for i := 0; i < 3; i++ {
		if out, _, code := runFake(t, f, dir, "fakeagent", "p"); code != 0 || out != "again\n" {
			t.Errorf("RepeatLast run %d: exit %d, %q", i, code, out)
		}
	}
	if n := len(f.Calls(t)); n != 3 {
		t.Errorf("recorded %d calls after SetScript, want 3", n)
	}
}

func TestFilesStayInsideDir(t *testing.T) {
	t.Parallel()
	f := agenttest.New(t, agenttest.Turn{Files: []agenttest.File{{Path: "../escape.txt", Content: "x"}}})
	_, stderr, code := runFake(t, f, t.TempDir(), "fakeagent", "p")
	if code != 3 || !strings.Contains(stderr, "must be relative") {
		t.Errorf("exit %d, %q; want a script error for a path outside the directory", code, stderr)
	}
}

// An implement turn of a delivery: edit, commit in a real repository, and
// answer; the review turn then leaves a verdict.
func TestImplementAndReviewInGit(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@example.com"}, {"config", "user.name", "A"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	f := agenttest.New(t,
		agenttest.Turn{
			Files: []agenttest.File{{Path: "calc.go", Content: "package calc\n"}},
			Commands: []agenttest.Command{
				{Argv: []string{"git", "add", "calc.go"}},
				{Argv: []string{"git", "commit", "-qm", "Add calc"}},
			},
			Final: "Implemented and committed.",
		},
		agenttest.Turn{Final: map[string]string{"verdict": "not_pass", "summary": "no tests", "feedback": "add calc_test.go"}},
	)
	f.Setenv(t)
	if out, _, code := runFake(t, f, dir, "fakeagent", "implement"); code != 0 || out != "Implemented and committed.\n" {
		t.Fatalf("implement: exit %d, %q", code, out)
	}
	log, err := exec.Command("git", "-C", dir, "log", "--format=%s").Output()
	if err != nil || string(log) != "Add calc\n" {
		t.Errorf("git log = %q, %v; want the agent's commit", log, err)
	}
	out, _, _ := runFake(t, f, dir, "fakeagent", "review")
	var verdict map[string]string
	if err := json.Unmarshal([]byte(out), &verdict); err != nil || verdict["verdict"] != "not_pass" {
		t.Errorf("review output %q: want a not_pass verdict", out)
	}
	if os.Getenv(agenttest.ScriptEnv) != f.Script {
		t.Errorf("Setenv did not set %s", agenttest.ScriptEnv)
	}
}
