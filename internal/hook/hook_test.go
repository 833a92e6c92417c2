package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/hook"
)

func TestDecodeTolerant(t *testing.T) {
	msg := "hi"
	want := &hook.Payload{SessionID: "s", CWD: "/p", TranscriptPath: "/t.jsonl", EventName: "Stop", LastAssistantMessage: &msg, StopHookActive: true}
	inputs := map[string]string{
		"snake_case":         `{"session_id":"s","cwd":"/p","transcript_path":"/t.jsonl","hook_event_name":"Stop","last_assistant_message":"hi","stop_hook_active":true,"new":{"x":1}}`,
		"camelCase (Droid)":  `{"sessionId":"s","cwd":"/p","transcriptPath":"/t.jsonl","hookEventName":"Stop","lastAssistantMessage":"hi","stopHookActive":true}`,
		"BOM and whitespace": "\ufeff \n" + `{"session_id":"s","cwd":"/p","transcript_path":"/t.jsonl","hook_event_name":"Stop","last_assistant_message":"hi","stop_hook_active":"true"}`,
	}
	for name, in := range inputs {
		got, err := hook.Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%s) error: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Decode(%s) mismatch (-want +got):\n%s", name, diff)
		}
	}
	// Wrong types read as absent; null last_assistant_message is absent.
	got, err := hook.Decode([]byte(`{"session_id":7,"cwd":["x"],"last_assistant_message":null,"stop_hook_active":"yes"}`))
	if err != nil || got.SessionID != "" || got.CWD != "" || got.LastAssistantMessage != nil || got.StopHookActive {
		t.Errorf("Decode(wrong types) = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "null", "[]", `"s"`, "{", "not json"} {
		if _, err := hook.Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
}

func TestEncode(t *testing.T) {
	block := hook.Result{Block: true, Reason: "go on", SystemMessage: "iteration 2/20"}
	for _, h := range []*hook.Harness{hook.Claude, hook.Codex, hook.Droid} {
		want := `{"decision":"block","reason":"go on","systemMessage":"iteration 2/20"}` + "\n"
		if h == hook.Claude {
			// The prompt goes once, as context; the reason points at it.
			want = `{"decision":"block","reason":"` + hook.ClaudeStopPointer + `","systemMessage":"iteration 2/20","hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"go on"}}` + "\n"
		}
		if got := string(h.Encode(hook.Stop, block)); got != want {
			t.Errorf("%s Encode(stop block) = %q", h.Name, got)
		}
		if got := h.Encode(hook.Stop, hook.Result{}); len(got) != 0 {
			t.Errorf("%s Encode(stop allow) = %q, want nothing", h.Name, got)
		}
		if got := string(h.Encode(hook.SessionStart, hook.Result{Context: "ctx"})); got != "ctx\n" {
			t.Errorf("%s Encode(session-start) = %q, want plain text", h.Name, got)
		}
		for _, e := range []hook.Event{hook.PostToolUse, hook.PreCompact} {
			if got := h.Encode(e, hook.Result{Context: "x", SystemMessage: "y"}); len(got) != 0 {
				t.Errorf("%s Encode(%s) = %q, want nothing", h.Name, e, got)
			}
		}
	}
	for _, tt := range []struct {
		e    hook.Event
		r    hook.Result
		want string
	}{
		{hook.PostToolUse, hook.Result{}, `{"schema_version":1}`},
		{hook.SessionStart, hook.Result{Context: "<ctx>"}, `{"schema_version":1,"context":"<ctx>"}`},
		{hook.Stop, block, `{"schema_version":1,"decision":"block","reason":"go on","system_message":"iteration 2/20"}`},
	} {
		if got := string(hook.Pi.Encode(tt.e, tt.r)); got != tt.want+"\n" {
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
	for _, h := range hook.Harnesses {
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
	if got := hook.Claude.StopBlockCap(env(nil)); got != 8 {
		t.Errorf("claude default cap = %d, want 8", got)
	}
	if got := hook.Claude.StopBlockCap(env(map[string]string{"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12"})); got != 12 {
		t.Errorf("claude cap with override = %d", got)
	}
	if got := hook.Claude.StopBlockCap(env(map[string]string{"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "12", "BATON_STOP_HOOK_BLOCK_CAP": "3"})); got != 3 {
		t.Errorf("claude cap with both overrides = %d, want BATON_STOP_HOOK_BLOCK_CAP's 3", got)
	}
	if got := hook.Codex.StopBlockCap(env(map[string]string{"BATON_STOP_HOOK_BLOCK_CAP": "4"})); got != 4 {
		t.Errorf("codex cap with BATON_STOP_HOOK_BLOCK_CAP = %d", got)
	}
	if got := hook.Droid.StopBlockCap(env(map[string]string{"BATON_STOP_HOOK_BLOCK_CAP": "junk"})); got != 0 {
		t.Errorf("droid cap with junk = %d", got)
	}
}

func TestLookup(t *testing.T) {
	for _, h := range hook.Harnesses {
		if got, err := hook.Lookup(string(h.Name)); got != h || err != nil {
			t.Errorf("Lookup(%q) = %v, %v", h.Name, got, err)
		}
		if h.Encode == nil || h.Product == "" {
			t.Errorf("%s has no encoder or no product name", h.Name)
		}
	}
	_, err := hook.Lookup("cursor")
	if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "want claude, codex, droid or pi") {
		t.Errorf("Lookup(cursor) = %v, want Invalid naming every harness", err)
	}
	if got := hook.AgentNames(); !cmp.Equal(got, []string{"claude", "codex", "droid"}) {
		t.Errorf("AgentNames() = %q", got)
	}
}

func TestParseCommand(t *testing.T) {
	parse := func(c string) []any {
		exe, ok := hook.ParseCommand(c, nil)
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
		if _, got := hook.ParseCommand(cmd, nil); got != want {
			t.Errorf("ParseCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
	if exe, ok := hook.ParseCommand("/opt/bin/baton", []string{"hook", "stop", "--harness", "claude"}); !ok || exe != "/opt/bin/baton" {
		t.Errorf("exec-form args: ParseCommand = %q, %v", exe, ok)
	}
	for _, exe := range []string{"/usr/bin/baton", "/home/me/my tools/baton", "/opt/it's/baton", "/x,y+z/baton", "/usr/bin/baton-hook", "/home/me/my tools/baton-hook"} {
		for _, h := range hook.Harnesses {
			if c := hook.Command(exe, hook.Stop, h.Name); !slices.Equal(parse(c), []any{exe, true}) {
				t.Errorf("ParseCommand(Command(%q, stop, %s) = %q) = %v", exe, h.Name, c, parse(c))
			}
		}
	}
}

// Program picks the companion baton-hook beside baton when it is there.
func TestProgram(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "baton")
	if got := hook.Program(exe); got != exe {
		t.Errorf("Program without a companion = %q, want %q", got, exe)
	}
	companion := filepath.Join(dir, hook.HookBinary)
	if err := os.WriteFile(companion, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := hook.Program(exe); got != exe {
		t.Errorf("Program with a companion that cannot run = %q, want %q", got, exe)
	}
	if err := os.Chmod(companion, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := hook.Program(exe); got != companion {
		t.Errorf("Program = %q, want the companion %q", got, companion)
	}
	if c := hook.Command(hook.Program(exe), hook.Stop, baton.HarnessClaude); c != companion+" stop --harness claude" {
		t.Errorf("Command = %q", c)
	}
}

func TestChangedFiles(t *testing.T) {
	tests := []struct {
		name            string
		input, response string
		want            []string
	}{
		{"claude write", `{"file_path":"/r/a.go","content":"x"}`, `{"filePath":"/r/a.go","success":true}`, []string{"/r/a.go"}},
		{"notebook", `{"notebook_path":"/r/n.ipynb","new_source":"x"}`, ``, []string{"/r/n.ipynb"}},
		{"pi", `{"path":"src/x.ts","content":"x"}`, ``, []string{"src/x.ts"}},
		{"codex apply_patch", `{"command":"*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n@@\n-x\n+y\n*** Add File: c.go\n+z\n*** Delete File: d.go\n*** End Patch"}`, `"Success"`, []string{"a.go", "b.go", "c.go", "d.go"}},
		{"droid apply_patch in input", `{"input":"*** Begin Patch\r\n*** Add File: e.go\r\n+x\r\n*** End Patch"}`, ``, []string{"e.go"}},
		{"a bare patch string", `"*** Begin Patch\n*** Update File: f.go\n*** End Patch"`, ``, []string{"f.go"}},
		{"nothing", `{"command":"ls"}`, `{}`, nil},
	}
	for _, tt := range tests {
		got := hook.ChangedFiles(json.RawMessage(tt.input), json.RawMessage(tt.response))
		if !cmp.Equal(got, tt.want) {
			t.Errorf("%s: ChangedFiles() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolveRoot(t *testing.T) {
	base := t.TempDir()
	marked := filepath.Join(base, "marked")
	repo := filepath.Join(base, "repo")
	plain := filepath.Join(base, "plain")
	mkdirs(t, base, "marked/.agent/context", "marked/sub/deep", "repo/.git", "repo/pkg", "plain/x")
	if err := os.WriteFile(filepath.Join(marked, ".agent/context/root.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A store above a repository (a session once started in $HOME).
	home := filepath.Join(base, "home")
	homeRepo := filepath.Join(home, "src", "app")
	mkdirs(t, base, "home/.agent/context", "home/src/app/.git", "home/src/app/cmd", "home/notes")
	if err := os.WriteFile(filepath.Join(home, ".agent/context/root.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                     string
		cwd, projectDir, workDir string
		want                     string
		how                      fsstore.Found
	}{
		{"marker above cwd", filepath.Join(marked, "sub/deep"), "", "/", marked, fsstore.FoundMarker},
		{"cwd wandered off; the project dir has the marker", filepath.Join(plain, "x"), marked, "/", marked, fsstore.FoundMarker},
		{"marker beats a git root", filepath.Join(repo, "pkg"), marked, "/", marked, fsstore.FoundMarker},
		{"git root above cwd", filepath.Join(repo, "pkg"), "", "/", repo, fsstore.FoundGitRoot},
		{"a store above the git root does not capture it", filepath.Join(homeRepo, "cmd"), "", "/", homeRepo, fsstore.FoundGitRoot},
		{"outside any repository the store above still serves", filepath.Join(home, "notes"), "", "/", home, fsstore.FoundMarker},
		{"nothing: the project dir", filepath.Join(plain, "x"), plain, "/", plain, fsstore.FoundWorkDir},
		{"nothing at all: cwd", filepath.Join(plain, "x"), "", "/", filepath.Join(plain, "x"), fsstore.FoundWorkDir},
		{"relative cwd is ignored", "pkg", "", filepath.Join(repo, "pkg"), repo, fsstore.FoundGitRoot},
	}
	for _, tt := range tests {
		if got, how := hook.ResolveRoot(tt.cwd, tt.projectDir, tt.workDir); got != tt.want || how != tt.how {
			t.Errorf("%s: ResolveRoot(%q, %q, %q) = %q, %s; want %q, %s", tt.name, tt.cwd, tt.projectDir, tt.workDir, got, how, tt.want, tt.how)
		}
	}
}

func TestParseEvent(t *testing.T) {
	for in, want := range map[string]hook.Event{"stop": hook.Stop, "Stop": hook.Stop, "SessionStart": hook.SessionStart, "post_tool_use": hook.PostToolUse, "pre-compact": hook.PreCompact} {
		if got, err := hook.ParseEvent(in); got != want || err != nil {
			t.Errorf("ParseEvent(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := hook.ParseEvent("notification"); err == nil {
		t.Error("ParseEvent(notification) succeeded")
	}
}

// FuzzDecode checks that the payload decoder accepts any JSON object and
// rejects the rest, without panicking.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","cwd":"/p","last_assistant_message":"<promise>DONE</promise>","stop_hook_active":true}`,
		`{"sessionId":"s","toolName":"Create","toolInput":{"file_path":"a"}}`,
		`{"tool_input":"*** Begin Patch\n*** Add File: a\n*** End Patch"}`,
		`[]`, `nul`, "\ufeff{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := hook.Decode(data)
		var obj map[string]json.RawMessage
		isObj := json.Unmarshal(data, &obj) == nil && obj != nil
		if err == nil && p == nil {
			t.Fatal("Decode returned no payload and no error")
		}
		if isObj && err != nil {
			t.Fatalf("Decode(%q) rejected a JSON object: %v", data, err)
		}
		if err == nil {
			_ = hook.ChangedFiles(p.ToolInput, p.ToolResponse)
		}
	})
}

// FuzzPatchFiles checks PatchFiles against a reference that splits the
// patch on newlines and reads each header the slow way: the same paths, in
// the same order, for every input.
func FuzzPatchFiles(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n*** End Patch")
	f.Add("*** Add File:  spaced name.go \r\n*** Delete File: x\r\r\n  *** Add File: indented\n*** Add File:")
	f.Add("*** Update File: a\n@@\n-*** Add File: in a hunk\n+x\n*** Move to: b")
	f.Fuzz(func(t *testing.T, patch string) {
		var want []string
		for _, line := range strings.Split(patch, "\n") {
			line = strings.TrimRight(line, "\r")
			for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
				if rest, ok := strings.CutPrefix(line, h); ok {
					want = append(want, strings.TrimSpace(rest))
				}
			}
		}
		if got := hook.PatchFiles(patch); !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Fatalf("PatchFiles(%q) = %q, want %q", patch, got, want)
		}
	})
}
