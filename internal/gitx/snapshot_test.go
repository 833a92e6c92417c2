package gitx

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

func TestSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
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

// FuzzParseStatusV2 builds `git status --porcelain=v2 --branch -z`
// output from a fuzzed model (branch headers, ordinary, unmerged, renamed
// and untracked entries, and lines the parser must skip) and checks that
// parsing it gives back exactly the model's branch, HEAD and changes.
// Paths may hold spaces and look like entries of their own ("1 x", "? y"),
// which a parser that loses its place in the fields would take as one.
func FuzzParseStatusV2(f *testing.F) {
	f.Add([]byte("main\x00abc\x00"), []byte("\x00a.go\x01R. new name\x00? old\x02x\x03y\x04UU c.go"))
	f.Add([]byte("\x00(initial)\x00"), []byte("\x021 fake\x00? also fake"))
	f.Fuzz(func(t *testing.T, header, entries []byte) {
		branch, oid, _ := strings.Cut(string(header), "\x00")
		oid, _, _ = strings.Cut(oid, "\x00")
		if strings.ContainsAny(branch+oid, "\x00") {
			return
		}
		var out strings.Builder
		want := &Snapshot{}
		if branch != "" {
			fmt.Fprintf(&out, "# branch.head %s\x00", branch)
			if branch != "(detached)" {
				want.Branch = branch
			}
		}
		if oid != "" {
			fmt.Fprintf(&out, "# branch.oid %s\x00", oid)
			if oid != "(initial)" {
				want.Head.SHA = oid
			}
		}
		out.WriteString("# branch.ab +1 -2\x00")
		xy := func(b byte) string {
			const codes = ".MTADRCU"
			return string([]byte{codes[int(b)%len(codes)], codes[int(b/8)%len(codes)]})
		}
		status := func(s string) string { return strings.ReplaceAll(s, ".", " ") }
		// Each entry: a kind byte, then its path (and for a rename the
		// original path after a \x00); entries are separated by \x01..\x04,
		// whose value picks the next entry's kind too.
		for _, e := range strings.FieldsFunc(string(entries), func(r rune) bool { return r >= 1 && r <= 4 }) {
			if e == "" {
				continue
			}
			kind, rest := e[0], e[1:]
			path, orig, _ := strings.Cut(rest, "\x00")
			orig, _, _ = strings.Cut(orig, "\x00")
			if path == "" {
				continue
			}
			switch code := xy(kind); kind % 4 {
			case 0:
				fmt.Fprintf(&out, "1 %s N... 100644 100644 100644 %s %s %s\x00", code, strings.Repeat("a", 40), strings.Repeat("b", 40), path)
				want.Changes = append(want.Changes, Change{Status: status(code), Path: path})
			case 1:
				fmt.Fprintf(&out, "2 %s N... 100644 100644 100644 %s %s R87 %s\x00%s\x00", code, strings.Repeat("c", 40), strings.Repeat("d", 40), path, orig)
				want.Changes = append(want.Changes, Change{Status: status(code), Path: path})
			case 2:
				fmt.Fprintf(&out, "u %s N... 100644 100644 100644 100644 %s %s %s %s\x00", code, strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40), path)
				want.Changes = append(want.Changes, Change{Status: status(code), Path: path})
			case 3:
				if kind%8 == 3 {
					fmt.Fprintf(&out, "? %s\x00", path)
					want.Changes = append(want.Changes, Change{Status: "??", Path: path})
				} else {
					fmt.Fprintf(&out, "! %s\x00", path) // ignored files are not changes
				}
			}
		}
		got := parseStatusV2(out.String())
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("parseStatusV2(%q) mismatch (-want +got):\n%s", out.String(), diff)
		}
	})
}

// In a work tree past WholeStatusFiles a snapshot checks only the paths
// it is given, each against HEAD, and says so; what it reports of them is
// what `git status` would.
func TestSnapshotPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"same.go", "changed.go", "deleted.go", "crlf.txt", "sub/deep.go", "other.go"} {
		write(f, f+"\n")
	}
	write(".gitattributes", "crlf.txt text eol=crlf\n")
	write(".gitignore", "build/\n")
	if err := os.Symlink("same.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "first: commit")
	write("changed.go", "changed\n")
	os.Remove(filepath.Join(dir, "deleted.go"))
	write("new.go", "new\n")
	write("build/out.go", "ignored\n")
	write("other.go", "changed, but not asked about\n")
	write("crlf.txt", "crlf.txt\r\n") // as the checkout wrote it: the same content to git
	os.Remove(filepath.Join(dir, "link"))
	if err := os.Symlink("changed.go", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	r := &Repo{Dir: dir, WholeStatusFiles: 1}
	paths := []string{"same.go", "changed.go", "deleted.go", "new.go", "build/out.go", "crlf.txt", "link", "sub/deep.go", "sub", "../outside.go", ".git/config", "never.go"}
	s, err := r.Snapshot(ctx, paths...)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head(ctx)
	if !s.Partial || s.Tracked != 9 || s.Branch != "main" || s.Head != head {
		t.Errorf("Snapshot = partial %v, tracked %d, branch %q, head %+v; want partial, 9 tracked, main, %+v", s.Partial, s.Tracked, s.Branch, s.Head, head)
	}
	want := []Change{{Status: "M", Path: "changed.go"}, {Status: "D", Path: "deleted.go"}, {Status: "A", Path: "new.go"}, {Status: "M", Path: "link"}}
	if diff := cmp.Diff(want, s.Changes); diff != "" {
		t.Errorf("Changes mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"same.go", "changed.go", "deleted.go", "new.go", "build/out.go", "crlf.txt", "link", "sub/deep.go", "never.go"}, s.Checked); diff != "" {
		t.Errorf("Checked mismatch (-want +got):\n%s", diff)
	}

	// From a subdirectory, paths are relative to it.
	s, err = (&Repo{Dir: filepath.Join(dir, "sub"), WholeStatusFiles: 1}).Snapshot(ctx, "deep.go", "../changed.go")
	if err != nil || len(s.Changes) != 1 || s.Changes[0] != (Change{Status: "M", Path: "../changed.go"}) {
		t.Errorf("Snapshot from sub = %+v, %v", s, err)
	}
	// Under the limit, the whole status, as before.
	if s, err := r2(dir).Snapshot(ctx, paths...); err != nil || s.Partial || len(s.Changes) < 5 {
		t.Errorf("whole Snapshot = %+v, %v", s, err)
	}
	// A detached HEAD, and no commits at all.
	gittest.Git(t, dir, "checkout", "-q", "--detach")
	if s, err := r.Snapshot(ctx); err != nil || s.Branch != "" || s.Head != head {
		t.Errorf("detached partial Snapshot = %+v, %v", s, err)
	}
	empty := t.TempDir()
	gittest.Git(t, empty, "init", "-q", "-b", "trunk")
	write2 := filepath.Join(empty, "a.go")
	os.WriteFile(write2, []byte("a\n"), 0o644)
	gittest.Git(t, empty, "add", "a.go")
	if s, err := (&Repo{Dir: empty, WholeStatusFiles: -1}).Snapshot(ctx, "a.go"); err != nil || s.Branch != "trunk" || s.Head.SHA != "" || len(s.Changes) != 1 || s.Changes[0].Status != "A" {
		t.Errorf("partial Snapshot of a repository without commits = %+v, %v", s, err)
	}
}

func r2(dir string) *Repo { return Open(dir) }

// FuzzParseBatchCheck: whatever cat-file prints, one answer per path
// asked, and a path is a file at HEAD only on a blob line.
func FuzzParseBatchCheck(f *testing.F) {
	f.Add("0123456789012345678901234567890123456789 blob 12\nHEAD:./x missing\n", 3)
	f.Fuzz(func(t *testing.T, out string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		got := parseBatchCheck(out, n)
		if len(got) != n {
			t.Fatalf("parseBatchCheck(%q, %d) gave %d answers", out, n, len(got))
		}
		lines := strings.Split(out, "\n")
		for i, o := range got {
			if o.name == "" {
				continue
			}
			if f := strings.Fields(lines[i]); len(f) != 3 || f[0] != o.name || f[1] != "blob" || !IsObjectName(o.name) {
				t.Fatalf("answer %d is %q from line %q", i, o.name, lines[i])
			}
		}
	})
}

func TestIndexEntries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		head string
		n    int
		ok   bool
	}{
		{"DIRC\x00\x00\x00\x02\x00\x01\x86\xa0", 100000, true},
		{"DIRC\x00\x00\x00\x04\x00\x00\x00\x07", 7, true},
		{"DIRC\x00\x00\x00\x05\x00\x00\x00\x07", 0, false},
		{"DIRX\x00\x00\x00\x02\x00\x00\x00\x07", 0, false},
		{"DIRC\x00\x00", 0, false},
	} {
		if n, ok := indexEntries([]byte(tt.head)); n != tt.n || ok != tt.ok {
			t.Errorf("indexEntries(%q) = %d, %v; want %d, %v", tt.head, n, ok, tt.n, tt.ok)
		}
	}
}

// A snapshot never writes the user's index: git status would refresh a
// stale one and take index.lock to do it, so a hook running beside the
// user's `git commit` could make it fail.
func TestSnapshotLeavesTheIndexAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	f := filepath.Join(dir, "a.go")
	if err := os.WriteFile(f, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", "a.go")
	gittest.Git(t, dir, "commit", "-q", "-m", "first")
	// The file's stat no longer matches the index; its content does.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir).Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the snapshot rewrote .git/index")
	}
}

// A packet's path through a linked directory names a file outside the
// work tree: a partial snapshot neither checks nor reports it, nor has
// git read it; a path whose name git would quote is still matched by
// check-ignore (so an ignored one is not called new).
func TestSnapshotPartialStaysInTheWorkTree(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	ctx := context.Background()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	for name, body := range map[string]string{"a.go": "a\n", ".gitignore": "*.log\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "first")
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "café.log"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := (&Repo{Dir: dir, WholeStatusFiles: 1}).Snapshot(ctx, "lnk/secret", "café.log", "a.go")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(s.Checked, "lnk/secret") || len(s.Changes) != 0 {
		t.Errorf("partial snapshot checked %q, changes %+v; want lnk/secret skipped and no change", s.Checked, s.Changes)
	}
}

// subjectMemory is a Subjects that keeps what it is told in a map.
type subjectMemory map[string]string

func (m subjectMemory) CommitSubject(sha string) (string, bool) {
	s, ok := m[sha]
	return s, ok
}

func (m subjectMemory) RememberCommitSubject(sha, subject string) { m[sha] = subject }

// A snapshot at a HEAD whose subject is remembered starts no `git log`,
// whole or partial, and gives the same Head; one at another HEAD asks git
// and remembers what it said.
func TestSnapshotRemembersHeadSubject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "first: commit")
	head, err := Open(dir).Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		whole int
		want  []string // the git commands a snapshot starts once the subject is known
	}{
		{"whole", 0, []string{"status"}},
		// Whether a file is ignored is asked only of one HEAD lacks.
		{"partial", -1, []string{"cat-file", "hash-object"}},
	} {
		subjects := subjectMemory{}
		var started []string
		var mu sync.Mutex
		r := &Repo{Dir: dir, WholeStatusFiles: tc.whole, Subjects: subjects, Start: func(cmd *exec.Cmd) (func(), error) {
			mu.Lock()
			started = append(started, cmd.Args[1])
			mu.Unlock()
			return func() {}, cmd.Start()
		}}
		snap := func() *Snapshot {
			t.Helper()
			started = nil
			s, err := r.Snapshot(ctx, "a.go")
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(started)
			return s
		}
		if s := snap(); s.Head != head || !slices.Contains(started, "log") {
			t.Errorf("%s: first snapshot: head %+v, git %v; want %+v from git log", tc.name, s.Head, started, head)
		}
		if subjects[head.SHA] != "first: commit" {
			t.Errorf("%s: remembered %v", tc.name, subjects)
		}
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if s := snap(); s.Head != head || !slices.Equal(started, want) {
			t.Errorf("%s: second snapshot: head %+v, git %v; want %+v and git %v", tc.name, s.Head, started, head, want)
		}
		if tc.whole < 0 {
			if err := os.WriteFile(filepath.Join(dir, "new.go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			started = nil
			s, err := r.Snapshot(ctx, "a.go", "new.go")
			slices.Sort(started)
			os.Remove(filepath.Join(dir, "new.go"))
			if want := []string{"cat-file", "check-ignore", "hash-object"}; err != nil || len(s.Changes) != 1 || !slices.Equal(started, want) {
				t.Errorf("%s: with a file HEAD lacks: %+v, %v, git %v; want it added and git %v", tc.name, s, err, started, want)
			}
		}
		// What is remembered of another commit is not taken for HEAD's.
		clear(subjects)
		subjects[strings.Repeat("0", 40)] = "not HEAD"
		if s := snap(); s.Head != head || !slices.Contains(started, "log") {
			t.Errorf("%s: with another commit's subject: head %+v, git %v", tc.name, s.Head, started)
		}
	}
}

// A branch that is ahead of its upstream and behind it snapshots as any
// other: the branch, HEAD and the changes, no distance from the upstream.
func TestSnapshotWithUpstream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up, down := t.TempDir(), t.TempDir()
	gittest.Git(t, up, "init", "-q", "-b", "main")
	gittest.Git(t, up, "commit", "-q", "--allow-empty", "-m", "base")
	gittest.Git(t, down, "clone", "-q", up, ".")
	gittest.Git(t, up, "commit", "-q", "--allow-empty", "-m", "upstream moved on")
	gittest.Git(t, down, "fetch", "-q")
	gittest.Git(t, down, "commit", "-q", "--allow-empty", "-m", "local: work")
	if err := os.WriteFile(filepath.Join(down, "new.go"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := gittest.Git(t, down, "status", "-sb"); !strings.Contains(out, "ahead 1, behind 1") {
		t.Fatalf("the clone is not ahead and behind: %s", out)
	}
	s, err := Open(down).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := Open(down).Head(ctx)
	want := []Change{{Status: "??", Path: "new.go"}}
	if s.Branch != "main" || s.Head != head || s.Head.Subject != "local: work" || !slices.Equal(s.Changes, want) {
		t.Errorf("Snapshot = %+v, want main at %+v with %v", s, head, want)
	}
}
