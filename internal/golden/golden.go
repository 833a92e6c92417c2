// Package golden compares test output with files under a package's
// testdata directory, and rewrites them when the tests run with -update
// (the convention of the standard library's go/printer tests). Review a
// rewritten golden file's diff like code.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update is the -update flag of every test binary that imports golden.
var update = flag.Bool("update", false, "rewrite golden files under testdata")

// Update reports whether the tests run with -update.
func Update() bool { return *update }

// Check compares got with testdata/name, or writes it there with -update.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run go test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// CheckString is Check for text.
func CheckString(t testing.TB, name, got string) {
	t.Helper()
	Check(t, name, []byte(got))
}
