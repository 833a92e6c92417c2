package brief

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Outcome says how much of a file an excerpt shows.
type Outcome string

// The outcomes of a file in an excerpt.
const (
	full    Outcome = "full"    // every line
	cut     Outcome = "cut"     // a prefix, ending at a line boundary
	omitted Outcome = "omitted" // nothing
)

// FileExcerpt is what an excerpt keeps of one file.
type FileExcerpt struct {
	Outcome Outcome `json:"outcome"`
	// Shown is the length of the file's prefix that is kept; it always
	// ends at a line boundary (or at the end of the diff).
	Shown      int64 `json:"shown_bytes"`
	ShownLines int   `json:"shown_lines"`
}

// Excerpt is the part of a diff that fits a byte budget.
type Excerpt struct {
	// Budget is the allowance the excerpt was cut to.
	Budget int64
	// Used is the size of Text: diff bytes plus the markers after files
	// that were cut. It never exceeds Budget.
	Used int64
	// Files parallels DiffIndex.Files.
	Files []FileExcerpt
	// Text is the kept diff in diff order. A file that was cut is followed
	// by a line "[... N more lines not shown]"; an omitted file does not
	// appear.
	Text string
}

// Truncated reports whether anything of the diff was left out.
func (e *Excerpt) Truncated() bool {
	for _, f := range e.Files {
		if f.Outcome != full {
			return true
		}
	}
	return false
}

// markerReserve is room kept for the "[... N more lines not shown]" line
// after a file that may be cut; it is given back when the file ends up
// whole. No marker is longer.
const markerReserve = int64(len("[... 18446744073709551615 more lines not shown]\n"))

func marker(lines int) string {
	return fmt.Sprintf("[... %d more lines not shown]\n", lines)
}

// excerptDiff cuts the diff indexed by idx, whose bytes src holds, to at
// most budget bytes, fairly across files:
//
//  1. Every file's header and first "@@" line, in priority order (normal
//     files in diff order, then generated, vendored and lock files), as
//     long as they fit; a file whose header does not fit is omitted.
//  2. The first hunk of every file, class by class in the same order. The
//     room is shared evenly (water-filling): a small first hunk is shown
//     whole, a large one gets an equal share of what remains, so one huge
//     new file cannot starve the others.
//  3. The rest of each file, in priority order, while room remains.
//
// Every cut falls at a line boundary, so no line, and no UTF-8 character,
// is ever split. Text bytes before the first file (not produced by git or
// GitHub) are dropped.
func excerptDiff(idx *DiffIndex, src io.ReaderAt, budget int64) (*Excerpt, error) {
	a := &allocator{idx: idx, src: src, room: max(budget, 0), ex: &Excerpt{Budget: max(budget, 0), Files: make([]FileExcerpt, len(idx.Files))}}
	order := make([]int, len(idx.Files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return int(idx.Files[x].Class) - int(idx.Files[y].Class) })
	a.order = order
	if idx.Size-idx.Preamble <= a.room {
		// Everything fits: no reserves, no cuts.
		for i, f := range idx.Files {
			a.ex.Files[i].Shown = f.Size()
		}
		return a.finish()
	}
	a.reserved = make([]bool, len(idx.Files))
	a.included = make([]bool, len(idx.Files))

	if err := a.headers(); err != nil {
		return nil, err
	}
	for class := classNormal; class <= classLock; class++ {
		if err := a.firstHunks(class); err != nil {
			return nil, err
		}
	}
	if err := a.rests(); err != nil {
		return nil, err
	}
	return a.finish()
}

type allocator struct {
	idx      *DiffIndex
	src      io.ReaderAt
	room     int64
	order    []int // file indexes by priority
	included []bool
	reserved []bool // a marker reserve is held for the file
	ex       *Excerpt
	buf      []byte
}

func (a *allocator) shownEnd(i int) int64 {
	return a.idx.Files[i].Start + a.ex.Files[i].Shown
}

// grow adds n bytes to file i's prefix and gives back its marker reserve
// once the file is whole.
func (a *allocator) grow(i int, n int64) {
	a.ex.Files[i].Shown += n
	a.room -= n
	if a.reserved[i] && a.shownEnd(i) == a.idx.Files[i].End {
		a.reserved[i] = false
		a.room += markerReserve
	}
}

func (a *allocator) headers() error {
	for _, i := range a.order {
		f := &a.idx.Files[i]
		cost := f.HunkBody - f.Start
		whole := f.HunkBody == f.End
		if !whole {
			cost += markerReserve
		}
		if cost > a.room {
			continue
		}
		a.included[i] = true
		if !whole {
			a.reserved[i] = true
			a.room -= markerReserve
		}
		a.grow(i, f.HunkBody-f.Start)
	}
	return nil
}

// firstHunks shares the room among the first hunks of class's files by
// water-filling: every file gets min(need, level), with the level set so
// the shares add up to the room. Cutting at line boundaries leaves some
// room unused; further rounds hand it out, and once shares are smaller
// than a line, the rest goes one line per file in priority order.
func (a *allocator) firstHunks(class FileClass) error {
	var files []int
	for _, i := range a.order {
		if a.included[i] && a.idx.Files[i].Class == class {
			files = append(files, i)
		}
	}
	for round := 0; round < 16 && a.room > 0; round++ {
		var needs []int64
		var active []int
		for _, i := range files {
			if need := a.idx.Files[i].FirstHunkEnd - a.shownEnd(i); need > 0 {
				needs = append(needs, need)
				active = append(active, i)
			}
		}
		if len(active) == 0 {
			return nil
		}
		level := waterLevel(needs, a.room)
		moved := false
		for k, i := range active {
			n, err := a.cut(i, a.idx.Files[i].FirstHunkEnd, min(needs[k], level, a.room))
			if err != nil {
				return err
			}
			if n > 0 {
				a.grow(i, n)
				moved = true
			}
		}
		if !moved {
			return a.lineByLine(active)
		}
	}
	return nil
}

// maxLineProbe bounds the search for a file's next line when handing out
// the last of the room line by line.
const maxLineProbe = 4096

// lineByLine gives files their next line of the first hunk in turn, in
// priority order, until none fits.
func (a *allocator) lineByLine(files []int) error {
	for moved := true; moved && a.room > 0; {
		moved = false
		for _, i := range files {
			end := a.idx.Files[i].FirstHunkEnd
			need := end - a.shownEnd(i)
			if need <= 0 {
				continue
			}
			n, err := a.nextLine(i, end, min(need, a.room, maxLineProbe))
			if err != nil {
				return err
			}
			if n > 0 {
				a.grow(i, n)
				moved = true
			}
		}
	}
	return nil
}

// nextLine returns the length of file i's next line if it ends within
// limit bytes (or is the rest up to end), else 0.
func (a *allocator) nextLine(i int, end, limit int64) (int64, error) {
	from := a.shownEnd(i)
	if limit <= 0 {
		return 0, nil
	}
	buf, err := a.read(from, limit)
	if err != nil {
		return 0, err
	}
	if k := bytes.IndexByte(buf, '\n'); k >= 0 {
		return int64(k + 1), nil
	}
	if from+limit == end {
		return limit, nil
	}
	return 0, nil
}

// waterLevel returns the largest level such that the sum of min(need,
// level) is at most room (at least 1 when room allows anything).
func waterLevel(needs []int64, room int64) int64 {
	sorted := slices.Clone(needs)
	slices.Sort(sorted)
	left := int64(len(sorted))
	for _, n := range sorted {
		if n*left > room {
			return max(room/left, 1)
		}
		room -= n
		left--
	}
	return sorted[len(sorted)-1]
}

func (a *allocator) rests() error {
	for _, i := range a.order {
		if !a.included[i] {
			continue
		}
		end := a.idx.Files[i].End
		need := end - a.shownEnd(i)
		if need <= 0 {
			continue
		}
		// A file that ends whole needs no marker: its reserve pays too.
		if a.reserved[i] && need <= a.room+markerReserve || need <= a.room {
			a.grow(i, need)
			continue
		}
		n, err := a.cut(i, end, a.room)
		if err != nil {
			return err
		}
		if n > 0 {
			a.grow(i, n)
		}
	}
	return nil
}

// cut returns how many bytes file i's prefix may grow by, up to limit and
// never past end, ending at a line boundary: the end itself, or just after
// a newline.
func (a *allocator) cut(i int, end, limit int64) (int64, error) {
	from := a.shownEnd(i)
	if limit <= 0 || from >= end {
		return 0, nil
	}
	if end-from <= limit {
		return end - from, nil
	}
	buf, err := a.read(from, limit)
	if err != nil {
		return 0, err
	}
	k := bytes.LastIndexByte(buf, '\n')
	return int64(k + 1), nil
}

// read returns n bytes of the diff at off, in a buffer reused by the next
// call.
func (a *allocator) read(off, n int64) ([]byte, error) {
	if int64(cap(a.buf)) < n {
		a.buf = make([]byte, n)
	}
	buf := a.buf[:n]
	if _, err := a.src.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read diff: %w", err)
	}
	return buf, nil
}

// finish builds the text and the per-file outcomes.
func (a *allocator) finish() (*Excerpt, error) {
	var sb strings.Builder
	for i := range a.idx.Files {
		f := &a.idx.Files[i]
		fe := &a.ex.Files[i]
		if fe.Shown == 0 {
			fe.Outcome = omitted
			continue
		}
		b := make([]byte, fe.Shown)
		if _, err := a.src.ReadAt(b, f.Start); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read diff: %w", err)
		}
		sb.Write(b)
		fe.ShownLines = bytes.Count(b, []byte("\n"))
		if fe.Shown == f.Size() {
			fe.Outcome = full
			if b[len(b)-1] != '\n' {
				fe.ShownLines++ // the last line of the diff, without a newline
			}
			continue
		}
		fe.Outcome = cut
		sb.WriteString(marker(f.Lines - fe.ShownLines))
	}
	a.ex.Text = sb.String()
	a.ex.Used = int64(sb.Len())
	return a.ex, nil
}
