package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

// fakeBin writes an executable named name into dir that appends its name
// and arguments to dir/calls.
func fakeBin(t *testing.T, dir, name string) {
	t.Helper()
	script := "#!/bin/sh\necho \"" + name + " $*\" >>\"" + filepath.Join(dir, "calls") + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runShim runs Command("", ...) as a harness would (through sh -c) with
// PATH holding only dir and the system's sh, and returns its stdout.
func runShim(t *testing.T, dir, state string, event Event, h baton.Harness, extra ...string) string {
	t.Helper()
	cmdline := Command("", event, h) + " " + strings.Join(extra, " ")
	c := exec.Command("/bin/sh", "-c", cmdline)
	c.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + state, "XDG_STATE_HOME=" + state}
	c.Stdin = strings.NewReader(`{"session_id":"s1"}`)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmdline, err)
	}
	return string(out)
}

func calls(t *testing.T, dir string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "calls"))
	return strings.TrimSpace(string(b))
}

// The shim prefers baton-hook, falls back to `baton hook`, and without
// either exits 0 and says once, at session start, how to install baton.
func TestShim(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("baton"); err == nil {
		// The test's PATH keeps /usr/bin: a baton there would be found.
		if p, _ := exec.LookPath("baton"); strings.HasPrefix(p, "/usr/bin/") || strings.HasPrefix(p, "/bin/") {
			t.Skip("a baton in /usr/bin would answer the shim")
		}
	}
	t.Run("baton-hook first", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fakeBin(t, dir, "baton-hook")
		fakeBin(t, dir, "baton")
		runShim(t, dir, t.TempDir(), Stop, baton.HarnessCodex)
		if got, want := calls(t, dir), "baton-hook stop --harness codex"; got != want {
			t.Errorf("shim ran %q, want %q", got, want)
		}
	})
	t.Run("baton hook without baton-hook", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fakeBin(t, dir, "baton")
		runShim(t, dir, t.TempDir(), PostToolUse, baton.HarnessDroid)
		if got, want := calls(t, dir), "baton hook post-tool-use --harness droid"; got != want {
			t.Errorf("shim ran %q, want %q", got, want)
		}
	})
	t.Run("Droid's plugin root makes the harness droid", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fakeBin(t, dir, "baton")
		runShim(t, dir, t.TempDir(), SessionStart, baton.HarnessClaude, "/home/u/.factory/plugins/cache/baton")
		if got, want := calls(t, dir), "baton hook session-start --harness droid"; got != want {
			t.Errorf("shim ran %q, want %q", got, want)
		}
	})
	t.Run("no baton: the hint once, at session start", func(t *testing.T) {
		t.Parallel()
		dir, state := t.TempDir(), t.TempDir()
		if out := runShim(t, dir, state, Stop, baton.HarnessCodex); out != "" {
			t.Errorf("stop without baton printed %q, want nothing (Codex rejects plain text on Stop)", out)
		}
		first := runShim(t, dir, state, SessionStart, baton.HarnessClaude)
		if !strings.Contains(first, "install baton") {
			t.Errorf("the first session start without baton printed %q, want how to install it", first)
		}
		if again := runShim(t, dir, state, SessionStart, baton.HarnessClaude); again != "" {
			t.Errorf("the second session start without baton printed %q, want nothing", again)
		}
	})
}

// The inline shim is recognised as baton's hook, with its event.
func TestCommandFromPath(t *testing.T) {
	t.Parallel()
	for _, ev := range Events {
		cmd := Command("", ev, baton.HarnessCodex)
		exe, ok := ParseCommand(cmd, nil)
		if !ok || exe != "baton" {
			t.Errorf("ParseCommand(Command(\"\", %s)) = %q, %v, want baton, true", ev, exe, ok)
		}
		if got, ok := CommandEvent(cmd, nil); !ok || got != ev {
			t.Errorf("CommandEvent(Command(\"\", %s)) = %s, %v", ev, got, ok)
		}
	}
	if _, ok := ParseCommand(`sh -c 'echo hi' baton-hook stop codex`, nil); ok {
		t.Error("a script that is not baton's shim was taken for baton's hook")
	}
}

// FuzzCommandRoundTrip: whatever the binary's path, a command Command
// writes is recognised as baton's hook with its event and program (baton
// from PATH for the shim), and a command line that is not one of
// Command's answers either is not recognised or names one of baton's
// events.
func FuzzCommandRoundTrip(f *testing.F) {
	f.Add("/usr/local/bin/baton", 0, "claude", "baton hook stop --harness codex")
	f.Add("", 3, "codex", "sh -c 'baton' baton-hook stop codex")
	f.Add("/opt/it's here/baton", 1, "droid", `"/x y/baton" hook pre-compact --harness=pi`)
	f.Fuzz(func(t *testing.T, exe string, ev int, h, other string) {
		if ev < 0 {
			ev = -ev
		}
		event := Events[ev%len(Events)]
		if strings.ContainsAny(exe, "\x00") || exe != "" && !strings.HasPrefix(exe, "/") || strings.ContainsAny(h, " \t\n'\"\\\x00") || h == "" {
			return
		}
		cmd := Command(exe, event, baton.Harness(h))
		got, ok := ParseCommand(cmd, nil)
		want := exe
		if exe == "" {
			want = "baton"
		}
		if !ok || got != want {
			t.Fatalf("ParseCommand(%q) = %q, %v, want %q", cmd, got, ok, want)
		}
		if e, ok := CommandEvent(cmd, nil); !ok || e != event {
			t.Fatalf("CommandEvent(%q) = %q, %v, want %s", cmd, e, ok, event)
		}
		if e, ok := CommandEvent(other, nil); ok && !slices.Contains(Events, e) {
			t.Fatalf("CommandEvent(%q) = %q, not one of baton's events", other, e)
		}
	})
}
