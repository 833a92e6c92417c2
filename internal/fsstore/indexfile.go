package fsstore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
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
const indexVersion = 1

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

// index is a decoded index file.
type index struct {
	Kind    string // "packet" or "loop"
	Stamp   dirStamp
	Entries []entry // newest first, in the order listing gives them
	// Bad are the artifacts whose files could not be read when the index
	// was made; each read reports them again, from their files.
	Bad []string
}

// encodeIndex writes idx in the format decodeIndex reads:
//
//	baton-index 1 packet
//	stamp <mod> <ino> <size> <count> <racy 0|1>
//	e<TAB><id><TAB><status><TAB><created><TAB><updated><TAB><mod><TAB><size><TAB><session><TAB><title><TAB><iteration><TAB><max><TAB><blocks><TAB><promises><TAB><outcome><TAB><source packet><TAB><compacted>
//	b<TAB><id>
//	end <crc32c of everything above, 8 hex digits>
//
// Text fields are Go-quoted (so they hold no tab or newline), promises
// are quoted strings separated by spaces.
func encodeIndex(idx *index) []byte {
	b := make([]byte, 0, 64+len(idx.Entries)*200)
	b = fmt.Appendf(b, "baton-index %d %s\n", indexVersion, idx.Kind)
	racy := 0
	if idx.Stamp.Racy {
		racy = 1
	}
	b = fmt.Appendf(b, "stamp %d %d %d %d %d\n", idx.Stamp.Mod, idx.Stamp.Ino, idx.Stamp.Size, idx.Stamp.Count, racy)
	for _, e := range idx.Entries {
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
		b = append(b, '\n')
	}
	for _, id := range idx.Bad {
		b = append(b, "b\t"...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	return fmt.Appendf(b, "end %08x\n", crc32.Checksum(b, castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryFields is how many tab-separated fields follow "e".
const entryFields = 15

// decodeIndex reads an index file of kind. It refuses anything encodeIndex
// would not have written for a store: a damaged or cut file (the checksum),
// another kind or version, invalid ids or statuses, ids twice, entries out
// of listing order. A refused index is rebuilt, never half believed.
func decodeIndex(b []byte, kind string) (*index, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, errors.New("not a whole index: no final newline")
	}
	body := b[:len(b)-1]
	last := bytes.LastIndexByte(body, '\n')
	if last < 0 {
		return nil, errors.New("no end line")
	}
	end := string(body[last+1:])
	sum, ok := strings.CutPrefix(end, "end ")
	if !ok || len(sum) != 8 || strings.ToLower(sum) != sum {
		return nil, fmt.Errorf("bad end line %q", clipText(end))
	}
	want, err := strconv.ParseUint(sum, 16, 32)
	if err != nil {
		return nil, fmt.Errorf("bad end line %q", clipText(end))
	}
	if got := crc32.Checksum(b[:last+1], castagnoli); uint64(got) != want {
		return nil, fmt.Errorf("checksum %08x, the end line says %s", got, sum)
	}
	lines := strings.Split(string(body[:last]), "\n")
	if len(lines) < 2 || lines[0] != fmt.Sprintf("baton-index %d %s", indexVersion, kind) {
		return nil, fmt.Errorf("not a version %d %s index: %q", indexVersion, kind, clipText(lines[0]))
	}
	idx := &index{Kind: kind}
	if idx.Stamp, err = decodeStamp(lines[1]); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for n, line := range lines[2:] {
		tag, rest, _ := strings.Cut(line, "\t")
		switch tag {
		case "e":
			if len(idx.Bad) > 0 {
				return nil, fmt.Errorf("line %d: an entry after the unreadable ones", n+3)
			}
			e, err := decodeEntry(rest, kind)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+3, err)
			}
			if seen[e.ID] {
				return nil, fmt.Errorf("line %d: %s twice", n+3, e.ID)
			}
			if k := len(idx.Entries); k > 0 && !newer(idx.Entries[k-1].stamp(), e.stamp()) {
				return nil, fmt.Errorf("line %d: %s is out of order", n+3, e.ID)
			}
			seen[e.ID] = true
			idx.Entries = append(idx.Entries, e)
		case "b":
			if !baton.ValidID(rest) || seen[rest] {
				return nil, fmt.Errorf("line %d: bad id %q", n+3, clipText(rest))
			}
			seen[rest] = true
			idx.Bad = append(idx.Bad, rest)
		default:
			return nil, fmt.Errorf("line %d: unknown line %q", n+3, clipText(line))
		}
	}
	return idx, nil
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
	if err != nil || count < 0 || (f[5] != "0" && f[5] != "1") {
		return dirStamp{}, fmt.Errorf("bad stamp line %q", clipText(line))
	}
	d.Count, d.Racy = int(count), f[5] == "1"
	return d, nil
}

func decodeEntry(s, kind string) (entry, error) {
	f := strings.Split(s, "\t")
	if len(f) != entryFields {
		return entry{}, fmt.Errorf("%d fields, want %d", len(f), entryFields)
	}
	e := entry{ID: f[0], Status: f[1]}
	if !baton.ValidID(e.ID) {
		return entry{}, fmt.Errorf("invalid id %q", clipText(e.ID))
	}
	if !validStatus(kind, e.Status) {
		return entry{}, fmt.Errorf("invalid %s status %q", kind, clipText(e.Status))
	}
	var err error
	nums := []*int64{&e.Created, &e.Updated, &e.Mod, &e.Size}
	for i, p := range nums {
		if *p, err = parseInt(f[2+i]); err != nil {
			return entry{}, err
		}
	}
	if e.Session, err = strconv.Unquote(f[6]); err != nil {
		return entry{}, fmt.Errorf("session: %w", err)
	}
	if e.Title, err = strconv.Unquote(f[7]); err != nil {
		return entry{}, fmt.Errorf("title: %w", err)
	}
	for i, p := range []*int{&e.Loop.Iteration, &e.Loop.MaxIterations, &e.Loop.Blocks} {
		n, err := parseInt(f[8+i])
		if err != nil || n != int64(int(n)) {
			return entry{}, fmt.Errorf("bad number %q", clipText(f[8+i]))
		}
		*p = int(n)
	}
	if e.Promises, err = decodeQuotedList(f[11]); err != nil {
		return entry{}, fmt.Errorf("promises: %w", err)
	}
	for i, p := range []*string{&e.Loop.Outcome, &e.Loop.SourcePacket, &e.Loop.Compacted} {
		if *p, err = strconv.Unquote(f[12+i]); err != nil {
			return entry{}, fmt.Errorf("field %d: %w", 13+i, err)
		}
	}
	return e, nil
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

// parseInt reads a decimal integer as strconv.AppendInt writes it.
func parseInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("bad number %q", clipText(s))
	}
	return n, nil
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
func clipText(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
