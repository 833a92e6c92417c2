// Package agenttest provides a scripted fake coding agent that speaks the
// real output formats of claude (-p --output-format stream-json), codex
// (exec --json), droid (exec -o stream-json, or -o json) and of a plain
// command agent, for tests of agentrun and of the packages that run agents
// through it.
//
// Install builds the fake once per test process and returns a directory
// holding it as claude, codex, droid, pi and fakeagent. The fake picks its
// format from the name it was started as, checks its arguments like the
// real CLI (claude refuses stream-json without --verbose, codex exec
// needs --skip-git-repo-check outside a git repository, droid refuses
// edits without --auto), and follows a Script: one Turn per invocation,
// with files to write, commands to run, the final message, usage, exit
// status, delays and failures. Every invocation is recorded, prompt
// included, for Calls.
//
// A goal-tree runner test, for example:
//
//	fake := agenttest.New(t,
//		agenttest.Turn{ // attempt 1: not there yet
//			Files: []agenttest.File{{Path: "calc.go", Content: "package calc\n"}},
//			Final: map[string]string{"status": "retry", "summary": "stubbed calc"},
//		},
//		agenttest.Turn{ // attempt 2: done, and committed
//			Files:    []agenttest.File{{Path: "calc.go", Content: "package calc\n\nfunc Add(a, b int) int { return a + b }\n"}},
//			Commands: []agenttest.Command{{Argv: []string{"git", "commit", "-qam", "add Add"}}},
//			Final:    map[string]string{"status": "done", "summary": "Add implemented"},
//			CostUSD:  0.12, InputTokens: 1200, OutputTokens: 300,
//		},
//	)
//	fake.Setenv(t) // or pass fake.Env() in agentrun.Spec.Env
//	// ... run the code under test with agent "claude" (or codex, droid,
//	// or fake.CommandAgent()) ...
//	calls := fake.Calls(t)
//	if !strings.Contains(calls[1].Prompt, "stubbed calc") { ... }
//
// A delivery pipeline test scripts the plan (Final: "1. ...", plain text),
// the implementation (Files and git Commands, or Files left uncommitted)
// and the review (Final: map[string]string{"verdict": "not_pass",
// "summary": "...", "feedback": "..."}) as consecutive turns.
package agenttest

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/sandbox"
)

// Agent names the fake answers to. "fakeagent" is the plain command agent.
var agentNames = []string{"claude", "codex", "droid", "pi", "fakeagent"}

//go:embed *.go fakeagent/*.go
var sources embed.FS

var (
	installMu  sync.Mutex
	installDir string
	installErr error
)

// Install builds the fake agent (once per test process; the binary is
// cached in the system temp directory by a hash of its sources and the Go
// version) and returns a directory containing claude, codex, droid, pi and
// fakeagent. Prepend it to PATH, or use New, which does it for you.
func Install(t testing.TB) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	if installDir == "" && installErr == nil {
		installDir, installErr = build()
	}
	if installErr != nil {
		t.Fatalf("agenttest: build the fake agent: %v", installErr)
	}
	return installDir
}

func build() (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	err := fs.WalkDir(sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "baton-fakeagent-"+hex.EncodeToString(h.Sum(nil))[:16])
	if complete(dir) {
		return dir, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the agenttest sources")
	}
	src := filepath.Join(filepath.Dir(file), "fakeagent")
	tmp, err := os.MkdirTemp(os.TempDir(), "baton-fakeagent-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the fake agent needs the go command on PATH: %w", err)
	}
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(tmp, "fakeagent"), ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	for _, name := range agentNames[:4] {
		if err := os.Symlink("fakeagent", filepath.Join(tmp, name)); err != nil {
			return "", err
		}
	}
	// Publish atomically; another test process may have won the race.
	if err := os.Rename(tmp, dir); err != nil && !complete(dir) {
		return "", err
	}
	return dir, nil
}

func complete(dir string) bool {
	for _, name := range agentNames {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// Fake is an installed fake agent with its script.
type Fake struct {
	BinDir string // holds claude, codex, droid, pi and fakeagent
	Script string // the script file the fake follows
}

// New installs the fake and writes a script of turns in a fresh temporary
// directory.
func New(t testing.TB, turns ...Turn) *Fake {
	t.Helper()
	f := &Fake{BinDir: Install(t), Script: filepath.Join(t.TempDir(), "script.json")}
	f.SetScript(t, Script{Turns: turns})
	return f
}

// SetScript replaces the script and starts again from its first turn,
// forgetting recorded calls.
func (f *Fake) SetScript(t testing.TB, s Script) {
	t.Helper()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatalf("agenttest: marshal script: %v", err)
	}
	if err := os.WriteFile(f.Script, b, 0o644); err != nil {
		t.Fatalf("agenttest: write script: %v", err)
	}
	for _, p := range []string{StatePath(f.Script), CallsDir(f.Script)} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatalf("agenttest: reset script state: %v", err)
		}
	}
}

// Env returns the environment entries that make agentrun find the fake:
// PATH with BinDir first, and the script variable; and, for a baton
// process started with them, BATON_SANDBOX_WRITE naming the directory of
// the script, which a confined fake writes its state to. Pass them in
// agentrun.Spec.Env.
func (f *Fake) Env() []string {
	return []string{
		"PATH=" + f.BinDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		ScriptEnv + "=" + f.Script,
		"BATON_SANDBOX_WRITE=" + filepath.Dir(f.Script),
	}
}

// Sandbox is what a confined fake needs besides what baton grants any
// agent: its script's directory, where it keeps its state and records
// its calls. Add it to the Policy of an agentrun.Spec's Confine or a
// delivery.Service's Sandbox.
func (f *Fake) Sandbox() sandbox.Policy {
	return sandbox.Policy{Write: []string{filepath.Dir(f.Script)}}
}

// Setenv sets the same variables for the rest of the test, for code that
// does not let the test choose the agent's environment.
func (f *Fake) Setenv(t testing.TB) {
	t.Helper()
	for _, kv := range f.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// CommandAgent returns the agent name that runs the fake as a plain
// command agent ("command:<path>/fakeagent").
func (f *Fake) CommandAgent() string {
	path := filepath.Join(f.BinDir, "fakeagent")
	if strings.ContainsAny(path, " '\"\\\t") {
		path = "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
	}
	return "command:" + path
}

// Calls returns the recorded invocations, oldest first.
func (f *Fake) Calls(t testing.TB) []Call {
	t.Helper()
	dir := CallsDir(f.Script)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("agenttest: read calls: %v", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names) // zero-padded sequence numbers
	calls := make([]Call, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatalf("agenttest: read call: %v", err)
		}
		var c Call
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("agenttest: decode call %s: %v", n, err)
		}
		calls = append(calls, c)
	}
	return calls
}

// StatePath is the file holding the index of the next turn.
func StatePath(script string) string { return script + ".state" }

// CallsDir is the directory of recorded calls, one JSON file each.
func CallsDir(script string) string { return script + ".calls" }
