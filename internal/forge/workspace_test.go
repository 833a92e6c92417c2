package forge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// plantMonitor nests a repository in dir whose core.fsmonitor, run by
// any git status of dir, copies secret to stolen.
func plantMonitor(t testing.TB, dir, secret, stolen string) {
	t.Helper()
	nested := filepath.Join(dir, "nested")
	gittest.Git(t, dir, "init", "-q", nested)
	os.WriteFile(filepath.Join(nested, "f"), []byte("f\n"), 0o644)
	gittest.Git(t, nested, "add", "f")
	gittest.Git(t, nested, "commit", "-qm", "nested")
	monitor := filepath.Join(nested, ".git", "monitor")
	script := "#!/bin/sh\ncat " + secret + " > " + stolen + "\nexit 1\n"
	if err := os.WriteFile(monitor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, nested, "config", "core.fsmonitor", monitor)
}

// A repository an agent nests in its worktree runs its core.fsmonitor
// in baton's next git status there; confined, the monitor reads nothing
// of the data directory and writes nothing outside. Unconfined (the
// control) it does both, so the first half can fail.
func TestWorktreeGitIsConfined(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine processes: %s", st.Why)
	}
	for _, mode := range []sandbox.Mode{sandbox.ModeAuto, sandbox.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			ws, d := localWork(t, map[string]string{"feature.txt": "work\n"})
			ws.Sandbox = mode
			secret := filepath.Join(ws.Dir, "api-token")
			os.WriteFile(secret, []byte("SECRET\n"), 0o600)
			stolen := filepath.Join(t.TempDir(), "stolen")
			co, err := ws.Checkout(t.Context(), d, forge.Local{})
			if err != nil {
				t.Fatal(err)
			}
			plantMonitor(t, co.Dir, secret, stolen)
			// Committed as a gitlink: the nested repository stays.
			if _, _, err := co.CommitChanges(t.Context(), "work"); err != nil {
				t.Fatal(err)
			}
			if _, err := ws.Checkout(t.Context(), d, forge.Local{}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(stolen)
			switch {
			case mode == sandbox.ModeOff && string(b) != "SECRET\n":
				t.Fatalf("unconfined, the monitor did not run (%q, %v): the confined case shows nothing", b, err)
			case mode != sandbox.ModeOff && err == nil:
				t.Errorf("the nested repository's fsmonitor ran unconfined and wrote %q", b)
			}
		})
	}
}

// The commit baton makes in a worktree writes nothing through the links
// an agent left (COMMIT_EDITMSG, logs/HEAD, docs) and lands on the work
// branch in the cache whatever HEAD says.
func TestCommitChangesFollowsNoLink(t *testing.T) {
	t.Parallel()
	ws, d := localWork(t, map[string]string{"feature.txt": "work\n"})
	co, err := ws.Checkout(t.Context(), d, forge.Local{})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("victim\n"), 0o644)
	// What an agent could leave, had it write access to its git directory
	// (an unconfined one has).
	os.Symlink(victim, filepath.Join(co.Files.GitDir, "COMMIT_EDITMSG"))
	os.MkdirAll(filepath.Join(co.Files.GitDir, "logs"), 0o755)
	os.Symlink(victim, filepath.Join(co.Files.GitDir, "logs", "HEAD"))
	os.WriteFile(filepath.Join(co.Files.GitDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.RemoveAll(filepath.Join(co.Dir, "docs"))
	os.Symlink(outside, filepath.Join(co.Dir, "docs"))
	if err := co.WriteFile(forge.PlanPath, []byte("plan\n")); err == nil {
		t.Error("the plan was written through a link")
	}
	sha, committed, err := co.CommitChanges(t.Context(), "work")
	if err != nil || !committed {
		t.Fatalf("CommitChanges = %v, %v", committed, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
		t.Errorf("the file outside = %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries, want the victim alone", len(entries))
	}
	cache := ws.CacheDir(d.Repository)
	if got := gittest.Git(t, cache, "rev-parse", "refs/heads/"+d.WorkBranch()); got != sha {
		t.Errorf("the work branch is %s, want the commit %s", got, sha)
	}
	if got := gittest.Git(t, cache, "for-each-ref", "--format=%(refname)", "--contains", sha); got != "refs/heads/"+d.WorkBranch() {
		t.Errorf("refs holding the commit: %q, want the work branch alone (not main, where the agent's HEAD pointed)", got)
	}
	if got, err := co.Publish(t.Context()); err != nil || got != sha {
		t.Errorf("Publish = %s, %v, want %s", got, err, sha)
	}
	if got := gittest.Git(t, d.Repository, "show", d.WorkBranch()+":feature.txt"); got != "work" {
		t.Errorf("the source's work branch has feature.txt = %q", got)
	}
}

// benchConfinedAndNot runs each round of a benchmark in a delivery's
// checked-out worktree, with baton's git there confined and not.
func benchConfinedAndNot(b *testing.B, round func(b *testing.B, co *forge.Checkout, i int)) {
	if st := sandbox.Probe(); !st.Available() {
		b.Skipf("this kernel cannot confine processes: %s", st.Why)
	}
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeAuto} {
		name := "confined"
		if mode == sandbox.ModeOff {
			name = "unconfined"
		}
		b.Run(name, func(b *testing.B) {
			ws, d := benchWork(b)
			ws.Sandbox = mode
			co, err := ws.Checkout(b.Context(), d, forge.Local{})
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				round(b, co, i)
			}
		})
	}
}

// BenchmarkWorktreeGit is what confining baton's own git costs per
// command: one git status in a delivery's worktree, confined (as every
// git baton runs in a worktree is) and not.
func BenchmarkWorktreeGit(b *testing.B) {
	benchConfinedAndNot(b, func(b *testing.B, co *forge.Checkout, _ int) {
		if _, err := co.Dirty(b.Context()); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkWorktreeCommit is what baton's commit of an agent's work
// costs, its git in the worktree confined and not: one changed file in a
// worktree of 100, staged, recorded and checked into the cache.
func BenchmarkWorktreeCommit(b *testing.B) {
	benchConfinedAndNot(b, func(b *testing.B, co *forge.Checkout, i int) {
		os.WriteFile(filepath.Join(co.Dir, "changed.txt"), []byte(strings.Repeat("x", i)), 0o644)
		if _, committed, err := co.CommitChanges(b.Context(), "work"); err != nil || !committed {
			b.Fatal(committed, err)
		}
	})
}

// benchWork is a local repository of 100 files and a delivery of it.
func benchWork(b *testing.B) (*forge.Workspaces, *baton.Delivery) {
	b.Helper()
	repo := filepath.Join(b.TempDir(), "app")
	os.MkdirAll(repo, 0o755)
	gittest.Git(b, repo, "init", "-q", "-b", "main")
	for i := range 100 {
		os.WriteFile(filepath.Join(repo, "f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+".txt"), []byte("x\n"), 0o644)
	}
	gittest.Git(b, repo, "add", "-A")
	gittest.Git(b, repo, "commit", "-q", "-m", "initial")
	return &forge.Workspaces{Dir: b.TempDir()}, &baton.Delivery{ID: "abcdef123456", Repository: repo, Forge: baton.ForgeLocal}
}

// The rebase merge replays the work branch onto a base that moved, in
// the delivery's worktree (its git confined), and lands a line of
// commits: the work's, then nothing else, on top of the base's new head.
func TestLocalMergeRebase(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ModeAuto, sandbox.ModeOff} {
		t.Run(string(mode), func(t *testing.T) {
			ws, d := localWork(t, map[string]string{"feature.txt": "work\n"})
			ws.Sandbox = mode
			// The user commits on main meanwhile.
			os.WriteFile(filepath.Join(d.Repository, "theirs.txt"), []byte("theirs\n"), 0o644)
			gittest.Git(t, d.Repository, "add", "-A")
			gittest.Git(t, d.Repository, "commit", "-qm", "theirs")
			theirs := gittest.Git(t, d.Repository, "rev-parse", "main")
			base, work, err := ws.Work(t.Context(), d, forge.Local{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (forge.Local{}).Merge(t.Context(), d, ws, base, work, baton.MergeRebase); err != nil {
				t.Fatal(err)
			}
			if got := gittest.Git(t, d.Repository, "rev-parse", "main^"); got != theirs {
				t.Errorf("main^ = %s, want the user's commit %s: the work was not replayed on top", got, theirs)
			}
			if got := gittest.Git(t, d.Repository, "show", "main:feature.txt"); got != "work" {
				t.Errorf("main:feature.txt = %q", got)
			}
			if got := gittest.Git(t, d.Repository, "log", "-1", "--format=%s", "main"); got != "work" {
				t.Errorf("main's head is %q, want the work's own commit", got)
			}
		})
	}
}

// Counting the commits a phase added asks git only when the memo cannot
// tell: a commit baton made on the phase's start is one, and git is not
// asked (the cache's objects are moved aside to prove it); two commits
// are counted by git.
func TestCommitsBetweenFromTheMemo(t *testing.T) {
	t.Parallel()
	ws, d := localWork(t, map[string]string{"feature.txt": "work\n"})
	co, err := ws.Checkout(t.Context(), d, forge.Local{})
	if err != nil {
		t.Fatal(err)
	}
	start := co.Start
	if err := os.WriteFile(filepath.Join(co.Dir, "first.txt"), []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, committed, err := co.CommitChanges(t.Context(), "work")
	if err != nil || !committed {
		t.Fatalf("CommitChanges = %v, %v", committed, err)
	}
	objects := filepath.Join(ws.CacheDir(d.Repository), "objects")
	if err := os.Rename(objects, objects+".aside"); err != nil {
		t.Fatal(err)
	}
	n, err := co.CommitsBetween(t.Context(), start, first)
	if err := os.Rename(objects+".aside", objects); err != nil {
		t.Fatal(err)
	}
	if n != 1 || err != nil {
		t.Errorf("CommitsBetween(start, the commit baton made on it) = %d, %v; want 1 without git", n, err)
	}
	if err := os.WriteFile(filepath.Join(co.Dir, "more.txt"), []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, committed, err := co.CommitChanges(t.Context(), "more")
	if err != nil || !committed {
		t.Fatalf("CommitChanges = %v, %v", committed, err)
	}
	if n, err := co.CommitsBetween(t.Context(), start, second); n != 2 || err != nil {
		t.Errorf("CommitsBetween(start, two commits on) = %d, %v; want 2", n, err)
	}
	if n, err := co.CommitsBetween(t.Context(), first, start); n != 0 || err != nil {
		t.Errorf("CommitsBetween(the commit, its parent) = %d, %v; want 0", n, err)
	}
}
