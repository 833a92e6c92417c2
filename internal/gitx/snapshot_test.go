package gitx

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	gittest.Setenv(t)
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	r := Open(dir)
	s, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Branch != "main" || s.Head.SHA != "" || len(s.Changes) != 0 {
		t.Errorf("empty repo snapshot = %+v", s)
	}
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "a\n")
	write("old name.go", "same content for rename detection\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "first: commit")
	write("a.go", "changed\n")
	write("dir/new file.txt", "x\n")
	gittest.Git(t, dir, "mv", "old name.go", "new name.go")
	s, err = r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head(ctx)
	if s.Head != head || s.Head.Subject != "first: commit" {
		t.Errorf("Head = %+v, want %+v", s.Head, head)
	}
	want := []Change{{Status: " M", Path: "a.go"}, {Status: "R ", Path: "new name.go"}, {Status: "??", Path: "dir/new file.txt"}}
	if diff := cmp.Diff(want, s.Changes); diff != "" {
		t.Errorf("Changes mismatch (-want +got):\n%s", diff)
	}
	gittest.Git(t, dir, "checkout", "-q", "--detach")
	if s, _ := r.Snapshot(ctx); s.Branch != "" {
		t.Errorf("detached Branch = %q, want empty", s.Branch)
	}
	if _, err := Open(t.TempDir()).Snapshot(ctx); err == nil {
		t.Error("Snapshot outside a repository succeeded")
	}
}

func FuzzParseStatusV2(f *testing.F) {
	f.Add("# branch.oid abc\x00# branch.head main\x001 .M N... 100644 100644 100644 h h a.go\x00? x y\x00")
	f.Add("2 R. N... 100644 100644 100644 h h R100 new\x00old\x00u UU N... 1 2 3 4 h1 h2 h3 conflict.go\x00")
	f.Fuzz(func(t *testing.T, out string) {
		s := parseStatusV2(out)
		for _, c := range s.Changes {
			if len(c.Status) != 2 || strings.Contains(c.Status, ".") {
				t.Fatalf("bad status %q from %q", c.Status, out)
			}
		}
	})
}
