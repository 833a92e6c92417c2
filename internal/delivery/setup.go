package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/safefile"
)

// A delivery's set-up makes a worktree ready before an agent works in it
// (dependencies installed), so that no agent spends its time on `npm ci`
// and verify does not fail for want of them. The commands come from the
// repository (.agent/delivery.json, or its devcontainer.json when it opts
// in), so they are as hostile as the agent: they run in the same box,
// with one difference, the caches they fill are the repository's set-up
// cache (sandbox.Confinement.ForSetup), which agents and checks only read.

// Limits of a set-up, as a repository states it.
const (
	maxSetupCommands = 16
	maxSetupCommand  = 4 << 10
	maxSetupFiles    = 64
	maxSetupFile     = 256
	// maxSetupFileHash bounds how much of one watched file is hashed: a
	// lock file, not a data set.
	maxSetupFileHash = 64 << 20
)

// SetupFromDevcontainer takes a repository's set-up from its
// devcontainer.json.
const SetupFromDevcontainer = "devcontainer"

// CheckSetup checks set-up commands: at most maxSetupCommands, none
// blank, none longer than maxSetupCommand bytes or holding a NUL (which
// no shell command can).
func CheckSetup(cmds []string) error {
	if len(cmds) > maxSetupCommands {
		return fmt.Errorf("at most %d commands, got %d: join them in a script", maxSetupCommands, len(cmds))
	}
	for i, c := range cmds {
		switch {
		case strings.TrimSpace(c) == "":
			return fmt.Errorf("command %d is empty", i+1)
		case len(c) > maxSetupCommand:
			return fmt.Errorf("command %d is longer than %d KiB: put it in a script", i+1, maxSetupCommand>>10)
		case strings.ContainsRune(c, 0):
			return fmt.Errorf("command %d holds a NUL byte", i+1)
		}
	}
	return nil
}

// CheckSetupFiles checks the files whose change runs the set-up again:
// paths relative to the repository's root, clean, never leaving it.
func CheckSetupFiles(files []string) error {
	if len(files) > maxSetupFiles {
		return fmt.Errorf("at most %d files, got %d", maxSetupFiles, len(files))
	}
	for _, f := range files {
		q := baton.Truncate(f, 60, "…")
		switch {
		case f == "" || len(f) > maxSetupFile || strings.ContainsRune(f, 0):
			return fmt.Errorf("%q: want a path of at most %d bytes", q, maxSetupFile)
		case filepath.IsAbs(f) || strings.HasPrefix(f, "/"):
			return fmt.Errorf("%q: want a path relative to the repository's root", q)
		case filepath.Clean(f) != f || f == "." || f == ".." || strings.HasPrefix(f, "../"):
			return fmt.Errorf("%q: want a clean path inside the repository (no .., no ./, no trailing /)", q)
		}
	}
	return nil
}

// setupFiles is the list of files d's set-up watches.
func setupFiles(d *baton.Delivery) []string {
	if len(d.Config.SetupFiles) > 0 {
		return d.Config.SetupFiles
	}
	return baton.DefaultSetupFiles
}

// setupKey names what a set-up in dir was made from: its commands and
// the contents of the files it watches (a missing or unreadable one
// counts as such). Files are read beneath dir, following no link.
func setupKey(dir string, cmds, files []string) string {
	h := sha256.New()
	for _, c := range cmds {
		fmt.Fprintf(h, "cmd %d:%s\n", len(c), c)
	}
	for _, name := range files {
		fmt.Fprintf(h, "file %d:%s ", len(name), name)
		f, err := safefile.OpenBeneath(dir, name, os.O_RDONLY, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintln(h, "absent")
			} else {
				fmt.Fprintln(h, "unreadable")
			}
			continue
		}
		fh := sha256.New()
		n, err := io.Copy(fh, io.LimitReader(f, maxSetupFileHash))
		f.Close()
		fmt.Fprintf(h, "%d %x %v\n", n, fh.Sum(nil), err != nil)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setupStamp is where the key of the set-up last run in d's worktree is
// kept: in d's run directory, which agents read but never write.
func (r *Runner) setupStamp(d *baton.Delivery) string {
	return filepath.Join(r.Service.DataDir, "runs", d.ID, "setup.key")
}

// prepare runs d's set-up in the delivery's worktree co when it has not
// run there yet or what it depends on changed since, and records it as a
// step of its own (a skipped one too, saying why); note says what it did
// ("" when no set-up is configured). A failed set-up is an error with its
// output's last lines: the phase stops, the agent never starts.
func (r *Runner) prepare(ctx context.Context, d *baton.Delivery, co *forge.Checkout) (string, error) {
	if len(d.Config.Setup) == 0 {
		return "", nil
	}
	key := setupKey(co.Dir, d.Config.Setup, setupFiles(d))
	stamp := r.setupStamp(d)
	if b, err := safefile.ReadFile(stamp, 128); err == nil && strings.TrimSpace(string(b)) == key {
		now := r.Service.now()
		run := &baton.SetupRun{DeliveryID: d.ID, Phase: d.Phase, Attempt: d.Attempt, Status: baton.SetupSkipped,
			Commands: d.Config.Setup, StartedAt: now, EndedAt: now,
			Note: "set-up skipped: its commands and the files it watches are unchanged since it last ran"}
		r.recordSetup(ctx, run)
		return "", nil
	}
	// A set-up that fails or is stopped half-way runs again next time.
	_ = os.Remove(stamp)
	note, err := r.setup(ctx, d, co)
	if err != nil {
		return "", err
	}
	if err := safefile.WriteAtomic(stamp, []byte(key+"\n"), 0o644); err != nil {
		return note, baton.WrapError(baton.Unavailable, err, "record the set-up")
	}
	return note, nil
}

// recordSetup stores run, a set-up that ended. Losing the record loses
// no work (setup.log keeps the output), so a failure to store it is
// said in the live log, not made the phase's.
func (r *Runner) recordSetup(ctx context.Context, run *baton.SetupRun) {
	if err := r.Service.Store().CreateSetupRun(context.WithoutCancel(ctx), run); err != nil {
		if r.Live != nil {
			fmt.Fprintf(r.Live, "warning: the set-up's record was not stored: %v\n", err)
		}
		return
	}
	r.Service.notify(run.DeliveryID)
}

// setup runs d's set-up commands one after the other in co, confined,
// with the repository's set-up cache to write, into setup.log and the
// live log, and records it as a step. The first that fails stops it.
func (r *Runner) setup(ctx context.Context, d *baton.Delivery, co *forge.Checkout) (note string, err error) {
	logDir := r.runDir(d)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(logDir, SetupLog)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	run := &baton.SetupRun{DeliveryID: d.ID, Phase: d.Phase, Attempt: d.Attempt, Commands: d.Config.Setup,
		Log: filepath.Join(filepath.Base(logDir), SetupLog), StartedAt: r.Service.now()}
	tail := &proc.Tail{Max: baton.MaxSetupOutput}
	var failed string // what the step says of a command that failed
	defer func() {
		run.EndedAt = r.Service.now()
		run.Output, _ = tail.Text()
		switch {
		case err == nil:
			run.Status, run.Note = baton.SetupSucceeded, note
		case ctx.Err() != nil:
			run.Status, run.Note = baton.SetupCanceled, "set-up stopped with its phase"
		default:
			run.Status, run.Note = baton.SetupFailed, failed
			if failed == "" {
				run.Note = baton.ErrorMessage(err)
			}
		}
		r.recordSetup(ctx, run)
	}()
	rec := r.Service.recordOutput(ctx, d, 0)
	defer rec.Close()
	var live io.Writer = rec
	if r.Live != nil {
		live = io.MultiWriter(rec, r.Live)
	}
	out := io.MultiWriter(f, tail)
	confine := r.confine(ctx, d, co).ForSetup()
	for _, e := range d.Config.SetupEgressAllow {
		if a, err := netpolicy.Parse(e); err == nil {
			confine.Network.Allow = confine.Network.Allow.With(a)
		}
	}
	timeout := d.Config.Timeout(d.Phase)
	start := time.Now()
	fmt.Fprintf(live, "! set-up: %d command(s) in %s\n", len(d.Config.Setup), co.Dir)
	for i, cmd := range d.Config.Setup {
		fmt.Fprintf(out, "$ %s\n", cmd)
		fmt.Fprintf(live, "→ set-up %d/%d: %s\n", i+1, len(d.Config.Setup), cmd)
		began := time.Now()
		run.Ran = i + 1
		cr, err := proc.RunCheck(ctx, proc.Check{
			Command: cmd, Dir: co.Dir, Timeout: timeout - time.Since(start), Log: out, Live: live, TailBytes: 4096, PassEnv: d.Config.PassEnv,
			Confine: &confine,
			Env: append(append([]string(nil), r.Service.AgentEnv...),
				"BATON_DELIVERY_ID="+d.ID, "BATON_PHASE="+string(d.Phase), "BATON_WORK_BRANCH="+d.WorkBranch(), "BATON_SETUP=1"),
		})
		took := time.Since(began).Round(time.Millisecond)
		switch {
		case ctx.Err() != nil:
			return "", ctx.Err()
		case err != nil:
			return "", baton.WrapError(baton.Unavailable, err, "set-up `%s`", cmd)
		case cr.TimedOut:
			run.ExitCode = -1
			failed = fmt.Sprintf("`%s` did not finish within the phase's %s", cmd, timeout)
			fmt.Fprintf(live, "✗ set-up %s\n", failed)
			return "", baton.Errorf(baton.Unavailable, "set-up `%s` did not finish within the phase's %s (output in %s)", cmd, timeout, path)
		}
		run.ExitCode = cr.ExitCode
		fmt.Fprintf(out, "[exit %d; %s; %s]\n", cr.ExitCode, took, cr.Sandbox)
		if cr.ExitCode != 0 {
			failed = fmt.Sprintf("`%s` exited %d after %s", cmd, cr.ExitCode, took)
			fmt.Fprintf(live, "✗ set-up %s\n", failed)
			return "", baton.Errorf(baton.Unavailable, "set-up `%s` exited %d after %s, so %s stopped before it began: %s (log %s)",
				cmd, cr.ExitCode, took, d.Phase, lastLines(cr.Tail, 5), path)
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	fmt.Fprintf(live, "! set-up done in %s\n", took)
	return fmt.Sprintf("set-up ran in %s", took), nil
}

// SetupPlan is the set-up a local repository asks for, as `baton doctor`
// shows it.
type SetupPlan struct {
	// Commands run in this order; From names the file they come from.
	Commands []string `json:"commands"`
	From     string   `json:"from,omitempty"`
	// Files are the files whose change runs the set-up again.
	Files []string `json:"files"`
	// EgressAllow is what the set-up alone may reach.
	EgressAllow []string `json:"egress_allow,omitempty"`
	// Devcontainer is a dev container the repository has but does not use
	// ("setup_from": "devcontainer" would), with its commands.
	Devcontainer         string   `json:"devcontainer,omitempty"`
	DevcontainerCommands []string `json:"devcontainer_commands,omitempty"`
}

// RepositorySetup is the set-up a delivery into the repository at top
// would run, read as `baton delivery create` reads it.
func RepositorySetup(top string) (SetupPlan, error) {
	var d baton.Delivery
	if err := applySourceConfig(&d, top); err != nil {
		return SetupPlan{}, err
	}
	p := SetupPlan{Commands: d.Config.Setup, EgressAllow: d.Config.SetupEgressAllow, Files: setupFiles(&d)}
	if p.Commands == nil {
		p.Commands = []string{}
	}
	dc, path, err := DevcontainerSetup(top)
	switch {
	case len(p.Commands) == 0:
	case path != "" && err == nil && slices.Equal(dc, p.Commands):
		p.From = path
		return p, nil
	default:
		p.From = SourceConfigPath
		return p, nil
	}
	if err == nil && len(dc) > 0 {
		p.Devcontainer, p.DevcontainerCommands = path, dc
	}
	return p, nil
}
