package fsstore

import (
	"bytes"
	"encoding/json"
	"os"
	"syscall"
	"time"

	"github.com/baton-agent/baton/internal/safefile"
)

// The touches since the newest packet are what session-start, handoff,
// pre-compact and `baton files` rank, and a session that has not handed
// off for a while has many: 9,000 in the hooks' last MiB. So a ranking of
// the touches since a time keeps what it summed in this machine's
// RankCacheFile, with the part of the log it read, and the next ranking of
// the same query reads only the lines appended since, whatever the
// session's length. The cache is believed only for the log file it was
// made from (its inode, and the bytes before where it stopped, unchanged),
// so compaction (a new file) or an edit starts it again.
//
// A query with a tail reads at most that many bytes past the cache: the
// touches it ranks start where the first ranking of that time started,
// which a tail scan made at that moment would have read too.

// RankCacheFile is the per-machine cache of the last ranking of touches
// since a time.
const RankCacheFile = "relevant-files.rank"

const (
	rankCacheVersion = 1
	// rankCacheMax bounds the cache file; a ranking of more files than
	// fit is not kept.
	rankCacheMax = 4 << 20
	// rankCacheEvery is how much new log a ranking reads before it writes
	// the cache again: a hook that reads a few new lines writes nothing.
	rankCacheEvery = 64 << 10
	// rankMarkLen is how many bytes before the cache's end it keeps, to
	// know the log still holds what was read.
	rankMarkLen = 64
)

// rankCache is the state of a ranking over the log's bytes [First, End).
type rankCache struct {
	Version    int         `json:"version"`
	Dev        uint64      `json:"dev"`
	Ino        uint64      `json:"ino"`
	Since      time.Time   `json:"since"`
	Unattached bool        `json:"unattached"`
	Whole      bool        `json:"whole"` // First is where a scan without a tail starts
	First      int64       `json:"first"`
	End        int64       `json:"end"`
	Mark       []byte      `json:"mark"` // the log's bytes [End-len(Mark), End)
	Newest     time.Time   `json:"newest"`
	Approx     bool        `json:"approximate,omitempty"`
	Lines      int         `json:"lines"`
	Corrupt    int         `json:"corrupt"`
	Files      []rankEntry `json:"files"`
}

type rankEntry struct {
	Path      string    `json:"path"`
	Count     int       `json:"count"`
	Last      time.Time `json:"last"`
	Sum       float64   `json:"sum"`
	Confirmed bool      `json:"confirmed,omitempty"`
}

// rankTouches adds to r the touches r.q selects, through the cache when
// the query has a time to start from.
func (s *Store) rankTouches(r *ranking) (safefile.ScanStats, error) {
	q := r.q
	if q.Since.IsZero() {
		return s.scanRelevantFiles(q.Tail, q.Since, r.add)
	}
	f, err := s.openLog()
	if err != nil || f == nil {
		return safefile.ScanStats{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return safefile.ScanStats{}, refused(f.Name(), err)
	}
	sys, _ := fi.Sys().(*syscall.Stat_t)
	size := fi.Size()
	end := lastLineEnd(f, size)
	decode := skipBefore(q.Since)

	c := s.readRankCache()
	var st safefile.ScanStats
	from, first, whole := int64(0), int64(0), q.Tail == 0
	if c.fits(q, sys, end) && c.holds(f) {
		from, first, whole = c.End, c.First, c.Whole
		c.load(r)
		st = safefile.ScanStats{Lines: c.Lines, Corrupt: c.Corrupt}
	} else {
		var rest int64
		from, rest = logStart(f, size, q.Tail, q.Since)
		if rest > 0 {
			at, found := lineAfter(f, size-rest-1)
			if !found || at > end {
				// No line starts within a block of the tail: as a scan
				// without the cache would, in full.
				st, err := safefile.ScanFile(f, from, rest, decode, r.add)
				return st, refused(f.Name(), err)
			}
			from = at
		}
		first, c = from, nil
	}
	got, err := safefile.ScanFileRange(f, from, end, decode, r.add)
	if err != nil {
		return st, refused(f.Name(), err)
	}
	st.Lines, st.Corrupt = st.Lines+got.Lines, st.Corrupt+got.Corrupt
	if sys != nil && (c == nil || end-from >= rankCacheEvery) {
		s.writeRankCache(f, r, rankCache{Dev: uint64(sys.Dev), Ino: sys.Ino, Whole: whole, First: first, End: end, Lines: st.Lines, Corrupt: st.Corrupt})
	}
	// A line still being written past the last newline is read as a scan
	// without the cache would read it, and not kept.
	if end < size {
		tail, err := safefile.ScanFileRange(f, end, size, decode, r.add)
		if err != nil {
			return st, refused(f.Name(), err)
		}
		st.Lines, st.Corrupt = st.Lines+tail.Lines, st.Corrupt+tail.Corrupt
	}
	return st, nil
}

// fits reports whether the cache is of query q over the log file sys,
// and can be brought to end within the query's tail.
func (c *rankCache) fits(q FileQuery, sys *syscall.Stat_t, end int64) bool {
	return c != nil && sys != nil && c.Version == rankCacheVersion && c.Dev == uint64(sys.Dev) && c.Ino == sys.Ino &&
		c.Since.Equal(q.Since) && c.Unattached == q.Unattached && (c.Whole || q.Tail > 0) &&
		0 <= c.First && c.First <= c.End && c.End <= end && (q.Tail == 0 || end-c.End <= q.Tail)
}

// holds reports whether f still holds, just before the cache's end, the
// bytes the cache recorded.
func (c *rankCache) holds(f *os.File) bool {
	if int64(len(c.Mark)) != min(c.End, rankMarkLen) {
		return false
	}
	b := make([]byte, len(c.Mark))
	n, _ := f.ReadAt(b, c.End-int64(len(b)))
	return n == len(b) && bytes.Equal(b, c.Mark) && (c.End == 0 || b[len(b)-1] == '\n')
}

// load puts the cache's sums into r.
func (c *rankCache) load(r *ranking) {
	for _, e := range c.Files {
		r.byPath[e.Path] = &rankAgg{count: e.Count, last: e.Last, sum: e.Sum, confirmed: e.Confirmed}
	}
	r.newest, r.approximate = c.Newest, c.Approx
}

// lastLineEnd is the offset just past the last newline of f within its
// first size bytes, 0 when there is none.
func lastLineEnd(f *os.File, size int64) int64 {
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, _ := f.ReadAt(buf[:end-start], start)
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		if n < int(end-start) {
			return 0
		}
		end = start
	}
	return 0
}

func (s *Store) readRankCache() *rankCache {
	b, err := s.files.ReadFile(s.indexPath(RankCacheFile), rankCacheMax)
	if err != nil {
		return nil
	}
	var c rankCache
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return &c
}

// writeRankCache keeps r's sums, best effort: a cache that cannot be
// written is made again by the next ranking.
func (s *Store) writeRankCache(f *os.File, r *ranking, c rankCache) {
	c.Version, c.Since, c.Unattached, c.Approx, c.Newest = rankCacheVersion, r.q.Since, r.q.Unattached, r.approximate, r.newest
	c.Mark = make([]byte, min(c.End, rankMarkLen))
	if n, _ := f.ReadAt(c.Mark, c.End-int64(len(c.Mark))); n != len(c.Mark) {
		return
	}
	c.Files = make([]rankEntry, 0, len(r.byPath))
	for p, a := range r.byPath {
		c.Files = append(c.Files, rankEntry{Path: p, Count: a.count, Last: a.last, Sum: a.sum, Confirmed: a.confirmed})
	}
	b, err := json.Marshal(c)
	if err != nil || len(b) > rankCacheMax {
		return
	}
	_ = s.files.WriteCache(s.indexPath(RankCacheFile), b, 0o644)
}
