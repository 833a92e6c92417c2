// Command boxstart measures what baton's box adds to starting an agent:
// a stand-in agent (a command agent that reads its prompt and answers)
// run through agentrun.Run boxed and not, and a bare /bin/true started
// through sandbox.Confinement.Start boxed and not (what baton's own git
// in a worktree pays per command). Scenarios alternate round by round,
// so a machine that gets busier moves them all alike; it prints medians
// and p90s.
//
// A box's init is the program that starts it, started again: what that
// costs before the init does anything is timed too, as the start of the
// program as an init that finds no spec and exits at once, beside
// /bin/true; -init names other programs to time that way (baton,
// baton-hook, a do-nothing Go program), whose start a box would pay if
// it were the init.
//
//	go run ./bench/boxstart -n 100
//	go run ./bench/boxstart -n 100 -init "$(command -v baton),$(command -v baton-hook),$(command -v baton-box-init)"
//
// Its boxes start baton-box-init, as baton's do, only when it lies beside
// this program and is the same build, from a clean commit (go run records
// none); the box's init the run uses is printed first:
//
//	git clone -q . /tmp/bench-src    # go records no commit in a git worktree
//	(cd /tmp/bench-src && go build -buildvcs=true -o /tmp/bench-bin/ ./bench/boxstart ./cmd/baton-box-init)
//	/tmp/bench-bin/boxstart -n 100
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/boxinit"
)

func main() {
	// This program starts boxes as baton does: their init is
	// baton-box-init beside it when that is the same build, else itself.
	h := egress.Hooks()
	h.Init = boxinit.Beside(sandbox.InitProgram)
	sandbox.Main(h)
	n := flag.Int("n", 100, "rounds")
	inits := flag.String("init", "", "comma-separated programs to time as a box's init that finds no spec, beside this one")
	flag.Parse()
	var others []string
	if *inits != "" {
		others = strings.Split(*inits, ",")
	}
	if err := run(*n, others); err != nil {
		fmt.Fprintln(os.Stderr, "boxstart:", err)
		os.Exit(1)
	}
}

type scenario struct {
	name string
	run  func() error
	took []time.Duration
}

func run(n int, inits []string) error {
	tmp, err := os.MkdirTemp("", "boxstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	// The network is the machine's unless closed: a closed one is a
	// network namespace of the box's own behind egress's proxy.
	box := func(noNS, closed bool) *sandbox.Confinement {
		c := sandbox.Confinement{Mode: sandbox.ModeAuto, NoNamespaces: noNS, MaxProcs: sandbox.DefaultMaxProcs,
			Network: sandbox.Network{Open: !closed}}.
			InDataDir(filepath.Join(tmp, "data")).ForProject(work)
		return &c
	}
	agent := func(c *sandbox.Confinement) func() error {
		return func() error {
			res, err := agentrun.Run(context.Background(), agentrun.Spec{
				Agent: "command:/bin/sh -c 'cat >/dev/null; echo done'", Prompt: "Plan the work.",
				Dir: work, Timeout: time.Minute, Confine: c,
			})
			if err == nil && res.FinalText != "done" {
				err = fmt.Errorf("the stand-in agent said %q", res.FinalText)
			}
			return err
		}
	}
	bare := func(c *sandbox.Confinement) func() error {
		return func() error {
			cmd := exec.Command("/bin/true")
			cmd.Env = proc.Environ(nil)
			if c == nil {
				return cmd.Run()
			}
			cf := *c
			cf.Home, cf.Cache = "", ""
			cf.Policy = sandbox.System(sandbox.EnvFrom(cmd.Env))
			release, _, err := cf.Start(cmd)
			if err == nil {
				err = cmd.Wait()
			}
			release()
			return err
		}
	}
	scenarios := []*scenario{
		{name: "agent run, unboxed", run: agent(nil)},
		{name: "agent run, boxed (namespaces)", run: agent(box(false, false))},
		{name: "agent run, boxed (namespaces, network closed)", run: agent(box(false, true))},
		{name: "agent run, boxed (no namespaces)", run: agent(box(true, false))},
		{name: "/bin/true, unboxed", run: bare(nil)},
		{name: "/bin/true, boxed (namespaces)", run: bare(box(false, false))},
		{name: "/bin/true, boxed (no namespaces)", run: bare(box(true, false))},
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, p := range append([]string{self}, inits...) {
		name := "start as an init, no spec: " + filepath.Base(p)
		if p == self {
			name = "start as an init, no spec: this program"
		}
		scenarios = append(scenarios, &scenario{name: name, run: initStart(p)})
	}
	// The host's probe (and, as root, the walk of the system directories)
	// happens once per process: not part of a start.
	fmt.Fprintf(os.Stderr, "probe: %s\n", sandbox.Probe().Summary())
	if in := sandbox.BoxInit(); in.Own {
		fmt.Fprintf(os.Stderr, "box init: this program (%s)\n", in.Why)
	} else {
		fmt.Fprintf(os.Stderr, "box init: %s (%s)\n", in.Program, in.Why)
	}
	for _, s := range scenarios {
		if err := s.run(); err != nil { // warm-up, and a check that it works
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	for range n {
		for _, s := range scenarios {
			start := time.Now()
			if err := s.run(); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.took = append(s.took, time.Since(start))
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tmedian\tp90\t")
	for _, s := range scenarios {
		slices.Sort(s.took)
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", s.name, ms(s.took[len(s.took)/2]), ms(s.took[len(s.took)*9/10]))
	}
	return w.Flush()
}

// initStart starts program as a box's init with no spec (file 3 is not
// open): it runs its package initialisation and sandbox.Main, fails to
// read the spec and exits 125 at once (a program that is no init, such as
// a do-nothing one, exits 0).
func initStart(program string) func() error {
	return func() error {
		cmd := &exec.Cmd{Path: program, Args: []string{"baton-box-init"}, Env: []string{}}
		err := cmd.Run()
		var exit *exec.ExitError
		if err == nil || errors.As(err, &exit) && exit.ExitCode() == 125 {
			return nil
		}
		return fmt.Errorf("%s as an init with no spec: %v, want exit status 125 (or 0)", program, err)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
