package brief

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var markerRE = regexp.MustCompile(`^\[\.\.\. (\d+) more lines not shown\]\n`)

// checkExcerpt asserts what every excerpt must hold: within its budget,
// each shown file a line-bounded prefix of the file, the text exactly the
// shown prefixes in diff order with a marker after each cut file, and
// valid UTF-8 wherever the input was.
func checkExcerpt(t *testing.T, in []byte, idx *DiffIndex, ex *Excerpt) {
	t.Helper()
	if ex.Used > ex.Budget {
		t.Fatalf("excerpt uses %d bytes, budget %d", ex.Used, ex.Budget)
	}
	if int64(len(ex.Text)) != ex.Used {
		t.Fatalf("Used = %d, text has %d bytes", ex.Used, len(ex.Text))
	}
	rest := ex.Text
	for i, f := range idx.Files {
		fe := ex.Files[i]
		switch {
		case fe.Shown == 0 && fe.Outcome != omitted,
			fe.Shown == f.Size() && fe.Outcome != full,
			fe.Shown > 0 && fe.Shown < f.Size() && fe.Outcome != cut,
			fe.Shown > f.Size():
			t.Fatalf("file %d: outcome %s with %d of %d bytes", i, fe.Outcome, fe.Shown, f.Size())
		}
		end := f.Start + fe.Shown
		if fe.Outcome == cut && in[end-1] != '\n' {
			t.Fatalf("file %d cut at %d, not after a newline", i, end)
		}
		prefix := string(in[f.Start:end])
		if !strings.HasPrefix(rest, prefix) {
			t.Fatalf("file %d: text does not continue with the file's prefix", i)
		}
		rest = rest[len(prefix):]
		if fe.Outcome == cut {
			m := markerRE.FindStringSubmatch(rest)
			if m == nil {
				t.Fatalf("file %d cut without a marker; text continues %q", i, rest[:min(len(rest), 40)])
			}
			if want := fmt.Sprint(f.Lines - fe.ShownLines); m[1] != want {
				t.Fatalf("file %d marker says %s more lines, want %s", i, m[1], want)
			}
			rest = rest[len(m[0]):]
		}
	}
	if rest != "" {
		t.Fatalf("text has %d bytes after the last file", len(rest))
	}
	if utf8.Valid(in) && !utf8.ValidString(ex.Text) {
		t.Fatalf("excerpt of valid UTF-8 is not valid UTF-8")
	}
}

func excerpt(t *testing.T, diff string, budget int64) (*DiffIndex, *Excerpt) {
	t.Helper()
	idx, err := IndexDiff(strings.NewReader(diff), nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := excerptDiff(idx, strings.NewReader(diff), budget)
	if err != nil {
		t.Fatal(err)
	}
	checkExcerpt(t, []byte(diff), idx, ex)
	return idx, ex
}

func outcomes(idx *DiffIndex, ex *Excerpt) map[string]Outcome {
	m := map[string]Outcome{}
	for i, f := range idx.Files {
		m[f.Path] = ex.Files[i].Outcome
	}
	return m
}

// newFile renders an added file of n lines, each line text.
func newFile(path string, n int, line string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, n)
	for range n {
		b.WriteString("+" + line + "\n")
	}
	return b.String()
}

// modFile renders a modified file with hunks of the given sizes.
func modFile(path string, hunks ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	for h, n := range hunks {
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h*100+1, n, h*100+1, n)
		for i := range n {
			fmt.Fprintf(&b, "+%s hunk %d line %d\n", path, h, i)
		}
	}
	return b.String()
}

func TestExcerptWholeDiffFits(t *testing.T) {
	t.Parallel()
	idx, ex := excerpt(t, sampleDiff, int64(len(sampleDiff)))
	if ex.Text != sampleDiff || ex.Truncated() {
		t.Errorf("ExcerptDiff(budget = size) truncated = %v, text equal = %v; want the whole diff", ex.Truncated(), ex.Text == sampleDiff)
	}
	for i, f := range ex.Files {
		if f.ShownLines != idx.Files[i].Lines {
			t.Errorf("file %s shows %d of %d lines", idx.Files[i].Path, f.ShownLines, idx.Files[i].Lines)
		}
	}
}

// A huge new file first in the diff must not starve the small files after
// it: every file gets its header and first hunk (or a fair share of it)
// before any file gets more.
func TestExcerptPerFileFairness(t *testing.T) {
	t.Parallel()
	diff := newFile("big/schema.sql", 5000, strings.Repeat("x", 60)) +
		modFile("a.go", 3, 4) +
		modFile("b.go", 5) +
		modFile("c.go", 2, 200)
	idx, ex := excerpt(t, diff, 8<<10)
	got := outcomes(idx, ex)
	want := map[string]Outcome{"big/schema.sql": cut, "a.go": cut, "b.go": full, "c.go": cut}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("outcomes mismatch (-want +got):\n%s", d)
	}
	// a.go and c.go show their whole first hunk; the big file gets what
	// the first hunks leave, not everything.
	for _, i := range []int{1, 3} {
		f := idx.Files[i]
		if end := f.Start + ex.Files[i].Shown; end < f.FirstHunkEnd {
			t.Errorf("%s shows %d bytes, less than its first hunk (%d)", f.Path, ex.Files[i].Shown, f.FirstHunkEnd-f.Start)
		}
	}
	if ex.Used < ex.Budget-2*markerReserve-100 {
		t.Errorf("excerpt uses %d of %d bytes; the room should be spent", ex.Used, ex.Budget)
	}

	// With room for little more than the headers, the small first hunks
	// are shown whole and the big one gets what they leave.
	headers := int64(0)
	for _, f := range idx.Files {
		headers += f.HunkBody - f.Start + markerReserve
	}
	_, ex = excerpt(t, diff, headers+600)
	for i, f := range idx.Files[1:] {
		if end := f.Start + ex.Files[i+1].Shown; end < f.FirstHunkEnd {
			t.Errorf("%s shows %d bytes, less than its small first hunk (%d)", f.Path, ex.Files[i+1].Shown, f.FirstHunkEnd-f.Start)
		}
	}

	// Several big first hunks share the room evenly (to a line) instead
	// of the first taking it all.
	diff = newFile("one.sql", 500, strings.Repeat("1", 60)) + newFile("two.sql", 500, strings.Repeat("2", 60)) +
		newFile("three.sql", 500, strings.Repeat("3", 60)) + newFile("four.sql", 500, strings.Repeat("4", 60))
	idx, _ = excerpt(t, diff, 1<<20)
	headers = 0
	for _, f := range idx.Files {
		headers += f.HunkBody - f.Start + markerReserve
	}
	idx, ex = excerpt(t, diff, headers+4000)
	for i, f := range idx.Files {
		body := ex.Files[i].Shown - (f.HunkBody - f.Start)
		if body < 1000-61 || body > 1000 {
			t.Errorf("%s shows %d bytes of its first hunk with 4000 shared among 4; want 1000 to a line", f.Path, body)
		}
	}
}

// Normal files come before generated, vendored and lock files, whatever
// the diff order.
func TestExcerptPriority(t *testing.T) {
	t.Parallel()
	diff := modFile("go.sum", 50) +
		modFile("vendor/x/y.go", 50) +
		modFile("api/api.pb.go", 50) +
		modFile("main.go", 50) +
		modFile("util.go", 50)
	idx, _ := excerpt(t, diff, 1<<20)
	size := func(i int) int64 { return idx.Files[i].Size() }
	tests := []struct {
		name   string
		budget int64
		want   map[string]Outcome
	}{
		{"normal files first", size(3) + size(4) + 5*200, map[string]Outcome{"main.go": full, "util.go": full, "api/api.pb.go": cut, "vendor/x/y.go": cut, "go.sum": cut}},
		{"then generated", size(3) + size(4) + size(2) + 4*200, map[string]Outcome{"main.go": full, "util.go": full, "api/api.pb.go": full, "vendor/x/y.go": cut, "go.sum": cut}},
		{"lock last", size(3) + size(4) + size(2) + size(1) + 200, map[string]Outcome{"main.go": full, "util.go": full, "api/api.pb.go": full, "vendor/x/y.go": full, "go.sum": cut}},
		{"only headers of normal", 2 * (idx.Files[3].HunkBody - idx.Files[3].Start + markerReserve), map[string]Outcome{"main.go": cut, "util.go": cut, "api/api.pb.go": omitted, "vendor/x/y.go": omitted, "go.sum": omitted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, ex := excerpt(t, diff, tt.budget)
			if d := cmp.Diff(tt.want, outcomes(idx, ex)); d != "" {
				t.Errorf("ExcerptDiff(budget %d) outcomes mismatch (-want +got):\n%s", tt.budget, d)
			}
		})
	}
}

// Every budget from nothing to the whole diff keeps the invariants, and
// lines of multi-byte characters are never split, whatever byte the
// budget ends on.
func TestExcerptEveryBudgetMultiByte(t *testing.T) {
	t.Parallel()
	diff := newFile("ja.txt", 6, "日本語のテキスト") + modFile("b.go", 2, 2) + newFile("emoji.md", 4, "🎉🎉 done")
	for budget := int64(0); budget <= int64(len(diff))+10; budget++ {
		_, ex := excerpt(t, diff, budget)
		for _, line := range strings.SplitAfter(ex.Text, "\n") {
			if line != "" && !strings.HasSuffix(line, "\n") {
				t.Fatalf("budget %d: text ends inside a line: %q", budget, line)
			}
		}
	}
}

func TestExcerptLongLineIsNotSplit(t *testing.T) {
	t.Parallel()
	diff := newFile("app.js", 2, strings.Repeat("é", 3000)) // one 6 KB line per line
	idx, ex := excerpt(t, diff, 4000)
	if ex.Files[0].Outcome != cut || ex.Files[0].Shown != idx.Files[0].HunkBody-idx.Files[0].Start {
		t.Errorf("a line longer than the room: shown %d bytes (%s), want the header only", ex.Files[0].Shown, ex.Files[0].Outcome)
	}
}

func TestExcerptZeroBudget(t *testing.T) {
	t.Parallel()
	idx, ex := excerpt(t, sampleDiff, 0)
	if ex.Text != "" || ex.Used != 0 {
		t.Errorf("ExcerptDiff(0) = %q", ex.Text)
	}
	for i := range idx.Files {
		if ex.Files[i].Outcome != omitted {
			t.Errorf("file %s: %s, want omitted", idx.Files[i].Path, ex.Files[i].Outcome)
		}
	}
}

func FuzzExcerptDiff(f *testing.F) {
	f.Add([]byte(sampleDiff), int64(500))
	f.Add([]byte(newFile("a", 3, "ü")+modFile("b", 1, 1)), int64(120))
	f.Fuzz(func(t *testing.T, in []byte, budget int64) {
		budget %= int64(len(in)) + 64
		idx, err := IndexDiff(bytes.NewReader(in), nil)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := excerptDiff(idx, bytes.NewReader(in), budget)
		if err != nil {
			t.Fatal(err)
		}
		checkExcerpt(t, in, idx, ex)
	})
}
