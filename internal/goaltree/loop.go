package goaltree

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LoopOutcome is why a loop ended.
type LoopOutcome string

const (
	loopComplete LoopOutcome = "complete" // every leaf passed: exit 0
	LoopStuck    LoopOutcome = "stuck"    // a leaf is out of attempts: exit 3
	LoopLimit    LoopOutcome = "limit"    // max_iterations reached: exit 1
	LoopError    LoopOutcome = "error"    // a runner error or a refusal: exit 1
	loopOpen     LoopOutcome = "open"     // one step ran and work remains: exit 0
)

// LoopReport sums up a loop, or a single step.
type LoopReport struct {
	RunID      string
	Outcome    LoopOutcome
	Iterations int
	Counts     Counts
	StuckNode  string
	Wall       time.Duration
	CostUSD    float64
	InTokens   int64
	OutTokens  int64
	Steps      []*StepReport
}

// Loop runs steps until the run is complete or stuck, a step fails, or
// maxIterations iterations have run. The returned error is the failing
// step's; the report is never nil.
func (r *Runner) Loop(ctx context.Context, maxIterations int) (*LoopReport, error) {
	start := time.Now()
	rep := &LoopReport{}
	defer func() { rep.Wall = time.Since(start) }()
	for {
		if rep.Iterations >= maxIterations {
			rep.Outcome = LoopLimit
			return rep, r.finish(rep)
		}
		s, err := r.Step(ctx)
		if s != nil {
			rep.add(s)
		}
		if err != nil {
			rep.Outcome = LoopError
			_ = r.finish(rep) // the step's error is the one to report
			return rep, err
		}
		switch s.State {
		case complete:
			rep.Outcome = loopComplete
			return rep, r.finish(rep)
		case Stuck:
			rep.Outcome, rep.StuckNode = LoopStuck, s.StuckNode
			return rep, r.finish(rep)
		}
	}
}

// StepOnce runs one Step and sums it up like a loop: outcome open,
// complete, stuck or error.
func (r *Runner) StepOnce(ctx context.Context) (*LoopReport, error) {
	start := time.Now()
	rep := &LoopReport{}
	s, err := r.Step(ctx)
	if s != nil {
		rep.add(s)
	}
	rep.Wall = time.Since(start)
	switch {
	case err != nil:
		rep.Outcome = LoopError
		_ = r.finish(rep)
		return rep, err
	case s.State == complete:
		rep.Outcome = loopComplete
	case s.State == Stuck:
		rep.Outcome, rep.StuckNode = LoopStuck, s.StuckNode
	default:
		rep.Outcome = loopOpen
	}
	return rep, r.finish(rep)
}

func (rep *LoopReport) add(s *StepReport) {
	rep.Steps = append(rep.Steps, s)
	if s.Ran {
		rep.Iterations++
	}
	rep.CostUSD += s.CostUSD
	rep.InTokens += s.InTokens
	rep.OutTokens += s.OutTokens
}

// finish fills in the run id and the tree's counts.
func (r *Runner) finish(rep *LoopReport) error {
	st, tree, err := r.Layout.LoadStateAndTree()
	if err != nil {
		return err
	}
	rep.RunID, rep.Counts = st.RunID, Count(tree)
	if rep.Outcome == "" || rep.Outcome == LoopError {
		if s := Select(tree); s.State == Stuck {
			rep.StuckNode = s.Node.ID
		}
	}
	return nil
}

// SummaryLine renders the loop's summary for people.
func (rep *LoopReport) SummaryLine() string {
	var b strings.Builder
	what := map[LoopOutcome]string{
		loopComplete: "complete",
		LoopStuck:    "stuck on node " + rep.StuckNode + " (out of attempts)",
		LoopLimit:    "stopped at the iteration limit",
		LoopError:    "stopped by an error",
		loopOpen:     "open",
	}[rep.Outcome]
	fmt.Fprintf(&b, "baton run %s: %s; %d passed, %d open, %d stuck", rep.RunID, what, rep.Counts.Passed, rep.Counts.Open, rep.Counts.Stuck)
	fmt.Fprintf(&b, "; %d iteration%s in %s", rep.Iterations, plural(rep.Iterations), rep.Wall.Round(time.Second))
	if rep.CostUSD > 0 {
		fmt.Fprintf(&b, "; agent cost $%.2f", rep.CostUSD)
	}
	if rep.InTokens > 0 || rep.OutTokens > 0 {
		fmt.Fprintf(&b, "; tokens %s in, %s out", humanCount(rep.InTokens), humanCount(rep.OutTokens))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
