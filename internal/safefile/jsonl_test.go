package safefile

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanJSONLLongLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "x.jsonl")
	long := strings.Repeat("x", 1<<20)
	type rec struct {
		V string `json:"v"`
	}
	if err := AppendJSONL(context.Background(), log, rec{"short"}, rec{long}, rec{"after"}); err != nil {
		t.Fatal(err)
	}
	var got []int
	if _, err := ScanJSONL(log, func(r rec) error { got = append(got, len(r.V)); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{5, 1 << 20, 5}, got); diff != "" {
		t.Errorf("lengths mismatch (-want +got):\n%s", diff)
	}
}
