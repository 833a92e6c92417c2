package fsstore

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// seenLoop is what NewForeignLoops saw of one loop file: the file as stat
// described it (Ino 0 when it changed too recently to be believed), the
// LoopDigest of the loop when it is active ("" otherwise), and whether
// it was told as foreign in that version.
type seenLoop struct {
	safefile.FileID
	Active string
	Told   bool
}

// current reports whether the file fi describes is, provably, the one
// recorded.
func (r seenLoop) current(fi safefile.FileID) bool {
	return r.Ino != 0 && r.Ino == fi.Ino && r.Size == fi.Size && r.Mod == fi.Mod && r.Change == fi.Change
}

// seenHeader starts a LoopsSeenFile; a file without it (an older format,
// damage) records nothing.
const seenHeader = "baton loops-seen 1\n"

// seenRecord is one loop file's line: its id and what was seen of it.
type seenRecord struct {
	ID string
	seenLoop
}

// formatSeen writes the records, one line each, sorted by id:
// "<id> <inode> <size> <mtime> <ctime> <active digest or -> <told 0|1>".
// It sorts recs in place.
func formatSeen(recs []seenRecord) []byte {
	slices.SortFunc(recs, func(a, b seenRecord) int { return strings.Compare(a.ID, b.ID) })
	b := make([]byte, 0, len(seenHeader)+len(recs)*128)
	b = append(b, seenHeader...)
	for _, r := range recs {
		id := r.ID
		active := r.Active
		if active == "" {
			active = "-"
		}
		b = append(b, id...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, r.Ino, 10)
		for _, n := range []int64{r.Size, r.Mod, r.Change} {
			b = append(b, ' ')
			b = strconv.AppendInt(b, n, 10)
		}
		b = append(b, ' ')
		b = append(b, active...)
		if r.Told {
			b = append(b, " 1\n"...)
		} else {
			b = append(b, " 0\n"...)
		}
	}
	return b
}

// parseSeenFields reads one line formatSeen wrote, returning its id as
// it is in the line (unchecked); ok is false for anything else.
func parseSeenFields(line []byte) (id []byte, r seenLoop, ok bool) {
	var f [7][]byte
	n := 0
	for ; n < len(f) && len(line) > 0; n++ {
		f[n], line, _ = bytes.Cut(line, []byte{' '})
	}
	if n != len(f) || len(line) > 0 {
		return nil, r, false
	}
	var err [4]error
	r.Ino, err[0] = strconv.ParseUint(string(f[1]), 10, 64)
	r.Size, err[1] = strconv.ParseInt(string(f[2]), 10, 64)
	r.Mod, err[2] = strconv.ParseInt(string(f[3]), 10, 64)
	r.Change, err[3] = strconv.ParseInt(string(f[4]), 10, 64)
	if err != [4]error{} || len(f[5]) == 0 || (string(f[6]) != "0" && string(f[6]) != "1") {
		return nil, seenLoop{}, false
	}
	if string(f[5]) != "-" {
		r.Active = string(f[5])
	}
	r.Told = string(f[6]) == "1"
	return f[0], r, true
}

// seenLines are the lines of a LoopsSeenFile sorted by id, unparsed: a
// session-start looks each loop up once, and most of them are unchanged,
// so building a map of every record would cost more than the lookups.
type seenLines [][]byte

// indexSeen splits what formatSeen wrote into its lines, sorted by id (a
// file formatSeen wrote is already); a file without the header holds
// none.
func indexSeen(b []byte) seenLines {
	rest, ok := bytes.CutPrefix(b, []byte(seenHeader))
	if !ok || len(rest) == 0 {
		return nil
	}
	lines := bytes.Split(bytes.TrimSuffix(rest, []byte{'\n'}), []byte{'\n'})
	if !slices.IsSortedFunc(lines, compareSeenIDs) {
		slices.SortStableFunc(lines, compareSeenIDs)
	}
	return lines
}

// seenID is the id a line of a LoopsSeenFile starts with.
func seenID(line []byte) []byte {
	if i := bytes.IndexByte(line, ' '); i >= 0 {
		return line[:i]
	}
	return line
}

func compareSeenIDs(a, b []byte) int { return bytes.Compare(seenID(a), seenID(b)) }

// find returns the record of id: the last well-formed line of that id
// (a file baton wrote has one), as a parse of the whole file would keep.
func (s seenLines) find(id string) (seenLoop, bool) {
	if len(s) == 0 || !baton.ValidID(id) {
		return seenLoop{}, false
	}
	key := []byte(id) // once: a conversion in the comparison would be one per step
	i, found := slices.BinarySearchFunc(s, key, func(line, key []byte) int {
		return bytes.Compare(seenID(line), key)
	})
	if !found {
		return seenLoop{}, false
	}
	j := i
	for j+1 < len(s) && bytes.Equal(seenID(s[j+1]), key) {
		j++
	}
	for ; j >= i; j-- {
		if lid, r, ok := parseSeenFields(s[j]); ok && bytes.Equal(lid, key) {
			return r, true
		}
	}
	return seenLoop{}, false
}
