package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/sandbox"
)

// The verify commands run in order in the project root until one fails;
// the failure says which, with the end of its output, in a fence its
// output cannot close.
func TestVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	run, failure := Verify(ctx, VerifyRequest{Commands: []string{"true", "test -f ok.txt"}, Dir: dir, Iteration: 3, Promise: " DONE "})
	if run.Passed || run.Error != "" || len(run.Checks) != 2 || run.Checks[1].ExitCode != 1 || run.Iteration != 3 || run.Promise != "DONE" {
		t.Fatalf("Verify() with a failing command = %+v", run)
	}
	if !strings.Contains(failure, "`test -f ok.txt` failed with exit status 1") || !strings.Contains(failure, "(command 2 of 2)") || !strings.Contains(failure, "It printed nothing") {
		t.Errorf("failure text:\n%s", failure)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run, failure = Verify(ctx, VerifyRequest{Commands: []string{"true", "test -f ok.txt"}, Dir: dir})
	if !run.Passed || failure != "" || len(run.Checks) != 2 {
		t.Fatalf("Verify() once the file is there = %+v, %q", run, failure)
	}
	// The end of a long output, fenced past its own backticks; later
	// commands do not run.
	cmd := "seq 1 5000; echo '````'; echo last line; exit 3"
	run, failure = Verify(ctx, VerifyRequest{Commands: []string{cmd, "touch never.txt"}, Dir: dir})
	if run.Passed || len(run.Checks) != 1 || run.Checks[0].ExitCode != 3 {
		t.Fatalf("Verify() = %+v", run)
	}
	if !strings.Contains(failure, "The end of its output") || !strings.Contains(failure, "`````\n") || !strings.Contains(failure, "last line") || strings.Contains(failure, "\n1\n2\n") || len(failure) > failureTail+600 {
		t.Errorf("failure text (%d bytes):\n%s", len(failure), failure)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.txt")); err == nil {
		t.Error("a command after the failing one ran")
	}
	// All commands share the timeout.
	start := time.Now()
	run, failure = Verify(ctx, VerifyRequest{Commands: []string{"sleep 30"}, Dir: dir, Timeout: 300 * time.Millisecond})
	if !run.Checks[0].TimedOut || !strings.Contains(failure, "did not finish within the verification's 300ms") || time.Since(start) > 20*time.Second {
		t.Errorf("Verify() past its timeout = %+v after %s\n%s", run, time.Since(start), failure)
	}
}

// A verify command runs code the agent wrote: confined, it writes the
// project and its own TMPDIR, and nothing else.
func TestVerifyIsConfined(t *testing.T) {
	t.Parallel()
	if !sandbox.Probe().Available() {
		t.Skip("this kernel cannot confine processes: " + sandbox.Probe().Why)
	}
	dir := t.TempDir()
	outside := t.TempDir()
	run, _ := Verify(context.Background(), VerifyRequest{
		Commands: []string{`touch in-project.txt && touch "$TMPDIR/tmp.txt" && ! touch ` + filepath.Join(outside, "escaped.txt")},
		Dir:      dir,
	})
	if !run.Passed || !run.Checks[0].Confined {
		t.Fatalf("confined verify = %+v", run)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped.txt")); err == nil {
		t.Error("a verify command wrote outside the project")
	}
	// Required confinement that cannot be had is an error, not a pass.
	if run, _ := Verify(context.Background(), VerifyRequest{Commands: []string{"true"}, Dir: dir, Confine: sandbox.Confinement{Mode: "bogus"}}); run.Passed || run.Error == "" {
		t.Errorf("Verify() with a broken sandbox = %+v", run)
	}
}
