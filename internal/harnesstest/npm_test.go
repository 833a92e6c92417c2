package harnesstest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A package that cannot be installed (here: no npm on PATH) skips the
// test in an everyday run and fails it in a run of every test, where a
// skip would let the run pass having tested nothing.
func TestInstallUnavailable(t *testing.T) {
	if os.Getenv("HARNESSTEST_CHILD") != "" {
		NPMBin(t, "left-pad", "1.3.0", "left-pad")
		t.Fatal("NPMBin returned without npm on PATH")
	}
	t.Parallel()
	for _, tc := range []struct{ all, want string }{{"", "--- SKIP"}, {"1", "--- FAIL"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInstallUnavailable$", "-test.v")
		cmd.Env = []string{"HARNESSTEST_CHILD=1", "PATH=" + t.TempDir(), "BATON_TEST_CACHE=" + t.TempDir(), "BATON_TEST_ALL=" + tc.all}
		out, err := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "npm is not installed") || (err == nil) != (tc.want == "--- SKIP") {
			t.Errorf("BATON_TEST_ALL=%q: %v, want %s:\n%s", tc.all, err, tc.want, out)
		}
	}
}
