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
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "docs"), 0o755)
	gittest.Git(t, src, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(src, "docs", "plan.md"), []byte("the repository's own plan\n"), 0o644)
	gittest.Git(t, src, "add", "-A")
	gittest.Git(t, src, "commit", "-qm", "a")
	main := gittest.Git(t, src, "rev-parse", "main")

	cacheDir := filepath.Join(t.TempDir(), "cache", "src.git")
	cache, err := InitCache(ctx, cacheDir, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _, err := mustLayout(t, cacheDir).Head(); b != "main" || err != nil {
		t.Errorf("cache HEAD names %q (%v), want main", b, err)
	}
	if got := gittest.Git(t, cacheDir, "config", "maintenance.auto"); got != "false" {
		t.Errorf("maintenance.auto = %q, want false", got)
	}
	// A fetch of two refs, one a pattern that matches nothing: no error,
	// no tags, no FETCH_HEAD.
	if err := cache.FetchRefs(ctx, src, true, "+refs/heads/main:refs/remotes/origin/main", "+refs/heads/work*:refs/remotes/origin/work*"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "FETCH_HEAD")); !os.IsNotExist(err) {
		t.Errorf("FETCH_HEAD written: %v", err)
	}
	wtPath := filepath.Join(t.TempDir(), "wt")
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/work", New: main}); err != nil {
		t.Fatal(err)
	}
	l, changed, err := Register(cacheDir, wtPath, "ref: refs/heads/work")
	if err != nil || !changed {
		t.Fatalf("Register = %v, %v", changed, err)
	}
	if _, err := os.Stat(filepath.Join(wtPath, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("Register checked files out: %v", err)
	}
	wt := &Repo{Dir: wtPath, Files: &l}
	if err := wt.CheckoutClean(ctx, main); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(cacheDir, "config")); strings.Contains(string(cfg), "[branch") {
		t.Errorf("the cache records tracking configuration:\n%s", cfg)
	}
	os.WriteFile(filepath.Join(wtPath, "b.txt"), []byte("b\n"), 0o644)
	os.WriteFile(filepath.Join(wtPath, "docs", "plan.md"), []byte("the delivery's plan\n"), 0o644)
	if dirty, err := wt.Dirty(ctx); !dirty || err != nil {
		t.Errorf("Dirty = %v, %v after writing files", dirty, err)
	}
	commit := func(msg string) string {
		t.Helper()
		if err := wt.AddAll(ctx); err != nil {
			t.Fatal(err)
		}
		tree, err := wt.WriteTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		parent := gittest.Git(t, cacheDir, "rev-parse", "refs/heads/work")
		sha, err := wt.CommitTree(ctx, tree, msg, parent)
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/work", New: sha, Old: parent}); err != nil {
			t.Fatal(err)
		}
		return sha
	}
	sha := commit("add b")
	if got := gittest.Git(t, wtPath, "rev-parse", "HEAD"); got != sha {
		t.Errorf("HEAD after the commit is %s, want %s", got, sha)
	}
	if dirty, err := wt.Dirty(ctx); dirty || err != nil {
		t.Errorf("Dirty = %v, %v after the commit", dirty, err)
	}
	if err := cache.Push(ctx, src, sha+":refs/heads/work"); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, src, "rev-parse", "work"); got != sha {
		t.Errorf("pushed work = %s, want %s", got, sha)
	}
	if out := gittest.Git(t, cacheDir, "for-each-ref", "refs/remotes/origin/work"); out != "" {
		t.Errorf("a push by URL moved a remote-tracking ref: %q", out)
	}
	wts, err := cache.Worktrees(ctx)
	if err != nil || len(wts) != 2 || !wts[0].Bare || wts[1].Branch != "work" || wts[1].Path != wtPath {
		t.Errorf("Worktrees = %+v %v", wts, err)
	}
	// CheckoutClean throws away changes and untracked files, keeps
	// ignored ones.
	os.WriteFile(filepath.Join(wtPath, ".gitignore"), []byte("build/\n"), 0o644)
	sha = commit("ignore build")
	os.MkdirAll(filepath.Join(wtPath, "build"), 0o755)
	os.WriteFile(filepath.Join(wtPath, "build", "out"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(wtPath, "stray.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(wtPath, "a.txt"), []byte("changed\n"), 0o644)
	if err := wt.CheckoutClean(ctx, sha); err != nil {
		t.Fatal(err)
	}
	if dirty, _ := wt.Dirty(ctx); dirty {
		t.Error("dirty after CheckoutClean")
	}
	if _, err := os.Stat(filepath.Join(wtPath, "build", "out")); err != nil {
		t.Errorf("CheckoutClean deleted an ignored file: %v", err)
	}
	if head, _ := wt.HeadSHA(ctx); head != sha {
		t.Errorf("HEAD after CheckoutClean = %s, want %s", head, sha)
	}

	// Squash work onto main without a checkout, keeping main's plan.
	tree, err := cache.MergeTree(ctx, main, sha)
	if err != nil {
		t.Fatal(err)
	}
	tree, err = cache.ReplacePaths(ctx, tree, main, "docs/plan.md", "docs/absent.md")
	if err != nil {
		t.Fatal(err)
	}
	merged, err := cache.CommitTree(ctx, tree, "squash work\n\nbody", main)
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, cacheDir, "show", merged+":docs/plan.md"); got != "the repository's own plan" {
		t.Errorf("plan after the merge = %q", got)
	}
	if got := gittest.Git(t, cacheDir, "show", merged+":b.txt"); got != "b" {
		t.Errorf("b.txt after the merge = %q", got)
	}
	if got := gittest.Git(t, cacheDir, "log", "-1", "--format=%s%x00%P", merged); got != "squash work\x00"+main {
		t.Errorf("merge commit = %q", got)
	}
	// Land it on the user's checkout: refused while it has a conflicting
	// local change.
	if err := cache.Push(ctx, src, merged+":refs/baton/tmp"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "b.txt"), []byte("mine\n"), 0o644)
	user := Open(src)
	if err := user.MergeFFOnly(ctx, merged); err == nil {
		t.Fatal("fast-forward over an untracked file with local content succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "b.txt")); string(b) != "mine\n" {
		t.Errorf("local file clobbered: %q", b)
	}
	os.Remove(filepath.Join(src, "b.txt"))
	if err := user.MergeFFOnly(ctx, merged); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, src, "log", "-1", "--format=%s"); got != "squash work" {
		t.Errorf("main head = %q", got)
	}
	// A conflicting merge is Conflict.
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("theirs\n"), 0o644)
	gittest.Git(t, src, "commit", "-qam", "theirs")
	os.WriteFile(filepath.Join(wtPath, "a.txt"), []byte("ours\n"), 0o644)
	ours := commit("ours")
	if err := cache.FetchRefs(ctx, src, false, "+refs/heads/main:refs/remotes/origin/main"); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.MergeTree(ctx, "refs/remotes/origin/main", ours); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("conflicting MergeTree = %v, want Conflict", err)
	}

	// Refs move in one transaction, compare-and-swap.
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/x", New: sha}, RefUpdate{Name: "refs/y", New: merged}); err != nil {
		t.Fatal(err)
	}
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/x", New: merged, Old: main}); err == nil {
		t.Error("UpdateRefs with a wrong old value succeeded")
	}
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/x", New: merged}); err != nil {
		t.Errorf("UpdateRefs of an existing ref, unchecked: %v", err)
	}
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/x", New: sha, Old: merged}); err != nil {
		t.Errorf("UpdateRefs with the right old value: %v", err)
	}
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/x"}, RefUpdate{Name: "refs/never"}); err != nil {
		t.Errorf("deleting refs, one absent: %v", err)
	}
	if err := cache.UpdateRefs(ctx, RefUpdate{Name: "refs/z", New: strings.Repeat("1", 40)}); err == nil {
		t.Error("UpdateRefs to a missing object succeeded")
	}

	if err := Unregister(cacheDir, wtPath); err != nil {
		t.Fatal(err)
	}
	if wts, err := cache.Worktrees(ctx); err != nil || len(wts) != 1 {
		t.Errorf("Worktrees after Unregister = %+v, %v", wts, err)
	}
}

func TestParseWorktrees(t *testing.T) {
	t.Parallel()
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
