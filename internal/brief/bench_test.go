package brief

import (
	"io"
	"testing"

	"github.com/baton-agent/baton/internal/github/githubtest"
)

// BenchmarkIndexAndExcerpt100MB indexes a generated 100 MB, 5,000-file
// diff as it streams into a spool (spilling to a temporary file), then cuts
// it to the default 50 KB budget: the brief-side cost of review-pr on the
// largest pull requests, without HTTP.
func BenchmarkIndexAndExcerpt100MB(b *testing.B) {
	const size = 100 << 20
	gen := githubtest.LargeDiff(5000, size)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(gen(pw)) }()
		sp := newSpool(defaultSpoolMemory, b.TempDir())
		idx, err := IndexDiff(pr, sp)
		if err != nil {
			b.Fatal(err)
		}
		if len(idx.Files) != 5000 || idx.Size != size {
			b.Fatalf("indexed %d files, %d bytes", len(idx.Files), idx.Size)
		}
		ex, err := excerptDiff(idx, sp, DefaultDiffBudget)
		if err != nil {
			b.Fatal(err)
		}
		if ex.Used > DefaultDiffBudget || !ex.Truncated() {
			b.Fatalf("excerpt used %d bytes, truncated %v", ex.Used, ex.Truncated())
		}
		sp.Close()
	}
}
