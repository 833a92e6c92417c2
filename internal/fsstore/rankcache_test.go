package fsstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rankLog appends n touches to the log of s, a few seconds apart from at,
// over a dozen files, and returns the time after the last.
func rankLog(t *testing.T, s *Store, at time.Time, n int, rng *rand.Rand) time.Time {
	t.Helper()
	var b bytes.Buffer
	for range n {
		at = at.Add(time.Duration(1+rng.IntN(5)) * time.Second)
		src, extra := "tool", ""
		if rng.IntN(10) == 0 {
			src, extra = "user", `,"packet_id":"20261101T000000Z-p"`
		}
		fmt.Fprintf(&b, `{"timestamp":%q,"file_path":"f%d.go","source":%q%s,"confidence":0.5}`+"\n", at.Format(time.RFC3339Nano), rng.IntN(13), src, extra)
	}
	f, err := os.OpenFile(s.indexPath(RelevantFilesLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	return at
}

// uncached ranks q with no cache, as the first ranking of a query does.
func uncached(t *testing.T, s *Store, q FileQuery) []FileRank {
	t.Helper()
	if err := os.Remove(s.indexPath(RankCacheFile)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	got, _, err := s.RankFiles(q)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A ranking through the cache is the ranking a scan of the whole window
// gives, however the log grew since the cache was written, and the cache
// is not believed for a log that was replaced, edited or cut.
func TestRankCacheRanksAsAScan(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	at := rankLog(t, s, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 3000, rng)
	since := at.Add(-time.Hour)
	for _, unattached := range []bool{true, false} {
		q := FileQuery{Since: since, Unattached: unattached}
		for _, n := range []int{1, 40, 3000, 2, 700} {
			uncached(t, s, q) // the cache, as of now
			at = rankLog(t, s, at, n, rng)
			got, _, err := s.RankFiles(q) // the cache, and the lines after it
			if err != nil {
				t.Fatal(err)
			}
			// A hook's query, with a tail, over a cache of the whole window.
			tq := q
			tq.Tail = RecentLogBytes
			tail, _, err := s.RankFiles(tq)
			if err != nil {
				t.Fatal(err)
			}
			if want := uncached(t, s, q); !cmp.Equal(got, want) || !cmp.Equal(tail, want) {
				t.Fatalf("unattached %v, after %d more lines: through the cache %v, with a tail %v; a scan %v", unattached, n, got, tail, want)
			}
		}
	}
	// The cache is what is read: a file only it names is ranked.
	c := s.readRankCache()
	if c == nil || len(c.Files) == 0 {
		t.Fatalf("no cache after a ranking: %+v", c)
	}
	c.Files[0].Path = "only-in-the-cache.go"
	b, _ := json.Marshal(c)
	if err := os.WriteFile(s.indexPath(RankCacheFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.RankFiles(FileQuery{Since: c.Since, Unattached: c.Unattached}); err != nil || !slices.ContainsFunc(got, func(r FileRank) bool { return r.Path == "only-in-the-cache.go" }) {
		t.Fatalf("a ranking with a cache = %v, %v; want the cache's file", got, err)
	}
	q := FileQuery{Since: since, Unattached: true}
	check := func(what string) {
		t.Helper()
		got, _, err := s.RankFiles(q)
		if err != nil {
			t.Fatal(err)
		}
		if want := uncached(t, s, q); !cmp.Equal(got, want) {
			t.Fatalf("%s: through the cache %v, a scan %v", what, got, want)
		}
	}
	p := s.indexPath(RelevantFilesLog)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	uncached(t, s, q)
	// Edited in place before where the cache stopped.
	edited := bytes.Replace(b, []byte(`"f1.go"`), []byte(`"f9.go"`), -1)
	if err := os.WriteFile(p, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	check("an edit in place")
	// Replaced by another file of the same content (compaction makes a new file).
	uncached(t, s, q)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, edited[:len(edited)/2+bytes.IndexByte(edited[len(edited)/2:], '\n')+1], 0o644); err != nil {
		t.Fatal(err)
	}
	check("a new file, shorter")
	// A line being written: no newline yet.
	uncached(t, s, q)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"timestamp":%q,"file_path":"half.go","source":"tool","confidence":0.5}`, at.Add(time.Second).Format(time.RFC3339Nano))
	f.Close()
	check("a line with no newline yet")
	// Another time: the cache of the first is not used.
	q.Since = since.Add(30 * time.Minute)
	check("another time")
}

// lastLineEnd is the offset past the file's last newline.
func FuzzLastLineEnd(f *testing.F) {
	f.Add([]byte("a\nb\n"), 3)
	f.Add([]byte("no newline"), 5)
	f.Add(bytes.Repeat([]byte("x"), 9000), 9000)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		if size < 0 || size > len(b) {
			return
		}
		p := t.TempDir() + "/log"
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		want := int64(bytes.LastIndexByte(b[:size], '\n') + 1)
		if got := lastLineEnd(file, int64(size)); got != want {
			t.Fatalf("lastLineEnd(%q, %d) = %d, want %d", b, size, got, want)
		}
	})
}
