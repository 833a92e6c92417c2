package fsstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

// The parts of compactLog, each on its own; TestLogCompaction and the
// tests after it check them together, through a store.

func TestIntervalOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	bounds := []time.Time{t0, t0.Add(time.Hour)}
	interval := intervalOf(bounds)
	for _, tt := range []struct {
		at   time.Time
		want int
	}{
		{t0.Add(-time.Second), 0},
		{t0, 1}, // a packet's creation starts its interval
		{t0.Add(30 * time.Minute), 1},
		{t0.Add(time.Hour), 2},
		{t0.Add(48 * time.Hour), 2},
	} {
		if got := interval(tt.at); got != tt.want {
			t.Errorf("interval(%s) = %d, want %d", tt.at.Format(time.TimeOnly), got, tt.want)
		}
	}
	if got := intervalOf(nil)(t0); got != 0 {
		t.Errorf("intervalOf(nil)(t) = %d, want 0", got)
	}
}

// touchLine is one log line as a hook writes it.
func touchLine(t *testing.T, e logEntry) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestMergeLog(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	touch := func(path string, at time.Duration, src baton.FileSource, packet string) logEntry {
		return logEntry{RelevantFile: baton.RelevantFile{Timestamp: t0.Add(at), FilePath: path, Source: src, PacketID: packet, Confidence: 0.5}}
	}
	var log strings.Builder
	log.WriteString(`{"compacted":{"version":1}}` + "\n") // an old header: dropped
	log.WriteString(touchLine(t, touch("a.go", 0, baton.FromTool, "")))
	log.WriteString(touchLine(t, touch("a.go", time.Hour, baton.FromTool, "")))   // the same interval (0)
	log.WriteString(touchLine(t, touch("a.go", 3*time.Hour, baton.FromTool, ""))) // the next one
	log.WriteString(touchLine(t, touch("b.go", 3*time.Hour, baton.FromUser, "p1")))
	log.WriteString("not json\n")
	log.WriteString(`{"file_path":"` + strings.Repeat("x", 200) + `","timestamp":"2026-11-01T00:00:00Z"}` + "\n") // longer than the reader's buffer below
	merged := log.Len()
	log.WriteString(touchLine(t, touch("c.go", 4*time.Hour, baton.FromTool, ""))) // from keepFrom on: kept as written
	log.WriteString(`{"file_path":"d.go"`)                                        // torn: no newline

	interval := intervalOf([]time.Time{t0.Add(2 * time.Hour)})
	r := bufio.NewReaderSize(strings.NewReader(log.String()), 128)
	groups, off := mergeLog(r, int64(merged), interval)
	if off != int64(merged) {
		t.Errorf("mergeLog stopped at %d, want %d (the first line from keepFrom on)", off, merged)
	}
	got := map[string]int{}
	for k, m := range groups {
		got[fmt.Sprintf("%d %s %s %v", k.interval, k.path, k.source, k.attached)] = m.count
	}
	want := map[string]int{"0 a.go tool false": 2, "1 a.go tool false": 1, "1 b.go user true": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mergeLog groups (-want +got):\n%s", diff)
	}
	// A torn last line is never merged, even before keepFrom.
	r = bufio.NewReaderSize(strings.NewReader(log.String()), 128)
	if _, off := mergeLog(r, int64(log.Len()), interval); off != int64(log.Len()-len(`{"file_path":"d.go"`)) {
		t.Errorf("mergeLog over the whole log stopped at %d, want the start of the torn line", off)
	}
}

func TestFitIntervals(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var bounds []time.Time
	for i := range 64 {
		bounds = append(bounds, t0.Add(time.Duration(i+1)*time.Hour))
	}
	build := func(paths int) map[mergeKey]*merged {
		g := map[mergeKey]*merged{}
		for iv := range len(bounds) + 1 {
			for p := range paths {
				at := t0.Add(time.Duration(iv) * time.Hour)
				g[mergeKey{interval: iv, path: fmt.Sprintf("pkg/file%04d.go", p), source: baton.FromTool}] = &merged{count: 1, first: at, last: at, weight: 1}
			}
		}
		return g
	}
	// Few files: every interval is kept apart.
	small := build(10)
	if g, b := fitIntervals(small, bounds); len(g) != len(small) || len(b) != len(bounds) {
		t.Errorf("fitIntervals(650 groups) = %d groups, %d bounds; want them as they are", len(g), len(b))
	}
	// Every file in every interval: the newest intervals are kept apart
	// as far as the budget allows, the older ones merged into the first.
	big := build(300)
	g, b := fitIntervals(big, bounds)
	one := mergedSize(coarsen(big, bounds, 0))
	if mergedSize(g) > one+exactBudget || len(b) == len(bounds) || len(b) == 0 {
		t.Fatalf("fitIntervals(%d groups) = %d groups (%d bytes, one interval %d), %d bounds; want fewer bounds within the budget", len(big), len(g), mergedSize(g), one, len(b))
	}
	if !b[len(b)-1].Equal(bounds[len(bounds)-1]) {
		t.Errorf("fitIntervals kept bounds up to %s, want the newest (%s)", b[len(b)-1], bounds[len(bounds)-1])
	}
	total := 0
	for _, m := range g {
		total += m.count
	}
	if total != len(big) {
		t.Errorf("fitIntervals kept %d touches of %d", total, len(big))
	}
}

func TestMergedLines(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	groups := map[mergeKey]*merged{
		{interval: 2, path: "z.go", source: baton.FromTool}:                 {count: 1, first: t0.Add(5 * time.Hour), last: t0.Add(5 * time.Hour), weight: 1},
		{interval: 0, path: "b.go", source: baton.FromTool}:                 {count: 3, first: t0, last: t0.Add(time.Hour), weight: 1.5},
		{interval: 0, path: "a.go", source: baton.FromUser, attached: true}: {count: 2, first: t0, last: t0, weight: 2, packetID: "p1", confidence: 1},
		{interval: 0, path: "a.go", source: baton.FromUser}:                 {count: 1, first: t0, last: t0, weight: 1, confidence: 1},
	}
	body, starts, until, err := mergedLines(groups, 3)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(body), "\n")
	lines = lines[:len(lines)-1]
	var order []string
	for _, l := range lines {
		var e logEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("merged line %q: %v", l, err)
		}
		order = append(order, fmt.Sprintf("%s %s %q %d", e.FilePath, e.Source, e.PacketID, e.Count))
	}
	want := []string{`a.go user "" 0`, `a.go user "p1" 2`, `b.go tool "" 3`, `z.go tool "" 0`} // one touch stays a plain line
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("merged lines (-want +got):\n%s", diff)
	}
	end := int64(len(body) - len(lines[3]))
	if wantStarts := []int64{0, end, end, int64(len(body))}; !cmp.Equal(starts, wantStarts) {
		t.Errorf("starts = %v, want %v (empty interval 1 and interval 2 start where 0 ends; empty interval 3 at the end)", starts, wantStarts)
	}
	if !until.Equal(t0.Add(5 * time.Hour)) {
		t.Errorf("until = %s, want the last touch", until)
	}
}

// FuzzCompactedHeader: whatever the body's size and the intervals'
// starts, the header compactedHeader writes is one readLogHeader (the
// log's readers) accepts, and its offsets point where the body's lines
// start in the file.
func FuzzCompactedHeader(f *testing.F) {
	f.Add(0, 0, uint8(0))
	f.Add(120, 40, uint8(3))
	f.Add(1<<20, 999_999, uint8(64))
	f.Fuzz(func(t *testing.T, bodySize, step int, n uint8) {
		if bodySize < 0 || bodySize > 1<<24 || step < 0 {
			return
		}
		t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		var bounds []time.Time
		starts := []int64{0}
		for i := range int(n) {
			bounds = append(bounds, t0.Add(time.Duration(i+1)*time.Minute))
			starts = append(starts, min(int64(bodySize), int64(i+1)*int64(step)))
		}
		header, err := compactedHeader(t0.Add(time.Hour), bounds, starts, bodySize)
		if err != nil {
			t.Fatal(err)
		}
		body := bytes.Repeat([]byte("x"), bodySize)
		for _, at := range starts {
			if at > 0 {
				body[at-1] = '\n' // a line ends where each interval starts
			}
		}
		file := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(file, append(header, body...), 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		h, ok := readLogHeader(fh, int64(len(header)+bodySize))
		if !ok {
			t.Fatalf("readLogHeader refused compactedHeader's header %s", header)
		}
		if h.size != int64(len(header)) || h.Raw != h.size+int64(bodySize) || len(h.Intervals) != len(starts) {
			t.Fatalf("header %s read as size %d, raw %d, %d intervals; want %d, %d, %d", header, h.size, h.Raw, len(h.Intervals), len(header), len(header)+bodySize, len(starts))
		}
		for i, iv := range h.Intervals {
			if iv.At != h.size+starts[i] {
				t.Fatalf("interval %d at %d, want %d", i, iv.At, h.size+starts[i])
			}
		}
	})
}
