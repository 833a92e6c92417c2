package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/safefile/safefiletest"
)

// The companion links the hook's code and nothing that only the rest of
// baton needs: each of these costs every hook its start-up pages. The
// sandbox and internal/proc are the hook's own: the Stop hook runs a
// loop's verify commands, confined.
func TestHookBinaryLinksOnlyTheHook(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{
		"modernc.org/sqlite", "github.com/riverqueue/river", "github.com/jackc/pgx/v5",
		"github.com/google/go-github/v92/github", "github.com/modelcontextprotocol/go-sdk/mcp",
		"github.com/pkoukk/tiktoken-go", "github.com/spf13/cobra", "net/http", "net",
		"github.com/baton-agent/baton/internal/delivery", "github.com/baton-agent/baton/internal/web",
		"github.com/google/uuid", "github.com/baton-agent/baton/internal/search",
		// Both compile regular expressions at every process start.
		"go.yaml.in/yaml/v3", "regexp",
		// The reader of executables that finds baton's box init: a hook
		// starts boxes with itself as their init.
		"debug/buildinfo", "github.com/baton-agent/baton/internal/sandbox/boxinit",
	} {
		for _, d := range deps {
			if d == banned {
				t.Errorf("baton-hook links %s", banned)
			}
		}
	}
}

// buildHook builds baton-hook once for the tests that run it, stamped
// with a release's version and commit (-ldflags, as releases are).
var buildHook = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "baton-hook-test-*")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "baton-hook")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=1.2.3 -X main.commit="+testCommit, ".")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

const testCommit = "0123456789abcdef0123456789abcdef01234567"

var builtDir string // where buildHook built, if a test asked

func hookBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildHook()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestMain removes the built baton-hook once every test is done.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// `baton-hook --version` names the release it came from, as `baton
// version` does, so a companion left behind by an older install can be
// told from the one beside baton.
func TestVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds baton-hook")
	}
	t.Parallel()
	bin := hookBinary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	want := "baton-hook 1.2.3 (commit 0123456789ab, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if err != nil || string(out) != want {
		t.Errorf("baton-hook --version = %q, %v; want %q", out, err, want)
	}
}

// tracedHook is what the durability tests run: strace, the built
// baton-hook and a fresh project (a directory with .git). They skip
// under -short and where strace is missing.
func tracedHook(t *testing.T) (strace, bin, root string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds baton-hook")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace")
	}
	t.Parallel()
	root = t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return strace, hookBinary(t), root
}

// A stop the loop blocks is counted durably: the loop file's new state
// is fsynced, renamed over the old one, and the loops directory fsynced
// after the rename (and after the lock is released), before the hook
// answers, so a crash of the machine cannot take the counted stop back.
// Watched with strace, through the real binary.
func TestBlockingStopIsDurable(t *testing.T) {
	strace, bin, root := tracedHook(t)
	ctx := context.Background()
	st := fsstore.Open(root, fsstore.Options{})
	l := &baton.Loop{Prompt: "keep going", MaxIterations: 0}
	if err := st.CreateLoop(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AdoptLoop(ctx, "s1", l); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	c := exec.Command(strace, append(append([]string{"-o", trace}, safefiletest.StraceArgs...), bin, "stop", "--harness", "claude")...)
	c.Stdin = strings.NewReader(`{"session_id":"s1","cwd":"` + root + `","last_assistant_message":"still working"}`)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"decision":"block"`) {
		t.Fatalf("the stop did not block: %s", out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines, put, synced := safefiletest.Durable(t, b, l.ID+".md")
	// The loop's lock is released between the rename and the directory's
	// fsync: a concurrent stop waits for one commit, not two.
	unlock := regexp.MustCompile(`flock\(\d+<[^>]*` + regexp.QuoteMeta(l.ID) + `\.md\.lock>, LOCK_UN`)
	for _, line := range lines[put:synced] {
		if unlock.MatchString(line) {
			return
		}
	}
	t.Errorf("the loop's lock was held over the directory's fsync:\n%s", b)
}

// A packet is as durable as a loop's state: pre-compact's packet is
// written and fsynced under a temp name, linked to its own name (an
// exclusive create), and the packets directory fsynced after the link,
// before the hook answers, so a crash of the machine right after cannot
// lose it. Watched with strace, through the real binary.
func TestPreCompactPacketIsDurable(t *testing.T) {
	strace, bin, root := tracedHook(t)
	if _, err := fsstore.Open(root, fsstore.Options{}).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	c := exec.Command(strace, append(append([]string{"-o", trace}, safefiletest.StraceArgs...), bin, "pre-compact", "--harness", "claude")...)
	c.Stdin = strings.NewReader(`{"session_id":"s1","cwd":"` + root + `","trigger":"auto"}`)
	if out, err := c.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	packets, err := filepath.Glob(filepath.Join(root, ".agent", "context", "packets", "*.md"))
	if err != nil || len(packets) != 1 {
		t.Fatalf("packets after pre-compact: %v, %v; want one", packets, err)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	safefiletest.Durable(t, b, filepath.Base(packets[0]))
}
