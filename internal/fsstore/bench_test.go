package fsstore

import (
	"bufio"
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
