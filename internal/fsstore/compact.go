package fsstore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/baton-agent/baton"
)

// Compaction of the relevant-files log.
//
// Hooks append a line per touched file, so the log grows without end; a
// million lines is 110 MB. What `baton files` ranks a file by (its touch
// count, its last touch, its decayed weight, whether a person confirmed
// it, and whether that confirmation went into a packet) merges exactly,
// so the lines of one file can be merged into one line that records
// Count touches from First to Timestamp and their Weight. When the part
// of the log past its compacted head grows over compactRawAt, the writer
// that notices (under the log's lock) rewrites the log as:
//
//	{"compacted":{"version":1,"until":...,"raw":...,"intervals":[...]}}
//	one merged line per file, source and attachment, per interval
//	the last keepRaw bytes of lines, as they were written
//
// Intervals run between the creation times of the newest exactPackets
// packets, so `files --since` any of those packets (and the default
// listing, since the newest) counts exactly what it did before; a since
// time inside an older interval counts that interval's touches whole,
// and says the listing is approximate. The header says where each
// interval's lines start, so a listing since a recent packet seeks past
// the rest. Readers that predate compaction read a merged line as one
// touch, and skip the header (it names no file).

// logEntry is one line of the relevant-files log: one touch as the hooks
// write it, or, after compaction, Count touches of one file merged.
type logEntry struct {
	baton.RelevantFile
	// Count touches, the first at First and the last at Timestamp, weigh
	// Weight at Timestamp (each touch 0.5^(age/1h)). Zero for one touch.
	Count  int       `json:"count,omitempty"`
	First  time.Time `json:"first,omitzero"`
	Weight float64   `json:"weight,omitempty"`
}

const (
	// compactRawAt is how much uncompacted log makes the next append
	// compact it.
	compactRawAt = 4 << 20
	// keepRaw is how much of the log's end compaction leaves as written:
	// what the hooks read (RecentLogBytes).
	keepRaw = RecentLogBytes
	// exactPackets is how many of the newest packets keep their own
	// interval.
	exactPackets = 64
	// maxLogHeader bounds the header line.
	maxLogHeader = 64 << 10
	// logHeaderVersion is the header's version.
	logHeaderVersion = 1
)

// logHeader is the compacted log's first line.
type logHeader struct {
	Version int `json:"version"`
	// Until is after the last touch any merged line holds: a listing
	// since Until or later reads only the lines from Raw on.
	Until time.Time `json:"until"`
	// Raw is the offset of the first line as written.
	Raw int64 `json:"raw"`
	// Intervals are where the merged lines of each interval start: the
	// first from the beginning of time, each next from a packet's
	// creation.
	Intervals []logInterval `json:"intervals"`
	// size is the header line's length, newline included.
	size int64
}

type logInterval struct {
	From time.Time `json:"from"`
	At   int64     `json:"at"`
}

const logHeaderPrefix = `{"compacted":`

// readLogHeader reads and checks the compacted header of the open log f,
// of size bytes. A log without one, or with one that does not fit the
// file, reports false: its reader then reads every line, which is always
// right.
func readLogHeader(f *os.File, size int64) (logHeader, bool) {
	// The prefix first: a log never compacted (most) costs a few bytes,
	// not a header's worth, on every hook that lists touches.
	var prefix [len(logHeaderPrefix)]byte
	if n, _ := f.ReadAt(prefix[:], 0); n < len(prefix) || string(prefix[:]) != logHeaderPrefix {
		return logHeader{}, false
	}
	buf := make([]byte, min(size, maxLogHeader))
	n, _ := f.ReadAt(buf, 0)
	buf = buf[:n]
	end := bytes.IndexByte(buf, '\n')
	if !bytes.HasPrefix(buf, []byte(logHeaderPrefix)) || end < 0 {
		return logHeader{}, false
	}
	var w struct {
		Compacted *logHeader `json:"compacted"`
	}
	if json.Unmarshal(buf[:end], &w) != nil || w.Compacted == nil {
		return logHeader{}, false
	}
	h := *w.Compacted
	h.size = int64(end + 1)
	if h.Version != logHeaderVersion || h.Raw < h.size || h.Raw > size || len(h.Intervals) == 0 || !h.Intervals[0].From.IsZero() {
		return logHeader{}, false
	}
	for i, iv := range h.Intervals {
		if iv.At < h.size || iv.At > h.Raw || (i > 0 && (iv.At < h.Intervals[i-1].At || !iv.From.After(h.Intervals[i-1].From))) {
			return logHeader{}, false
		}
	}
	return h, true
}

// startFor returns where a listing of the touches at or after since
// starts in f: the raw lines when since is past every merged line, else
// the interval that holds since. Any offset that does not start a line
// (a damaged header) gives 0.
func (h logHeader) startFor(f *os.File, since time.Time) int64 {
	off := h.Raw
	if since.Before(h.Until) {
		for _, iv := range h.Intervals {
			if iv.From.After(since) {
				break
			}
			off = iv.At
		}
	}
	var prev [1]byte
	if off != h.size {
		if _, err := f.ReadAt(prev[:], off-1); err != nil || prev[0] != '\n' {
			return 0
		}
	}
	return off
}

// logSizeToCompact reports whether the log at p has grown enough past its
// compacted head to compact.
func (s *Store) logSizeToCompact(p string) bool {
	f, err := s.files.OpenRegular(p)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= compactRawAt {
		return false
	}
	raw := fi.Size()
	if h, ok := readLogHeader(f, fi.Size()); ok {
		raw -= h.Raw
	}
	return raw > compactRawAt
}

// mergeKey is what compaction keeps apart: one file's touches in one
// interval, by source, and whether a packet took them.
type mergeKey struct {
	interval int
	path     string
	source   baton.FileSource
	attached bool
}

// merged is the touches of one mergeKey.
type merged struct {
	count       int
	first, last time.Time
	weight      float64 // at last
	packetID    string
	confidence  float64
}

func (m *merged) add(e logEntry) {
	o := merged{count: 1, first: e.Timestamp, last: e.Timestamp, weight: 1, packetID: e.PacketID, confidence: e.Confidence}
	if e.Count > 0 {
		o.count, o.weight = e.Count, e.Weight
		if !e.First.IsZero() && e.First.Before(o.first) {
			o.first = e.First
		}
	}
	m.merge(o)
}

// merge adds the touches of o.
func (m *merged) merge(o merged) {
	if m.count == 0 {
		*m = o
		return
	}
	m.count += o.count
	if o.last.After(m.last) {
		m.weight = m.weight*decay(o.last.Sub(m.last)) + o.weight
		m.last = o.last
		m.packetID = o.packetID
	} else {
		m.weight += o.weight * decay(m.last.Sub(o.last))
	}
	if o.first.Before(m.first) {
		m.first = o.first
	}
	m.confidence = max(m.confidence, o.confidence)
}

// exactBudget is how much larger than one line per file the merged lines
// may be to keep the newest packets' intervals apart; past it, the
// oldest intervals are merged too (a log where every touch is another
// file would otherwise not shrink).
const exactBudget = 2 << 20

// coarsen merges the intervals of groups (made with bounds) but the newest
// keep into the first.
func coarsen(groups map[mergeKey]*merged, bounds []time.Time, keep int) map[mergeKey]*merged {
	drop := len(bounds) - keep
	out := make(map[mergeKey]*merged, len(groups))
	for k, m := range groups {
		k.interval = max(0, k.interval-drop)
		if o := out[k]; o != nil {
			o.merge(*m)
		} else {
			c := *m
			out[k] = &c
		}
	}
	return out
}

// mergedSize estimates the bytes of the merged lines of groups.
func mergedSize(groups map[mergeKey]*merged) int {
	n := 0
	for k := range groups {
		n += len(k.path) + 200 // the fields around the path, a packet id
	}
	return n
}

// compactLog merges every line of the log but its last keepRaw bytes into
// merged lines, under the log's lock, unless another process did it
// first (force compacts whatever the size). It reads the lines to merge
// (mergeLog), keeps the newest packets' intervals apart while that fits
// (fitIntervals), writes the merged lines (mergedLines) under a header
// that says where each interval starts (compactedHeader), and replaces
// the log with them and its last lines as they were.
func (s *Store) compactLog(ctx context.Context, force bool) error {
	p := s.indexPath(RelevantFilesLog)
	unlock, err := s.files.Lock(ctx, p)
	if err != nil {
		return refused(p+".lock", err)
	}
	defer unlock()
	if !force && !s.logSizeToCompact(p) {
		return nil
	}
	f, err := s.files.OpenRegular(p)
	if err != nil {
		return refused(p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	bounds := s.logBoundaries()
	// Lines before the first line start in the last keepRaw bytes are
	// merged; the rest are copied as they are.
	groups, off := mergeLog(bufio.NewReaderSize(f, 256<<10), fi.Size()-keepRaw, intervalOf(bounds))
	groups, bounds = fitIntervals(groups, bounds)
	raw := make([]byte, max(fi.Size()-off, 0))
	if _, err := f.ReadAt(raw, off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("compact %s: %w", p, err)
	}
	body, starts, until, err := mergedLines(groups, len(bounds))
	if err != nil {
		return fmt.Errorf("compact %s: %w", p, err)
	}
	header, err := compactedHeader(until, bounds, starts, len(body))
	if err != nil {
		return fmt.Errorf("compact %s: %w", p, err)
	}
	out := make([]byte, 0, len(header)+len(body)+len(raw))
	out = append(append(append(out, header...), body...), raw...)
	return s.files.WriteAtomic(p, out, 0o644)
}

// intervalOf is the function that says which interval a time falls in:
// bounds (ascending) start intervals 1..len(bounds), and interval 0 is
// everything before the first.
func intervalOf(bounds []time.Time) func(time.Time) int {
	return func(t time.Time) int {
		i, _ := slices.BinarySearchFunc(bounds, t, func(b, t time.Time) int {
			if b.After(t) {
				return 1
			}
			return -1
		})
		return i // bounds[:i] are at or before t
	}
}

// mergeLog reads the log's lines from r while they start before keepFrom
// and merges each file's touches per interval (by the time of its first
// touch), source and attachment. It returns the merged touches and the
// offset of the first line it did not merge: the rest of the log, kept as
// written. A line longer than any baton writes, and one that is not a
// touch (unreadable, or the old header), is dropped; a last line without
// its newline is not merged.
func mergeLog(r *bufio.Reader, keepFrom int64, interval func(time.Time) int) (map[mergeKey]*merged, int64) {
	groups := map[mergeKey]*merged{}
	var off int64
	for off < keepFrom {
		line, err := r.ReadSlice('\n')
		off += int64(len(line))
		long := false
		for errors.Is(err, bufio.ErrBufferFull) {
			long = true
			line, err = r.ReadSlice('\n')
			off += int64(len(line))
		}
		if err != nil {
			off -= int64(len(line)) // a last line without its newline stays as it is
			break
		}
		if long {
			continue
		}
		var e logEntry
		if decodeRelevantFile(bytes.TrimSpace(line), &e) != nil || e.FilePath == "" || e.Timestamp.IsZero() || e.Count < 0 || e.Weight < 0 {
			continue
		}
		first := e.Timestamp
		if e.Count > 0 && !e.First.IsZero() {
			first = e.First
		}
		k := mergeKey{interval(first), e.FilePath, e.Source, e.Source == baton.FromUser && e.PacketID != ""}
		m := groups[k]
		if m == nil {
			m = &merged{}
			groups[k] = m
		}
		m.add(e)
	}
	return groups, off
}

// fitIntervals keeps the newest packets' intervals apart while the
// merged lines stay within exactBudget of one line per file, halving
// how many it keeps until they fit; it returns the groups and the bounds
// that remain.
func fitIntervals(groups map[mergeKey]*merged, bounds []time.Time) (map[mergeKey]*merged, []time.Time) {
	one := mergedSize(coarsen(groups, bounds, 0))
	if mergedSize(groups) <= one+exactBudget {
		return groups, bounds
	}
	for keep := len(bounds) / 2; ; keep /= 2 {
		g := coarsen(groups, bounds, keep)
		if mergedSize(g) <= one+exactBudget || keep == 0 {
			return g, bounds[len(bounds)-keep:]
		}
	}
}

// mergedLines writes one line per group, in order of interval, path,
// source and attachment, for n bounds (n+1 intervals). starts[i] is
// where interval i's lines start in body, and until is the last touch of
// any group. A file touched once stays a plain line, so a log of files
// each touched once does not grow by being compacted.
func mergedLines(groups map[mergeKey]*merged, n int) (body []byte, starts []int64, until time.Time, err error) {
	keys := make([]mergeKey, 0, len(groups))
	for k, m := range groups {
		keys = append(keys, k)
		if m.last.After(until) {
			until = m.last
		}
	}
	slices.SortFunc(keys, compareMergeKeys)
	starts = make([]int64, n+1)
	next := 0
	for _, k := range keys {
		for ; next <= k.interval; next++ {
			starts[next] = int64(len(body))
		}
		m := groups[k]
		e := logEntry{RelevantFile: baton.RelevantFile{Timestamp: m.last, FilePath: k.path, Source: k.source, PacketID: m.packetID, Confidence: m.confidence}}
		if m.count > 1 {
			e.Count, e.First, e.Weight = m.count, m.first, m.weight
		}
		line, err := json.Marshal(e)
		if err != nil {
			return nil, nil, until, err
		}
		body = append(append(body, line...), '\n')
	}
	for ; next <= n; next++ {
		starts[next] = int64(len(body))
	}
	return body, starts, until, nil
}

func compareMergeKeys(a, b mergeKey) int {
	if c := cmp.Compare(a.interval, b.interval); c != 0 {
		return c
	}
	if c := cmp.Compare(a.path, b.path); c != 0 {
		return c
	}
	if c := cmp.Compare(a.source, b.source); c != 0 {
		return c
	}
	switch {
	case a.attached == b.attached:
		return 0
	case b.attached:
		return -1
	}
	return 1
}

// compactedHeader is the header line of a log whose merged lines, of
// bodySize bytes, start interval i at starts[i] (the first from the
// beginning of time, each next at bounds[i-1]). Its offsets count the
// header itself, whose length depends on them: it is encoded again until
// its length holds still.
func compactedHeader(until time.Time, bounds []time.Time, starts []int64, bodySize int) ([]byte, error) {
	header := logHeader{Version: logHeaderVersion, Until: until.Add(time.Nanosecond)}
	for size := int64(0); ; {
		header.Raw = size + int64(bodySize)
		header.Intervals = header.Intervals[:0]
		for i, at := range starts {
			iv := logInterval{At: size + at}
			if i > 0 {
				iv.From = bounds[i-1]
			}
			header.Intervals = append(header.Intervals, iv)
		}
		b, err := json.Marshal(map[string]logHeader{"compacted": header})
		if err != nil {
			return nil, err
		}
		line := append(b, '\n')
		if int64(len(line)) == size {
			return line, nil
		}
		size = int64(len(line))
	}
}

// logBoundaries are the creation times of the newest exactPackets
// packets, oldest first: the intervals compaction keeps apart.
func (s *Store) logBoundaries() []time.Time {
	sums, _, err := s.PacketSummaries()
	if err != nil {
		return nil
	}
	var ts []time.Time
	for _, p := range sums {
		ts = append(ts, p.CreatedAt)
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return b.Compare(a) })
	ts = slices.CompactFunc(ts, time.Time.Equal)
	ts = ts[:min(len(ts), exactPackets)]
	slices.Reverse(ts)
	return ts
}

// openLog opens the relevant-files log for a scan; nil when there is none.
func (s *Store) openLog() (*os.File, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return nil, err
	}
	p := s.indexPath(RelevantFilesLog)
	f, err := s.files.OpenRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, refused(p, fmt.Errorf("open %s: %w", p, err))
	}
	return f, nil
}
