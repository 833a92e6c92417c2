package gitx

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestCacheWorktreeCommitPushMerge(t *testing.T) {
	gittest.Setenv(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(src, 0o755)
	gittest.Git(t, src, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	gittest.Git(t, src, "add", "-A")
	gittest.Git(t, src, "commit", "-qm", "a")

	cacheDir := filepath.Join(t.TempDir(), "cache", "src.git")
	cache, err := Cache(ctx, src, cacheDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := cache.HeadBranch(ctx); b != "main" {
		t.Errorf("cache default branch %q, want main", b)
	}
	wtPath := filepath.Join(t.TempDir(), "wt")
	wt, err := cache.WorktreeAdd(ctx, wtPath, "work", "origin/main")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wtPath, "b.txt"), []byte("b\n"), 0o644)
	sha, committed, err := wt.CommitChanges(ctx, "add b")
	if err != nil || !committed {
		t.Fatalf("CommitChanges = %v %v", committed, err)
	}
	if _, committed, _ := wt.CommitChanges(ctx, "nothing"); committed {
		t.Error("CommitChanges committed a clean tree")
	}
	if err := wt.Push(ctx, "origin", "HEAD:refs/heads/work"); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, src, "rev-parse", "work"); got != sha {
		t.Errorf("pushed work = %s, want %s", got, sha)
	}
	wts, err := cache.Worktrees(ctx)
	if err != nil || len(wts) != 2 || !wts[0].Bare || wts[1].Branch != "work" {
		t.Errorf("Worktrees = %+v %v", wts, err)
	}
	// A fetch never clobbers the worktree's branch.
	if _, err := Cache(ctx, src, cacheDir, nil); err != nil {
		t.Fatal(err)
	}

	// Squash work onto main in a detached worktree, then fast-forward the
	// user's checkout: refused while it has a conflicting local change.
	mPath := filepath.Join(t.TempDir(), "merge")
	m, err := cache.WorktreeAddDetached(ctx, mPath, "origin/main")
	if err != nil {
		t.Fatal(err)
	}
	merged, err := m.MergeSquash(ctx, sha, "squash work")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Push(ctx, "origin", merged+":refs/baton/tmp"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "b.txt"), []byte("mine\n"), 0o644)
	user := Open(src)
	if err := user.MergeFFOnly(ctx, "refs/baton/tmp"); err == nil {
		t.Fatal("fast-forward over an untracked file with local content succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "b.txt")); string(b) != "mine\n" {
		t.Errorf("local file clobbered: %q", b)
	}
	os.Remove(filepath.Join(src, "b.txt"))
	if err := user.MergeFFOnly(ctx, "refs/baton/tmp"); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, src, "log", "-1", "--format=%s"); got != "squash work" {
		t.Errorf("main head = %q", got)
	}
	// A second squash of the same work has nothing to merge: Conflict.
	if _, err := m.MergeSquash(ctx, sha, "again"); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("empty squash = %v, want Conflict", err)
	}
	if err := cache.WorktreeRemove(ctx, wtPath); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wtPath); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
}

func TestParseWorktrees(t *testing.T) {
	out := "worktree /c/src.git\x00bare\x00\x00worktree /w/a b\x00HEAD 0123\x00branch refs/heads/baton/x\x00\x00worktree /w/d\x00HEAD 4567\x00detached\x00\x00"
	want := []Worktree{{Path: "/c/src.git", Bare: true}, {Path: "/w/a b", Branch: "baton/x"}, {Path: "/w/d"}}
	if diff := cmp.Diff(want, parseWorktrees(out)); diff != "" {
		t.Errorf("parseWorktrees (-want +got):\n%s", diff)
	}
}

func FuzzParseWorktrees(f *testing.F) {
	f.Add("worktree /a\x00branch refs/heads/main\x00\x00")
	f.Add("branch x\x00worktree \x00bare\x00")
	f.Fuzz(func(t *testing.T, s string) {
		wts := parseWorktrees(s)
		if n := strings.Count(s, "worktree "); len(wts) > n {
			t.Fatalf("%d worktrees from %d records", len(wts), n)
		}
		for _, w := range wts {
			if strings.Contains(w.Path, "\x00") || strings.Contains(w.Branch, "\x00") {
				t.Fatalf("NUL in %+v", w)
			}
		}
	})
}
