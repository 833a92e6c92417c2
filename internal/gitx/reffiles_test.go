package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// ownCache is a repository cache as InitCache makes it, holding commits
// one and two (loose objects), and a Repo on it that counts the git
// processes it starts.
func ownCache(t *testing.T) (r *Repo, one, two string, gits *int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache.git")
	if _, err := InitCache(t.Context(), dir, "main", nil); err != nil {
		t.Fatal(err)
	}
	tree := gittest.Git(t, dir, "mktree")
	one = gittest.Git(t, dir, "commit-tree", "-m", "one", tree)
	two = gittest.Git(t, dir, "commit-tree", "-m", "two", "-p", one, tree)
	gits = new(int)
	r = &Repo{Dir: dir, OwnRefs: true, Start: func(cmd *exec.Cmd) (func(), error) {
		*gits++
		return func() {}, cmd.Start()
	}}
	return r, one, two, gits
}

// In a repository whose refs are baton's own, updates and creations of
// loose refs to loose objects start no git, and git reads what they wrote;
// a wrong old value changes nothing, in a transaction of several refs
// too; a ref packed alone is updated; what git must decide (a name that
// clashes with a packed ref, a deletion, an object git does not have)
// goes to git, which refuses or does it.
func TestUpdateOwnRefsMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, one, two, gits := ownCache(t)
	dir := r.Dir
	ref := func(name string) string {
		out, _ := exec.Command("git", "-C", dir, "rev-parse", "--verify", "--quiet", name).Output()
		return strings.TrimSpace(string(out))
	}

	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", New: one, Old: strings.Repeat("0", 40)}); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", New: two, Old: one}, RefUpdate{Name: "refs/remotes/origin/main", New: one}); err != nil {
		t.Fatal(err)
	}
	if *gits != 0 {
		t.Errorf("%d git processes for plain updates, want none", *gits)
	}
	if got := ref("refs/heads/baton/a"); got != two {
		t.Errorf("git reads refs/heads/baton/a = %q, want %s", got, two)
	}
	if got := ref("refs/remotes/origin/main"); got != one {
		t.Errorf("git reads refs/remotes/origin/main = %q, want %s", got, one)
	}

	// A wrong old value: neither ref of the transaction moves.
	err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/remotes/origin/main", New: two, Old: one}, RefUpdate{Name: "refs/heads/baton/a", New: one, Old: one})
	if err == nil || ref("refs/remotes/origin/main") != one || ref("refs/heads/baton/a") != two {
		t.Errorf("a transaction with a wrong old value: %v; refs %s, %s", err, ref("refs/remotes/origin/main"), ref("refs/heads/baton/a"))
	}
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", New: one, Old: strings.Repeat("0", 40)}); err == nil || ref("refs/heads/baton/a") != two {
		t.Errorf("creating a ref that exists = %v", err)
	}
	if locks, _ := filepath.Glob(filepath.Join(dir, "refs", "*", "*", "*.lock")); len(locks) > 0 {
		t.Errorf("lock files left: %v", locks)
	}

	// Packed alone: updated loose, as git does.
	gittest.Git(t, dir, "pack-refs", "--all")
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", New: one, Old: two}); err != nil || ref("refs/heads/baton/a") != one {
		t.Errorf("updating a packed ref = %v; git reads %s, want %s", err, ref("refs/heads/baton/a"), one)
	}
	if *gits != 0 {
		t.Errorf("%d git processes, want none", *gits)
	}

	// For git to decide: a name below a packed ref, a deletion.
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/remotes/origin/main/x", New: one}); err == nil {
		t.Error("a ref below a packed ref was made")
	}
	if _, err := os.Lstat(filepath.Join(dir, "refs", "remotes", "origin", "main", "x")); err == nil {
		t.Error("a loose ref below a packed ref was written")
	}
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a"}); err != nil || ref("refs/heads/baton/a") != "" {
		t.Errorf("delete = %v; git reads %q", err, ref("refs/heads/baton/a"))
	}
	if *gits != 2 {
		t.Errorf("%d git processes for the clash and the deletion, want 2", *gits)
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v: %s", err, out)
	}
}

// Without OwnRefs every update is git's.
func TestUpdateRefsOfOthersAskGit(t *testing.T) {
	t.Parallel()
	r, one, _, gits := ownCache(t)
	r.OwnRefs = false
	if err := r.UpdateRefs(t.Context(), RefUpdate{Name: "refs/heads/x", New: one}); err != nil {
		t.Fatal(err)
	}
	if *gits != 1 {
		t.Errorf("%d git processes, want 1", *gits)
	}
}

// plainRefName accepts only names that map to a file beneath the
// repository as they are: nothing filepath.Clean would change, no "."
// or ".." component, nothing git's lock files or packed-refs lines could
// be confused by.
func FuzzPlainRefName(f *testing.F) {
	for _, s := range []string{"refs/heads/main", "refs/heads/baton/abc", "refs/../x", "refs/heads/a.lock", "refs//x", "refs/heads/.x", "refs/heads/x.", "refs/heads/a b", "refs/", "heads/main"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !plainRefName(name) {
			return
		}
		if filepath.Clean("/r/"+name) != "/r/"+name || !strings.HasPrefix(name, "refs/") {
			t.Fatalf("%q accepted but does not map plainly beneath the repository", name)
		}
		for _, c := range strings.Split(name, "/") {
			if c == "" || c == "." || c == ".." || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") || strings.ContainsAny(c, " \t\n\\:?*[~^\x00") {
				t.Fatalf("%q accepted with component %q", name, c)
			}
		}
	})
}

// A ref that is loose alone is deleted in-process, under its lock and
// packed-refs.lock as git deletes it: no git starts, git no longer sees
// it, a wrong old value deletes nothing, and a ref git has packed goes
// to git (packed-refs is rewritten).
func TestDeleteOwnRefsMatchesGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, one, two, gits := ownCache(t)
	dir := r.Dir
	ref := func(name string) string {
		out, _ := exec.Command("git", "-C", dir, "rev-parse", "--verify", "--quiet", name).Output()
		return strings.TrimSpace(string(out))
	}
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", New: one}, RefUpdate{Name: "refs/remotes/origin/baton/a", New: two}); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", Old: two}); err == nil || ref("refs/heads/baton/a") != one {
		t.Errorf("a deletion with a wrong old value = %v; the ref is %q", err, ref("refs/heads/baton/a"))
	}
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/a", Old: one}, RefUpdate{Name: "refs/remotes/origin/baton/a"}); err != nil {
		t.Fatal(err)
	}
	if *gits != 0 {
		t.Errorf("%d git processes for deleting loose refs, want none", *gits)
	}
	if got := ref("refs/heads/baton/a") + ref("refs/remotes/origin/baton/a"); got != "" {
		t.Errorf("git still reads the deleted refs: %q", got)
	}
	if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(locks) > 0 {
		t.Errorf("lock files left: %v", locks)
	}
	if locks, _ := filepath.Glob(filepath.Join(dir, "refs", "*", "*", "*.lock")); len(locks) > 0 {
		t.Errorf("lock files left: %v", locks)
	}

	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/b", New: one}); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "pack-refs", "--all", "--no-prune")
	if err := r.UpdateRefs(ctx, RefUpdate{Name: "refs/heads/baton/b"}); err != nil || ref("refs/heads/baton/b") != "" {
		t.Errorf("deleting a ref packed and loose = %v; git reads %q", err, ref("refs/heads/baton/b"))
	}
	if *gits != 1 {
		t.Errorf("%d git processes, want 1: a packed ref's deletion is git's", *gits)
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// Refs deleted in-process while git packs the repository's refs over and
// over stay deleted: packed-refs.lock keeps a pack-refs from writing a
// ref into packed-refs while its loose file goes.
func TestDeleteOwnRefsUnderPackRefs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a race run for a while")
	}
	ctx := context.Background()
	r, one, _, _ := ownCache(t)
	dir := r.Dir
	done := make(chan struct{})
	packed := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				packed <- n
				return
			default:
			}
			// git waits for a lock held by the deletion (core.packedRefsTimeout).
			exec.Command("git", "-C", dir, "pack-refs", "--all").Run()
			n++
		}
	}()
	const refs = 40
	for i := range refs {
		name := "refs/heads/baton/r" + strconv.Itoa(i)
		// Created and deleted by git or in-process, whichever can: the
		// outcome must be the same.
		if err := r.UpdateRefs(ctx, RefUpdate{Name: name, New: one}); err != nil {
			t.Fatal(err)
		}
		if err := r.UpdateRefs(ctx, RefUpdate{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if n := <-packed; n == 0 {
		t.Fatal("pack-refs never ran")
	}
	out, err := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(refname)", "refs/heads/baton/").Output()
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("refs deleted while git packed refs came back:\n%s", s)
	}
}
