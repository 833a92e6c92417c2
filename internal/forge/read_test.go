package forge_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

// localWork makes a local repository and a delivery of it whose work
// branch, made in the delivery's worktree, changes files.
func localWork(t *testing.T, files map[string]string) (*forge.Workspaces, *baton.Delivery) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	for name, text := range map[string]string{"keep.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n", "old.txt": strings.Repeat("a line that stays the same\n", 20)} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "initial")
	d := &baton.Delivery{ID: "abcdef123456", Repository: repo, Forge: baton.ForgeLocal}
	ws := &forge.Workspaces{Dir: t.TempDir()}
	co, err := ws.Checkout(t.Context(), d, forge.Local{})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		p := filepath.Join(co.Dir, name)
		if text == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(text, "symlink:"); ok {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := co.CommitChanges(t.Context(), "work"); err != nil {
		t.Fatal(err)
	}
	if _, err := co.Publish(t.Context()); err != nil {
		t.Fatal(err)
	}
	return ws, d
}

// A person approving sees the plan and the change as the work branch
// has them, bounded: every file with its status and counts, each patch
// cut at a line, the whole cut at its total, and files past the count
// left out, each cut said.
func TestWorkDiffAndPlan(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("added line with some words in it\n", 400) // ~13 KiB
	ws, d := localWork(t, map[string]string{
		"docs/plan.md": "1. Write greet.txt\n2. <script>alert(1)</script>\n",
		"keep.txt":     "one\n2\nthree\n",
		"gone.txt":     "",
		"new/big.txt":  big,
		"bin.dat":      "\x00\x01\x02binary",
		"old.txt":      "",
		"moved.txt":    strings.Repeat("a line that stays the same\n", 20),
	})
	plan, cut, err := ws.WorkFile(t.Context(), d, forge.PlanPath, 1<<20)
	if err != nil || cut || !strings.Contains(plan, "<script>alert(1)</script>") {
		t.Errorf("WorkFile(plan) = %q, %v, %v", plan, cut, err)
	}
	if _, cut, _ := ws.WorkFile(t.Context(), d, forge.PlanPath, 10); !cut {
		t.Error("WorkFile with a 10-byte limit did not say it cut the plan")
	}
	if _, _, err := ws.WorkFile(t.Context(), d, "no/such.md", 100); baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("WorkFile(missing) error = %v, want NotFound", err)
	}

	diff, err := ws.WorkDiff(t.Context(), d, forge.DiffLimits{Files: 100, PerFile: 4 << 10, Total: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Path, Old, Status string
		Added, Deleted    int
		Binary, Cut       bool
	}
	var got []row
	for _, f := range diff.Files {
		got = append(got, row{f.Path, f.OldPath, f.Status, f.Added, f.Deleted, f.Binary, f.Cut})
		if !f.Binary && f.Status != "R" && !strings.HasPrefix(f.Patch, "@@") {
			t.Errorf("%s: patch does not start at its first hunk: %q", f.Path, baton.Truncate(f.Patch, 80, "…"))
		}
		if len(f.Patch) > 4<<10 || (f.Patch != "" && !strings.HasSuffix(f.Patch, "\n")) {
			t.Errorf("%s: patch of %d bytes is over the limit or ends mid-line", f.Path, len(f.Patch))
		}
	}
	want := []row{
		{Path: "bin.dat", Status: "A", Binary: true},
		{Path: "gone.txt", Status: "D", Deleted: 1},
		{Path: "keep.txt", Status: "M", Added: 1, Deleted: 1},
		{Path: "moved.txt", Old: "old.txt", Status: "R"},
		{Path: "new/big.txt", Status: "A", Added: 400, Cut: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("WorkDiff files (-want +got):\n%s", d)
	}
	if diff.Added != 401 || diff.Deleted != 2 || diff.Base != "main" || diff.Work != d.WorkBranch() {
		t.Errorf("WorkDiff = +%d -%d %s..%s, want +401 -2 main..%s", diff.Added, diff.Deleted, diff.Base, diff.Work, d.WorkBranch())
	}
	// The plan is not merged locally: it is said apart, not counted.
	if !slices.Equal(diff.NotMerged, []string{forge.PlanPath}) {
		t.Errorf("WorkDiff NotMerged = %q, want the plan", diff.NotMerged)
	}

	// A small total: the patches stop at it, and the cut is said.
	small, err := ws.WorkDiff(t.Context(), d, forge.DiffLimits{Files: 100, PerFile: 4 << 10, Total: 600})
	if err != nil {
		t.Fatal(err)
	}
	if len(small.Files) != 5 || small.Omitted != 0 || !small.Cut {
		t.Errorf("WorkDiff with 600 bytes = %d files, %d omitted, cut %v; want 5, 0, true", len(small.Files), small.Omitted, small.Cut)
	}
	total := 0
	for _, f := range small.Files {
		total += len(f.Patch)
	}
	if total > 600 {
		t.Errorf("patches hold %d bytes, over the total of 600", total)
	}
	// Few files: the first are diffed, the rest only counted, by path
	// (the rename's two paths count as two: finding renames means
	// diffing everything).
	few, err := ws.WorkDiff(t.Context(), d, forge.DiffLimits{Files: 4, PerFile: 4 << 10, Total: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range few.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "bin.dat gone.txt keep.txt moved.txt" || few.Omitted != 2 || few.Cut || few.Files[2].Added != 1 || few.Files[2].Patch == "" ||
		!slices.Equal(few.NotMerged, []string{forge.PlanPath}) {
		t.Errorf("WorkDiff of 4 files = %v, %d omitted, cut %v, not merged %q; want the first four, 2 paths omitted, the plan apart", few.Files, few.Omitted, few.Cut, few.NotMerged)
	}
	// The same work and limits again come from the cache.
	if again, err := ws.WorkDiff(t.Context(), d, forge.DiffLimits{Files: 4, PerFile: 4 << 10, Total: 1 << 20}); err != nil || &again.Files[0] != &few.Files[0] {
		t.Errorf("WorkDiff again = %v, not the diff made before", err)
	}

	none := &baton.Delivery{ID: "000000000000", Repository: "/nowhere"}
	if _, err := ws.WorkDiff(t.Context(), none, forge.DefaultDiffLimits); baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("WorkDiff of a delivery with no cache: %v, want NotFound", err)
	}
}

// A file replaced by a link is one file to --raw but two patches to git
// diff (the file's deletion, the link's creation): every file after it
// still gets its own patch.
func TestWorkDiffTypeChange(t *testing.T) {
	t.Parallel()
	ws, d := localWork(t, map[string]string{"gone.txt": "symlink:keep.txt", "old.txt": "changed\n"})
	diff, err := ws.WorkDiff(t.Context(), d, forge.DefaultDiffLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(diff.Files) != 2 {
		t.Fatalf("WorkDiff files = %+v, want gone.txt and old.txt", diff.Files)
	}
	link, edit := diff.Files[0], diff.Files[1]
	if link.Path != "gone.txt" || link.Status != "T" || !strings.Contains(link.Patch, "-bye") || !strings.Contains(link.Patch, "+keep.txt") {
		t.Errorf("the type change = %s %s, patch %q", link.Status, link.Path, link.Patch)
	}
	if edit.Path != "old.txt" || !strings.Contains(edit.Patch, "+changed") || strings.Contains(edit.Patch, "keep.txt") {
		t.Errorf("the file after it = %s, patch %q; want its own change", edit.Path, edit.Patch)
	}
}

// FuzzParseRawNumstat: whatever git's output holds, the parser returns
// at most one file per raw record, never a negative count, and for
// records it builds itself it returns exactly them.
func FuzzParseRawNumstat(f *testing.F) {
	f.Add([]byte(":100644 100644 aaa bbb M\x00a.txt\x001\t2\ta.txt\x00"), "a.txt", 1, 2)
	f.Add([]byte(":100644 100644 aaa bbb R090\x00old\x00new\x000\t0\t\x00old\x00new\x00"), "x y", 0, 0)
	f.Fuzz(func(t *testing.T, raw []byte, name string, a, dl int) {
		files := forge.ParseRawNumstat(raw)
		if n := bytes.Count(raw, []byte(":")); len(files) > n {
			t.Fatalf("%d files from %d raw records", len(files), n)
		}
		for _, fd := range files {
			if fd.Added < 0 || fd.Deleted < 0 {
				t.Fatalf("negative count in %+v", fd)
			}
		}
		if strings.ContainsRune(name, 0) || name == "" || strings.HasPrefix(name, ":") || a < 0 || dl < 0 {
			return
		}
		rec := fmt.Sprintf(":100644 100644 aaa bbb M\x00%s\x00%d\t%d\t%s\x00", name, a, dl, name)
		rec = strings.Replace(rec, "\x00"+fmt.Sprint(a), "\x00"+fmt.Sprint(a), 1)
		got := forge.ParseRawNumstat([]byte(":100644 100644 aaa bbb M\x00" + name + "\x00" + fmt.Sprintf("%d\t%d\t%s\x00", a, dl, name)))
		want := []forge.FileDiff{{Path: name, Status: "M", Added: a, Deleted: dl}}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("ParseRawNumstat(%q) (-want +got):\n%s", rec, d)
		}
	})
}

// FuzzSplitPatch: splitting loses and adds nothing, and every part but
// a leading one starts a file.
func FuzzSplitPatch(f *testing.F) {
	f.Add([]byte("diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/y b/y\nBinary files a/y and b/y differ\n"))
	f.Add([]byte("diff --git a/l b/l\ndeleted file mode 100644\n@@ -1 +0,0 @@\n-a\ndiff --git a/l b/l\nnew file mode 120000\n@@ -0,0 +1 @@\n+x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parts := forge.SplitPatch(b)
		joined := bytes.Join(parts, nil)
		if !bytes.HasSuffix(b, joined) {
			t.Fatalf("parts do not rejoin into the end of the input")
		}
		if lead := b[:len(b)-len(joined)]; bytes.HasPrefix(lead, []byte("diff --git ")) || bytes.Contains(lead, []byte("\ndiff --git ")) {
			t.Fatalf("a file start in %q was dropped", lead)
		}
		for i, p := range parts {
			if !bytes.HasPrefix(p, []byte("diff --git ")) {
				t.Fatalf("part %q does not start a file", p)
			}
			if i > 0 && bytes.Equal(firstLine(p), firstLine(parts[i-1])) {
				t.Fatalf("two parts in a row under one header %q: one file's type change split in two", firstLine(p))
			}
		}
	})
}

// firstLine is b's first line with its newline, if it has one.
func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i+1]
	}
	return b
}

// Characters a reader cannot see, or that reorder what they see, are
// counted per file.
func TestWorkDiffCountsHiddenCharacters(t *testing.T) {
	ws, d := localWork(t, map[string]string{
		"access.go": "package p\n\n/* \u202e } \u2066if isAdmin\u2069 \u2066 begin admins only */\n",
		"zero.go":   "package p\n\nvar user\u200bname = 1\n",
		"plain.go":  "package p\n",
	})
	diff, err := ws.WorkDiff(t.Context(), d, forge.DefaultDiffLimits)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range diff.Files {
		got[f.Path] = f.Hidden
	}
	if want := map[string]int{"access.go": 4, "zero.go": 1, "plain.go": 0}; !maps.Equal(got, want) {
		t.Errorf("hidden characters per file = %v, want %v", got, want)
	}
}
