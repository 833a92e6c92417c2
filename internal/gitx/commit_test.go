package gitx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func testRepo(t *testing.T) *Repo {
	t.Helper()
	dir := t.TempDir() // git's identity: TestMain (gittest.Main)
	if out, err := exec.Command("git", "-C", dir, "init", "-q", "-b", "main").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return Open(dir)
}

func write(t *testing.T, r *Repo, rel, content string) {
	t.Helper()
	p := filepath.Join(r.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCommitAllAndPaths(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := testRepo(t)
	if _, ok, err := r.FileAtHead(ctx, "a.txt"); ok || err != nil {
		t.Errorf("FileAtHead before any commit = %v, %v; want absent", ok, err)
	}
	write(t, r, "a.txt", "one\n")
	write(t, r, "dir/b.txt", "two\n")
	c, err := r.CommitAll(ctx, "first")
	if err != nil || c.Subject != "first" || len(c.SHA) != 40 {
		t.Fatalf("CommitAll = %+v, %v", c, err)
	}
	if changes, _ := r.Status(ctx); len(changes) != 0 {
		t.Errorf("CommitAll left %v", changes)
	}
	// A hook that fails does not stop the runner's checkpoint commits.
	write(t, r, ".git/hooks/pre-commit", "#!/bin/sh\nexit 1\n")
	if err := os.Chmod(filepath.Join(r.Dir, ".git/hooks/pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.Dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if c, err := r.CommitAll(ctx, "deleted a"); err != nil || c.Subject != "deleted a" {
		t.Fatalf("CommitAll with a deletion and a failing hook = %+v, %v", c, err)
	}
	if _, ok, _ := r.FileAtHead(ctx, "a.txt"); ok {
		t.Error("a.txt is still at HEAD after its deletion was committed")
	}

	// CommitPaths commits only what it is given.
	write(t, r, "dir/b.txt", "changed\n")
	write(t, r, "other.txt", "not mine\n")
	if _, err := r.CommitPaths(ctx, "only dir", "dir"); err != nil {
		t.Fatalf("CommitPaths error: %v", err)
	}
	b, ok, err := r.FileAtHead(ctx, "dir/b.txt")
	if err != nil || !ok || string(b) != "changed\n" {
		t.Errorf("FileAtHead(dir/b.txt) = %q, %v, %v", b, ok, err)
	}
	changes, _ := r.Status(ctx)
	if len(changes) != 1 || changes[0].Path != "other.txt" {
		t.Errorf("after CommitPaths the status is %v, want only other.txt", changes)
	}
	// FileAtHead resolves paths from Dir, like the runner's project root.
	sub := &Repo{Dir: filepath.Join(r.Dir, "dir")}
	if b, ok, err := sub.FileAtHead(ctx, "b.txt"); err != nil || !ok || string(b) != "changed\n" {
		t.Errorf("FileAtHead from a subdirectory = %q, %v, %v", b, ok, err)
	}
}

func TestBranches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := testRepo(t)
	write(t, r, "a.txt", "a\n")
	if _, err := r.CommitAll(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.LocalBranchExists(ctx, "runner/x"); ok || err != nil {
		t.Errorf("LocalBranchExists(runner/x) = %v, %v before it exists", ok, err)
	}
	write(t, r, "a.txt", "carried along\n")
	if err := r.SwitchNewBranch(ctx, "runner/x"); err != nil {
		t.Fatal(err)
	}
	if b, _ := r.Branch(ctx); b != "runner/x" {
		t.Errorf("Branch() = %q after SwitchNewBranch", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir, "a.txt")); string(b) != "carried along\n" {
		t.Errorf("uncommitted change lost on switch: %q", b)
	}
	if ok, err := r.LocalBranchExists(ctx, "runner/x"); !ok || err != nil {
		t.Errorf("LocalBranchExists(runner/x) = %v, %v after creating it", ok, err)
	}
	err := r.SwitchNewBranch(ctx, "runner/x")
	var ge *Error
	if err == nil || !strings.Contains(err.Error(), "runner/x") || !errors.As(err, &ge) {
		t.Errorf("SwitchNewBranch to an existing branch = %v, want a *gitx.Error", err)
	}
}

// A repository run with an environment of its own (BaseEnv) and no
// identity there or in git's configuration commits as baton, whatever
// identity baton's own process environment has: by git commit-tree and
// in-process alike.
func TestIdentityIsReadFromGitsEnvironment(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	gitInit := exec.Command("git", "init", "-q", "-b", "main", dir)
	gitInit.Env = env
	if out, err := gitInit.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if os.Getenv("GIT_AUTHOR_NAME") == "" {
		t.Fatal("the test process has no GIT_AUTHOR_NAME (gittest.Main sets it): nothing would be shown")
	}
	for _, ident := range []*Identity{nil, {}} {
		r := &Repo{Dir: dir, BaseEnv: env, Ident: ident}
		write(t, r, "a.txt", fmt.Sprintf("%v\n", ident != nil))
		if _, err := r.Run(ctx, "add", "-A"); err != nil {
			t.Fatal(err)
		}
		tree, err := r.WriteTree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sha, err := r.CommitTree(ctx, tree, "first\n")
		if err != nil {
			t.Fatalf("CommitTree (identity kept: %v): %v", ident != nil, err)
		}
		if who, _ := r.line(ctx, "log", "-1", "--format=%an <%ae>", sha); who != "baton <baton@localhost>" {
			t.Errorf("committed as %q, want baton's own identity", who)
		}
	}
}
