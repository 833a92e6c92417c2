package goaltree

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/sandbox"
)

// failureTailBytes is how much of a failing guard's output the next
// attempt sees: the end, where test runners and compilers sum up.
const failureTailBytes = 16 << 10

// guardOutcome is one guard run.
type guardOutcome struct {
	Result   GuardResult
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
	PassEnv []string // secrets it gets anyway (proc.Check.PassEnv)
	Timeout time.Duration
	Log     string // path of guard.log, beneath Files.Root
	Files   Layout // the runner's files: Log is opened beneath their root, following no link
	MaxLog  int64
	Confine *sandbox.Confinement // nil: unconfined
}

// runGuard runs the guard through proc.RunCheck (sh -c, its own process
// group), output (stdout and stderr interleaved) to the capped log. Exit 0
// passes; any other status, or running out of time, fails. It returns an
// error, a runner error, only when the guard could not be run at all or
// ctx was canceled.
func runGuard(ctx context.Context, g guardSpec) (guardOutcome, error) {
	out := guardOutcome{Result: guardFail, ExitCode: -1}
	if g.Timeout <= 0 {
		out.TimedOut = true
		return out, writeGuardLog(g, "[baton: no time left in the iteration for the guard]\n")
	}
	f, err := g.Files.openFile(g.Log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return out, fmt.Errorf("create guard log: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "$ sh -c %s\n", shellQuote(g.Command))
	res, err := proc.RunCheck(ctx, proc.Check{
		Command: g.Command, Dir: g.Dir, Env: g.Env, PassEnv: g.PassEnv, Timeout: g.Timeout,
		Log: f, MaxLog: g.MaxLog, TailBytes: failureTailBytes, Confine: g.Confine,
	})
	out.ExitCode, out.Duration, out.TimedOut = res.ExitCode, res.Duration, res.TimedOut
	out.Tail, out.Truncated = res.Tail, res.TailCut
	switch baton.ErrorCode(err) {
	case "":
	case baton.Canceled:
		return out, baton.WrapError(baton.Canceled, err, "the guard was interrupted")
	case baton.Unavailable:
		return out, baton.WrapError(baton.Unavailable, err, "the guard could not start")
	default:
		return out, err
	}
	if res.Passed() {
		out.Result = guardPass
	}
	note := fmt.Sprintf("[baton: exit status %d after %s]\n", out.ExitCode, out.Duration.Round(time.Millisecond))
	if out.TimedOut {
		note = fmt.Sprintf("[baton: stopped after %s, the time left in the iteration]\n", g.Timeout.Round(time.Millisecond))
	}
	if res.Dropped > 0 {
		note = fmt.Sprintf("\n[baton: log truncated at %d bytes; %d more bytes dropped]\n", g.MaxLog, res.Dropped) + note
	}
	if _, err := f.WriteString(note); err != nil {
		return out, fmt.Errorf("write guard log: %w", err)
	}
	return out, f.Close()
}

func writeGuardLog(g guardSpec, text string) error {
	return g.Files.writeFile(g.Log, []byte(fmt.Sprintf("$ sh -c %s\n%s", shellQuote(g.Command), text)))
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

// shellQuote renders s as one sh word, for logs.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
