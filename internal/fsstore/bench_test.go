package fsstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton"
)

// writeLog writes n relevant-files entries over distinct paths, one minute
// apart, the way the post-tool-use hook appends them.
func writeLog(tb testing.TB, path string, n, distinct int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		enc.Encode(baton.RelevantFile{Timestamp: t0.Add(time.Duration(i) * time.Second), FilePath: fmt.Sprintf("internal/pkg%03d/file%04d.go", i%100, (i*7919)%distinct), Source: baton.FromTool, Confidence: 0.5})
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

func BenchmarkRankFiles1M(b *testing.B) {
	s := Open(b.TempDir(), Options{})
	dir, err := s.MakeIndexDir()
	if err != nil {
		b.Fatal(err)
	}
	log := filepath.Join(dir, RelevantFilesLog)
	writeLog(b, log, 1_000_000, 5000)
	fi, _ := os.Stat(log)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		ranks, st, err := s.RankFiles(FileQuery{})
		if err != nil || st.Lines != 1_000_000 || len(ranks) == 0 {
			b.Fatalf("RankFiles = %d ranks, %+v, %v", len(ranks), st, err)
		}
	}
}

// BenchmarkNewForeignLoops200 is what every session-start pays in a store
// of 200 loops none of which changed since the last: a listing, one
// fstatat per loop file and the per-machine record read.
func BenchmarkNewForeignLoops200(b *testing.B) {
	ctx := context.Background()
	s := Open(b.TempDir(), Options{MachineID: "bench"})
	if _, err := s.Init(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		l := &baton.Loop{ID: fmt.Sprintf("20260101T%06dZ-loop-%d", i, i), Prompt: "p", MaxIterations: 3, Status: baton.LoopDone, Outcome: baton.OutcomeCancelled}
		if i == 199 {
			l.Status, l.Outcome = baton.LoopActive, ""
		}
		if err := s.CreateLoop(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
	f, err := s.Foreground()
	if err != nil {
		b.Fatal(err)
	}
	// Settle the record past the file system's clock tick.
	time.Sleep(20 * time.Millisecond) // no event marks a tick passed
	if _, _, err := s.NewForeignLoops(f); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		// A hook's store is new in each process: so is this one.
		st := Open(s.Root(), Options{MachineID: "bench", OneShot: true})
		told, warn, err := st.NewForeignLoops(f)
		if err != nil || len(told) != 0 || len(warn) != 0 {
			b.Fatalf("NewForeignLoops = %d told, %v, %v", len(told), warn, err)
		}
	}
}

// BenchmarkCountNames10k is what a reader pays when a write was too
// recent to trust the packets directory's time alone (a search right
// after a handoff): the names of 10,000 packets counted. Most of it is
// the kernel's reading of the directory.
func BenchmarkCountNames10k(b *testing.B) {
	dir := b.TempDir()
	for i := range 10_000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("20260101T%06dZ-task-%d.md", i, i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		n, err := countNames(dir)
		if err != nil || n != 10_000 {
			b.Fatalf("counted %d: %v", n, err)
		}
	}
}
