package gitx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gitx/gittest"
)

func mustLayout(t *testing.T, dir string) Layout {
	t.Helper()
	l, err := FindLayout(dir)
	if err != nil {
		t.Fatalf("FindLayout(%s) = %v", dir, err)
	}
	return l
}

// Refs read from files agree with git's own answers, loose and packed, in
// a work tree, a bare repository and a linked worktree.
func TestReadRefMatchesGit(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(repo, 0o755)
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a"), []byte("a"), 0o644)
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "one")
	gittest.Git(t, repo, "branch", "baton/abc")
	gittest.Git(t, repo, "tag", "-a", "-m", "annotated", "v1")
	gittest.Git(t, repo, "pack-refs", "--all") // everything packed, tags peeled
	os.WriteFile(filepath.Join(repo, "a"), []byte("b"), 0o644)
	gittest.Git(t, repo, "commit", "-qam", "two") // main loose again, newer than packed
	gittest.Git(t, repo, "branch", "loose")
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "side", wt)
	bare := filepath.Join(t.TempDir(), "bare.git")
	gittest.Git(t, repo, "clone", "-q", "--bare", repo, bare)

	for _, dir := range []string{repo, wt, bare} {
		l := mustLayout(t, dir)
		for _, ref := range []string{"refs/heads/main", "refs/heads/baton/abc", "refs/heads/loose", "refs/heads/side", "refs/tags/v1"} {
			want, _ := gitRefValue(t, dir, ref)
			got, ok, err := l.ReadRef(ref)
			if err != nil || got != want || ok != (want != "") {
				t.Errorf("%s: ReadRef(%s) = %q, %v, %v; git says %q", dir, ref, got, ok, err, want)
			}
		}
		if _, ok, err := l.ReadRef("refs/heads/baton"); ok || err != nil {
			t.Errorf("%s: ReadRef of a ref directory = %v, %v", dir, ok, err)
		}
		if _, ok, err := l.ReadRef("refs/heads/main/x"); ok || err != nil {
			t.Errorf("%s: ReadRef below a ref file = %v, %v", dir, ok, err)
		}
		branch, sha, err := l.Head()
		wantBranch := gittest.Git(t, dir, "symbolic-ref", "--short", "HEAD")
		wantSHA, _ := gitRefValue(t, dir, "HEAD")
		if err != nil || branch != wantBranch || sha != wantSHA {
			t.Errorf("%s: Head() = %q %q %v, want %q %q", dir, branch, sha, err, wantBranch, wantSHA)
		}
	}
	// A detached worktree.
	gittest.Git(t, wt, "checkout", "-q", "--detach", "HEAD~1")
	if b, sha, err := mustLayout(t, wt).Head(); b != "" || sha != gittest.Git(t, wt, "rev-parse", "HEAD") || err != nil {
		t.Errorf("detached Head() = %q %q %v", b, sha, err)
	}
	// A symbolic ref that is not HEAD is left to git.
	gittest.Git(t, repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	if _, _, err := mustLayout(t, repo).ReadRef("refs/heads/alias"); !errors.Is(err, ErrRefFormat) {
		t.Errorf("ReadRef of a symbolic ref = %v, want ErrRefFormat", err)
	}
	if _, err := FindLayout(t.TempDir()); !errors.Is(err, ErrRefFormat) {
		t.Errorf("FindLayout of a plain directory = %v, want ErrRefFormat", err)
	}
}

// gitRefValue is what git resolves ref to, "" when it does not exist.
func gitRefValue(t *testing.T, dir, ref string) (string, bool) {
	t.Helper()
	out, err := Open(dir).Run(t.Context(), "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(out), true
}

// packedRefs renders refs in git's packed-refs format, peeled lines after
// every tag.
func packedRefs(refs map[string]string) string {
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", refs[n], n)
		if strings.HasPrefix(n, "refs/tags/") {
			fmt.Fprintf(&b, "^%s\n", strings.Repeat("e", 40))
		}
	}
	return b.String()
}

// lookupPackedRef finds every ref of a rendered file with its own value,
// and nothing else.
func FuzzLookupPackedRef(f *testing.F) {
	f.Add("refs/heads/main", "refs/tags/v1", "refs/heads/baton/abc", uint8(3))
	f.Add("refs/heads/a", "refs/heads/a/b", "refs/heads/ab", uint8(200))
	f.Fuzz(func(t *testing.T, a, b, c string, seed uint8) {
		refs := map[string]string{}
		for i, n := range []string{a, b, c} {
			if n == "" || strings.ContainsAny(n, " \n\r^#") {
				continue
			}
			refs[n] = fmt.Sprintf("%040x", int(seed)*7+i+1)
		}
		file := packedRefs(refs)
		for n, want := range refs {
			got, ok, err := lookupPackedRef(strings.NewReader(file), n)
			if err != nil || !ok || got != want {
				t.Fatalf("lookup %q = %q %v %v, want %q in\n%s", n, got, ok, err, want, file)
			}
		}
		missing := a + "-missing"
		if _, ok := refs[missing]; !ok {
			if got, ok, err := lookupPackedRef(strings.NewReader(file), missing); ok || err != nil {
				t.Fatalf("lookup of absent %q = %q %v %v", missing, got, ok, err)
			}
		}
		// Any input: an answer is a full object name from a line naming
		// the ref.
		got, ok, err := lookupPackedRef(strings.NewReader(a+"\n"+b), c)
		if ok && (!IsObjectName(got) || !strings.Contains(a+"\n"+b, got+" "+c)) {
			t.Fatalf("lookup %q in %q = %q %v %v", c, a+"\n"+b, got, ok, err)
		}
	})
}
