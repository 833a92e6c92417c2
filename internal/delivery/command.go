package delivery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/proc"
)

// cmdResult is one run of a verify, deploy or observe command.
type cmdResult struct {
	exit int
	log  string // stdout and stderr, interleaved
	tail string // the last lines, for messages
}

// command runs a delivery's verify, deploy or observe command through
// sh -c (it is the user's own shell command, "go test ./... && go vet
// ./..." included) in dir, in its own process group, writing its output to
// name in the run directory and to the live view. A command that is not
// found exits 127, as in a shell, so it fails the check rather than the
// phase; a canceled context kills its process group and returns the
// context's error; running out of the phase's time is Unavailable.
func (r *Runner) command(ctx context.Context, d *baton.Delivery, co *forge.Checkout, command, name string, env []string) (cmdResult, error) {
	dir := co.Dir
	if strings.TrimSpace(command) == "" {
		return cmdResult{}, baton.Errorf(baton.Invalid, "empty command")
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
	fmt.Fprintf(f, "$ %s\n", command)
	if r.Live != nil {
		fmt.Fprintf(r.Live, "== %s: %s runs `%s` in %s\n", d.ID, d.Phase, command, dir)
	}
	timeout := d.Config.Timeout(d.Phase)
	cr, err := proc.RunCheck(ctx, proc.Check{
		Command: command, Dir: dir, Timeout: timeout, Log: f, Live: r.Live, TailBytes: 4096, PassEnv: d.Config.PassEnv,
		Confine: r.confine(ctx, d, co),
		Env: append(append(append([]string(nil), r.Service.AgentEnv...),
			"BATON_DELIVERY_ID="+d.ID, "BATON_PHASE="+string(d.Phase), "BATON_WORK_BRANCH="+d.WorkBranch()), env...),
	})
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case err != nil:
		return res, err
	case cr.TimedOut:
		return res, baton.Errorf(baton.Unavailable, "`%s` did not finish within %s (output in %s)", command, timeout, res.log)
	}
	res.exit = cr.ExitCode
	fmt.Fprintf(f, "[exit %d; %s]\n", res.exit, cr.Sandbox)
	res.tail = lastLines(cr.Tail, 5)
	return res, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
