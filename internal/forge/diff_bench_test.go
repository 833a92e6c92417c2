package forge_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// bigWork is a local repository of n files whose work branch for a
// delivery changes a line in each (made with git fast-import), and the
// delivery, its cache synced.
func bigWork(b testing.TB, n int) (*forge.Workspaces, *baton.Delivery) {
	b.Helper()
	repo := filepath.Join(b.TempDir(), "app")
	gittest.Git(b, b.TempDir(), "init", "-q", "-b", "main", repo)
	d := &baton.Delivery{ID: "abcdef123456", Repository: repo, Forge: baton.ForgeLocal}
	file := func(i int, v string) string {
		var f strings.Builder
		fmt.Fprintf(&f, "package p%d\n\n", i%97)
		for l := range 30 {
			fmt.Fprintf(&f, "// line %d of file %d, the same in both versions\n", l, i)
		}
		fmt.Fprintf(&f, "const Version = %q\n", v)
		return f.String()
	}
	var s strings.Builder
	for _, c := range []struct{ ref, from, v string }{{"main", "", "base"}, {d.WorkBranch(), "refs/heads/main", "work"}} {
		fmt.Fprintf(&s, "commit refs/heads/%s\ncommitter T <t@example.com> 1795000000 +0000\ndata %d\n%s\n", c.ref, len(c.v), c.v)
		if c.from != "" {
			fmt.Fprintf(&s, "from %s\n", c.from)
		}
		for i := range n {
			body := file(i, c.v)
			fmt.Fprintf(&s, "M 100644 inline gen/%03d/file%06d.go\ndata %d\n%s\n", i%1000, i, len(body), body)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Env = repo, append(os.Environ(), gittest.Env()...)
	cmd.Stdin = strings.NewReader(s.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	ws := &forge.Workspaces{Dir: b.TempDir()}
	// The base as the plan's checkout synced it, the work as pushed.
	_, done, err := ws.Observe(b.Context(), d, forge.Local{})
	if err != nil {
		b.Fatal(err)
	}
	done()
	if _, _, err := ws.Work(b.Context(), d, forge.Local{}); err != nil {
		b.Fatal(err)
	}
	return ws, d
}

// BenchmarkWorkDiff100k is what the approval page costs to read the
// change of a work branch that changes 100,000 files: its first view (a
// server that never diffed it), and a view of the same work again.
func BenchmarkWorkDiff100k(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: makes a 100,000-file repository")
	}
	ws, d := bigWork(b, 100_000)
	view := func(b *testing.B, ws *forge.Workspaces) {
		diff, err := ws.WorkDiff(b.Context(), d, forge.DefaultDiffLimits)
		if err != nil {
			b.Fatal(err)
		}
		if len(diff.Files) != 300 || diff.Omitted != 100_000-300 {
			b.Fatalf("listed %d files, omitted %d", len(diff.Files), diff.Omitted)
		}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			view(b, &forge.Workspaces{Dir: ws.Dir})
		}
	})
	b.Run("again", func(b *testing.B) {
		view(b, ws)
		for b.Loop() {
			view(b, ws)
		}
	})
}
