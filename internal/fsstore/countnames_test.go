package fsstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countNames counts what a listing of the directory would: the names
// that look like artifacts, whatever else is there, over more entries
// than one block of the directory holds.
func TestCountNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want, names := 0, 12_000
	if testing.Short() {
		names = 6_000 // still more than one block (256 KiB) of entries
	}
	for i := range names {
		var name string
		switch i % 6 {
		case 0, 1, 2:
			name = fmt.Sprintf("20261101T%06dZ-task-%d.md", i%240000, i)
			want++
		case 3:
			name = fmt.Sprintf(".20261101T000000Z-tmp-%d.md", i) // a temp file
		case 4:
			name = fmt.Sprintf("20261101T000000Z-x-%d.md.lock", i)
		case 5:
			name = fmt.Sprintf("%s-%d.md", strings.Repeat("n", 200), i) // not an id
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "20261101T000000Z-a-dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	want++ // whatever its type
	if n, err := countNames(dir); err != nil || n != want {
		t.Fatalf("countNames = %d, %v; want %d", n, err, want)
	}
	if _, err := countNames(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("countNames of a missing directory: %v, want not-exist", err)
	}
}
