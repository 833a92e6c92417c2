package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/safefile/safefiletest"
)

// A packet's update is as durable as its creation and as a loop's state:
// `baton packet done` renames the new file over the packet and fsyncs
// the packets directory before it returns, so a crash of the machine
// right after cannot bring the old status back. Watched with strace,
// through the real binary.
func TestPacketUpdateIsDurable(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace")
	}
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(batonBin, append([]string{"--root", dir}, args...)...)
		c.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("init")
	run("handoff", "durable packets")
	packets, err := filepath.Glob(filepath.Join(dir, ".agent", "context", "packets", "*.md"))
	if err != nil || len(packets) != 1 {
		t.Fatalf("packets after a handoff: %v, %v; want one", packets, err)
	}
	id := strings.TrimSuffix(filepath.Base(packets[0]), ".md")
	trace := filepath.Join(t.TempDir(), "trace")
	c := exec.Command(strace, append(append([]string{"-o", trace}, safefiletest.StraceArgs...), batonBin, "--root", dir, "packet", "done", id)...)
	c.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := c.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	if got := run("packet", "show", id); !strings.Contains(got, "status: done") {
		t.Fatalf("the packet is not done after `baton packet done`:\n%s", got)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	safefiletest.Durable(t, b, id+".md")
}
