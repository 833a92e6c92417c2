package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/hook"
)

func TestDecodeTolerant(t *testing.T) {
	t.Parallel()
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

func TestChangedFiles(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
