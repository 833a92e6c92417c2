// Command delivery measures the delivery pipeline's own cost: N
// deliveries go through every phase (plan, implement, review, verify,
// deploy, observe, close) on one local repository (a bare repository, as
// on a server), with an agent that answers at once (a tiny sh script as a
// command:<argv> agent) and `true` as the verify and observe commands, so
// what is measured is baton: claiming jobs, the repository cache and
// worktrees, commits, pushes and merges, state changes and the queue.
//
// Workers in this process, on SQLite (the default) or PostgreSQL:
//
//	go run ./bench/delivery -n 200 -workers 1,4
//
// Each run also reports what a delivery costs in process starts: the
// processes its pipeline started, counted from the kernel's process events
// (as root; the agent's own processes apart), and its time over /bin/true's
// in the same run.
//
// Boxes start baton-box-init, as baton's do, only when it lies beside
// this program and is the same build, from a clean commit (go run records
// none): build both at once from a checkout of a commit. The box's init
// the run uses is printed first.
//
//	git clone -q . /tmp/bench-src    # go records no commit in a git worktree
//	(cd /tmp/bench-src && go build -buildvcs=true -o /tmp/bench-bin/ ./bench/delivery ./cmd/baton-box-init)
//	/tmp/bench-bin/delivery -n 30 -workers 1
//
// Worker processes, each with its own data directory as on its own
// machine, sharing one PostgreSQL database (scripts/pg-test.sh starts a
// throwaway server and sets BATON_TEST_POSTGRES_URL):
//
//	scripts/pg-test.sh go run ./bench/delivery -n 200 -procs 1,2,4 -db postgres
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/boxinit"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// agentScript answers as planner, implementer or reviewer at once. The
// implementer writes a file named after its delivery (its worktree is
// <data dir>/worktrees/<id>), so merges never conflict.
const agentScript = `#!/bin/sh
prompt=$(cat)
case "$prompt" in
*"You are the reviewer"*) echo '{"verdict":"pass","summary":"ok","feedback":""}' ;;
*"You are the planner"*) echo "1. Write the file." ;;
*) id=${PWD##*/}; echo "$id" > "work-$id.txt"; echo done ;;
esac
`

type options struct {
	n        int
	db       string // "sqlite", "postgres" (BATON_TEST_POSTGRES_URL) or a postgres:// URL
	poll     time.Duration
	keep     bool
	inProc   []int // worker counts in this process
	procs    []int // worker process counts
	cpuprof  string
	exectr   string // runtime/trace output
	count    bool
	trace    string
	postgres string // the server URL when db is PostgreSQL
}

func main() {
	// Boxes as cmd/baton starts them: agents and baton's git in worktrees
	// run confined, with baton-box-init as their init when it lies beside
	// this program and is the same build, else this program itself.
	h := egress.Hooks()
	h.Init = boxinit.Beside(sandbox.InitProgram)
	sandbox.Main(h)
	if len(os.Args) > 1 && os.Args[1] == "-worker" {
		os.Exit(workerMain(os.Args[2:]))
	}
	var o options
	var workers, procs string
	flag.IntVar(&o.n, "n", 200, "deliveries")
	flag.StringVar(&workers, "workers", "", "worker counts to measure in this process, comma-separated (default 1,4 unless -procs)")
	flag.StringVar(&procs, "procs", "", "worker process counts to measure, comma-separated; each process has its own data directory (PostgreSQL)")
	flag.StringVar(&o.db, "db", "sqlite", `database: "sqlite", "postgres" (the server BATON_TEST_POSTGRES_URL names), or a postgres:// URL`)
	flag.DurationVar(&o.poll, "poll", time.Second, "how often idle workers look for jobs they were not told about")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directories")
	flag.StringVar(&o.cpuprof, "cpuprofile", "", "write a CPU profile of this process")
	flag.StringVar(&o.exectr, "exectrace", "", "write an execution trace of this process (go tool trace -pprof=syscall FILE shows where baton waits off the CPU)")
	flag.BoolVar(&o.count, "count", true, "count the processes each delivery starts (root: the kernel's process events)")
	flag.StringVar(&o.trace, "trace", "", "write the timeline of the run to this file: each phase's start and end, and each process counted (start, duration, pid, command line)")
	flag.Parse()
	if workers == "" && procs == "" {
		workers = "1,4"
	}
	var err error
	if o.inProc, err = counts(workers); err == nil {
		o.procs, err = counts(procs)
	}
	if err == nil && o.db != "sqlite" {
		o.postgres = o.db
		if o.db == "postgres" {
			o.postgres = os.Getenv("BATON_TEST_POSTGRES_URL")
		}
		if !sqlstore.IsPostgresURL(o.postgres) {
			err = errors.New(`-db postgres needs BATON_TEST_POSTGRES_URL (scripts/pg-test.sh sets it), or give a postgres:// URL`)
		}
	}
	if err == nil && len(o.procs) > 0 && o.postgres == "" {
		err = errors.New("-procs needs PostgreSQL: each process has its own data directory, as on its own machine")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "delivery:", err)
		os.Exit(2)
	}
	if o.cpuprof != "" {
		f, err := os.Create(o.cpuprof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "delivery:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if o.exectr != "" {
		f, err := os.Create(o.exectr)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "delivery:", err)
			os.Exit(1)
		}
		defer trace.Stop()
	}
	if in := sandbox.BoxInit(); in.Own {
		fmt.Printf("box init: this program (%s)\n", in.Why)
	} else {
		fmt.Printf("box init: %s (%s)\n", in.Program, in.Why)
	}
	for _, w := range o.inProc {
		res, err := run(o, w, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "workers=%d: %v\n", w, err)
			os.Exit(1)
		}
		fmt.Println(res)
	}
	for _, p := range o.procs {
		res, err := run(o, 1, p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "procs=%d: %v\n", p, err)
			os.Exit(1)
		}
		fmt.Println(res)
	}
}

func counts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

type result struct {
	db                           string
	deliveries, workers, procs   int
	jobs, transitions, agentRuns int
	create, total, agentTotal    time.Duration
	jobTime, lockHeld            time.Duration // summed over workers
	starts                       *procCount    // nil when not counted
	binTrue                      time.Duration // /bin/true's median in the same run
	sched                        schedLatency  // this process's goroutines' waits for a P
	firstCost, lastCost          time.Duration // mean job time of the first and last tenth of the deliveries
	perPhase                     map[baton.Phase]time.Duration
	overlaps, lost               int
	// phases are the phase runs (the running entries of the phase logs),
	// in the order they started.
	phases []phaseRun
}

// phaseRun is one phase run of a delivery.
type phaseRun struct {
	delivery   int // its index in the order the deliveries were made
	phase      baton.Phase
	start, end time.Time
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "db=%s ", r.db)
	if r.procs > 0 {
		fmt.Fprintf(&b, "procs=%d ", r.procs)
	} else {
		fmt.Fprintf(&b, "workers=%d ", r.workers)
	}
	par := max(r.workers, r.procs)
	fmt.Fprintf(&b, "deliveries=%d jobs=%d transitions=%d create=%s pipeline=%s deliveries/s=%.1f jobs/s=%.1f per-job=%.1f ms",
		r.deliveries, r.jobs, r.transitions, r.create.Round(time.Millisecond), r.total.Round(time.Millisecond),
		float64(r.deliveries)/r.total.Seconds(), float64(r.jobs)/r.total.Seconds(), ms(r.total)/float64(r.jobs))
	fmt.Fprintf(&b, " busy=%.0f%% lock-share=%.1f%% mean-agent-run=%.1f ms first-delivery-cost=%.1f ms last-delivery-cost=%.1f ms (%+.0f%%)",
		100*r.jobTime.Seconds()/(r.total.Seconds()*float64(par)),
		100*r.lockHeld.Seconds()/max(r.jobTime.Seconds(), 1e-9),
		ms(r.agentTotal)/float64(max(r.agentRuns, 1)),
		ms(r.firstCost), ms(r.lastCost), 100*(r.lastCost.Seconds()/max(r.firstCost.Seconds(), 1e-9)-1))
	b.WriteString(" phase-ms:")
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview, baton.PhaseVerify, baton.PhaseDeploy, baton.PhaseObserve} {
		fmt.Fprintf(&b, " %s=%.1f", p, ms(r.perPhase[p]))
	}
	fmt.Fprintf(&b, " overlapping-runs=%d lost-phases=%d", r.overlaps, r.lost)
	if r.binTrue > 0 && par == 1 {
		per := r.total / time.Duration(r.deliveries)
		fmt.Fprintf(&b, "\n  time per delivery %.1f ms = %.0f × /bin/true (%.2f ms) in the same run", ms(per), per.Seconds()/r.binTrue.Seconds(), ms(r.binTrue))
		if r.procs == 0 && r.sched.total > 0 {
			fmt.Fprintf(&b, "\n  goroutines waited, runnable, for a P: at least %.1f ms per delivery (%.1f waits of 1 ms or more)", ms(r.sched.total/time.Duration(r.deliveries)), float64(r.sched.over1)/float64(r.deliveries))
		}
	}
	if c := r.starts; c != nil {
		n := float64(r.deliveries)
		fmt.Fprintf(&b, "\n  process starts per delivery, counted: %.1f execs, %.1f forks (the agent's own: %.1f execs)", float64(c.execs)/n, float64(c.forks)/n, float64(c.agent)/n)
		if c.lost {
			b.WriteString(" (events were dropped: a lower bound)")
		}
		for _, p := range c.byProg {
			fmt.Fprintf(&b, "\n    %6.2f %s", float64(p.n)/n, p.prog)
		}
		if par == 1 {
			b.WriteString(r.whereTimeGoes())
		}
	}
	return b.String()
}

// whereTimeGoes splits the time of each phase (one worker: nothing else
// runs meanwhile) into the time a process baton started was running
// (its own children: what they start is inside) and the time baton alone
// ran, and shows the time between phases.
func (r result) whereTimeGoes() string {
	type acc struct {
		n                   int
		wall, inProcs, tops time.Duration
		procs               int
	}
	per := map[baton.Phase]*acc{}
	var inPhases time.Duration
	for _, pr := range r.phases {
		a := per[pr.phase]
		if a == nil {
			a = &acc{}
			per[pr.phase] = a
		}
		a.n++
		a.wall += pr.end.Sub(pr.start)
		inPhases += pr.end.Sub(pr.start)
		busy, n := busyIn(r.starts.spans, pr.start, pr.end)
		a.inProcs += busy
		a.procs += n
	}
	var b strings.Builder
	n := float64(r.deliveries)
	fmt.Fprintf(&b, "\n  where a delivery's %.1f ms go: %.1f ms in phases, %.1f ms between them (the queue, and this benchmark's start and end)",
		ms(r.total)/n, ms(inPhases)/n, ms(r.total-inPhases)/n)
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview, baton.PhaseVerify, baton.PhaseDeploy, baton.PhaseObserve} {
		a := per[p]
		if a == nil {
			continue
		}
		k := time.Duration(a.n)
		fmt.Fprintf(&b, "\n    %-9s %6.1f ms: %6.1f ms in %4.1f processes baton started, %6.1f ms in baton alone",
			p, ms(a.wall/k), ms(a.inProcs/k), float64(a.procs)/float64(a.n), ms((a.wall-a.inProcs)/k))
	}
	// What each program baton starts itself costs, start to end (a box's
	// init includes what runs in the box).
	type prog struct {
		name  string
		n     int
		total time.Duration
	}
	byName := map[string]*prog{}
	for _, sp := range r.starts.spans {
		if !sp.top {
			continue
		}
		name := sp.prog
		if name == "" {
			name = "(no exec)"
		}
		p := byName[name]
		if p == nil {
			p = &prog{name: name}
			byName[name] = p
		}
		p.n++
		p.total += sp.end.Sub(sp.start)
	}
	progs := make([]*prog, 0, len(byName))
	for _, p := range byName {
		progs = append(progs, p)
	}
	slices.SortFunc(progs, func(a, b *prog) int { return cmp.Compare(b.total, a.total) })
	b.WriteString("\n  the processes baton started itself, per delivery: count × mean time (what runs in a box is inside its init's)")
	for _, p := range progs {
		if float64(p.n)/n < 0.5 {
			continue
		}
		fmt.Fprintf(&b, "\n    %5.2f × %6.2f ms = %6.1f ms  %s", float64(p.n)/n, ms(p.total/time.Duration(p.n)), ms(p.total)/n, p.name)
	}
	return b.String()
}

// busyIn is how long at least one of the processes baton itself started
// (top) ran within [from, to), and how many of them started there.
func busyIn(spans []procSpan, from, to time.Time) (busy time.Duration, n int) {
	var cur, end time.Time
	tops := make([]procSpan, 0, 16)
	for _, sp := range spans {
		if sp.top && sp.end.After(from) && sp.start.Before(to) {
			tops = append(tops, sp)
		}
	}
	slices.SortFunc(tops, func(a, b procSpan) int { return a.start.Compare(b.start) })
	for _, sp := range tops {
		s, e := later(sp.start, from), earlier(sp.end, to)
		if !sp.start.Before(from) {
			n++
		}
		switch {
		case cur.IsZero():
			cur, end = s, e
		case s.After(end):
			busy += end.Sub(cur)
			cur, end = s, e
		case e.After(end):
			end = e
		}
	}
	if !cur.IsZero() {
		busy += end.Sub(cur)
	}
	return busy, n
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// writeTimeline writes the run's timeline to path: each phase's start
// and end and each process counted, by time from the first phase's
// start (ms), with its duration; a process a child of baton's started is
// indented.
func writeTimeline(path string, r result) error {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, pr := range r.phases {
		lines = append(lines, line{pr.start, fmt.Sprintf("== delivery %d: %s starts", pr.delivery+1, pr.phase)},
			line{pr.end, fmt.Sprintf("== delivery %d: %s ends (%.1f ms)", pr.delivery+1, pr.phase, ms(pr.end.Sub(pr.start)))})
	}
	for _, sp := range r.starts.spans {
		indent := "  "
		if !sp.top {
			indent = "      "
		}
		lines = append(lines, line{sp.start, fmt.Sprintf("%s%7.2f ms  %d %s", indent, ms(sp.end.Sub(sp.start)), sp.pid, sp.argv)})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	if len(lines) == 0 {
		return os.WriteFile(path, nil, 0o644)
	}
	var b strings.Builder
	t0 := lines[0].at
	for _, l := range lines {
		fmt.Fprintf(&b, "%10.2f %s\n", ms(l.at.Sub(t0)), l.text)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// trueMedian is /bin/true's median start to exit, the unit of a process
// start on this machine now.
func trueMedian() (time.Duration, error) {
	var ds []time.Duration
	for range 200 {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func git(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

// run measures one configuration: workers in this process when procs is
// 0, else procs worker processes of one worker each.
func run(o options, workers, procs int) (res result, err error) {
	res = result{deliveries: o.n, workers: workers, procs: procs, db: "sqlite"}
	tmp, err := os.MkdirTemp("", "baton-bench-delivery-")
	if err != nil {
		return res, err
	}
	if !o.keep {
		defer os.RemoveAll(tmp)
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
		"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"} {
		os.Setenv(k, v)
	}
	// The source: a bare repository with one commit on main, as on a server.
	seed := filepath.Join(tmp, "seed")
	src := filepath.Join(tmp, "src.git")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# bench\n"), 0o644); err != nil {
		return res, err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "seed"}, {"clone", "-q", "--bare", seed, src}} {
		if err := git(seed, args...); err != nil {
			return res, err
		}
	}
	script := filepath.Join(tmp, "agent.sh")
	if err := os.WriteFile(script, []byte(agentScript), 0o755); err != nil {
		return res, err
	}

	ctx := context.Background()
	dsn := filepath.Join(tmp, "data", "baton.db")
	if o.postgres != "" {
		res.db = "postgres"
		var drop func()
		if dsn, drop, err = freshSchema(ctx, o.postgres); err != nil {
			return res, err
		}
		defer drop()
	}
	inProc := 0
	if procs == 0 {
		inProc = workers
	}
	q, err := queue.Open(ctx, dsn, queue.Config{Workers: inProc, FetchPollInterval: o.poll})
	if err != nil {
		return res, err
	}
	defer q.Close()
	svc := &delivery.Service{Queue: q, DataDir: filepath.Join(tmp, "data")}

	cfg := baton.DeliveryConfig{Agent: "command:" + script, PhaseTimeout: time.Minute, MaxRounds: 5,
		VerifyCommand: "true", ObserveCommand: "true", ObserveWindow: time.Millisecond, ObserveEvery: time.Millisecond}
	ids := make([]string, 0, o.n)
	start := time.Now()
	for i := range o.n {
		summary := fmt.Sprintf("Bench delivery %d", i)
		d := baton.Delivery{
			ID: baton.DeliveryID(src, summary), Summary: summary, Repository: src, Forge: baton.ForgeLocal,
			Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{}, Config: cfg,
			Refs: []baton.Ref{{Role: baton.RoleRequest, Type: "summary", Label: summary}},
		}
		got, _, err := svc.Insert(ctx, d, "bench")
		if err != nil {
			return res, err
		}
		ids = append(ids, got.ID)
	}
	res.create = time.Since(start)

	if res.binTrue, err = trueMedian(); err != nil {
		return res, err
	}
	var watch *procWatch
	if o.count {
		if watch, err = watchProcs(filepath.Base(script)); err != nil {
			fmt.Fprintln(os.Stderr, "delivery: not counting processes:", err)
		} else {
			defer watch.close()
			watch.start()
		}
	}
	// A worker walks the system directories a root's box narrows ahead
	// of its phases (Worker.Maintain, every five minutes): this measures
	// a running worker's deliveries, so the walk is made before the clock
	// starts, not in the first delivery.
	if err := sandbox.WalkSystem(); err != nil {
		return res, err
	}
	var stop func() (time.Duration, error)
	start = time.Now()
	sched0 := readSchedLatency()
	if procs == 0 {
		stop = startInProcess(ctx, svc)
	} else {
		stop, err = startProcesses(tmp, dsn, procs, o.poll)
		if err != nil {
			return res, err
		}
	}
	for {
		closed, failed, err := count(ctx, svc)
		if err == nil && failed != "" {
			err = fmt.Errorf("a delivery failed: %s", failed)
		}
		if err != nil {
			_, _ = stop()
			return res, err
		}
		if closed == o.n {
			break
		}
		// Poll gently: the benchmark must not steal SQLite's one
		// connection from the workers it measures.
		time.Sleep(100 * time.Millisecond)
	}
	res.total = time.Since(start)
	res.sched = readSchedLatency().since(sched0)
	if watch != nil {
		watch.stop()
		c := watch.count()
		res.starts = &c
	}
	if res.lockHeld, err = stop(); err != nil {
		return res, err
	}
	if err := measure(ctx, svc, ids, &res); err != nil {
		return res, err
	}
	if o.trace != "" && res.starts != nil {
		err = writeTimeline(o.trace, res)
	}
	return res, err
}

// startInProcess works the queue with a delivery.Worker in this process
// and returns the function that stops it and reports its lock time.
func startInProcess(ctx context.Context, svc *delivery.Service) func() (time.Duration, error) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	w := &delivery.Worker{Runner: &delivery.Runner{Service: svc, Owner: "bench", PollEvery: 200 * time.Millisecond}}
	go func() { done <- w.Run(wctx) }()
	return func() (time.Duration, error) {
		held := svc.Workspaces().LockHeld()
		cancel()
		return held, <-done
	}
}

// workerReport is what a worker process prints when it stops.
type workerReport struct {
	LockHeld time.Duration `json:"lock_held"`
}

// startProcesses starts n worker processes (this program with -worker),
// each with a data directory of its own, and returns the function that
// stops them (SIGINT) and sums their lock time.
func startProcesses(tmp, dsn string, n int, poll time.Duration) (func() (time.Duration, error), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := range n {
		data := filepath.Join(tmp, fmt.Sprintf("worker-%d", i+1))
		cmd := exec.Command(exe, "-worker", "-db", dsn, "-data", data, "-poll", poll.String(), "-id", fmt.Sprintf("bench-%d", i+1))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	return func() (time.Duration, error) {
		var held time.Duration
		var errs []error
		for i, cmd := range cmds {
			_ = cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil {
				errs = append(errs, fmt.Errorf("worker %d: %w", i+1, err))
				continue
			}
			var rep workerReport
			if err := json.Unmarshal([]byte(outs[i].String()), &rep); err != nil {
				errs = append(errs, fmt.Errorf("worker %d report %q: %w", i+1, outs[i].String(), err))
			}
			held += rep.LockHeld
		}
		return held, errors.Join(errs...)
	}, nil
}

// workerMain is a worker process: one delivery.Worker on the database dsn
// with its own data directory, until SIGINT; then it prints its report.
func workerMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	dsn := fs.String("db", "", "database")
	data := fs.String("data", "", "data directory")
	poll := fs.Duration("poll", time.Second, "poll interval")
	id := fs.String("id", "bench", "worker id")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	q, err := queue.Open(ctx, *dsn, queue.Config{Workers: 1, ID: *id, FetchPollInterval: *poll})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer q.Close()
	svc := &delivery.Service{Queue: q, DataDir: *data}
	w := &delivery.Worker{
		Runner: &delivery.Runner{Service: svc, Owner: *id, PollEvery: 200 * time.Millisecond},
		Log:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(workerReport{LockHeld: svc.Workspaces().LockHeld()})
	return 0
}

// freshSchema makes a new schema in the PostgreSQL server base names and
// returns a URL that uses it, and the function that drops it.
func freshSchema(ctx context.Context, base string) (string, func(), error) {
	admin, err := sqlstore.OpenPostgres(ctx, base, "")
	if err != nil {
		return "", nil, err
	}
	schema := fmt.Sprintf("bench_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return "", nil, err
	}
	drop := func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// measure reads the phase logs and agent runs: jobs, transitions, cost
// per delivery and per phase, and any sign of a phase run twice at once
// or lost.
func measure(ctx context.Context, svc *delivery.Service, ids []string, res *result) error {
	n := len(ids)
	tenth := max(n/10, 1)
	res.perPhase = map[baton.Phase]time.Duration{}
	runs := map[baton.Phase]int{}
	for i, id := range ids {
		log, err := svc.Store().PhaseLog(ctx, id)
		if err != nil {
			return err
		}
		res.transitions += len(log)
		var cost time.Duration
		for _, e := range log {
			switch {
			case e.Status == baton.StatusRunning:
				d := e.EndedAt.Sub(e.StartedAt)
				res.phases = append(res.phases, phaseRun{delivery: i, phase: e.Phase, start: e.StartedAt, end: e.EndedAt})
				res.jobs++
				cost += d
				res.perPhase[e.Phase] += d
				runs[e.Phase]++
			case e.Action == "lose":
				res.lost++
			}
		}
		res.jobTime += cost
		if i < tenth {
			res.firstCost += cost / time.Duration(tenth)
		}
		if i >= n-tenth {
			res.lastCost += cost / time.Duration(tenth)
		}
		ars, err := svc.Store().AgentRuns(ctx, id)
		if err != nil {
			return err
		}
		slices.SortFunc(ars, func(a, b baton.AgentRun) int { return a.StartedAt.Compare(b.StartedAt) })
		for j, r := range ars {
			res.agentRuns++
			res.agentTotal += r.Duration
			if j > 0 && r.StartedAt.Before(ars[j-1].EndedAt) {
				res.overlaps++
			}
		}
	}
	for p, k := range runs {
		res.perPhase[p] /= time.Duration(k)
	}
	slices.SortFunc(res.phases, func(a, b phaseRun) int { return a.start.Compare(b.start) })
	return nil
}

func count(ctx context.Context, svc *delivery.Service) (closed int, failed string, err error) {
	ds, err := svc.Store().FindDeliveries(ctx, baton.DeliveryFilter{Phase: baton.PhaseClose})
	if err != nil {
		return 0, "", err
	}
	for _, s := range []baton.RunStatus{baton.StatusFailed, baton.StatusBlocked} {
		bad, err := svc.Store().FindDeliveries(ctx, baton.DeliveryFilter{RunStatus: s})
		if err != nil {
			return 0, "", err
		}
		if len(bad) > 0 {
			return 0, fmt.Sprintf("%s is %s: %s", bad[0].ID, bad[0].String(), bad[0].Error), nil
		}
	}
	return len(ds), "", nil
}
