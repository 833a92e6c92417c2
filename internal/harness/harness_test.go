package harness_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/harness"
)

func TestEncode(t *testing.T) {
	block := harness.Result{Block: true, Reason: "go on", SystemMessage: "iteration 2/20"}
	for _, h := range []*harness.Harness{harness.Claude, harness.Codex, harness.Droid} {
		want := `{"decision":"block","reason":"go on","systemMessage":"iteration 2/20"}` + "\n"
		if h == harness.Claude {
			// The prompt goes once, as context; the reason points at it.
			want = `{"decision":"block","reason":"` + harness.ClaudeStopPointer + `","systemMessage":"iteration 2/20","hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"go on"}}` + "\n"
		}
		if got := string(h.Encode(harness.Stop, block)); got != want {
			t.Errorf("%s Encode(stop block) = %q", h.Name, got)
		}
		if got := h.Encode(harness.Stop, harness.Result{}); len(got) != 0 {
			t.Errorf("%s Encode(stop allow) = %q, want nothing", h.Name, got)
		}
		if got := string(h.Encode(harness.SessionStart, harness.Result{Context: "ctx"})); got != "ctx\n" {
			t.Errorf("%s Encode(session-start) = %q, want plain text", h.Name, got)
		}
		for _, e := range []harness.Event{harness.PostToolUse, harness.PreCompact} {
			if got := h.Encode(e, harness.Result{Context: "x", SystemMessage: "y"}); len(got) != 0 {
				t.Errorf("%s Encode(%s) = %q, want nothing", h.Name, e, got)
			}
		}
	}
	for _, tt := range []struct {
		e    harness.Event
		r    harness.Result
		want string
	}{
		{harness.PostToolUse, harness.Result{}, `{"schema_version":1}`},
		{harness.SessionStart, harness.Result{Context: "<ctx>"}, `{"schema_version":1,"context":"<ctx>"}`},
		{harness.Stop, block, `{"schema_version":1,"decision":"block","reason":"go on","system_message":"iteration 2/20"}`},
	} {
		if got := string(harness.Pi.Encode(tt.e, tt.r)); got != tt.want+"\n" {
			t.Errorf("pi Encode(%s, %+v) = %q, want %q", tt.e, tt.r, got, tt.want)
		}
	}
}

func TestWriteToolsAndCaps(t *testing.T) {
	tools := map[baton.Harness][]string{
		baton.HarnessClaude: {"Write", "Edit", "MultiEdit", "NotebookEdit"},
		baton.HarnessCodex:  {"apply_patch"},
		baton.HarnessDroid:  {"Create", "Edit", "ApplyPatch"},
		baton.HarnessPi:     {"write", "edit"},
	}
	for _, h := range harness.Harnesses {
		for _, name := range tools[h.Name] {
			if !h.IsWriteTool(name) {
				t.Errorf("%s IsWriteTool(%q) = false", h.Name, name)
			}
		}
		for _, name := range []string{"Bash", "Read", "Execute", "bash", ""} {
			if h.IsWriteTool(name) {
				t.Errorf("%s IsWriteTool(%q) = true", h.Name, name)
			}
		}
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := harness.Claude.StopBlockCap(env(nil)); got != 8 {
		t.Errorf("claude default cap = %d, want 8", got)
	}
	if got := harness.Claude.StopBlockCap(env(map[string]string{"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12"})); got != 12 {
		t.Errorf("claude cap with override = %d", got)
	}
	if got := harness.Claude.StopBlockCap(env(map[string]string{"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12", "BATON_STOP_HOOK_BLOCK_CAP": "3"})); got != 3 {
		t.Errorf("claude cap with both overrides = %d, want BATON_STOP_HOOK_BLOCK_CAP's 3", got)
	}
	if got := harness.Codex.StopBlockCap(env(map[string]string{"BATON_STOP_HOOK_BLOCK_CAP": "4"})); got != 4 {
		t.Errorf("codex cap with BATON_STOP_HOOK_BLOCK_CAP = %d", got)
	}
	if got := harness.Droid.StopBlockCap(env(map[string]string{"BATON_STOP_HOOK_BLOCK_CAP": "junk"})); got != 0 {
		t.Errorf("droid cap with junk = %d", got)
	}
}

func TestLookup(t *testing.T) {
	for _, h := range harness.Harnesses {
		if got, err := harness.Lookup(string(h.Name)); got != h || err != nil {
			t.Errorf("Lookup(%q) = %v, %v", h.Name, got, err)
		}
		if h.Encode == nil || h.Product == "" {
			t.Errorf("%s has no encoder or no product name", h.Name)
		}
	}
	_, err := harness.Lookup("cursor")
	if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "want claude, codex, droid or pi") {
		t.Errorf("Lookup(cursor) = %v, want Invalid naming every harness", err)
	}
	if got := harness.AgentNames(); !cmp.Equal(got, []string{"claude", "codex", "droid", "pi"}) {
		t.Errorf("AgentNames() = %q", got)
	}
}

func TestParseCommand(t *testing.T) {
	parse := func(c string) []any {
		exe, ok := harness.ParseCommand(c, nil)
		return []any{exe, ok}
	}
	for cmd, want := range map[string]bool{
		"/usr/local/bin/baton hook stop --harness claude":      true,
		"'/home/me/my tools/baton' hook stop --harness=codex":  true,
		"baton hook session-start --harness droid":             true,
		"/usr/local/bin/baton pickup":                          false,
		"/usr/local/bin/not-baton hook stop":                   false,
		"/opt/baton-v2/bin/baton-v2 hook stop --harness pi":    true,
		"/usr/local/bin/tool hook deploy --harness claude":     false,
		"npx -y ccnotify stop":                                 false,
		"":                                                     false,
		"\"/opt/baton\" hook pre-compact --harness claude":     true,
		"\"/opt/bin/baton\" hook pre-compact --harness claude": true,
		"/usr/local/bin/baton-hook stop --harness claude":      true,
		"baton-hook session-start --harness=pi":                true,
		"/usr/local/bin/baton-hook hook stop --harness claude": true,
		"/usr/local/bin/baton-hook deploy --harness claude":    false,
		"/usr/local/bin/other-hook stop --harness claude":      false,
	} {
		if _, got := harness.ParseCommand(cmd, nil); got != want {
			t.Errorf("ParseCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
	if exe, ok := harness.ParseCommand("/opt/bin/baton", []string{"hook", "stop", "--harness", "claude"}); !ok || exe != "/opt/bin/baton" {
		t.Errorf("exec-form args: ParseCommand = %q, %v", exe, ok)
	}
	for _, exe := range []string{"/usr/bin/baton", "/home/me/my tools/baton", "/opt/it's/baton", "/x,y+z/baton", "/usr/bin/baton-hook", "/home/me/my tools/baton-hook"} {
		for _, h := range harness.Harnesses {
			if c := harness.Command(exe, harness.Stop, h.Name); !slices.Equal(parse(c), []any{exe, true}) {
				t.Errorf("ParseCommand(Command(%q, stop, %s) = %q) = %v", exe, h.Name, c, parse(c))
			}
		}
	}
}

// Program picks the companion baton-hook beside baton when it is there.
func TestProgram(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "baton")
	if got := harness.Program(exe); got != exe {
		t.Errorf("Program without a companion = %q, want %q", got, exe)
	}
	companion := filepath.Join(dir, harness.HookBinary)
	if err := os.WriteFile(companion, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := harness.Program(exe); got != exe {
		t.Errorf("Program with a companion that cannot run = %q, want %q", got, exe)
	}
	if err := os.Chmod(companion, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := harness.Program(exe); got != companion {
		t.Errorf("Program = %q, want the companion %q", got, companion)
	}
	if c := harness.Command(harness.Program(exe), harness.Stop, baton.HarnessClaude); c != companion+" stop --harness claude" {
		t.Errorf("Command = %q", c)
	}
}

func TestParseEvent(t *testing.T) {
	for in, want := range map[string]harness.Event{"stop": harness.Stop, "Stop": harness.Stop, "SessionStart": harness.SessionStart, "post_tool_use": harness.PostToolUse, "pre-compact": harness.PreCompact} {
		if got, err := harness.ParseEvent(in); got != want || err != nil {
			t.Errorf("ParseEvent(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := harness.ParseEvent("notification"); err == nil {
		t.Error("ParseEvent(notification) succeeded")
	}
}

// The table is a leaf: hook, install, codexconf, agentrun and every edge
// read it, so it must link nothing of baton's but the domain package (the
// agent runner once linked the whole context store through it).
func TestHarnessIsALeaf(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "github.com/baton-agent/baton" && dep != "github.com/baton-agent/baton/internal/harness" {
			t.Errorf("internal/harness depends on %s: it may import the standard library and the domain package only", dep)
		}
	}
}

func TestUserPath(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		h    *harness.Harness
		env  map[string]string
		want string
	}{
		{harness.Claude, nil, "/home/me/.claude"},
		{harness.Claude, map[string]string{"CODEX_HOME": "/etc/codex"}, "/home/me/.claude"},
		{harness.Codex, nil, "/home/me/.codex"},
		{harness.Codex, map[string]string{"CODEX_HOME": "/etc/codex"}, "/etc/codex"},
		{harness.Droid, nil, "/home/me/.factory"},
		{harness.Pi, nil, "/home/me/.pi/agent"},
		{harness.Pi, map[string]string{"PI_CODING_AGENT_DIR": "/srv/pi"}, "/srv/pi"},
	} {
		if got := tt.h.UserPath("/home/me", env(tt.env)); got != tt.want {
			t.Errorf("%s.UserPath(/home/me, %v) = %q, want %q", tt.h.Name, tt.env, got, tt.want)
		}
	}
	if got := harness.Codex.UserPath("/home/me", nil); got != "/home/me/.codex" {
		t.Errorf("Codex.UserPath(/home/me, nil) = %q", got)
	}
}

func TestSessionVars(t *testing.T) {
	t.Parallel()
	want := []string{"BATON_SESSION_ID", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "FACTORY_PROJECT_DIR", "PI_SESSION_ID"}
	if got := harness.SessionVars(); !cmp.Equal(got, want) {
		t.Errorf("SessionVars() = %q, want %q", got, want)
	}
}

// The sessions a command's environment names, each once, with the
// harness it belongs to.
func TestEnvSessions(t *testing.T) {
	t.Parallel()
	type got struct{ ID, Harness, Var string }
	for _, tt := range []struct {
		name string
		env  map[string]string
		want []got
	}{
		{"none", nil, nil},
		{"codex alone", map[string]string{"CODEX_THREAD_ID": "t1"}, []got{{"t1", "codex", "CODEX_THREAD_ID"}}},
		{"pi alone", map[string]string{"PI_SESSION_ID": " p1 "}, []got{{"p1", "pi", "PI_SESSION_ID"}}},
		{"claude exports both", map[string]string{"BATON_SESSION_ID": "c1", "BATON_HARNESS": "claude", "CLAUDE_CODE_SESSION_ID": "c1"},
			[]got{{"c1", "claude", "BATON_SESSION_ID"}}},
		{"droid's env file", map[string]string{"BATON_SESSION_ID": "d1", "BATON_HARNESS": "droid"}, []got{{"d1", "droid", "BATON_SESSION_ID"}}},
		{"an unknown harness named", map[string]string{"BATON_SESSION_ID": "c1", "BATON_HARNESS": "emacs", "CLAUDE_CODE_SESSION_ID": "c1"},
			[]got{{"c1", "claude", "BATON_SESSION_ID"}}},
		{"codex started in claude's shell", map[string]string{"BATON_SESSION_ID": "c1", "BATON_HARNESS": "claude", "CLAUDE_CODE_SESSION_ID": "c1", "CODEX_THREAD_ID": "t1"},
			[]got{{"c1", "claude", "BATON_SESSION_ID"}, {"t1", "codex", "CODEX_THREAD_ID"}}},
		{"blank values", map[string]string{"BATON_SESSION_ID": " ", "CODEX_THREAD_ID": ""}, nil},
	} {
		var out []got
		for _, s := range harness.EnvSessions(func(k string) string { return tt.env[k] }) {
			name := ""
			if s.Harness != nil {
				name = string(s.Harness.Name)
			}
			out = append(out, got{s.ID, name, s.Var})
		}
		if !cmp.Equal(out, tt.want) {
			t.Errorf("%s: EnvSessions(%v) = %v, want %v", tt.name, tt.env, out, tt.want)
		}
	}
}

// Every harness says how its plugin is enabled and turned off, so the
// installer and doctor need no case of their own per harness.
func TestPluginFields(t *testing.T) {
	t.Parallel()
	for _, h := range harness.Harnesses {
		p := h.Plugin
		if p.Noun == "" || p.Disable == "" || p.Enabled == 0 || len(p.UserFiles) == 0 || len(p.ProjectFiles) == 0 || h.ConfigDir == "" {
			t.Errorf("%s: incomplete plugin entry %+v (config dir %q)", h.Name, p, h.ConfigDir)
		}
		if (p.Hooks == "") != (p.RootVar == "") || (p.Hooks == "") != h.Extension {
			t.Errorf("%s: plugin hooks %q with root variable %q (extension %v): a harness without an extension reads a hooks file through its root variable", h.Name, p.Hooks, p.RootVar, h.Extension)
		}
	}
}
