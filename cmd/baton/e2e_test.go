package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/baton-agent/baton/internal/fsstore"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/testenv"
)

var batonBin string

// TestMain builds the real binary once: these tests run hooks the way a
// harness does, as separate processes through /bin/sh.
func TestMain(m *testing.M) {
	sandbox.Main(egress.Hooks()) // the box's init, when a test starts a confined process
	dir, err := builtBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	batonBin = filepath.Join(dir, "baton")
	waitersPerCore()
	os.Exit(gittest.Main(m)) // git's identity and configuration, fixed for every test
}

// waitersPerCore lets four tests per core run at once unless -parallel
// says otherwise: the quick tests here spend most of their time waiting on
// the processes they start (servers, agents, git, a job rescue), so one
// per core, go test's default, leaves the cores idle. Not with the heavy
// tests on: the real harnesses they drive keep a core busy each.
func waitersPerCore() {
	flag.Parse()
	set := testenv.All()
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0))); err != nil {
			panic(err)
		}
	}
}

type proc struct {
	t    *testing.T
	dir  string
	home string
}

func (p proc) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CLAUDE_") || strings.HasPrefix(k, "BATON_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return withBatonOnPath(append(env, append([]string{"HOME=" + p.home}, extra...)...))
}

// sh runs a shell command line in the project with stdin.
func (p proc) sh(cmdline, stdin string, extra ...string) (string, string) {
	p.t.Helper()
	c := exec.Command("/bin/sh", "-c", cmdline)
	c.Dir = p.dir
	c.Env = p.env(extra...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		p.t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", cmdline, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// A Claude Code session, end to end with the real binary: install, the
// installed session-start command exports the session id, the agent's
// shell starts a loop bound to it, the installed stop command blocks until
// the promise, doctor's probes pass, uninstall cleans up.
func TestClaudeSessionEndToEnd(t *testing.T) {
	t.Parallel()
	p := proc{t: t, dir: t.TempDir(), home: t.TempDir()}
	p.sh("git init -q", "")
	p.sh(batonBin+" install claude", "")
	settings, err := os.ReadFile(filepath.Join(p.dir, ".claude/settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(settings, &cfg); err != nil {
		t.Fatal(err)
	}
	cmd := func(event string) string { return cfg.Hooks[event][0].Hooks[0].Command }

	envFile := filepath.Join(p.dir, "claude-env.sh")
	sub := filepath.Join(p.dir, "pkg")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ := p.sh(cmd("SessionStart"), `{"session_id":"e2e-1","cwd":"`+sub+`","source":"startup"}`, "CLAUDE_ENV_FILE="+envFile, "CLAUDE_PROJECT_DIR="+p.dir)
	if !strings.HasPrefix(out, "baton: the working context of this project is in "+p.dir) {
		t.Fatalf("session-start printed %q", out)
	}
	// The agent's Bash tool sources the env file before each command.
	out, _ = p.sh(". "+envFile+" && "+batonBin+" loop start --max-iterations=5 --promise DONE --prompt-file -", "Fix it.\n---\nagain\n")
	if !strings.Contains(out, "bound to session e2e-1") {
		t.Fatalf("loop start = %q", out)
	}
	stop := func(session, msg string) string {
		out, errOut := p.sh(cmd("Stop"), `{"session_id":"`+session+`","cwd":"`+sub+`","stop_hook_active":false,"last_assistant_message":`+msg+`}`)
		if errOut != "" {
			t.Errorf("stop stderr: %s", errOut)
		}
		return out
	}
	if got := stop("e2e-1", `"working"`); !strings.HasPrefix(got, `{"decision":"block","reason":"Not done: baton's loop continues`) ||
		!strings.Contains(got, `"hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"Fix it.\n---\nagain"}`) {
		t.Fatalf("stop = %q", got)
	}
	if got := stop("other", `"<promise>DONE</promise>"`); got != "" {
		t.Fatalf("another session's stop = %q", got)
	}
	if got := stop("e2e-1", `"<promise>DONE</promise>"`); !strings.Contains(got, `done (DONE) at iteration 2/5`) {
		t.Fatalf("stop with the promise = %q", got)
	}
	p.sh(cmd("PostToolUse"), `{"session_id":"e2e-1","cwd":"`+sub+`","tool_name":"Write","tool_input":{"file_path":"`+sub+`/a.go"}}`)
	if b, _ := os.ReadFile(filepath.Join(fsstore.Open(p.dir, fsstore.Options{}).IndexDir(), "relevant-files.jsonl")); !strings.Contains(string(b), `"file_path":"pkg/a.go"`) {
		t.Errorf("relevant files = %s", b)
	}

	out, _ = p.sh(batonBin+" doctor --json", "")
	var rep struct {
		Probes []struct {
			Harness, Event, Problem string
			OK                      bool
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Probes) != 5 || rep.Probes[0].Event != "mcp" {
		t.Fatalf("doctor probed %d things, want the MCP server and 4 hooks: %s", len(rep.Probes), out)
	}
	for _, pr := range rep.Probes {
		if !pr.OK {
			t.Errorf("doctor probe %s %s failed: %s", pr.Harness, pr.Event, pr.Problem)
		}
	}
	p.sh(batonBin+" uninstall claude", "")
	for _, f := range []string{".claude/settings.local.json", ".mcp.json"} {
		if _, err := os.Stat(filepath.Join(p.dir, f)); !os.IsNotExist(err) {
			t.Errorf("uninstall left %s", f)
		}
	}
}

// A hook that cannot work still exits 0 with nothing on stdout.
func TestHookFailsOpenAsAProcess(t *testing.T) {
	t.Parallel()
	p := proc{t: t, dir: t.TempDir(), home: t.TempDir()}
	out, errOut := p.sh(batonBin+" hook stop --harness claude", "not json")
	if out != "" || !strings.Contains(errOut, "not a JSON object") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	out, errOut = p.sh(batonBin+" hook stop --harnes claude", "{}")
	if out != "" || !strings.Contains(errOut, "unknown flag --harnes") {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
}

var stamp = regexp.MustCompile(`\d{8}T\d{6}Z`)

// baton-hook answers every event as `baton hook` does, byte for byte, on
// the same store; and fails open the same way.
func TestHookBinaryAnswersAsBatonHook(t *testing.T) {
	t.Parallel()
	hookBin := filepath.Join(filepath.Dir(batonBin), "baton-hook")
	run := func(argv []string, dir, stdin string) (string, string) {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = dir
		c.Env = append(os.Environ(), "BATON_SESSION_ID=s1")
		c.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("%v: %v (a hook exits 0)\n%s", argv, err, errb.String())
		}
		return out.String(), errb.String()
	}
	// Two identical projects, one per binary, so each answers from the
	// same state.
	var dirs [2]string
	for i := range dirs {
		p := proc{t: t, dir: t.TempDir(), home: t.TempDir()}
		p.sh("git init -q && "+batonBin+" init >/dev/null && "+batonBin+" loop start --max-iterations 5 --promise DONE 'Fix the tests.' >/dev/null", "", "BATON_SESSION_ID=s1")
		dirs[i] = p.dir
	}
	for _, c := range []struct{ event, harness, payload string }{
		{"session-start", "claude", `{"session_id":"s1","cwd":"%s","source":"startup"}`},
		{"post-tool-use", "codex", `{"session_id":"s1","cwd":"%s","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Add File: a.go\n+package a\n*** End Patch"}}`},
		{"stop", "claude", `{"session_id":"s1","cwd":"%s","last_assistant_message":"still working"}`},
		{"stop", "droid", `{"session_id":"s1","cwd":"%s","last_assistant_message":"<promise>DONE</promise>"}`},
	} {
		viaBaton, _ := run([]string{batonBin, "hook", c.event, "--harness", c.harness}, dirs[0], fmt.Sprintf(c.payload, dirs[0]))
		viaHook, _ := run([]string{hookBin, c.event, "--harness", c.harness}, dirs[1], fmt.Sprintf(c.payload, dirs[1]))
		// The two stores differ only in their paths and when their loops
		// were started.
		norm := func(s, dir string) string {
			return stamp.ReplaceAllString(strings.ReplaceAll(s, dir, "$DIR"), "$$STAMP")
		}
		if norm(viaBaton, dirs[0]) != norm(viaHook, dirs[1]) {
			t.Errorf("%s --harness %s:\nbaton hook: %s\nbaton-hook: %s", c.event, c.harness, viaBaton, viaHook)
		}
	}
	out, errOut := run([]string{hookBin, "stop", "--harnes", "claude"}, dirs[1], "{}")
	if out != "" || !strings.HasPrefix(errOut, "baton-hook: unknown flag --harnes") {
		t.Errorf("a bad flag: stdout %q, stderr %q", out, errOut)
	}
}
