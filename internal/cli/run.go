package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/goaltree"
)

func newRunCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run fresh agent sessions over a goal tree, with guards",
		Long: `The goal-tree runner works through a tree of tasks one leaf at a time. Each
iteration starts a fresh agent session on the leftmost open leaf, with a
budgeted prompt built from the tree and what the previous attempt left, runs
the guard when the agent says done, updates the tree and commits.

A leaf passes only when the agent says done AND the guard passes. Runner
errors (timeouts, unparsable output, a failing agent CLI, git failures) cost
no attempt and are never shown to the agent; agent errors, retries and
guard failures cost one. Everything lives in .agent/context/runner/.

Exit codes of step and loop: 0 complete (or, for step, work remains),
1 error or iteration limit, 3 stuck (a leaf is out of attempts).`,
		Example: `  baton run init --goal-file GOAL.md --guard "go test ./..."
  baton run tree
  baton run loop --max-iterations 20
  baton run status`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newRunInitCmd(f),
		newRunTreeCmd(f),
		newRunAddCmd(f),
		newRunValidateCmd(f),
		newRunStepCmd(f),
		newRunLoopCmd(f),
		newRunStatusCmd(f),
	)
	return cmd
}

func (f *Factory) runLayout() goaltree.Layout {
	return goaltree.Layout{Root: f.Store().Root()}
}

type runInitOptions struct {
	goalFile string
	guard    string
	agent    string
	id       string
	noBranch bool
	force    bool
	asJSON   bool
}

func newRunInitCmd(f *Factory) *cobra.Command {
	var o runInitOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Start a goal-tree run from GOAL.md",
		Long: `Create .agent/context/runner/ with state/tree.json (the root node, from the
goal file), run_state.json, config.toml, assumptions.md and questions.md;
context/ and iterations/ are gitignored.

The goal file is markdown: a "# " title, the goal text, and a "## Acceptance"
list; optional frontmatter sets the run id (id:) and whether the root is
decomposed first (next: decompose, the default) or executed directly
(next: execute). Without --goal-file, GOAL.md in the project root is used.

In a git work tree, init creates and switches to the branch runner/<id>
(--no-branch keeps the current one) and commits the run's files, so the
first step starts clean on the run's own branch.`,
		Example: `  baton run init --guard "go test ./..."
  baton run init --goal-file docs/goal.md --guard "make ci" --agent codex
  baton run init --id auth-v2 --no-branch --force`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunInit(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.goalFile, "goal-file", "", "the goal `FILE` (default: GOAL.md in the project root)")
	fl.StringVar(&o.guard, "guard", "", "the guard `COMMAND`, run with sh -c; a leaf passes only when it exits 0")
	fl.StringVar(&o.agent, "agent", "", "the agent: claude (default), codex, droid or command:<argv> (see docs/agents.md)")
	fl.StringVar(&o.id, "id", "", "the run `ID` (default: the goal file's id, else a slug of its title)")
	fl.BoolVar(&o.noBranch, "no-branch", false, "keep the current branch instead of creating runner/<id>")
	fl.BoolVar(&o.force, "force", false, "replace an existing run's state")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func runRunInit(ctx context.Context, f *Factory, o runInitOptions) error {
	st, err := f.ensureStore(ctx)
	if err != nil {
		return err
	}
	path := o.goalFile
	switch {
	case path == "":
		path = filepath.Join(st.Root(), "GOAL.md")
	case !filepath.IsAbs(path):
		path = filepath.Join(f.WorkDir, path)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if o.goalFile == "" {
			return baton.WrapError(baton.NotFound, err, "no GOAL.md in %s: write one (a \"# \" title, the goal, a \"## Acceptance\" list) or pass --goal-file", st.Root())
		}
		return baton.WrapError(baton.NotFound, err, "goal file %s not found", o.goalFile)
	} else if err != nil {
		return fmt.Errorf("read goal file: %w", err)
	}
	goal, err := goaltree.ParseGoalFile(data)
	if err != nil {
		return baton.WrapError(baton.Invalid, err, "%s", path)
	}
	cfg := goaltree.DefaultConfig()
	cfg.Guard = strings.TrimSpace(o.guard)
	if o.agent != "" {
		if err := goaltree.CheckAgent(o.agent); err != nil {
			return err
		}
		cfg.Agent = o.agent
	}
	if o.id != "" {
		if err := baton.CheckID("run", o.id); err != nil {
			return err
		}
	}
	l := f.runLayout()
	res, err := goaltree.Init(ctx, l, goaltree.InitOptions{Goal: goal, RunID: o.id, Config: cfg, NoBranch: o.noBranch, Force: o.force, Now: f.now()})
	if err != nil {
		return err
	}
	if o.asJSON {
		commit := ""
		if res.Commit != nil {
			commit = res.Commit.SHA
		}
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int    `json:"schema_version"`
			RunID         string `json:"run_id"`
			Dir           string `json:"dir"`
			Branch        string `json:"branch,omitempty"`
			Commit        string `json:"commit,omitempty"`
			Guard         string `json:"guard"`
		}{1, res.RunID, l.Dir(), res.Branch, commit, cfg.Guard})
	}
	fmt.Fprintf(f.IO.Out, "started run %s in %s\n", res.RunID, l.Dir())
	if res.Branch != "" {
		fmt.Fprintf(f.IO.Out, "branch: %s\n", res.Branch)
	}
	if res.Commit != nil {
		fmt.Fprintf(f.IO.Out, "commit: %s %s\n", res.Commit.Short(), res.Commit.Subject)
	}
	if !res.Git {
		fmt.Fprintf(f.IO.Err, "baton: warning: %s is not in a git work tree; `baton run step` needs one (it commits every iteration)\n", st.Root())
	}
	if o.noBranch && (res.Branch == "main" || res.Branch == "master") {
		fmt.Fprintf(f.IO.Err, "baton: warning: the run stays on %s (--no-branch), where `baton run step` refuses to commit iterations: switch to a branch first, or step with --allow-main\n", res.Branch)
	}
	if cfg.Guard == "" {
		fmt.Fprintf(f.IO.Err, "baton: warning: no guard set: set guard in %s before stepping (a leaf passes only when the agent says done AND the guard passes)\n", l.State(goaltree.ConfigFile))
	}
	fmt.Fprintln(f.IO.Out, "next: baton run tree, then baton run loop")
	return nil
}

// treeJSON is the tree as `run tree --json` and `run status --json` print it.
type treeJSON struct {
	SchemaVersion int                    `json:"schema_version"`
	RunID         string                 `json:"run_id"`
	State         string                 `json:"state"`
	Selected      string                 `json:"selected,omitempty"`
	Counts        goaltree.Counts        `json:"counts"`
	Tree          *goaltree.Node         `json:"tree"`
	Problems      []goaltree.NodeProblem `json:"problems,omitempty"`
}

func newRunTreeCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tree",
		Short: "Show the goal tree with pass and attempt marks",
		Long: `Print the goal tree, one node per line: [x] passed, [ ] open, [!] stuck (out
of attempts), with each open leaf's next action and attempts, and the leaf
the next step works on marked "<- selected".`,
		Example: "  baton run tree\n  baton run tree --json | jq '.counts'",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l := f.runLayout()
			st, tree, err := l.LoadStateAndTree()
			if err != nil {
				return err
			}
			sel := goaltree.Select(tree)
			selected := ""
			if sel.Node != nil {
				selected = sel.Node.ID
			}
			if asJSON {
				return writeJSON(f.IO.Out, treeJSON{SchemaVersion: 1, RunID: st.RunID, State: string(sel.State), Selected: selected, Counts: goaltree.Count(tree), Tree: tree})
			}
			c := goaltree.Count(tree)
			fmt.Fprintf(f.IO.Out, "run %s: %s; %d of %d leaves passed, %d open, %d stuck\n", st.RunID, sel.State, c.Passed, c.Leaves, c.Open, c.Stuck)
			_, err = io.WriteString(f.IO.Out, goaltree.Summary(tree, selected, c.Nodes))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

type runAddOptions struct {
	parent      string
	title       string
	goal        string
	accept      []string
	next        string
	id          string
	order       int
	maxAttempts int
	asJSON      bool
}

func newRunAddCmd(f *Factory) *cobra.Command {
	var o runAddOptions
	cmd := &cobra.Command{
		Use:   "add --title TITLE --goal GOAL [--accept CRITERION]...",
		Short: "Add a node to the goal tree",
		Long: `Add a node under --parent (default: the root). The runner assigns its id
("<n>" under the root, "<parent>.<n>" deeper) and puts it after its
siblings, unless --id or --order say otherwise. A passed node cannot get
children: passed nodes are immutable.

The change is left uncommitted; commit it before the next step (steps refuse
a dirty work tree).`,
		Example: `  baton run add --title "Login endpoint" --goal "POST /login returns a JWT" --accept "go test ./auth/... passes"
  baton run add --parent 2 --title "Refresh tokens" --goal "..." --next decompose`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunAdd(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.parent, "parent", goaltree.RootID, "the parent node's `ID`")
	fl.StringVar(&o.title, "title", "", "the node's title (required)")
	fl.StringVar(&o.goal, "goal", "", "what the node must achieve (required for a leaf)")
	fl.StringArrayVar(&o.accept, "accept", nil, "an acceptance `CRITERION` (repeatable)")
	fl.StringVar(&o.next, "next", "execute", "execute, or decompose to have an agent split it first")
	fl.StringVar(&o.id, "id", "", "the node's `ID` (default: assigned)")
	fl.IntVar(&o.order, "order", 0, "position among siblings (default: last)")
	fl.IntVar(&o.maxAttempts, "max-attempts", 0, "failed attempts allowed (default: the config's max_attempts)")
	fl.BoolVar(&o.asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func runRunAdd(ctx context.Context, f *Factory, o runAddOptions) error {
	if strings.TrimSpace(o.title) == "" {
		return usageError("baton run add needs --title")
	}
	next := goaltree.NodeNext(o.next)
	if !next.Valid() {
		return usageError("--next is %q: want execute or decompose", o.next)
	}
	if o.maxAttempts < 0 {
		return usageError("--max-attempts must be positive")
	}
	l := f.runLayout()
	unlock, err := l.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := l.LoadRunState()
	if err != nil {
		return err
	}
	if st.InFlight != nil {
		return baton.Errorf(baton.Conflict, "iteration %d was interrupted and is not recorded yet: run `baton run step` (it recovers it first), then add the node", st.InFlight.Iter)
	}
	cfg, err := l.LoadConfig()
	if err != nil {
		return err
	}
	tree, err := l.LoadTree()
	if err != nil {
		return err
	}
	child := goaltree.Node{ID: o.id, Order: o.order, Title: strings.TrimSpace(o.title), Goal: strings.TrimSpace(o.goal), Acceptance: o.accept, Next: next, MaxAttempts: o.maxAttempts}
	if child.MaxAttempts == 0 {
		child.MaxAttempts = cfg.MaxAttempts
	}
	after, added, err := goaltree.AddNode(tree, o.parent, child)
	if err != nil {
		return err
	}
	if err := l.SaveTree(after); err != nil {
		return err
	}
	if o.asJSON {
		return writeJSON(f.IO.Out, struct {
			SchemaVersion int            `json:"schema_version"`
			Node          *goaltree.Node `json:"node"`
			Parent        string         `json:"parent"`
		}{1, added, o.parent})
	}
	fmt.Fprintf(f.IO.Err, "baton: added node %s under %s; commit it before the next step\n", added.ID, o.parent)
	_, err = fmt.Fprintln(f.IO.Out, added.ID)
	return err
}

func newRunValidateCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the goal tree, run state and config",
		Long: `Check state/tree.json, run_state.json and config.toml and list every problem,
naming the node it is about. Exits 2 when there is one.`,
		Example: "  baton run validate\n  baton run validate --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l := f.runLayout()
			problems, tree, err := l.TreeProblems()
			if err != nil {
				return err
			}
			var others []string
			if _, err := l.LoadConfig(); err != nil {
				others = append(others, err.Error())
			}
			if _, err := l.LoadRunState(); err != nil {
				others = append(others, err.Error())
			}
			for _, o := range others {
				problems = append(problems, goaltree.NodeProblem{NodeID: "(state)", Message: o})
			}
			if asJSON {
				j := struct {
					SchemaVersion int                    `json:"schema_version"`
					OK            bool                   `json:"ok"`
					Problems      []goaltree.NodeProblem `json:"problems"`
				}{1, len(problems) == 0, problems}
				if j.Problems == nil {
					j.Problems = []goaltree.NodeProblem{}
				}
				if err := writeJSON(f.IO.Out, j); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(f.IO.Out, p.String())
				}
			}
			if len(problems) > 0 {
				return &ExitCodeError{Code: ExitUsage}
			}
			if !asJSON {
				c := goaltree.Count(tree)
				fmt.Fprintf(f.IO.Out, "ok: %d nodes, %d leaves (%d passed, %d open, %d stuck)\n", c.Nodes, c.Leaves, c.Passed, c.Open, c.Stuck)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

type runStepOptions struct {
	sandbox       sandboxOptions
	agent         string
	promptBudget  int
	quiet         bool
	allowMain     bool
	maxIterations int
	asJSON        bool
}

func addStepFlags(cmd *cobra.Command, o *runStepOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.agent, "agent", "", "the agent: claude, codex, droid, pi or command:<argv>, see docs/agents.md (default: the config's agent)")
	sizeVar(fl, &o.promptBudget, "prompt-budget", 0, "prompt budget: `SIZE` in bytes or with a unit, 40KB (default: the config's prompt_budget, 40000)")
	fl.BoolVar(&o.quiet, "quiet", false, "do not stream the agent's output")
	fl.BoolVar(&o.allowMain, "allow-main", false, "allow running on main or master")
	fl.BoolVar(&o.asJSON, "json", false, "print the outcome as one JSON object on stdout (progress still goes to stderr)")
	o.sandbox.register(fl)
}

func newRunStepCmd(f *Factory) *cobra.Command {
	var o runStepOptions
	cmd := &cobra.Command{
		Use:   "step",
		Short: "Run one iteration on the leftmost open leaf",
		Long: `Run one iteration: select the leftmost open leaf, write the context files,
build the prompt, run the agent (its output streams here unless --quiet),
run the guard if it said done, update the tree, write the iteration's logs
to iterations/<run>/<iter>/ and commit.

step refuses a dirty work tree, a detached HEAD, another branch than the
run's, and main or master unless --allow-main. If the previous iteration's
process died, step first records that iteration (no attempt spent) and
commits the work tree as it was.

Exit codes: 0 after an iteration or when the run is complete, 1 on an error,
3 when a leaf is out of attempts.`,
		Example: "  baton run step\n  baton run step --agent codex --quiet",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunSteps(cmd.Context(), f, o, false)
		},
	}
	addStepFlags(cmd, &o)
	return cmd
}

func newRunLoopCmd(f *Factory) *cobra.Command {
	var o runStepOptions
	cmd := &cobra.Command{
		Use:   "loop",
		Short: "Run iterations until the tree is complete, stuck, or the limit",
		Long: `Run steps until every leaf passes (exit 0), a leaf is out of attempts
(exit 3), an error stops it (exit 1), or it has run --max-iterations
iterations (default: the config's max_iterations; exit 1). One status line per
iteration goes to stderr, a summary to stdout.

A loop that was killed resumes where it stopped: run it again.`,
		Example: "  baton run loop\n  baton run loop --max-iterations 5 --quiet",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunSteps(cmd.Context(), f, o, true)
		},
	}
	addStepFlags(cmd, &o)
	cmd.Flags().IntVar(&o.maxIterations, "max-iterations", 0, "stop after `N` iterations (default: the config's max_iterations, 50)")
	return cmd
}

func runRunSteps(ctx context.Context, f *Factory, o runStepOptions, loop bool) error {
	if o.promptBudget < 0 {
		return usageError("--prompt-budget must be positive")
	}
	if o.maxIterations < 0 {
		return usageError("--max-iterations must be positive")
	}
	if o.agent != "" {
		if err := goaltree.CheckAgent(o.agent); err != nil {
			return err
		}
	}
	conf, err := o.sandbox.confinement(f)
	if err != nil {
		return err
	}
	l := f.runLayout()
	conf = conf.ForProject(l.Root)
	if !o.quiet {
		sandboxNotice(f.IO.Err, conf)
	}
	r := &goaltree.Runner{
		Layout: l, Agent: o.agent, PromptBudget: o.promptBudget, AllowMain: o.allowMain,
		Progress: f.IO.Err, Now: f.now, Sandbox: conf, Env: f.AgentEnv,
	}
	if !o.quiet {
		r.Live = f.IO.Err
	}
	var rep *goaltree.LoopReport
	if loop {
		max := o.maxIterations
		if max == 0 {
			cfg, cerr := l.LoadConfig()
			if cerr != nil {
				return cerr
			}
			max = cfg.MaxIterations
		}
		rep, err = r.Loop(ctx, max)
	} else {
		rep, err = r.StepOnce(ctx)
	}
	if o.asJSON && rep != nil {
		if jerr := writeJSON(f.IO.Out, runOutcome(rep, err)); jerr != nil {
			return jerr
		}
	} else if rep != nil && rep.RunID != "" && (err == nil || len(rep.Steps) > 0) {
		fmt.Fprintln(f.IO.Out, rep.SummaryLine())
	}
	if err != nil {
		return err
	}
	switch rep.Outcome {
	case goaltree.LoopStuck:
		fmt.Fprintf(f.IO.Err, "baton: node %s is out of attempts: read its iterations' logs in %s, then fix the tree (raise its max_attempts or reword it) and run again\n", rep.StuckNode, filepath.Join(l.Dir(), goaltree.IterationsDir))
		return &ExitCodeError{Code: ExitStuck}
	case goaltree.LoopLimit:
		return &ExitCodeError{Code: ExitError}
	}
	return nil
}

// runOutcomeJSON is `baton run step|loop --json`: how the run stands
// after them, and each iteration they ran.
type runOutcomeJSON struct {
	SchemaVersion int             `json:"schema_version"`
	RunID         string          `json:"run_id"`
	Outcome       string          `json:"outcome"`
	Error         string          `json:"error,omitempty"`
	StuckNode     string          `json:"stuck_node,omitempty"`
	Iterations    int             `json:"iterations"`
	Counts        goaltree.Counts `json:"counts"`
	WallSeconds   float64         `json:"wall_seconds"`
	CostUSD       float64         `json:"cost_usd"`
	InputTokens   int64           `json:"input_tokens"`
	OutputTokens  int64           `json:"output_tokens"`
	Steps         []stepJSON      `json:"steps"`
}

type stepJSON struct {
	Iter           int     `json:"iter"`
	Node           string  `json:"node"`
	Title          string  `json:"title"`
	Status         string  `json:"status"`
	Attempt        int     `json:"attempt"`
	MaxAttempts    int     `json:"max_attempts"`
	AgentError     string  `json:"agent_error,omitempty"`
	RunnerError    string  `json:"runner_error,omitempty"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	CostUSD        float64 `json:"cost_usd"`
	Commit         string  `json:"commit,omitempty"`
}

func runOutcome(rep *goaltree.LoopReport, err error) runOutcomeJSON {
	j := runOutcomeJSON{SchemaVersion: 1, RunID: rep.RunID, Outcome: string(rep.Outcome), StuckNode: rep.StuckNode,
		Iterations: rep.Iterations, Counts: rep.Counts, WallSeconds: rep.Wall.Seconds(), CostUSD: rep.CostUSD,
		InputTokens: rep.InTokens, OutputTokens: rep.OutTokens, Steps: []stepJSON{}}
	if err != nil {
		j.Outcome, j.Error = string(goaltree.LoopError), err.Error()
	}
	for _, s := range rep.Steps {
		if !s.Ran {
			continue
		}
		j.Steps = append(j.Steps, stepJSON{Iter: s.Iter, Node: s.Node, Title: s.Title, Status: string(s.Status),
			Attempt: s.Attempt, MaxAttempts: s.MaxAttempts, AgentError: s.AgentError, RunnerError: s.RunnerError,
			ElapsedSeconds: s.Elapsed.Seconds(), CostUSD: s.CostUSD, Commit: s.Commit})
	}
	return j
}

// statusJSON is `baton run status --json`.
type statusJSON struct {
	SchemaVersion int                       `json:"schema_version"`
	RunID         string                    `json:"run_id"`
	Branch        string                    `json:"branch,omitempty"`
	State         string                    `json:"state"`
	Current       *nodeBrief                `json:"current,omitempty"`
	Counts        goaltree.Counts           `json:"counts"`
	NextIter      int                       `json:"next_iter"`
	Iterations    int                       `json:"iterations"`
	Last          *goaltree.IterationRecord `json:"last,omitempty"`
	Feedback      *goaltree.Feedback        `json:"feedback,omitempty"`
	InFlight      *goaltree.InFlight        `json:"in_flight,omitempty"`
	Totals        goaltree.RunTotals        `json:"totals"`
	Agent         string                    `json:"agent"`
	Guard         string                    `json:"guard"`
}

type nodeBrief struct {
	ID          string            `json:"id"`
	Title       string            `json:"title"`
	Next        goaltree.NodeNext `json:"next"`
	Attempts    int               `json:"attempts"`
	MaxAttempts int               `json:"max_attempts"`
}

func newRunStatusCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show where the goal-tree run stands",
		Long: `Show the run id and branch, whether the run is open, complete or stuck, the
node the next step works on, the leaf counts, the last iteration, and what
the agents cost so far.`,
		Example: "  baton run status\n  baton run status --json | jq .state",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l := f.runLayout()
			st, tree, err := l.LoadStateAndTree()
			if err != nil {
				return err
			}
			cfg, err := l.LoadConfig()
			if err != nil {
				return err
			}
			sel := goaltree.Select(tree)
			j := statusJSON{
				SchemaVersion: 1, RunID: st.RunID, Branch: st.Branch, State: string(sel.State), Counts: goaltree.Count(tree),
				NextIter: st.NextIter, Iterations: st.Totals.Iterations, Last: st.Last, Feedback: st.Feedback,
				InFlight: st.InFlight, Totals: st.Totals, Agent: cfg.Agent, Guard: cfg.Guard,
			}
			if n := sel.Node; n != nil {
				j.Current = &nodeBrief{n.ID, n.Title, n.Next, n.Attempts, n.MaxAttempts}
			}
			if asJSON {
				return writeJSON(f.IO.Out, j)
			}
			return printStatus(f.IO.Out, j)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	return cmd
}

func printStatus(w io.Writer, j statusJSON) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run:        %s", j.RunID)
	if j.Branch != "" {
		fmt.Fprintf(&b, " (branch %s)", j.Branch)
	}
	b.WriteByte('\n')
	switch {
	case j.Current == nil:
		fmt.Fprintf(&b, "state:      %s\n", j.State)
	case j.State == string(goaltree.Stuck):
		fmt.Fprintf(&b, "state:      stuck: node %s %q used %d of %d attempts\n", j.Current.ID, j.Current.Title, j.Current.Attempts, j.Current.MaxAttempts)
	default:
		fmt.Fprintf(&b, "state:      open: next is node %s %q (%s, attempt %d of %d)\n", j.Current.ID, j.Current.Title, j.Current.Next, j.Current.Attempts+1, j.Current.MaxAttempts)
	}
	c := j.Counts
	fmt.Fprintf(&b, "leaves:     %d passed, %d open, %d stuck, of %d (%d nodes)\n", c.Passed, c.Open, c.Stuck, c.Leaves, c.Nodes)
	fmt.Fprintf(&b, "iterations: %d", j.Iterations)
	if l := j.Last; l != nil {
		fmt.Fprintf(&b, "; last: iter %d node %s status=%s guard=%s", l.Iter, l.Node, l.Status, l.Guard)
		if l.Error != "" {
			fmt.Fprintf(&b, " (%s)", firstLine(l.Error))
		}
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "agent:      %s; guard: %s\n", j.Agent, firstNonEmpty(j.Guard, "(none: set guard in config.toml)"))
	t := j.Totals
	fmt.Fprintf(&b, "agents:     %s of agent time", (time.Duration(t.AgentSeconds * float64(time.Second))).Round(time.Second))
	if t.CostUSD > 0 {
		fmt.Fprintf(&b, ", $%.2f", t.CostUSD)
	}
	if t.InputTokens > 0 || t.OutputTokens > 0 {
		fmt.Fprintf(&b, ", %d input and %d output tokens", t.InputTokens, t.OutputTokens)
	}
	b.WriteByte('\n')
	if fl := j.InFlight; fl != nil {
		fmt.Fprintf(&b, "in flight:  iteration %d on node %s since %s; if no baton run is active, its process died: the next step records it\n", fl.Iter, fl.Node, baton.FormatTime(fl.StartedAt))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
