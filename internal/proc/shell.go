package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/reap"
	"github.com/baton-agent/baton/internal/sandbox"
)

// DefaultGrace is the wait between SIGTERM and SIGKILL for a check
// command that runs out of time.
const DefaultGrace = 5 * time.Second

// DefaultTailBytes is how much of a check's output its Result keeps.
const DefaultTailBytes = 16 << 10

// Check is a command a user wrote ("go test ./... && go vet ./..."): it
// runs through sh -c, as it would in their terminal.
type Check struct {
	Command string
	Dir     string
	// Env is added to baton's environment, which reaches the command
	// without its secrets (see Secret) except those named in PassEnv.
	Env     []string
	PassEnv []string
	Timeout time.Duration // 0: none
	Grace   time.Duration // SIGTERM to SIGKILL; 0: DefaultGrace
	// Log receives stdout and stderr interleaved, at most MaxLog bytes
	// (0: no cap); Live, when set, sees all of it as it happens.
	Log       io.Writer
	MaxLog    int64
	Live      io.Writer
	TailBytes int // 0: DefaultTailBytes
	// Confine, when set, confines the command (see Confine): it runs code
	// an agent wrote.
	Confine *sandbox.Confinement
}

// CheckResult is how a check ended. A non-zero exit or a timeout is a
// result, not an error.
type CheckResult struct {
	ExitCode int // -1 when killed by a signal
	TimedOut bool
	Duration time.Duration
	Tail     string // the end of the output, from a line start when cut
	TailCut  bool   // Tail is not all of the output
	Dropped  int64  // bytes past MaxLog that the log did not get
	// Sandbox says whether the command ran confined; zero when it was not
	// asked to be.
	Sandbox sandbox.Report
	// Refused is what the box's network refused the command, each target
	// once with how often it was tried; RefusedMore counts attempts at
	// targets beyond those kept.
	Refused     []netpolicy.RefusalCount
	RefusedMore int
}

// Passed reports whether the check exited 0 in time.
func (r CheckResult) Passed() bool { return r.ExitCode == 0 && !r.TimedOut }

// RunCheck runs c and waits for it and everything it started. It returns
// an error only when the check could not run: ctx ended (Canceled) or sh
// could not start (Unavailable). When it ends, its whole process group is
// killed, so nothing it started outlives it.
func RunCheck(ctx context.Context, c Check) (CheckResult, error) {
	res := CheckResult{ExitCode: -1}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	tail := &Tail{Max: c.TailBytes}
	if tail.Max <= 0 {
		tail.Max = DefaultTailBytes
	}
	w := &checkWriter{log: c.Log, limit: c.MaxLog, live: c.Live, tail: tail}
	cmd := exec.CommandContext(runCtx, "sh", "-c", c.Command)
	cmd.Dir = c.Dir
	cmd.Env = append(Environ(c.PassEnv), c.Env...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = GroupAttr()
	cmd.Cancel = func() error { KillGroup(cmd.Process.Pid, syscall.SIGTERM); return nil }
	cmd.WaitDelay = grace
	start := time.Now()
	rel, err := startCheck(cmd, c, w, &res)
	release := sync.OnceFunc(rel)
	defer release()
	if err != nil {
		if ctx.Err() != nil {
			return res, baton.WrapError(baton.Canceled, ctx.Err(), "interrupted before `%s` started", c.Command)
		}
		return res, baton.WrapError(baton.Unavailable, err, "`%s` could not start", c.Command)
	}
	wd := WatchStarted(cmd.Process.Pid, res.Sandbox)
	waitErr := reap.Wait(cmd)
	res.Duration = time.Since(start)
	KillGroup(cmd.Process.Pid, syscall.SIGKILL)
	wd.Release()
	release() // the box is gone: what its network refused is all recorded
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Tail, res.TailCut = w.text()
	res.Dropped = w.dropped
	if ctx.Err() != nil {
		return res, baton.WrapError(baton.Canceled, ctx.Err(), "`%s` was interrupted", c.Command)
	}
	res.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded)
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !res.TimedOut && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("wait for `%s`: %w", c.Command, waitErr)
	}
	return res, nil
}

// startCheck starts cmd, confined when c asks: then it gets its own
// temporary directory and may write only there and in its working
// directory (and what c.Confine adds). release frees what Confine.Start
// holds, and removes the temporary directory.
func startCheck(cmd *exec.Cmd, c Check, w io.Writer, res *CheckResult) (release func(), err error) {
	if c.Confine == nil {
		return func() {}, cmd.Start()
	}
	cf := *c.Confine
	// A check is the user's command, not an agent CLI: it gets no agent
	// home, and the real home stays read-only.
	cf.Home = ""
	if cf.Mode != sandbox.ModeOff {
		tmp, err := os.MkdirTemp("", "baton-check-")
		if err != nil {
			return func() {}, err
		}
		cmd.Env = append(cmd.Env, TempEnv(tmp)...)
		cf.Policy = sandbox.System(sandbox.EnvFrom(cmd.Env)).
			Merge(sandbox.Policy{Write: []string{c.Dir, tmp}}).Merge(cf.Policy)
		// What the network refused is said in the command's output, where
		// a person looking at why it failed reads.
		refused := &netpolicy.Refusals{}
		outer := cf.Network.OnRefuse
		cf.Network.OnRefuse = func(r netpolicy.Refusal) {
			if refused.Add(r) {
				_, _ = io.WriteString(w, "baton: network: "+r.String()+"\n")
			}
			if outer != nil {
				outer(r)
			}
		}
		defer func() {
			if err != nil {
				os.RemoveAll(tmp)
			}
		}()
		rel, rep, err := cf.Start(cmd)
		res.Sandbox = rep
		return func() {
			rel()
			os.RemoveAll(tmp)
			res.Refused, res.RefusedMore = refused.List()
		}, err
	}
	rel, rep, err := cf.Start(cmd)
	res.Sandbox = rep
	return rel, err
}

// TempEnv points a child's temporary files at dir.
func TempEnv(dir string) []string {
	return []string{"TMPDIR=" + dir, "TMP=" + dir, "TEMP=" + dir}
}

// checkWriter copies output to the capped log, the live view and the
// tail. exec writes stdout and stderr from two goroutines.
type checkWriter struct {
	mu      sync.Mutex
	log     io.Writer
	limit   int64
	written int64
	dropped int64
	live    io.Writer
	tail    *Tail
}

func (w *checkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.live != nil {
		_, _ = w.live.Write(p) // a closed terminal never fails a check
	}
	w.tail.Write(p)
	if w.log == nil {
		return len(p), nil
	}
	keep := p
	if w.limit > 0 {
		if room := w.limit - w.written; int64(len(keep)) > room {
			keep = keep[:max(room, 0)]
		}
	}
	w.dropped += int64(len(p) - len(keep))
	if len(keep) > 0 {
		n, err := w.log.Write(keep)
		w.written += int64(n)
		if err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *checkWriter) text() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tail.Text()
}
