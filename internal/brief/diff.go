package brief

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// FileClass ranks a changed file for the diff budget: normal files are
// shown first, then generated, vendored and lock files, which a reviewer
// rarely needs line by line.
type FileClass int

// The classes, in the order the diff budget serves them.
const (
	classNormal FileClass = iota
	classGenerated
	classVendored
	classLock
)

var classNames = [...]string{"normal", "generated", "vendored", "lock"}

// String returns "normal", "generated", "vendored" or "lock".
func (c FileClass) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return fmt.Sprintf("FileClass(%d)", int(c))
	}
	return classNames[c]
}

// MarshalText makes a class read as its name in JSON.
func (c FileClass) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// DiffFile is one file's part of a unified diff in git's format, as byte
// offsets into the diff:
//
//	[Start, HunkStart)         the header: "diff --git", mode, index, ---/+++ lines
//	[HunkStart, HunkBody)      the first hunk's "@@" line
//	[HunkBody, FirstHunkEnd)   the first hunk's lines
//	[FirstHunkEnd, End)        every further hunk
//
// A file without hunks (binary, a pure rename or mode change, an empty new
// file) has HunkStart = HunkBody = FirstHunkEnd = End. Every offset except
// FirstHunkEnd and End of the last file at the end of the input lies at a
// line boundary.
type DiffFile struct {
	// Path is the file's path after the change; for a deleted file, its
	// path before.
	Path string `json:"path"`
	// OldPath is the path before a rename or copy, else empty.
	OldPath string `json:"old_path,omitempty"`
	// Status is added, deleted, renamed, copied, mode (only the mode
	// changed) or modified.
	Status string    `json:"status"`
	Binary bool      `json:"binary,omitempty"`
	Class  FileClass `json:"class"`

	Start        int64 `json:"-"`
	HunkStart    int64 `json:"-"`
	HunkBody     int64 `json:"-"`
	FirstHunkEnd int64 `json:"-"`
	End          int64 `json:"-"`

	// Lines is the number of lines in [Start, End), HeaderLines those in
	// [Start, HunkBody): the header and the first "@@" line. Hunks is the
	// number of "@@" hunks.
	Lines       int `json:"lines"`
	HeaderLines int `json:"header_lines"`
	Hunks       int `json:"hunks"`

	generatedMark bool // a "Code generated ... DO NOT EDIT" line in the first hunk
	renamed       bool
	copied        bool
	added         bool
	deleted       bool
	modeChange    bool
}

// Size is the file's length in the diff.
func (f *DiffFile) Size() int64 { return f.End - f.Start }

// DiffIndex locates every file of a diff.
type DiffIndex struct {
	// Preamble is the number of bytes before the first "diff --git" line:
	// 0 for what GitHub and git print, everything for input that is not a
	// git diff.
	Preamble int64
	Files    []DiffFile
	// Size is the diff's length in bytes.
	Size int64
}

// maxHead bounds how much of one line the indexer keeps for parsing. Header
// lines (paths) are far shorter; content lines are only looked at for
// their first bytes.
const maxHead = 4096

// chunkSize is how much the indexer reads at once.
const chunkSize = 256 << 10

// generatedProbeLines is how many lines of a file's first hunk are searched
// for a "Code generated ... DO NOT EDIT" marker: it sits at the top of a
// file, and looking further would cost time on huge diffs for nothing.
const generatedProbeLines = 30

// IndexDiff reads a unified diff in git's format (what GitHub serves for
// the diff media type and what `git diff` prints) from r, copies every byte
// to w when w is not nil, and returns where each file and its first hunk
// begin and end. It keeps no more than one chunk and one line prefix in
// memory, so a 100 MB diff costs no more than a small one. Renames, copies,
// binary files, mode changes, "\ No newline at end of file", CRLF line
// endings and git's quoted paths are understood. It fails only when r or w
// fails.
func IndexDiff(r io.Reader, w io.Writer) (*DiffIndex, error) {
	return indexDiff(r, w, chunkSize)
}

func indexDiff(r io.Reader, w io.Writer, bufSize int) (*DiffIndex, error) {
	x := &indexer{idx: &DiffIndex{}, cur: -1}
	buf := make([]byte, bufSize)
	var pos int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if w != nil {
				if _, werr := w.Write(chunk); werr != nil {
					return nil, fmt.Errorf("copy diff: %w", werr)
				}
			}
			x.feed(chunk, pos)
			pos += int64(n)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	x.finish(pos)
	return x.idx, nil
}

type indexer struct {
	idx *DiffIndex
	cur int // index of the file being read, -1 before the first

	// The line being read.
	inLine    bool
	lineStart int64
	head      []byte

	probe int // first-hunk lines left to search for a generated marker
}

// feed scans one chunk that starts at offset base.
func (x *indexer) feed(chunk []byte, base int64) {
	for i := 0; i < len(chunk); {
		if !x.inLine {
			x.inLine = true
			x.lineStart = base + int64(i)
			x.head = x.head[:0]
		}
		seg := chunk[i:]
		nl := bytes.IndexByte(seg, '\n')
		if nl >= 0 {
			seg = seg[:nl+1]
		}
		if room := maxHead - len(x.head); room > 0 {
			x.head = append(x.head, seg[:min(room, len(seg))]...)
		}
		i += len(seg)
		if nl >= 0 {
			x.endLine(base + int64(i))
		}
	}
}

// finish closes the last line and file at the end of the input.
func (x *indexer) finish(size int64) {
	if x.inLine {
		x.endLine(size)
	}
	x.idx.Size = size
	if x.cur < 0 {
		x.idx.Preamble = size
		return
	}
	x.closeFile(size)
}

// endLine handles the complete line [x.lineStart, end).
func (x *indexer) endLine(end int64) {
	x.inLine = false
	line := x.head
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	start := x.lineStart

	if bytes.HasPrefix(line, []byte("diff --git ")) {
		if x.cur < 0 {
			x.idx.Preamble = start
		} else {
			x.closeFile(start)
		}
		x.idx.Files = append(x.idx.Files, DiffFile{Start: start, HunkStart: -1, HunkBody: -1, FirstHunkEnd: -1})
		x.cur = len(x.idx.Files) - 1
		f := &x.idx.Files[x.cur]
		f.OldPath, f.Path = parseGitLine(string(line[len("diff --git "):]))
		f.Lines = 1
		return
	}
	if x.cur < 0 {
		return // preamble
	}
	f := &x.idx.Files[x.cur]
	f.Lines++
	if bytes.HasPrefix(line, []byte("@@")) {
		f.Hunks++
		switch f.Hunks {
		case 1:
			f.HunkStart, f.HunkBody = start, end
			f.HeaderLines = f.Lines
			x.probe = generatedProbeLines
		case 2:
			f.FirstHunkEnd = start
			x.probe = 0
		}
		return
	}
	if f.Hunks == 0 {
		parseHeaderLine(f, string(line))
		return
	}
	if x.probe > 0 {
		x.probe--
		if len(line) > 0 && isGeneratedMarker(line[1:]) {
			f.generatedMark = true
			x.probe = 0
		}
	}
}

// closeFile settles the offsets and class of the current file at end.
func (x *indexer) closeFile(end int64) {
	f := &x.idx.Files[x.cur]
	f.End = end
	if f.HunkStart < 0 {
		f.HunkStart, f.HunkBody = end, end
		f.HeaderLines = f.Lines
	}
	if f.FirstHunkEnd < 0 {
		f.FirstHunkEnd = end
	}
	switch {
	case f.added:
		f.Status = "added"
	case f.deleted:
		f.Status = "deleted"
	case f.renamed:
		f.Status = "renamed"
	case f.copied:
		f.Status = "copied"
	case f.modeChange && f.Hunks == 0 && !f.Binary:
		f.Status = "mode"
	default:
		f.Status = "modified"
	}
	if f.OldPath == f.Path || (!f.renamed && !f.copied) {
		f.OldPath = ""
	}
	f.Class = classify(f.Path, f.generatedMark)
	x.probe = 0
}

// parseHeaderLine reads one extended header line of git's diff format.
func parseHeaderLine(f *DiffFile, line string) {
	cut := func(prefix string) (string, bool) {
		if strings.HasPrefix(line, prefix) {
			return line[len(prefix):], true
		}
		return "", false
	}
	if _, ok := cut("new file mode "); ok {
		f.added = true
	} else if _, ok := cut("deleted file mode "); ok {
		f.deleted = true
	} else if _, ok := cut("old mode "); ok {
		f.modeChange = true
	} else if _, ok := cut("new mode "); ok {
		f.modeChange = true
	} else if p, ok := cut("rename from "); ok {
		f.renamed, f.OldPath = true, unquotePath(p)
	} else if p, ok := cut("rename to "); ok {
		f.renamed, f.Path = true, unquotePath(p)
	} else if p, ok := cut("copy from "); ok {
		f.copied, f.OldPath = true, unquotePath(p)
	} else if p, ok := cut("copy to "); ok {
		f.copied, f.Path = true, unquotePath(p)
	} else if p, ok := cut("--- "); ok {
		if p = diffPath(p, "a/"); p != "" {
			f.OldPath = p
		}
	} else if p, ok := cut("+++ "); ok {
		if p = diffPath(p, "b/"); p != "" {
			f.Path = p
		} else {
			f.deleted = true
			if f.OldPath != "" {
				f.Path = f.OldPath
			}
		}
	} else if strings.HasPrefix(line, "Binary files ") || line == "GIT binary patch" {
		f.Binary = true
	}
}

// diffPath reads the path of a ---/+++ line: "" for /dev/null. Git appends
// a tab when the name contains a space.
func diffPath(p, prefix string) string {
	p = strings.TrimSuffix(p, "\t")
	if p == "/dev/null" {
		return ""
	}
	p = unquotePath(p)
	return strings.TrimPrefix(p, prefix)
}

// parseGitLine reads the two paths of "diff --git a/OLD b/NEW" (the part
// after "diff --git "). The line is ambiguous when names contain " b/";
// the header lines that follow (rename, ---/+++) settle the names, so this
// is only the fallback for files without them (binary, mode changes).
func parseGitLine(s string) (oldPath, newPath string) {
	if strings.HasPrefix(s, `"`) {
		a, rest, ok := cutQuoted(s)
		if !ok {
			return "", ""
		}
		rest = strings.TrimPrefix(rest, " ")
		b := rest
		if strings.HasPrefix(rest, `"`) {
			b, _, _ = cutQuoted(rest)
		}
		return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
	}
	if i := strings.Index(s, ` "`); i >= 0 && strings.HasSuffix(s, `"`) {
		b, _, ok := cutQuoted(s[i+1:])
		if ok {
			return strings.TrimPrefix(s[:i], "a/"), strings.TrimPrefix(b, "b/")
		}
	}
	// The same name on both sides: "a/P b/P".
	if n := len(s); n > 5 && (n-5)%2 == 0 {
		p := s[2 : 2+(n-5)/2]
		if s == "a/"+p+" b/"+p {
			return p, p
		}
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return strings.TrimPrefix(s[:i], "a/"), s[i+3:]
	}
	return "", ""
}

// unquotePath decodes a path git printed in C-style quotes (it does so for
// names with control characters, quotes, backslashes or, by default, bytes
// over 0x7f); an unquoted path is returned as is.
func unquotePath(p string) string {
	if !strings.HasPrefix(p, `"`) {
		return p
	}
	s, _, ok := cutQuoted(p)
	if !ok {
		return p
	}
	return s
}

// cutQuoted decodes the C-style quoted string at the start of s and
// returns it and what follows the closing quote.
func cutQuoted(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:], true
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", s, false
		}
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '0', '1', '2', '3':
			if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
				return "", s, false
			}
			b.WriteByte((e-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
			i += 2
		default: // \" \\ and anything git might add
			b.WriteByte(e)
		}
	}
	return "", s, false
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// isGeneratedMarker reports whether a line (without its +/-/space prefix)
// is a "Code generated ... DO NOT EDIT." comment, the convention Go tools
// and many generators for other languages follow.
func isGeneratedMarker(line []byte) bool {
	i := bytes.Index(line, []byte("Code generated "))
	return i >= 0 && i <= 8 && bytes.Contains(line[i:], []byte("DO NOT EDIT"))
}

// lockFiles are dependency lock files by base name.
var lockFiles = map[string]bool{
	"go.sum": true, "go.work.sum": true,
	"package-lock.json": true, "npm-shrinkwrap.json": true, "yarn.lock": true, "pnpm-lock.yaml": true, "bun.lockb": true, "bun.lock": true,
	"Cargo.lock": true, "poetry.lock": true, "Pipfile.lock": true, "uv.lock": true, "pdm.lock": true,
	"Gemfile.lock": true, "composer.lock": true, "mix.lock": true, "flake.lock": true,
	"Podfile.lock": true, "Package.resolved": true, "pubspec.lock": true, "packages.lock.json": true,
	"gradle.lockfile": true, "conan.lock": true,
}

// vendorDirs are directories of copied third-party code.
var vendorDirs = []string{"vendor/", "third_party/", "third-party/", "node_modules/"}

// generatedSuffixes mark files that tools write.
var generatedSuffixes = []string{
	".pb.go", ".pb.gw.go", "_pb2.py", "_pb2_grpc.py", ".pb.h", ".pb.cc",
	".min.js", ".min.css", ".min.mjs", ".js.map", ".css.map",
}

// classify says which class a path belongs to. generatedMark reports a
// "Code generated ... DO NOT EDIT" line in the file. A lock file is a lock
// file wherever it is; vendored beats generated.
func classify(path string, generatedMark bool) FileClass {
	base := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		base = path[i+1:]
	}
	if lockFiles[base] {
		return classLock
	}
	for _, d := range vendorDirs {
		if strings.HasPrefix(path, d) || strings.Contains(path, "/"+d) {
			return classVendored
		}
	}
	if generatedMark {
		return classGenerated
	}
	for _, s := range generatedSuffixes {
		if strings.HasSuffix(base, s) {
			return classGenerated
		}
	}
	if strings.Contains(base, "_generated.") || strings.Contains(base, ".generated.") || strings.HasPrefix(base, "zz_generated") {
		return classGenerated
	}
	return classNormal
}
