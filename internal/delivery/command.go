package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
)

// cmdResult is one run of a verify, deploy or observe command.
type cmdResult struct {
	exit int
	log  string // stdout and stderr, interleaved
	tail string // the last lines, for messages
}

// command runs a delivery's command (argv split like a shell would, never
// run by one) in dir, writing its output to name in the run directory. A
// command that cannot start (not found) exits 127, as in a shell, so it
// fails the check rather than the phase; a canceled context kills its
// process group and returns the context's error.
func (r *Runner) command(ctx context.Context, d *baton.Delivery, dir, command, name string, env []string) (cmdResult, error) {
	argv, err := agentrun.SplitArgs(command)
	if err != nil || len(argv) == 0 {
		return cmdResult{}, baton.Errorf(baton.Invalid, "bad command %q: %v", command, err)
	}
	logDir := r.runDir(d)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return cmdResult{}, err
	}
	res := cmdResult{log: filepath.Join(logDir, name)}
	f, err := os.Create(res.log)
	if err != nil {
		return cmdResult{}, err
	}
	defer f.Close()
	timeout := d.Config.Timeout(d.Phase)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), r.AgentEnv...), append([]string{
		"BATON_DELIVERY_ID=" + d.ID, "BATON_PHASE=" + string(d.Phase), "BATON_WORK_BRANCH=" + d.WorkBranch(),
	}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var tail bytes.Buffer
	w := &tailWriter{f: f, tail: &tail, live: r.Live}
	cmd.Stdout, cmd.Stderr = w, w
	fmt.Fprintf(f, "$ %s\n", command)
	if r.Live != nil {
		fmt.Fprintf(r.Live, "== %s: %s runs `%s` in %s\n", d.ID, d.Phase, command, dir)
	}
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case cctx.Err() != nil:
		return res, baton.Errorf(baton.Unavailable, "`%s` did not finish within %s (output in %s)", command, timeout, res.log)
	case errors.As(err, &ee):
		res.exit = ee.ExitCode()
		if res.exit < 0 {
			res.exit = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
	case err != nil:
		res.exit = 127
		fmt.Fprintf(w, "%s: %v\n", argv[0], err)
	}
	fmt.Fprintf(f, "[exit %d]\n", res.exit)
	res.tail = lastLines(tail.String(), 5)
	return res, nil
}

// tailWriter writes to the log file (and the live view of `delivery
// run`) and keeps the last 4 KiB.
type tailWriter struct {
	f    *os.File
	tail *bytes.Buffer
	live io.Writer
}

func (w *tailWriter) Write(p []byte) (int, error) {
	if w.live != nil {
		_, _ = w.live.Write(p) // a closed terminal never fails a run
	}
	w.tail.Write(p)
	if w.tail.Len() > 8192 {
		b := w.tail.Bytes()
		keep := append([]byte(nil), b[len(b)-4096:]...)
		w.tail.Reset()
		w.tail.Write(keep)
	}
	return w.f.Write(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
