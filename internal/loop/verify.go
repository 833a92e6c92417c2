package loop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/prompt"
	"github.com/baton-agent/baton/internal/sandbox"
)

// failureTail is how much of a failing command's output the next round
// sees: the end, where test runners and compilers sum up. It stays well
// inside what a Stop block can carry (Claude Code spills text over
// 10,000 characters into a file).
const failureTail = 4000

// VerifyRequest is one verification of a stated promise.
type VerifyRequest struct {
	Commands []string
	// Dir is the project root: the commands run there, and may write there
	// and in a temporary directory of their own.
	Dir     string
	Timeout time.Duration // all commands together; 0: baton.DefaultVerifyTimeout
	Confine sandbox.Confinement
	// Env is added to the process environment, which reaches the commands
	// without baton's secrets.
	Env []string
	// Iteration and Promise are recorded with the run.
	Iteration int
	Promise   string
	Now       func() time.Time
}

// Verify runs the commands in order through sh -c, each confined like
// every command that runs code an agent wrote, until one fails or the
// time is up. It returns the run and, when it failed, the Failure text
// for the next round: the command and the end of its output. A run that
// could not start a command (the sandbox required and unavailable) has
// Error set.
func Verify(ctx context.Context, req VerifyRequest) (baton.VerifyRun, string) {
	now := req.Now
	if now == nil {
		now = time.Now
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = baton.DefaultVerifyTimeout
	}
	run := baton.VerifyRun{At: now().UTC().Truncate(time.Second), Iteration: req.Iteration, Promise: Normalize(req.Promise), Checks: []baton.VerifyCheck{}}
	deadline := time.Now().Add(timeout)
	for i, c := range req.Commands {
		left := time.Until(deadline)
		if left <= 0 {
			run.Checks = append(run.Checks, baton.VerifyCheck{Command: c, ExitCode: -1, TimedOut: true})
			return run, failureText(run, c, "", false, len(req.Commands), i, timeout)
		}
		res, err := proc.RunCheck(ctx, proc.Check{
			Command: c, Dir: req.Dir, Env: req.Env, Timeout: left, TailBytes: failureTail, Confine: &req.Confine,
		})
		if err != nil {
			run.Error = oneLine(fmt.Sprintf("`%s`: %s", c, baton.ErrorMessage(err)))
			if baton.ErrorMessage(err) == "internal error" {
				run.Error = oneLine(fmt.Sprintf("`%s`: %v", c, err))
			}
			return run, ""
		}
		check := baton.VerifyCheck{Command: c, ExitCode: res.ExitCode, TimedOut: res.TimedOut, DurationMS: res.Duration.Milliseconds(), Confined: res.Sandbox.Confined}
		run.Checks = append(run.Checks, check)
		if !check.Passed() {
			return run, failureText(run, c, res.Tail, res.TailCut, len(req.Commands), i, timeout)
		}
	}
	run.Passed = true
	return run, ""
}

// failureText is the Failure section's text after command (the i-th of n)
// failed. It names the promise without its tags: Codex XML-escapes a stop
// hook's text, so tags here would reach its model as &lt;promise&gt;.
func failureText(run baton.VerifyRun, command, tail string, cut bool, n, i int, timeout time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You stated the promise %q, but baton ran the loop's verify commands and the promise is not accepted: ", run.Promise)
	c := run.Checks[len(run.Checks)-1]
	switch {
	case c.TimedOut:
		fmt.Fprintf(&b, "%s did not finish within the verification's %s and was stopped", inline(command), timeout)
	default:
		fmt.Fprintf(&b, "%s failed with exit status %d after %s", inline(command), c.ExitCode, (time.Duration(c.DurationMS) * time.Millisecond).Round(10*time.Millisecond))
	}
	if n > 1 {
		fmt.Fprintf(&b, " (command %d of %d)", i+1, n)
	}
	b.WriteString(".")
	switch {
	case strings.TrimSpace(tail) == "":
		b.WriteString(" It printed nothing.\n")
	case cut:
		b.WriteString(" The end of its output:\n\n")
	default:
		b.WriteString(" Its output:\n\n")
	}
	if strings.TrimSpace(tail) != "" {
		body := strings.TrimRight(tail, "\n")
		f := prompt.Fence(body)
		b.WriteString(f + "\n" + body + "\n" + f + "\n")
	}
	b.WriteString("\nFix what it reports, then state the promise again; it is checked again then.\n")
	return b.String()
}

// inline quotes a command in backticks, or says it is the loop's when it
// cannot be quoted on one line.
func inline(c string) string {
	if strings.ContainsAny(c, "`\n") {
		return "a verify command of the loop (see `baton loop status`)"
	}
	return "`" + c + "`"
}
