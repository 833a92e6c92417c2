package gitx

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// plainRepo is a repository with commits one and two (two on a branch of
// its own), and a Repo on it with an Ident whose git sees an environment
// of the test's making: no dates, an identity from a global
// configuration file, the process's TZ. starts counts the git processes
// it starts.
func plainRepo(t *testing.T) (r *Repo, env []string, one, two string, starts *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "one")
	one = gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.Git(t, dir, "switch", "-q", "-c", "side")
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644)
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "two")
	two = gittest.Git(t, dir, "rev-parse", "HEAD")
	global := filepath.Join(t.TempDir(), "gitconfig")
	os.WriteFile(global, []byte("[user]\n\tname = \"Ada Q. Coder\"\n\temail = ada@example.org\n"), 0o644)
	env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_GLOBAL=" + global, "GIT_CONFIG_NOSYSTEM=1"}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	starts = new(atomic.Int64)
	r = &Repo{Dir: dir, BaseEnv: env, Ident: &Identity{}, Start: func(cmd *exec.Cmd) (func(), error) {
		starts.Add(1)
		return func() {}, cmd.Start()
	}}
	return r, env, one, two, starts
}

var signatureDate = regexp.MustCompile(`(?m)^author .* (\d+ [+-]\d{4})$`)

// A commit written in-process is the object git commit-tree makes of the
// same tree, parents, message and date, byte for byte: git, given the
// date, makes the same object name; git fsck finds nothing wrong; and
// after the first commit (git resolves the identity) none starts git.
func TestCommitTreeInProcessMatchesGit(t *testing.T) {
	t.Parallel()
	r, env, one, two, starts := plainRepo(t)
	tree := gittest.Git(t, r.Dir, "rev-parse", two+"^{tree}")
	authorEnv := []string{"GIT_AUTHOR_NAME=Someone Else", "GIT_AUTHOR_EMAIL=else@example.org"}
	for i, c := range []struct {
		name    string
		msg     string
		parents []string
		env     []string
	}{
		{"root", "subject\n\nbody line\n", nil, nil},
		{"one parent", "Plan: a title\n\nbaton delivery abcdef123456", []string{one}, nil},
		{"merge", "merge ünïcode ✓\n", []string{one, two}, nil},
		{"empty message", "", []string{two}, nil},
		{"author from the environment", "x\n", []string{one}, authorEnv},
	} {
		r.Env = c.env
		sha, err := r.CommitTree(t.Context(), tree, c.msg, c.parents...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		before := starts.Load()
		if _, err := r.CommitTree(t.Context(), tree, c.msg+"again", c.parents...); err != nil {
			t.Fatal(err)
		}
		if n := starts.Load() - before; n != 0 {
			t.Errorf("%s: a second commit started %d git processes", c.name, n)
		}
		body := gittest.Output(t, r.Dir, "cat-file", "commit", sha)
		m := signatureDate.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%s: no author date in\n%s", c.name, body)
		}
		args := []string{"commit-tree", tree}
		for _, p := range c.parents {
			args = append(args, "-p", p)
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = r.Dir
		cmd.Env = append(append(append([]string(nil), env...), c.env...), "GIT_AUTHOR_DATE="+m[1], "GIT_COMMITTER_DATE="+m[1])
		cmd.Stdin = strings.NewReader(c.msg)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: git commit-tree: %v\n%s", c.name, err, out)
		}
		if want := strings.TrimSpace(string(out)); sha != want {
			t.Errorf("%s (%d): in-process %s, git commit-tree %s\n%s", c.name, i, sha, want, body)
		}
		if got := gittest.Git(t, r.Dir, "cat-file", "-t", sha); got != "commit" {
			t.Errorf("%s: cat-file -t = %s", c.name, got)
		}
		if c.env != nil && !strings.Contains(body, "author Someone Else <else@example.org>") {
			t.Errorf("%s: the author is not the environment's:\n%s", c.name, body)
		}
		if c.env == nil && !strings.Contains(body, "committer Ada Q. Coder <ada@example.org>") {
			t.Errorf("%s: the committer is not the configuration's:\n%s", c.name, body)
		}
	}
	gittest.Git(t, r.Dir, "fsck", "--strict", "--no-dangling")
}

// Where git would do more than write a plain commit, it is asked: a time
// zone of git's own, dates of the caller's choosing, another encoding;
// and a commit for a private object directory is written there.
func TestCommitTreeGoesToGitWhereItMust(t *testing.T) {
	t.Parallel()
	r, _, one, two, starts := plainRepo(t)
	tree := gittest.Git(t, r.Dir, "rev-parse", two+"^{tree}")
	if _, err := r.CommitTree(t.Context(), tree, "warm\n", one); err != nil {
		t.Fatal(err)
	}

	tz := "Pacific/Chatham" // +1245 or +1345: no test machine's own
	if os.Getenv("TZ") == tz {
		tz = "Asia/Kolkata"
	}
	r.Env = []string{"TZ=" + tz}
	before := starts.Load()
	sha, err := r.CommitTree(t.Context(), tree, "zone\n", one)
	if err != nil {
		t.Fatal(err)
	}
	if starts.Load() == before {
		t.Error("a commit for git with a TZ of its own started no git")
	}
	if body := gittest.Output(t, r.Dir, "cat-file", "commit", sha); !regexp.MustCompile(`committer .* \+(1245|1345|0530)\n`).MatchString(body) {
		t.Errorf("the commit's date is not in %s:\n%s", tz, body)
	}

	r.Env = []string{"GIT_COMMITTER_DATE=1700000000 +0100", "GIT_AUTHOR_DATE=1700000000 +0100"}
	sha, err = r.CommitTree(t.Context(), tree, "dated\n", one)
	if err != nil {
		t.Fatal(err)
	}
	if body := gittest.Output(t, r.Dir, "cat-file", "commit", sha); !strings.Contains(body, "committer Ada Q. Coder <ada@example.org> 1700000000 +0100\n") {
		t.Errorf("the caller's date is not the commit's:\n%s", body)
	}

	private := t.TempDir()
	r.Env = []string{"GIT_OBJECT_DIRECTORY=" + private, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(r.Dir, ".git", "objects")}
	sha, err = r.CommitTree(t.Context(), tree, "private\n", one)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(private, sha[:2], sha[2:])); err != nil {
		t.Errorf("the commit is not in the private object directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, ".git", "objects", sha[:2], sha[2:])); err == nil {
		t.Error("the commit is in the repository's own object directory too")
	}

	r.Env = nil
	gittest.Git(t, r.Dir, "config", "i18n.commitEncoding", "ISO-8859-1")
	sha, err = r.CommitTree(t.Context(), tree, "encoded\n", one)
	if err != nil {
		t.Fatal(err)
	}
	if body := gittest.Output(t, r.Dir, "cat-file", "commit", sha); !strings.Contains(body, "\nencoding ISO-8859-1\n") {
		t.Errorf("with i18n.commitEncoding set, the commit has no encoding header:\n%s", body)
	}
}

// BenchmarkCommitTree is a commit written in-process and by git
// commit-tree, on the same tree and parent.
func BenchmarkCommitTree(b *testing.B) {
	for _, c := range []struct {
		name string
		env  []string
	}{{"in-process", nil}, {"git", []string{"GIT_COMMITTER_DATE=1700000000 +0000", "GIT_AUTHOR_DATE=1700000000 +0000"}}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			gittest.Git(b, dir, "init", "-q", "-b", "main")
			gittest.Git(b, dir, "commit", "-q", "--allow-empty", "-m", "one")
			one := gittest.Git(b, dir, "rev-parse", "HEAD")
			tree := gittest.Git(b, dir, "rev-parse", "HEAD^{tree}")
			r := &Repo{Dir: dir, Ident: &Identity{}, BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
				"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.org", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.org"}, Env: c.env}
			for i := 0; b.Loop(); i++ {
				if _, err := r.CommitTree(b.Context(), tree, "commit "+strconv.Itoa(i)+"\n", one); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A TZ the C library reads as a rule, and Go as UTC, is not written
// in-process; a zone of the database is.
func TestZoneKnown(t *testing.T) {
	t.Parallel()
	for tz, want := range map[string]bool{"": true, "UTC": true, "Asia/Kolkata": true, ":Asia/Kolkata": true,
		"EST5EDT,M3.2.0,M11.1.0": false, "<+0330>-3:30": false, "No/Such_Zone": false} {
		if got := zoneKnown(tz); got != want {
			t.Errorf("zoneKnown(%q) = %v, want %v", tz, got, want)
		}
	}
}

// In a process whose TZ is a POSIX rule, which git's C library reads and
// Go takes for UTC, a commit carries git's offset, not UTC's: the test
// runs itself again with that TZ.
func TestCommitTreeUnderRuleTZ(t *testing.T) {
	t.Parallel()
	const rule = "EST5EDT,M3.2.0,M11.1.0" // -0500 or -0400, never +0000
	if os.Getenv("TZ") != rule {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCommitTreeUnderRuleTZ$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TZ="+rule)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("under TZ=%s: %v\n%s", rule, err, out)
		}
		return
	}
	r, _, one, two, _ := plainRepo(t)
	tree := gittest.Git(t, r.Dir, "rev-parse", two+"^{tree}")
	sha, err := r.CommitTree(t.Context(), tree, "ruled\n", one)
	if err != nil {
		t.Fatal(err)
	}
	if body := gittest.Output(t, r.Dir, "cat-file", "commit", sha); !regexp.MustCompile(`committer .* -0[45]00\n`).MatchString(body) {
		t.Errorf("the commit's date is not in %s as git reads it:\n%s", rule, body)
	}
}
