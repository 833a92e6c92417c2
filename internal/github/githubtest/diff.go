package githubtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Diff writes a pull request's unified diff to w. The server calls it once
// per diff request and streams what it writes, so a generator can serve a
// 100 MB diff without the diff ever existing in memory.
type Diff func(w io.Writer) error

// DiffText serves s.
func DiffText(s string) Diff {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// DiffFile serves the file at path, read at request time.
func DiffFile(path string) Diff {
	return func(w io.Writer) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
}

// FileDiff renders files as GitHub renders a pull request's diff: a
// "diff --git" header per file, index and mode lines, then the file's
// patch. It is what a PullRequest without Diff serves.
func FileDiff(files []File) Diff {
	return func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		for _, f := range files {
			writeFileHeader(bw, f)
			if f.Patch != "" {
				bw.WriteString(f.Patch)
				if !strings.HasSuffix(f.Patch, "\n") {
					bw.WriteString("\n")
				}
			} else if f.Status != "removed" && f.Status != "added" {
				fmt.Fprintf(bw, "Binary files a/%s and b/%s differ\n", f.Filename, f.Filename)
			}
		}
		return bw.Flush()
	}
}

func writeFileHeader(w *bufio.Writer, f File) {
	old := f.Filename
	if f.PreviousFilename != "" {
		old = f.PreviousFilename
	}
	blob := f.SHA
	if len(blob) > 7 {
		blob = blob[:7]
	}
	fmt.Fprintf(w, "diff --git a/%s b/%s\n", old, f.Filename)
	switch f.Status {
	case "added":
		fmt.Fprintf(w, "new file mode 100644\nindex 0000000..%s\n--- /dev/null\n+++ b/%s\n", blob, f.Filename)
	case "removed":
		fmt.Fprintf(w, "deleted file mode 100644\nindex %s..0000000\n--- a/%s\n+++ /dev/null\n", blob, f.Filename)
	case "renamed":
		fmt.Fprintf(w, "similarity index 90%%\nrename from %s\nrename to %s\n", old, f.Filename)
		if f.Patch != "" {
			fmt.Fprintf(w, "--- a/%s\n+++ b/%s\n", old, f.Filename)
		}
	default:
		fmt.Fprintf(w, "index 1111111..%s 100644\n--- a/%s\n+++ b/%s\n", blob, f.Filename, f.Filename)
	}
}

// GenerateFiles returns n modified files, gen/file00001.go upward, each
// with a one-line addition in its patch: enough for pagination tests over
// thousands of files.
func GenerateFiles(n int) []File {
	files := make([]File, n)
	for i := range files {
		files[i] = File{
			Filename:  fmt.Sprintf("gen/file%05d.go", i+1),
			Status:    "modified",
			Additions: 1,
			Patch:     fmt.Sprintf("@@ -1,2 +1,3 @@\n package gen\n+// change %d\n \n", i+1),
		}
	}
	return files
}

// lineLen is the length of a generated "+..." line, newline included.
const lineLen = 64

// MinLargeDiffBytesPerFile is the smallest per-file budget LargeDiff
// accepts: room for the file header and one line.
const MinLargeDiffBytesPerFile = 256

// LargeDiff generates a diff of exactly size bytes spread over files
// files, each a new file whose added lines fill its share. It holds
// nothing in memory, so LargeDiff(5000, 100<<20) serves 100 MB. It panics
// when size < files*MinLargeDiffBytesPerFile, a bug in the test.
func LargeDiff(files int, size int64) Diff {
	if files <= 0 || size < int64(files)*MinLargeDiffBytesPerFile {
		panic(fmt.Sprintf("githubtest.LargeDiff(%d, %d): need at least %d bytes per file", files, size, MinLargeDiffBytesPerFile))
	}
	return func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 256<<10)
		line := []byte("+" + strings.Repeat("x", lineLen-2) + "\n")
		per := size / int64(files)
		for i := 0; i < files; i++ {
			budget := per
			if i == files-1 {
				budget = size - per*int64(files-1)
			}
			if err := writeGeneratedFile(bw, i+1, budget, line); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
}

// writeGeneratedFile writes one new file of exactly budget bytes: header,
// hunk header "@@ -0,0 +1,K @@", K-1 lines of lineLen bytes and a last line
// that takes the remainder (between lineLen and 2*lineLen-1 bytes).
func writeGeneratedFile(w *bufio.Writer, n int, budget int64, line []byte) error {
	name := fmt.Sprintf("gen/large%06d.txt", n)
	header := func(k int64) string {
		return fmt.Sprintf("diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..%07x\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n",
			name, name, n%0xfffffff, name, k)
	}
	// The line count appears in the header, so settle it by iterating:
	// its digit count changes at most once.
	k := max(budget/lineLen, 1)
	for range 3 {
		k = max((budget-int64(len(header(k))))/lineLen, 1)
	}
	h := header(k)
	body := budget - int64(len(h))
	last := body - (k-1)*lineLen
	if last < 2 {
		return fmt.Errorf("githubtest: file budget %d too small", budget)
	}
	if _, err := w.WriteString(h); err != nil {
		return err
	}
	for j := int64(0); j < k-1; j++ {
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	w.WriteByte('+')
	pad := last - 2
	for pad > 0 {
		c := min(pad, int64(len(line)-2))
		w.Write(line[1 : 1+c])
		pad -= c
	}
	return w.WriteByte('\n')
}

// countLines returns a changed-line total for the diff limit: additions
// plus deletions, as GitHub counts.
func countLines(files []File) int {
	n := 0
	for _, f := range files {
		n += f.Additions + f.Deletions
	}
	return n
}

// itoa is strconv.Itoa, shortened for the many JSON builders.
func itoa(n int) string { return strconv.Itoa(n) }
