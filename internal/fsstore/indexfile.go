package fsstore

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// The index files under indexes/: one line per packet or loop, in listing
// order, so that listing, `latest` and the MCP resources read one file
// instead of opening every artifact. They are this machine's caches
// (gitignored): rebuilt from the artifact files whenever they are missing,
// unreadable or stale, and never believed over those files (index.go).
const (
	PacketIndex = "packets.idx"
	LoopIndex   = "loops.idx"
)

// maxIndexBytes bounds an index file, about 400,000 packets. A larger
// file is not one baton wrote; it is rebuilt.
const maxIndexBytes = 64 << 20

// indexVersion is the format's version, in its first line.
const indexVersion = 5

// dirStamp is a state of an artifact directory. Every file baton adds,
// replaces (a temp file renamed into place) or removes there changes the
// directory's modification time; Count catches a change made in the same
// tick of the filesystem's clock, which leaves that time as it was.
type dirStamp struct {
	Mod   int64  // the directory's mtime, ns since the epoch
	Ino   uint64 // its inode: a directory made anew is another state
	Size  int64  // its size as stat gives it
	Count int    // the names in it that look like artifacts ("<valid id>.md")
	// Racy is set when the stamp was taken so soon after the directory
	// last changed that a later change could still get the same mtime:
	// a reader then counts the names before it believes the stamp.
	Racy bool
}

// sameDir reports whether the directory is in the state the stamp
// recorded, as far as stat can tell.
func (d dirStamp) sameDir(now dirStamp) bool {
	return d.Mod == now.Mod && d.Ino == now.Ino && d.Size == now.Size
}

// entry is one artifact as its index line records it: what orders it,
// what listing it shows, and the file's size and time, which tell
// whether the file still holds what was recorded.
type entry struct {
	ID       string
	Status   string
	Created  int64 // unix seconds, as the file records them
	Updated  int64
	Mod      int64 // the file's mtime, ns: orders artifacts updated in the same second
	Size     int64
	Session  string
	Title    string // a packet's purpose
	Loop     loopFields
	Promises []string
}

// loopFields are what `loop list` shows of a loop besides the common
// fields; zero for packets.
type loopFields struct {
	Iteration, MaxIterations, Blocks int
	Outcome, SourcePacket, Compacted string
}

func (e entry) stamp() stamp {
	return stamp{id: e.ID, at: time.Unix(e.Updated, 0).UTC(), mod: time.Unix(0, e.Mod)}
}

// index is an index file, read lazily: the header at once, each entry
// line when a caller first reaches it. A hook wants the newest packet or
// two of ten thousand; it parses a line or two. An index is never changed
// once made (a write makes a new one), so readers can share it.
type index struct {
	Kind  string // "packet" or "loop"
	Stamp dirStamp
	// N is how many entries there are; Newest is the id of the one
	// created last ("" when there is none) and NewestCreated its time.
	N             int
	Newest        string
	NewestCreated int64
	// Bad are the artifacts whose files could not be read when the index
	// was made; each read reports them again, from their files.
	Bad []string

	// headSum is the head's checksum, as the file has it.
	headSum uint32
	// settled is set when the stamp, racy as written, was found to hold
	// after the clock moved on (current).
	settled atomic.Bool
	// counted is when this process last counted the names and found the
	// racy stamp to hold (UnixNano); 0 when it did not.
	counted atomic.Int64

	mu sync.Mutex
	// body is the entry lines, newest first, in the order listing gives
	// them; while src is set, only the first of them (a hook wants the
	// newest), and the rest is read from src when a caller gets there.
	body string
	src  *indexSource
	// bodyStart is where the entry lines start in src's file.
	bodyStart int64
	// tail, set on an index just spliced from one read in part, is the
	// rest of its body: a range of the old file, copied when it is
	// written (commit).
	tail   *indexSource
	rest   string  // the lines of body not parsed yet
	parsed []entry // the lines parsed, in order
	err    error   // what was wrong with the first bad line
}

// indexSource is the index file a partly read index came from: the rest
// is read only from the same file (inode, size and time), never from one
// a writer put in its place since.
type indexSource struct {
	path     string
	files    safefile.Root // what path is read beneath
	ino      uint64
	size     int64
	mod      int64
	bodySize int   // the body's length (as a tail: the range's)
	off      int64 // as a tail: where the range starts in the file
}

// newIndex makes an index of entries (sorted in listing order) and bad
// (sorted ids).
func newIndex(kind string, stamp dirStamp, entries []entry, bad []string) *index {
	idx := &index{Kind: kind, Stamp: stamp, N: len(entries), Bad: bad}
	var b []byte
	for i := range entries {
		e := &entries[i]
		if idx.Newest == "" || e.Created > idx.NewestCreated {
			idx.Newest, idx.NewestCreated = e.ID, e.Created
		}
		b = appendEntry(b, kind, e)
	}
	idx.body = string(b)
	idx.rest = idx.body
	return idx
}

// at returns entry i, parsing the lines up to it first. ok is false past
// the last entry; an error means a line is damaged (or the file was
// replaced before its rest was read) and the index must be loaded again.
func (idx *index) at(i int) (e entry, ok bool, err error) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	for len(idx.parsed) <= i && idx.err == nil && (idx.rest != "" || idx.src != nil) {
		if idx.rest == "" {
			idx.err = idx.readRest()
			continue
		}
		var line string
		line, idx.rest, _ = strings.Cut(idx.rest, "\n")
		n := len(idx.parsed) + 1
		tag, fields, _ := strings.Cut(line, "\t")
		if tag != "e" {
			idx.err = fmt.Errorf("entry %d: unknown line %q", n, clipText(line))
			break
		}
		e, err := decodeEntry(fields, idx.Kind)
		if err != nil {
			idx.err = fmt.Errorf("entry %d: %w", n, err)
			break
		}
		if k := len(idx.parsed); k > 0 && !newerEntry(&idx.parsed[k-1], &e) {
			idx.err = fmt.Errorf("entry %d: %s is out of order", n, e.ID)
			break
		}
		idx.parsed = append(idx.parsed, e)
	}
	if i < len(idx.parsed) {
		return idx.parsed[i], true, nil
	}
	return entry{}, false, idx.err
}

// readRest reads the whole body from the file the index came from.
func (idx *index) readRest() error {
	src := idx.src
	b, fi, err := src.files.ReadFileInfo(src.path, maxIndexBytes)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || uint64(st.Ino) != src.ino || fi.Size() != src.size || fi.ModTime().UnixNano() != src.mod {
		return errors.New("the index was replaced while it was read")
	}
	whole, err := decodeIndex(b, idx.Kind)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(whole.body, idx.body) {
		return errors.New("the index changed while it was read")
	}
	idx.rest = whole.body[len(idx.body)-len(idx.rest):]
	idx.body, idx.src = whole.body, nil
	return nil
}

// whole makes sure the body is read in full.
func (idx *index) whole() error {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.src != nil && idx.err == nil {
		idx.err = idx.readRest()
	}
	return idx.err
}

// lookup returns the entry of id, walking from the newest.
func (idx *index) lookup(id string) (entry, bool, error) {
	for i := 0; ; i++ {
		e, ok, err := idx.at(i)
		if err != nil || !ok {
			return entry{}, false, err
		}
		if e.ID == id {
			return e, true, nil
		}
	}
}

// all returns every entry.
func (idx *index) all() ([]entry, error) {
	if _, _, err := idx.at(idx.N); err != nil {
		return nil, err
	}
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return idx.parsed, nil
}

// lineOf returns where the line of id starts in body, or -1. A tab never
// appears inside a field (text is quoted), so "e<TAB><id><TAB>" starts a
// line wherever it is found.
func lineOf(body, id string) int {
	key := "e\t" + id + "\t"
	if strings.HasPrefix(body, key) {
		return 0
	}
	if i := strings.Index(body, "\n"+key); i >= 0 {
		return i + 1
	}
	return -1
}

// with returns the index with e recorded (replacing the entry or the
// unreadable mark of its id) at its place in the listing order: one line
// taken out and one put in, the rest of the file as it was.
//
// When idx was read in part and both places (the old line, the new one's)
// are in the part read, the rest of the file is not read at all: it goes
// into the new index as its tail, copied from the old file when the new
// one is written. created says e's id is new, so has no line to find.
func (idx *index) with(e entry, created bool) (*index, error) {
	idx.mu.Lock()
	src, prefix := idx.src, idx.body
	idx.mu.Unlock()
	if src != nil && src.path != "" {
		if n, ok := idx.splicePart(e, created, src, prefix); ok {
			return n, nil
		}
	}
	if err := idx.whole(); err != nil {
		return nil, err
	}
	n, _ := idx.splice(e, idx.body, true)
	return n, nil
}

// splicePart is with over the part of the body read, ok false when a
// place lies beyond it.
func (idx *index) splicePart(e entry, created bool, src *indexSource, prefix string) (*index, bool) {
	if !created && lineOf(prefix, e.ID) < 0 {
		return nil, false // the old line may be further on
	}
	n, ok := idx.splice(e, prefix, false)
	if !ok {
		return nil, false
	}
	n.tail = &indexSource{path: src.path, files: src.files, ino: src.ino, size: src.size, mod: src.mod,
		off: idx.bodyStart + int64(len(prefix)), bodySize: src.bodySize - len(prefix)}
	return n, true
}

// splice takes e's old line out of body and puts its new line in, before
// the first entry it is newer than; ok is false when that place is not
// in body and body is not whole.
func (idx *index) splice(e entry, body string, whole bool) (*index, bool) {
	n := &index{Kind: idx.Kind, Stamp: idx.Stamp, N: idx.N, Newest: idx.Newest, NewestCreated: idx.NewestCreated,
		Bad: slices.DeleteFunc(slices.Clone(idx.Bad), func(id string) bool { return id == e.ID })}
	if at := lineOf(body, e.ID); at >= 0 {
		end := strings.IndexByte(body[at:], '\n')
		body = body[:at] + body[at+end+1:]
	} else {
		n.N++
	}
	// The new line goes before the first entry it is newer than: the
	// first, almost always, since it was just written.
	pos, rest, found := 0, body, false
	for rest != "" {
		line, after, _ := strings.Cut(rest, "\n")
		f, err := decodeEntry(strings.TrimPrefix(line, "e\t"), idx.Kind)
		if err != nil {
			return nil, false
		}
		if newerEntry(&e, &f) {
			found = true
			break
		}
		pos += len(line) + 1
		rest = after
	}
	if !found && !whole {
		return nil, false
	}
	n.body = body[:pos] + string(appendEntry(nil, idx.Kind, &e)) + body[pos:]
	n.rest = n.body
	if n.Newest == "" || e.ID == n.Newest || e.Created >= n.NewestCreated {
		n.Newest, n.NewestCreated = e.ID, e.Created
	}
	return n, true
}

// writeTo writes the index file: its head, its body, and its tail copied
// from the old file (by the kernel, not through memory) when it has one;
// that file must still be the one it was read from.
func (idx *index) writeTo(f *os.File) error {
	size := len(idx.body)
	if idx.tail != nil {
		size += idx.tail.bodySize
	}
	if _, err := f.Write(encodeHead(idx, size)); err != nil {
		return err
	}
	if _, err := f.WriteString(idx.body); err != nil {
		return err
	}
	if t := idx.tail; t != nil {
		old, err := t.files.OpenRegular(t.path)
		if err != nil {
			return err
		}
		defer old.Close()
		fi, err := old.Stat()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || uint64(st.Ino) != t.ino || fi.Size() != t.size || fi.ModTime().UnixNano() != t.mod {
			return errors.New("the index was replaced while it was written")
		}
		if _, err := old.Seek(t.off, io.SeekStart); err != nil {
			return err
		}
		if n, err := io.CopyN(f, old, int64(t.bodySize)); err != nil || n != int64(t.bodySize) {
			return fmt.Errorf("copy the index's entries: %d bytes, %v", n, err)
		}
	}
	_, err := f.WriteString("end\n")
	return err
}

// encodeIndex writes idx (read whole) in the format decodeIndex reads:
//
//	baton-index 3 packet
//	stamp <mod> <ino> <size> <count> <racy 0|1>
//	entries <n> <id of the newest created, or -> <its created_at> <body bytes>
//	bad[ <id>]...
//	head <FNV-1a (32 bits) of the lines above, 8 hex digits>
//	e<TAB><id><TAB><status><TAB><created><TAB><updated><TAB><mod><TAB><size><TAB><session><TAB><title>
//	...
//	end
//
// and a loop's entry goes on with <TAB><iteration><TAB><max><TAB><blocks>
// <TAB><promises><TAB><outcome><TAB><source packet><TAB><compacted>. Text
// fields are Go-quoted (so they hold no tab or newline), promises are
// quoted strings separated by spaces. The head has its own checksum and
// gives the entry lines' length, so a reader that wants the newest entries
// reads the start of the file only and still knows a cut file; a line
// damaged otherwise (zeros a crash left) fails to parse when it is read.
func encodeIndex(idx *index) []byte {
	b := encodeHead(idx, len(idx.body))
	b = append(b, idx.body...)
	return append(b, "end\n"...)
}

// encodeHead writes the head of an index whose body is bodySize bytes.
func encodeHead(idx *index, bodySize int) []byte {
	b := make([]byte, 0, 256+len(idx.body))
	b = fmt.Appendf(b, "baton-index %d %s\n", indexVersion, idx.Kind)
	racy := 0
	if idx.Stamp.Racy {
		racy = 1
	}
	b = fmt.Appendf(b, "stamp %d %d %d %d %d\n", idx.Stamp.Mod, idx.Stamp.Ino, idx.Stamp.Size, idx.Stamp.Count, racy)
	newest := idx.Newest
	if newest == "" {
		newest = "-"
	}
	b = fmt.Appendf(b, "entries %d %s %d %d\n", idx.N, newest, idx.NewestCreated, bodySize)
	b = append(b, "bad"...)
	for _, id := range idx.Bad {
		b = append(b, ' ')
		b = append(b, id...)
	}
	b = append(b, '\n')
	idx.headSum = headSum(b)
	return fmt.Appendf(b, "head %08x\n", idx.headSum)
}

// endLine is the length of "end\n", which closes a whole file.
const endLine = 4

// appendEntry appends e's line.
func appendEntry(b []byte, kind string, e *entry) []byte {
	b = append(b, "e\t"...)
	b = append(b, e.ID...)
	b = append(b, '\t')
	b = append(b, e.Status...)
	for _, n := range []int64{e.Created, e.Updated, e.Mod, e.Size} {
		b = append(b, '\t')
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, '\t')
	b = strconv.AppendQuote(b, e.Session)
	b = append(b, '\t')
	b = strconv.AppendQuote(b, e.Title)
	if kind == "loop" {
		for _, n := range []int{e.Loop.Iteration, e.Loop.MaxIterations, e.Loop.Blocks} {
			b = append(b, '\t')
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, '\t')
		for i, p := range e.Promises {
			if i > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendQuote(b, p)
		}
		for _, s := range []string{e.Loop.Outcome, e.Loop.SourcePacket, e.Loop.Compacted} {
			b = append(b, '\t')
			b = strconv.AppendQuote(b, s)
		}
	}
	return append(b, '\n')
}

// headSum is the head's checksum. FNV-1a needs no table: CRC-32C's,
// made at package init, cost every hook process about 0.3 ms, for a
// few hundred bytes of head.
func headSum(b []byte) uint32 {
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

// entryFields is how many tab-separated fields follow "e", by kind.
var entryFields = map[string]int{"packet": 8, "loop": 15}

// decodeIndex reads a whole index file of kind. It refuses a damaged or
// cut file (the checksums), another kind or version, a header that does
// not fit its lines; the entry lines are checked as they are parsed (at):
// valid ids and statuses, in listing order. A refused index is rebuilt,
// never half believed. decodeIndex keeps b: the caller must not change it.
func decodeIndex(b []byte, kind string) (*index, error) {
	idx, head, err := decodeHead(b, int64(len(b)), kind)
	if err != nil {
		return nil, err
	}
	body, end := b[head:head+idx.bodySize()], string(b[head+idx.bodySize():])
	if end != "end\n" {
		return nil, fmt.Errorf("the entry lines end with %q", clipText(end))
	}
	rest := unsafe.String(unsafe.SliceData(body), len(body)) // b is kept unchanged: no copy
	if got := strings.Count(rest, "\n"); got != idx.N || (rest != "" && rest[len(rest)-1] != '\n') {
		return nil, fmt.Errorf("%d entry lines, the header says %d", got, idx.N)
	}
	if idx.N > 0 && lineOf(rest, idx.Newest) < 0 {
		return nil, fmt.Errorf("the newest entry %s has no line", idx.Newest)
	}
	idx.body, idx.rest, idx.src, idx.bodyStart = rest, rest, nil, int64(head)
	return idx, nil
}

// bodySize is the length of the entry lines the header gives.
func (idx *index) bodySize() int {
	if idx.src != nil {
		return idx.src.bodySize
	}
	return len(idx.body)
}

// decodeHead reads the head of an index file of size bytes from b, which
// holds at least its start, and the whole entry lines b holds: an index
// whose rest is read when a caller reaches it (src is set by the caller
// that knows the file). It returns the head's length.
func decodeHead(b []byte, size int64, kind string) (*index, int, error) {
	start := unsafe.String(unsafe.SliceData(b), len(b))
	var line string
	rest, ok := start, false
	next := func() bool {
		line, rest, ok = strings.Cut(rest, "\n")
		return ok
	}
	if !next() || line != fmt.Sprintf("baton-index %d %s", indexVersion, kind) {
		return nil, 0, fmt.Errorf("not a version %d %s index: %q", indexVersion, kind, clipText(line))
	}
	for range 3 {
		if !next() {
			return nil, 0, errors.New("the head is cut")
		}
	}
	head := len(start) - len(rest)
	sum := headSum(b[:head])
	if !next() || line != fmt.Sprintf("head %08x", sum) {
		return nil, 0, fmt.Errorf("the head's checksum is not %q", clipText(line))
	}
	lines := strings.SplitN(start[:head-1], "\n", 4)
	idx := &index{Kind: kind, headSum: sum}
	var err error
	if idx.Stamp, err = decodeStamp(lines[1]); err != nil {
		return nil, 0, err
	}
	f := strings.Split(lines[2], " ")
	if len(f) != 5 || f[0] != "entries" {
		return nil, 0, fmt.Errorf("bad entries line %q", clipText(lines[2]))
	}
	n, err1 := parseInt(f[1])
	created, err2 := parseInt(f[3])
	bodySize, err3 := parseInt(f[4])
	bodyStart := int64(len(start) - len(rest))
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || (f[2] == "-") != (n == 0) || (f[2] != "-" && !baton.ValidID(f[2])) ||
		bodySize < 0 || bodyStart+bodySize+endLine != size {
		return nil, 0, fmt.Errorf("bad entries line %q for a file of %d bytes", clipText(lines[2]), size)
	}
	idx.N, idx.NewestCreated = int(n), created
	if f[2] != "-" {
		idx.Newest = f[2]
	}
	ids, ok := strings.CutPrefix(lines[3], "bad")
	if !ok || (ids != "" && ids[0] != ' ') {
		return nil, 0, fmt.Errorf("bad bad line %q", clipText(lines[3]))
	}
	if ids != "" {
		for _, id := range strings.Split(ids[1:], " ") {
			if !baton.ValidID(id) || (len(idx.Bad) > 0 && idx.Bad[len(idx.Bad)-1] >= id) {
				return nil, 0, fmt.Errorf("bad id %q", clipText(id))
			}
			idx.Bad = append(idx.Bad, id)
		}
	}
	// The whole lines of the body that b holds.
	body := rest[:min(len(rest), int(bodySize))]
	body = body[:strings.LastIndexByte(body, '\n')+1]
	idx.body, idx.rest, idx.bodyStart = body, body, bodyStart
	idx.src = &indexSource{bodySize: int(bodySize)}
	return idx, int(bodyStart), nil
}

// newerEntry is newer for two entries, without making times of them.
func newerEntry(a, b *entry) bool {
	switch {
	case a.Updated != b.Updated:
		return a.Updated > b.Updated
	case a.Mod != b.Mod:
		return a.Mod > b.Mod
	}
	return compareIDs(a.ID, b.ID) > 0
}

func decodeStamp(line string) (dirStamp, error) {
	f := strings.Split(line, " ")
	if len(f) != 6 || f[0] != "stamp" {
		return dirStamp{}, fmt.Errorf("bad stamp line %q", clipText(line))
	}
	var d dirStamp
	var err error
	var count int64
	if d.Mod, err = parseInt(f[1]); err == nil {
		if d.Ino, err = strconv.ParseUint(f[2], 10, 64); err == nil {
			if d.Size, err = parseInt(f[3]); err == nil {
				count, err = parseInt(f[4])
			}
		}
	}
	if err != nil || count < 0 || (f[5] != "0" && f[5] != "1") || strconv.FormatUint(d.Ino, 10) != f[2] {
		return dirStamp{}, fmt.Errorf("bad stamp line %q", clipText(line))
	}
	d.Count, d.Racy = int(count), f[5] == "1"
	return d, nil
}

// fieldReader hands out the tab-separated fields of a line whose number
// of fields was checked; the first error sticks.
type fieldReader struct {
	s   string
	err error
}

func (r *fieldReader) next() string {
	f, rest, _ := strings.Cut(r.s, "\t")
	r.s = rest
	return f
}

func (r *fieldReader) int64() int64 {
	f := r.next()
	if r.err != nil {
		return 0
	}
	n, err := parseInt(f)
	if err != nil {
		r.err = err
	}
	return n
}

func (r *fieldReader) int() int {
	n := r.int64()
	if n != int64(int(n)) && r.err == nil {
		r.err = fmt.Errorf("bad number %d", n)
	}
	return int(n)
}

func (r *fieldReader) quoted() string {
	f := r.next()
	if r.err != nil {
		return ""
	}
	v, err := unquote(f)
	if err != nil {
		r.err = err
	}
	return v
}

func decodeEntry(s, kind string) (entry, error) {
	want, ok := entryFields[kind]
	if !ok {
		return entry{}, fmt.Errorf("no index of %q", clipText(kind))
	}
	if n := strings.Count(s, "\t") + 1; n != want {
		return entry{}, fmt.Errorf("%d fields, want %d", n, want)
	}
	r := &fieldReader{s: s}
	e := entry{ID: r.next(), Status: internStatus(r.next())}
	if !baton.ValidID(e.ID) {
		return entry{}, fmt.Errorf("invalid id %q", clipText(e.ID))
	}
	if !validStatus(kind, e.Status) {
		return entry{}, fmt.Errorf("invalid %s status %q", kind, clipText(e.Status))
	}
	e.Created, e.Updated, e.Mod, e.Size = r.int64(), r.int64(), r.int64(), r.int64()
	e.Session, e.Title = r.quoted(), r.quoted()
	if kind == "loop" {
		e.Loop.Iteration, e.Loop.MaxIterations, e.Loop.Blocks = r.int(), r.int(), r.int()
		if f := r.next(); r.err == nil {
			e.Promises, r.err = decodeQuotedList(f)
		}
		e.Loop.Outcome, e.Loop.SourcePacket, e.Loop.Compacted = r.quoted(), r.quoted(), r.quoted()
	}
	if r.err != nil {
		return entry{}, r.err
	}
	return e, nil
}

// internStatus returns the status as a constant, so ten thousand entries
// share one string each.
func internStatus(s string) string {
	for _, v := range []string{"done", "draft", "active", "blocked", "paused", "cancelled"} {
		if s == v {
			return v
		}
	}
	return s
}

// unquote is strconv.Unquote with a path that allocates nothing for a
// string without escapes, which is what almost every field is.
func unquote(f string) (string, error) {
	if len(f) >= 2 && f[0] == '"' && f[len(f)-1] == '"' {
		in := f[1 : len(f)-1]
		plain := true
		for i := 0; i < len(in); i++ {
			if c := in[i]; c == '\\' || c == '"' || c < ' ' || c >= utf8.RuneSelf {
				plain = false
				break
			}
		}
		if plain {
			return in, nil
		}
	}
	return strconv.Unquote(f)
}

// decodeQuotedList reads Go-quoted strings separated by single spaces.
func decodeQuotedList(s string) ([]string, error) {
	var out []string
	for s != "" {
		if len(out) > 0 {
			rest, ok := strings.CutPrefix(s, " ")
			if !ok {
				return nil, fmt.Errorf("no space before %q", clipText(s))
			}
			s = rest
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, err
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		s = s[len(q):]
	}
	return out, nil
}

// parseInt reads a decimal integer as strconv.AppendInt writes it: no
// sign but a minus, no leading zero, no -0.
func parseInt(s string) (int64, error) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 19 || (digits[0] == '0' && (len(digits) > 1 || len(s) > 1)) {
		return 0, fmt.Errorf("bad number %q", clipText(s))
	}
	var n uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number %q", clipText(s))
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case len(s) == len(digits) && n <= math.MaxInt64:
		return int64(n), nil
	case len(s) != len(digits) && n <= math.MaxInt64+1:
		return -int64(n), nil
	}
	return 0, fmt.Errorf("bad number %q", clipText(s))
}

func validStatus(kind, s string) bool {
	switch kind {
	case "packet":
		return baton.PacketStatus(s).Valid()
	case "loop":
		return baton.LoopStatus(s).Valid()
	}
	return false
}

// clipText keeps an error message about a damaged file short.
func clipText(s string) string { return baton.Truncate(s, 60, "…") }
