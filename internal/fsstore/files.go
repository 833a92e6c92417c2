package fsstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// RelPath returns p relative to the project root with forward slashes, and
// false when p lies outside the root. Relative paths are taken relative to
// base (a hook's cwd, or the process directory). Symlinked spellings of the
// root (macOS /var vs /private/var) are resolved before giving up.
func (s *Store) RelPath(base, p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	if rel, ok := relInside(s.root, p); ok {
		return rel, true
	}
	rr, err1 := filepath.EvalSymlinks(s.root)
	dir, err2 := filepath.EvalSymlinks(filepath.Dir(p))
	if err1 != nil || err2 != nil {
		return "", false
	}
	return relInside(rr, filepath.Join(dir, filepath.Base(p)))
}

func relInside(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// AppendRelevantFiles appends entries to indexes/relevant-files.jsonl.
// Paths must already be repo-relative. Safe for many concurrent writers.
func (s *Store) AppendRelevantFiles(ctx context.Context, entries ...baton.RelevantFile) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.mkIndexes(); err != nil {
		return err
	}
	p := s.indexPath(RelevantFilesLog)
	if err := refused(p, safefile.AppendJSONLBeneath(ctx, s.files, p, entries...)); err != nil {
		return err
	}
	if s.logSizeToCompact(p) {
		// The entries are written; a compaction that fails leaves the log
		// as it was, to be compacted by the next append.
		_ = s.compactLog(ctx, false)
	}
	return nil
}

// ScanRelevantFiles streams the relevant-files log. A line compaction
// merged stands for several touches of its file; it is given once.
func (s *Store) ScanRelevantFiles(fn func(baton.RelevantFile) error) (safefile.ScanStats, error) {
	return s.scanRelevantFiles(0, time.Time{}, func(e logEntry) error { return fn(e.RelevantFile) })
}

// scanRelevantFiles streams the log's last tail bytes, or, when tail is
// 0, the lines that can hold touches at or after since (all of them for
// a zero since).
func (s *Store) scanRelevantFiles(tail int64, since time.Time, fn func(logEntry) error) (safefile.ScanStats, error) {
	f, err := s.openLog()
	if err != nil || f == nil {
		return safefile.ScanStats{}, err
	}
	defer f.Close()
	var from int64
	if !since.IsZero() {
		if fi, err := f.Stat(); err == nil {
			from, tail = logStart(f, fi.Size(), tail, since)
		}
	}
	decode := decodeRelevantFile
	if !since.IsZero() {
		decode = skipBefore(since)
	}
	st, err := safefile.ScanFile(f, from, tail, decode, fn)
	return st, refused(f.Name(), err)
}

// logStart returns where a scan for the touches at or after since (not
// zero) starts in the log f of size bytes, reading its last tail bytes
// when tail > 0: a line start, and the tail ScanFile must still cut (0
// when the start is resolved).
func logStart(f *os.File, size, tail int64, since time.Time) (from, rest int64) {
	// Merged lines are not in time order; the lines as written (all of a
	// log never compacted) are.
	h, ok := readLogHeader(f, size)
	if tail >= size {
		tail = 0 // the whole log is the tail
	}
	switch {
	case tail > 0 && tail < size:
		// The tail's first line, bisected on when it lies among the lines
		// as written.
		if at, found := lineAfter(f, size-tail-1); found && (!ok || at >= h.Raw) {
			from, tail = seekTouches(f, at, size, since.Add(-appendLag)), 0
		}
	case tail == 0:
		if ok {
			from = h.startFor(f, since)
		}
		if !ok || from == h.Raw {
			from = seekTouches(f, from, size, since.Add(-appendLag))
		}
	}
	return from, tail
}

// appendLag bounds how much earlier than the line before it a line of
// the log may be stamped: appends are in time order but for the moments
// between a hook taking its time and writing its line.
const appendLag = time.Minute

// seekTouches returns a line start in f at or after from (a line start)
// and before the first line stamped at or after t, found by bisecting the
// lines as written, which are in time order (within appendLag, which the
// caller takes off t). It reads a few small blocks; anything it cannot
// read as a line baton wrote stops it where it is, so at worst the scan
// reads more than it needs, never less.
func seekTouches(f *os.File, from, size int64, t time.Time) int64 {
	const near = 64 << 10 // close enough: scanning this costs less than seeking on
	want := t.UTC().Format("2006-01-02T15:04:05")
	lo, hi := from, size
	buf := make([]byte, 512)
	for hi-lo > near {
		mid := lo + (hi-lo)/2
		n, _ := f.ReadAt(buf, mid)
		nl := bytes.IndexByte(buf[:n], '\n')
		if nl < 0 {
			return lo
		}
		start := mid + int64(nl) + 1
		ts, ok := lineStamp(buf[nl+1 : n])
		if !ok {
			return lo
		}
		if ts < want {
			lo = start
		} else {
			hi = mid
		}
	}
	return lo
}

// lineAfter returns the start of the first line that begins after off
// (the next byte after a newline at or after off), reading one block;
// false when there is none in it.
func lineAfter(f *os.File, off int64) (int64, bool) {
	buf := make([]byte, 4096)
	n, _ := f.ReadAt(buf, off)
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		return off + int64(i) + 1, true
	}
	return 0, false
}

// lineStamp returns the second of the timestamp a line baton wrote starts
// with (UTC, "2006-01-02T15:04:05"), and false for any other line.
func lineStamp(line []byte) (string, bool) {
	const key = `{"timestamp":"`
	if len(line) < len(key)+21 || string(line[:len(key)]) != key {
		return "", false
	}
	rest := line[len(key)+19:]
	if c := rest[0]; (c != 'Z' && c != '.') || !utcStamp(rest) {
		return "", false
	}
	return string(line[len(key) : len(key)+19]), true
}

// skipBefore is decodeRelevantFile for a scan that wants the touches at
// or after since: a line as baton writes it, whose UTC timestamp is in
// an earlier second, is passed over without being decoded (a hook that
// counts the touches since the last packet reads a MiB of others).
func skipBefore(since time.Time) func([]byte, *logEntry) error {
	const key = `{"timestamp":"`
	want := since.UTC().Format("2006-01-02T15:04:05")
	return func(line []byte, e *logEntry) error {
		if len(line) > len(key)+21 && string(line[:len(key)]) == key {
			ts := line[len(key) : len(key)+19]
			if c := line[len(key)+19]; (c == 'Z' || c == '.') && string(ts) < want && utcStamp(line[len(key)+19:]) && plainKeys(line) {
				return safefile.ErrSkipLine
			}
		}
		return decodeRelevantFile(line, e)
	}
}

// plainKeys reports whether line is an object as baton writes a log
// line: no escapes, each key one of a log line's, once. Only then is its
// first timestamp the one encoding/json would decode (it takes the last
// of two, and matches keys in any case).
func plainKeys(line []byte) bool {
	if bytes.IndexByte(line, '\\') >= 0 || len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return false
	}
	seen := 0
	b := line[1 : len(line)-1]
	for len(b) > 0 {
		k, rest, ok := fastString(b)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		bit := logKey(k)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		b = rest[1:]
		if len(b) > 0 && b[0] == '"' {
			if _, b, ok = fastString(b); !ok {
				return false
			}
		} else {
			i := bytes.IndexByte(b, ',')
			if i < 0 {
				i = len(b)
			}
			if i == 0 || bytes.ContainsAny(b[:i], "{}[]\"") {
				return false
			}
			b = b[i:]
		}
		if len(b) > 0 {
			if b[0] != ',' || len(b) == 1 {
				return false
			}
			b = b[1:]
		}
	}
	return true
}

// logKey is a bit for each key of a relevant-files line, 0 for others.
func logKey(k []byte) int {
	switch string(k) {
	case "timestamp":
		return 1
	case "file_path":
		return 2
	case "source":
		return 4
	case "packet_id":
		return 8
	case "confidence":
		return 16
	case "count":
		return 32
	case "first":
		return 64
	case "weight":
		return 128
	}
	return 0
}

// utcStamp reports whether rest, what follows the seconds of a JSON
// timestamp, is an optional fraction and the Z of UTC, closing the
// string.
func utcStamp(rest []byte) bool {
	i := 0
	if rest[0] == '.' {
		for i = 1; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
		}
	}
	return i+1 < len(rest) && rest[i] == 'Z' && rest[i+1] == '"'
}

// FileRank is one file in a ranked listing of the relevant-files log.
type FileRank struct {
	Path      string           `json:"path"`
	Count     int              `json:"count"`
	LastSeen  time.Time        `json:"last_seen"`
	Source    baton.FileSource `json:"source"` // user when any entry confirmed it
	Score     float64          `json:"score"`
	Confirmed bool             `json:"confirmed"`
}

// FileQuery selects log entries for RankFiles.
type FileQuery struct {
	Since time.Time // entries at or after Since; zero = all
	// Tail reads only the log's last Tail bytes (0: all of it), for a
	// caller that must answer in bounded time and wants recent entries.
	// With Since, what the last ranking of the same query kept
	// (RankCacheFile) counts too, and Tail bounds what is read past it.
	Tail int64
	// Unattached skips user entries already attached to a packet (a
	// handoff's --file, or files add --packet), so a packet's confirmed
	// files are not confirmed again by the next one.
	Unattached bool
}

// rankHalfLife is how fast a touch loses weight: a file touched ten times
// an hour ago ranks like one touched five times just now.
const rankHalfLife = time.Hour

// RankFiles streams the log and returns one row per file, deduplicated and
// ranked by score: each touch counts 0.5^(age/1h), age measured from the
// newest entry selected (not the wall clock, so a listing is reproducible).
// Memory grows with the number of distinct files, not with the log.
func (s *Store) RankFiles(q FileQuery) ([]FileRank, safefile.ScanStats, error) {
	ranks, st, _, err := s.rankFiles(q)
	return ranks, st, err
}

// rankFiles is RankFiles that also reports whether the listing is
// approximate: a line compaction merged held touches on both sides of
// q.Since, and all of them were counted.
func (s *Store) rankFiles(q FileQuery) ([]FileRank, safefile.ScanStats, bool, error) {
	r := &ranking{q: q, byPath: map[string]*rankAgg{}}
	st, err := s.rankTouches(r)
	if err != nil {
		return nil, st, false, err
	}
	out := make([]FileRank, 0, len(r.byPath))
	for p, a := range r.byPath {
		src := baton.FromTool
		if a.confirmed {
			src = baton.FromUser
		}
		out = append(out, FileRank{
			Path: p, Count: a.count, LastSeen: a.last, Source: src, Confirmed: a.confirmed,
			Score: math.Round(a.sum*decay(r.newest.Sub(a.last))*1000) / 1000,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.After(out[j].LastSeen)
		}
		return out[i].Path < out[j].Path
	})
	return out, st, r.approximate, nil
}

// ranking sums the touches a FileQuery selects, file by file. Each file
// keeps its score relative to its own last touch, so an entry costs O(1)
// and no exponent ever grows: score = sum over touches of
// 0.5^((last-t)/h), rescaled to the newest entry at the end.
type ranking struct {
	q           FileQuery
	byPath      map[string]*rankAgg
	newest      time.Time
	approximate bool
}

type rankAgg struct {
	count     int
	last      time.Time
	sum       float64
	confirmed bool
}

// add counts one log entry.
func (r *ranking) add(e logEntry) error {
	q := r.q
	if e.FilePath == "" || (!q.Since.IsZero() && e.Timestamp.Before(q.Since)) {
		return nil
	}
	if q.Unattached && e.Source == baton.FromUser && e.PacketID != "" {
		return nil
	}
	n, w := 1, 1.0
	if e.Count != 0 {
		if e.Count < 0 || e.Weight < 0 {
			return nil // no merge writes that
		}
		n, w = e.Count, min(e.Weight, float64(e.Count))
		if !q.Since.IsZero() && e.First.Before(q.Since) {
			r.approximate = true
		}
	}
	a := r.byPath[e.FilePath]
	if a == nil {
		a = &rankAgg{last: e.Timestamp}
		r.byPath[e.FilePath] = a
	}
	a.count += n
	if e.Timestamp.After(a.last) {
		a.sum = a.sum*decay(e.Timestamp.Sub(a.last)) + w
		a.last = e.Timestamp
	} else {
		a.sum += w * decay(a.last.Sub(e.Timestamp))
	}
	if e.Source == baton.FromUser {
		a.confirmed = true
	}
	if e.Timestamp.After(r.newest) {
		r.newest = e.Timestamp
	}
	return nil
}

// decay weighs a touch that is age old.
func decay(age time.Duration) float64 {
	return math.Exp2(-age.Hours() / rankHalfLife.Hours())
}

// AppendSession records a harness session in indexes/sessions.jsonl.
func (s *Store) AppendSession(ctx context.Context, r baton.SessionRecord) error {
	if err := s.mkIndexes(); err != nil {
		return err
	}
	p := s.indexPath(SessionsLog)
	return refused(p, safefile.AppendJSONLBeneath(ctx, s.files, p, r))
}

// SessionSpan is what this machine's session log says of one session:
// when it first started here, and its newest record.
type SessionSpan struct {
	First time.Time
	Last  baton.SessionRecord
}

// SessionSpans returns the spans of those of ids the session log names,
// in one pass over it; a session it does not name is not in the map.
func (s *Store) SessionSpans(ids []string) (map[string]SessionSpan, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return nil, err
	}
	out := map[string]SessionSpan{}
	p := s.indexPath(SessionsLog)
	_, err := safefile.ScanJSONL(p, func(r baton.SessionRecord) error {
		if !slices.Contains(ids, r.SessionID) {
			return nil
		}
		sp, seen := out[r.SessionID]
		if !seen || r.At.Before(sp.First) {
			sp.First = r.At
		}
		sp.Last = r
		out[r.SessionID] = sp
		return nil
	})
	if err != nil {
		return nil, refused(p, err)
	}
	return out, nil
}

// FindSession returns the newest record of sessionID, or NotFound.
func (s *Store) FindSession(sessionID string) (*baton.SessionRecord, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return nil, err
	}
	var found *baton.SessionRecord
	p := s.indexPath(SessionsLog)
	_, err := safefile.ScanJSONLBeneath(s.files, p, func(r baton.SessionRecord) error {
		if r.SessionID == sessionID {
			rc := r
			found = &rc
		}
		return nil
	})
	if err != nil {
		return nil, refused(p, err)
	}
	if found == nil {
		return nil, baton.Errorf(baton.NotFound, "session %s is not in %s", sessionID, SessionsLog)
	}
	return found, nil
}

// PendingFiles returns the query for the files the next handoff would
// suggest (entries since the newest packet that no packet has taken), and
// that packet; nil when there is none and the query covers the whole log.
func (s *Store) PendingFiles() (FileQuery, *baton.Packet, error) {
	newest, err := s.NewestPacket()
	if err != nil {
		return FileQuery{}, nil, err
	}
	q := FileQuery{Unattached: true}
	if newest != nil {
		q.Since = newest.CreatedAt
	}
	return q, newest, nil
}

// ConfirmFiles records paths (relative to base, or absolute) as confirmed
// relevant by the user, attached to packetID when it is not "". A path
// outside the root is Invalid; a path that does not exist is NotFound
// unless missingOK. Nothing is recorded unless every path passes. It
// returns the paths as stored, relative to the root.
func (s *Store) ConfirmFiles(ctx context.Context, base string, paths []string, packetID string, missingOK bool, now time.Time) ([]string, error) {
	entries := make([]baton.RelevantFile, 0, len(paths))
	for _, p := range paths {
		rel, ok := s.RelPath(base, p)
		if !ok {
			return nil, baton.Errorf(baton.Invalid, "%s is outside the project root %s", p, s.root)
		}
		if !missingOK {
			if _, err := os.Lstat(filepath.Join(s.root, rel)); errors.Is(err, fs.ErrNotExist) {
				return nil, baton.Errorf(baton.NotFound, "%s does not exist: check the path, or allow missing files (--missing-ok; missing_ok over MCP) to record one still to be written", p)
			}
		}
		entries = append(entries, baton.RelevantFile{Timestamp: now.UTC(), FilePath: rel, Source: baton.FromUser, PacketID: packetID, Confidence: 1})
	}
	if err := s.AppendRelevantFiles(ctx, entries...); err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.FilePath
	}
	return out, nil
}

// FilesRequest asks for the ranked relevant files.
type FilesRequest struct {
	// Since names a packet (an id, a prefix or latest): only entries after
	// it was created. Without Since or All, the listing is what the next
	// handoff would suggest (PendingFiles).
	Since string
	// All lists the whole log.
	All bool
	// Limit is how many files at most; 0 for all.
	Limit int
}

// FileList is a ranked listing of the relevant-files log.
type FileList struct {
	// Files are the files, best ranked first; never nil.
	Files []FileRank
	// Since is the packet the listing starts after; nil for the whole log.
	Since *baton.Packet
	// SinceTime is when the listing starts; zero for the whole log.
	SinceTime time.Time
	// More counts the files Limit left out.
	More int
	// SkippedLines counts log lines that could not be read.
	SkippedLines int
	// Approximate is set when Since falls inside touches the log's
	// compaction merged (a packet older than the newest 64 when the log
	// was compacted): those touches are all counted.
	Approximate bool
}

// Files ranks the relevant files a request asks for: the one call behind
// `baton files` and the MCP files tool. All with Since, or a negative
// Limit, is Invalid.
func (s *Store) Files(req FilesRequest) (FileList, error) {
	var out FileList
	switch {
	case req.All && req.Since != "":
		return out, baton.Errorf(baton.Invalid, "all and since do not go together: list the whole log, or the entries since a packet")
	case req.Limit < 0:
		return out, baton.Errorf(baton.Invalid, "a limit of %d files: give a number of files, or 0 for all", req.Limit)
	}
	var q FileQuery
	switch {
	case req.Since != "":
		p, err := s.ResolvePacket(req.Since)
		if err != nil {
			return out, err
		}
		q.Since, out.Since = p.CreatedAt, p
	case !req.All:
		pq, newest, err := s.PendingFiles()
		if err != nil {
			return out, err
		}
		q, out.Since = pq, newest
	}
	ranks, stats, approximate, err := s.rankFiles(q)
	if err != nil {
		return out, err
	}
	out.Approximate = approximate
	if req.Limit > 0 && len(ranks) > req.Limit {
		out.More = len(ranks) - req.Limit
		ranks = ranks[:req.Limit]
	}
	if ranks == nil {
		ranks = []FileRank{}
	}
	out.Files, out.SinceTime, out.SkippedLines = ranks, q.Since, stats.Corrupt
	return out, nil
}
