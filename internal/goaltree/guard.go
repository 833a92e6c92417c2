package goaltree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton"
)

// failureTailBytes is how much of a failing guard's output the next
// attempt sees: the end, where test runners and compilers sum up.
const failureTailBytes = 16 << 10

// guardGrace is the wait between SIGTERM and SIGKILL for a guard that
// runs out of time.
const guardGrace = 5 * time.Second

// guardOutcome is one guard run.
type guardOutcome struct {
	Result   baton.GuardResult
	ExitCode int // -1 when killed
	TimedOut bool
	Duration time.Duration
	// Tail is the end of the output, at most failureTailBytes, starting on
	// a line when it can.
	Tail      string
	Truncated bool // Tail is not all of the output
}

// guardSpec says how to run a guard.
type guardSpec struct {
	Command string
	Dir     string
	Env     []string // added to the process environment
	Timeout time.Duration
	Log     string // path of guard.log
	MaxLog  int64
}

// runGuard runs the guard with sh -c in its own process group, output
// (stdout and stderr interleaved) to the capped log. Exit 0 passes; any
// other status, or running out of time, fails. It returns an error, a
// runner error, only when the guard could not be run at all or ctx was
// canceled.
func runGuard(ctx context.Context, g guardSpec) (guardOutcome, error) {
	out := guardOutcome{Result: baton.GuardFail, ExitCode: -1}
	if g.Timeout <= 0 {
		out.TimedOut = true
		return out, writeGuardLog(g, "[baton: no time left in the iteration for the guard]\n")
	}
	f, err := os.OpenFile(g.Log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return out, fmt.Errorf("create guard log: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "$ sh -c %s\n", shellQuote(g.Command))
	w := &guardWriter{log: f, limit: g.MaxLog}

	runCtx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "sh", "-c", g.Command)
	cmd.Dir = g.Dir
	cmd.Env = append(os.Environ(), g.Env...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = guardGrace
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return out, baton.WrapError(baton.Canceled, ctx.Err(), "the guard was interrupted")
		}
		return out, baton.WrapError(baton.Unavailable, err, "the guard could not start")
	}
	waitErr := cmd.Wait()
	out.Duration = time.Since(start)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing it started outlives it
	out.ExitCode = cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		return out, baton.WrapError(baton.Canceled, ctx.Err(), "the guard was interrupted")
	}
	out.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded)
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !out.TimedOut && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return out, fmt.Errorf("wait for the guard: %w", waitErr)
	}
	if waitErr == nil && out.ExitCode == 0 && !out.TimedOut {
		out.Result = baton.GuardPass
	}
	out.Tail, out.Truncated = w.tailText()
	note := fmt.Sprintf("[baton: exit status %d after %s]\n", out.ExitCode, out.Duration.Round(time.Millisecond))
	if out.TimedOut {
		note = fmt.Sprintf("[baton: stopped after %s, the time left in the iteration]\n", g.Timeout.Round(time.Millisecond))
	}
	if w.dropped > 0 {
		note = fmt.Sprintf("\n[baton: log truncated at %d bytes; %d more bytes dropped]\n", w.limit, w.dropped) + note
	}
	if _, err := f.WriteString(note); err != nil {
		return out, fmt.Errorf("write guard log: %w", err)
	}
	return out, f.Close()
}

func writeGuardLog(g guardSpec, text string) error {
	return os.WriteFile(g.Log, []byte(fmt.Sprintf("$ sh -c %s\n%s", shellQuote(g.Command), text)), 0o644)
}

// failureText is what the next attempt is told about a failed guard.
func (o guardOutcome) failureText(command string) string {
	var b strings.Builder
	switch {
	case o.TimedOut:
		fmt.Fprintf(&b, "The guard %s did not finish in the time left in the iteration and was stopped.", inlineCode(command))
	default:
		fmt.Fprintf(&b, "The guard %s failed with exit status %d after %s.", inlineCode(command), o.ExitCode, o.Duration.Round(time.Second))
	}
	if strings.TrimSpace(o.Tail) == "" {
		b.WriteString(" It printed nothing.\n")
		return b.String()
	}
	if o.Truncated {
		fmt.Fprintf(&b, " The end of its output (the full log is %s in the iteration's logs):\n\n", GuardLog)
	} else {
		b.WriteString(" Its output:\n\n")
	}
	b.WriteString(strings.TrimRight(o.Tail, "\n"))
	b.WriteByte('\n')
	return b.String()
}

func inlineCode(s string) string {
	if strings.ContainsAny(s, "`\n") {
		return "(see config.toml)"
	}
	return "`" + s + "`"
}

// guardWriter copies output to a capped log and keeps its tail. exec
// writes stdout and stderr from two goroutines.
type guardWriter struct {
	mu      sync.Mutex
	log     *os.File
	limit   int64
	written int64
	dropped int64
	tail    tailBuffer
}

func (w *guardWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := p
	if room := w.limit - w.written; int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
	}
	w.dropped += int64(len(p) - len(keep))
	if len(keep) > 0 {
		n, err := w.log.Write(keep)
		w.written += int64(n)
		if err != nil {
			return 0, err
		}
	}
	return w.tail.Write(p)
}

func (w *guardWriter) tailText() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tail.text()
}

// tailBuffer keeps the last failureTailBytes written to it, in amortised
// constant time per byte.
type tailBuffer struct {
	buf   []byte
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*failureTailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-failureTailBytes:]...)
	}
	return len(p), nil
}

// text returns the tail, from a line start and a rune start when earlier
// output was cut, and whether it was.
func (t *tailBuffer) text() (string, bool) {
	b := t.buf
	cut := t.total > int64(len(b))
	if len(b) > failureTailBytes {
		b = b[len(b)-failureTailBytes:]
		cut = true
	}
	if cut {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}

// shellQuote renders s as one sh word, for logs.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
