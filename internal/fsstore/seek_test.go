package fsstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seekTouches never passes over a line stamped at or after the time
// asked for, whatever the log holds, as long as its lines are in time
// order within appendLag: it starts at a line, and every line before it
// is older.
func FuzzSeekTouches(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint16(3), false)
	f.Add(bytes.Repeat([]byte{200, 0, 7}, 400), uint16(500), true)
	f.Add(bytes.Repeat([]byte{255}, 3000), uint16(2000), false)
	f.Fuzz(func(t *testing.T, steps []byte, at uint16, garbage bool) {
		base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		var log bytes.Buffer
		var stamps []time.Time // of each baton line, with its offset
		var offsets []int64
		clock, latest := base, base
		for i := 0; i+1 < len(steps); i += 2 {
			// Forward by up to ~4 h, or back, to less than appendLag
			// before the latest line so far.
			d := time.Duration(binary.BigEndian.Uint16(steps[i:])) * 250 * time.Millisecond
			if steps[i]%7 == 0 {
				d = -time.Duration(steps[i+1]) * 200 * time.Millisecond
			}
			clock = clock.Add(d)
			if floor := latest.Add(-appendLag + time.Second); clock.Before(floor) {
				clock = floor
			}
			if clock.After(latest) {
				latest = clock
			}
			if garbage && steps[i+1]%13 == 0 {
				log.WriteString("not a line baton wrote\n")
				continue
			}
			offsets = append(offsets, int64(log.Len()))
			stamps = append(stamps, clock)
			fmt.Fprintf(&log, `{"timestamp":%q,"file_path":"f%d.go","source":"tool","confidence":0.5}`+"\n",
				clock.Format(time.RFC3339Nano), i)
		}
		p := filepath.Join(t.TempDir(), "log.jsonl")
		if err := os.WriteFile(p, log.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		want := base.Add(time.Duration(at) * 10 * time.Second)
		got := seekTouches(file, 0, int64(log.Len()), want.Add(-appendLag))
		if got < 0 || got > int64(log.Len()) || (got > 0 && log.Bytes()[got-1] != '\n') {
			t.Fatalf("seekTouches = %d: not a line start in a %d-byte log", got, log.Len())
		}
		for i, off := range offsets {
			if off < got && !stamps[i].Before(want) {
				t.Fatalf("seekTouches = %d passed over the line at %d stamped %s, not before %s", got, off, stamps[i], want)
			}
		}
	})
}

// In a long log in time order, the scan starts near the first line it
// wants: no more than a block and a line before it.
func TestSeekTouchesLandsNear(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var log bytes.Buffer
	var first int64 = -1
	want := base.Add(50_000 * time.Minute)
	for i := range 100_000 {
		at := base.Add(time.Duration(i) * time.Minute)
		if first < 0 && !at.Before(want) {
			first = int64(log.Len())
		}
		fmt.Fprintf(&log, `{"timestamp":%q,"file_path":"f%d.go","source":"tool","confidence":0.5}`+"\n", at.Format(time.RFC3339Nano), i)
	}
	p := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(p, log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := seekTouches(f, 0, int64(log.Len()), want.Add(-appendLag))
	if got > first || first-got > 64<<10+512 {
		t.Errorf("seekTouches = %d; the first line wanted is at %d (log %d bytes)", got, first, log.Len())
	}
}

// A hook's query (the touches since a packet, in the log's last bytes)
// counts exactly the lines of the tail stamped at or after since, seek or
// no seek.
func TestRankSinceInTailCountsEveryTouch(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var log bytes.Buffer
	type line struct {
		off  int64
		at   time.Time
		path string
	}
	var lines []line
	for i := range 40_000 {
		at := base.Add(time.Duration(i) * 3 * time.Second)
		if i%5 == 0 {
			at = at.Add(-40 * time.Second) // written a moment late
		}
		l := line{int64(log.Len()), at, fmt.Sprintf("f%d.go", i%37)}
		lines = append(lines, l)
		fmt.Fprintf(&log, `{"timestamp":%q,"file_path":%q,"source":"tool","confidence":0.5}`+"\n", at.Format(time.RFC3339Nano), l.path)
	}
	if err := os.WriteFile(s.indexPath(RelevantFilesLog), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	const tail = 1 << 20
	for _, since := range []time.Time{base, base.Add(20 * time.Hour), base.Add(30*time.Hour + 7*time.Second), base.Add(1000 * time.Hour)} {
		want := map[string]int{}
		for _, l := range lines {
			if l.off >= int64(log.Len())-tail && !l.at.Before(since) {
				want[l.path]++
			}
		}
		ranks, _, err := s.RankFiles(FileQuery{Since: since, Tail: tail})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range ranks {
			got[r.Path] = r.Count
		}
		if !maps.Equal(got, want) {
			t.Errorf("since %s: counts %v, want %v", since, got, want)
		}
	}
}
