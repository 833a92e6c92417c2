package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The quickstart is the README's first command: it must run end to end on
// embedded defaults and show each feature doing its job.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "qs")
	r := e.ok("", "", "quickstart", "--dir", dir, "--keep")
	for _, want := range []string{
		"$ baton init",
		`{"decision":"block","reason":"Not done: baton's loop continues`,
		`"additionalContext":"Make the greeting configurable; run go test ./... each round."`,
		"done (DONE) at iteration 2/5",
		"# Pickup: make the greeting configurable",
		"Add a test for the GREETING_NAME default",
		"- `greet.go`",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("quickstart output lacks %q", want)
		}
	}
	packets, _ := filepath.Glob(filepath.Join(dir, ".agent/context/packets/*.md"))
	if len(packets) != 1 {
		t.Fatalf("quickstart left %d packets, want 1", len(packets))
	}
	b, _ := os.ReadFile(packets[0])
	if !strings.Contains(string(b), "session_id: quickstart-session") || !strings.Contains(string(b), "source: claude") {
		t.Errorf("the packet lacks the session it was written in:\n%s", b)
	}
	if r := e.run("", "", "quickstart", "--dir", dir); r.code != ExitUsage {
		t.Errorf("quickstart into a non-empty --dir exited %d, want 2", r.code)
	}
}
