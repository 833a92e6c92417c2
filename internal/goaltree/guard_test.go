package goaltree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
)

func TestRunGuard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runs := 0
	run := func(command string, timeout time.Duration, maxLog int64) (guardOutcome, string, error) {
		t.Helper()
		runs++
		log := filepath.Join(dir, fmt.Sprintf("%d-%s", runs, GuardLog))
		out, err := runGuard(t.Context(), guardSpec{Command: command, Dir: dir, Files: Layout{Root: dir}, Env: []string{"GUARD_VAR=seen"}, Timeout: timeout, Log: log, MaxLog: maxLog})
		b, _ := os.ReadFile(log)
		return out, string(b), err
	}
	out, log, err := run(`echo "$GUARD_VAR"; echo oops >&2`, time.Minute, 1<<20)
	if err != nil || out.Result != guardPass || !strings.Contains(log, "seen\noops\n") || !strings.Contains(log, "[baton: exit status 0") {
		t.Errorf("passing guard = %+v, %v, log %q", out, err, log)
	}
	out, log, err = run(`printf 'line %s\n' $(seq 1 3000); exit 3`, time.Minute, 100)
	if err != nil || out.Result != guardFail || out.ExitCode != 3 || !out.Truncated {
		t.Errorf("failing guard = %+v, %v", out, err)
	}
	if !strings.Contains(log, "log truncated at 100 bytes") || len(log) > 400 {
		t.Errorf("capped guard log = %d bytes: %q", len(log), log)
	}
	if !strings.HasPrefix(out.Tail, "line ") || !strings.HasSuffix(out.Tail, "line 3000\n") || len(out.Tail) > failureTailBytes {
		t.Errorf("tail starts %q, ends %q, %d bytes", out.Tail[:10], out.Tail[len(out.Tail)-10:], len(out.Tail))
	}
	if text := out.failureText("make ci"); !strings.Contains(text, "`make ci` failed with exit status 3") || !strings.Contains(text, "full log is guard.log") {
		t.Errorf("failureText = %q", text[:200])
	}
	start := time.Now()
	out, _, err = run(`sleep 60 & sleep 60`, 300*time.Millisecond, 1<<20)
	if err != nil || out.Result != guardFail || !out.TimedOut || time.Since(start) > 20*time.Second {
		t.Errorf("slow guard = %+v, %v after %s; want a timed-out failure", out, err, time.Since(start))
	}
	if text := out.failureText("x"); !strings.Contains(text, "did not finish") {
		t.Errorf("failureText of a timeout = %q", text)
	}
	out, _, err = run(`true`, 0, 1<<20)
	if err != nil || out.Result != guardFail || !out.TimedOut {
		t.Errorf("guard with no time left = %+v, %v", out, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := runGuard(ctx, guardSpec{Command: "true", Dir: dir, Files: Layout{Root: dir}, Timeout: time.Minute, Log: filepath.Join(dir, GuardLog), MaxLog: 10}); baton.ErrorCode(err) != baton.Canceled {
		t.Errorf("canceled guard = %v, want Canceled", err)
	}
	if _, err := runGuard(t.Context(), guardSpec{Command: "true", Dir: filepath.Join(dir, "missing"), Files: Layout{Root: dir}, Timeout: time.Minute, Log: filepath.Join(dir, GuardLog), MaxLog: 10}); err == nil || !strings.Contains(err.Error(), "could not start") {
		t.Error("a guard that cannot start returned no error")
	}
}
