package gitx

import (
	"bytes"
	"compress/zlib"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// newCache is a bare repository with main at one commit, and that commit.
func newCache(t *testing.T) (dir, main string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	gittest.Git(t, t.TempDir(), "init", "-q", "-b", "main", src)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	gittest.Git(t, src, "add", "-A")
	gittest.Git(t, src, "commit", "-qm", "a")
	dir = filepath.Join(t.TempDir(), "cache.git")
	gittest.Git(t, t.TempDir(), "clone", "-q", "--bare", src, dir)
	return dir, gittest.Git(t, dir, "rev-parse", "main")
}

// A registration whose files something rewrote (commondir naming a
// directory with a packed-refs git cannot read, gitdir elsewhere, HEAD
// and the reflog links out, the index a named pipe, config.worktree) is
// re-made: git commands that list the work trees work again, and nothing
// outside was written.
func TestRegisterRewritesWhatItFinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cache, main := newCache(t)
	wt := filepath.Join(t.TempDir(), "wt")
	l, _, err := Register(cache, wt, "ref: refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, err := Register(cache, wt, "ref: refs/heads/main"); changed || err != nil {
		t.Errorf("Register of an intact registration = changed %v, %v", changed, err)
	}

	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("victim\n"), 0o644)
	// What an agent that could write its registration would leave.
	os.WriteFile(filepath.Join(wt, "packed-refs"), []byte("garbage\n"), 0o644)
	os.WriteFile(filepath.Join(l.GitDir, "commondir"), []byte(wt+"\n"), 0o644)
	// That alone breaks the repository's commands that read every work
	// tree's refs.
	if _, err := Open(cache).Run(ctx, "rev-list", "--all"); err == nil {
		t.Fatal("git rev-list --all worked with a broken registration: the test shows nothing")
	}
	os.WriteFile(filepath.Join(l.GitDir, "gitdir"), []byte(filepath.Join(outside, ".git")+"\n"), 0o644)
	os.Remove(filepath.Join(l.GitDir, "HEAD"))
	os.Symlink(victim, filepath.Join(l.GitDir, "HEAD"))
	os.MkdirAll(filepath.Join(l.GitDir, "logs"), 0o755)
	os.Symlink(victim, filepath.Join(l.GitDir, "logs", "HEAD"))
	os.Symlink(victim, filepath.Join(l.GitDir, "COMMIT_EDITMSG"))
	os.WriteFile(filepath.Join(l.GitDir, "config.worktree"), []byte("[core]\n\tfsmonitor = touch "+victim+"\n"), 0o644)
	os.Remove(filepath.Join(l.GitDir, "index"))
	if err := syscall.Mkfifo(filepath.Join(l.GitDir, "index"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(wt, ".git"))
	os.Symlink(outside, filepath.Join(wt, ".git"))

	if _, changed, err := Register(cache, wt, "ref: refs/heads/main"); !changed || err != nil {
		t.Fatalf("Register of a broken registration = changed %v, %v", changed, err)
	}
	got := map[string]bool{}
	entries, _ := os.ReadDir(l.GitDir)
	for _, e := range entries {
		got[e.Name()] = e.Type().IsRegular()
	}
	if len(got) != 3 || !got["HEAD"] || !got["commondir"] || !got["gitdir"] {
		t.Errorf("the registration holds %v, want HEAD, commondir and gitdir as files", got)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, ".git")); string(b) != "gitdir: "+l.GitDir+"\n" {
		t.Errorf(".git = %q", b)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
		t.Errorf("the file outside = %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries, want the victim alone", len(entries))
	}
	r := &Repo{Dir: wt, Files: &l}
	for _, args := range [][]string{{"worktree", "list"}, {"rev-list", "--all"}, {"gc", "--auto"}} {
		if _, err := Open(cache).Run(ctx, args...); err != nil {
			t.Errorf("git %s after Register: %v", strings.Join(args, " "), err)
		}
	}
	if err := r.CheckoutClean(ctx, main); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(b) != "a\n" {
		t.Errorf("a.txt after CheckoutClean = %q", b)
	}
}

// Objects that a work tree's git wrote reach the cache only as git checks
// them: an object whose content does not match its name is refused, and
// the cache never holds it.
func TestSendObjectsChecksWhatItSends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cache, main := newCache(t)
	wt := filepath.Join(t.TempDir(), "wt")
	l, _, err := Register(cache, wt, main)
	if err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(t.TempDir(), "objects")
	os.Mkdir(objects, 0o755)
	r := &Repo{Dir: wt, Files: &l, Env: []string{"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(cache, "objects")}}
	if err := r.CheckoutClean(ctx, main); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, "b.txt"), []byte("honest\n"), 0o644)
	if err := r.AddAll(ctx); err != nil {
		t.Fatal(err)
	}
	tree, err := r.WriteTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := r.CommitTree(ctx, tree, "b", main)
	if err != nil {
		t.Fatal(err)
	}
	blob := gittest.Git(t, wt, "hash-object", "b.txt")
	if _, err := os.Stat(filepath.Join(objects, blob[:2], blob[2:])); err != nil {
		t.Fatalf("the blob is not in the work tree's own object directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "objects", blob[:2], blob[2:])); !os.IsNotExist(err) {
		t.Fatalf("the work tree's git wrote into the cache: %v", err)
	}

	// The blob's file now holds other content under its name.
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("blob 7\x00forged\n"))
	zw.Close()
	p := filepath.Join(objects, blob[:2], blob[2:])
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.SendObjects(ctx, Open(cache), commit, main) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("SendObjects hung")
	}
	if err == nil {
		t.Error("SendObjects sent a forged object")
	}
	if out, err := Open(cache).Run(ctx, "cat-file", "blob", blob); err == nil {
		t.Errorf("the cache holds %s as %q", blob, out)
	}

	// Honest objects go through, and only those the cache lacks.
	os.WriteFile(filepath.Join(wt, "b.txt"), []byte("honest again\n"), 0o644)
	r.AddAll(ctx)
	tree, _ = r.WriteTree(ctx)
	commit, _ = r.CommitTree(ctx, tree, "b again", main)
	if err := r.SendObjects(ctx, Open(cache), commit, main); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, cache, "show", commit+":b.txt"); got != "honest again" {
		t.Errorf("b.txt in the cache = %q", got)
	}
}

// Start starts every git process of a repository that has one.
func TestStartStartsEveryGit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cache, main := newCache(t)
	var started []string
	r := &Repo{Dir: cache, BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
		Start: func(cmd *exec.Cmd) (func(), error) {
			started = append(started, cmd.Args[1])
			for _, kv := range cmd.Env {
				if strings.HasPrefix(kv, "GIT_AUTHOR_NAME=") {
					t.Errorf("BaseEnv did not replace baton's environment: %s", kv)
				}
			}
			return func() {}, cmd.Start()
		}}
	if _, err := r.Run(ctx, "rev-parse", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.RunLimit(ctx, 10, "cat-file", "-p", main); err != nil {
		t.Fatal(err)
	}
	if strings.Join(started, " ") != "rev-parse cat-file" {
		t.Errorf("started %q", started)
	}
}

// A registration Register repairs is never without one of its files,
// not even for a moment: another worker sharing the cache may run git
// worktree prune (which forgets a registration without gitdir) or list
// the work trees' HEADs while it does.
func TestRegisterReplacesFilesInPlace(t *testing.T) {
	t.Parallel()
	cache, main := newCache(t)
	wt := filepath.Join(t.TempDir(), "wt")
	l, _, err := Register(cache, wt, "ref: refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	missing := make(chan string, 1)
	go func() {
		defer close(missing)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, n := range []string{"HEAD", "gitdir"} {
				if _, err := os.Lstat(filepath.Join(l.GitDir, n)); err != nil {
					missing <- n
					return
				}
			}
		}
	}()
	for i := 0; i < 200 && len(missing) == 0; i++ {
		head := main
		if i%2 == 1 {
			head = "ref: refs/heads/main"
		}
		if _, changed, err := Register(cache, wt, head); err != nil || !changed {
			t.Fatalf("Register to %s: changed %v, %v", head, changed, err)
		}
	}
	close(stop)
	if n, ok := <-missing; ok {
		t.Errorf("the registration's %s was missing while Register rewrote it", n)
	}
}
