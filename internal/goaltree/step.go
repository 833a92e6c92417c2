package goaltree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/gitx"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/prompt"
	"github.com/baton-agent/baton/internal/prompt/budget"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Runner runs the iterations of the goal-tree run of one project.
type Runner struct {
	Layout Layout
	// Agent overrides the config's agent when set (--agent).
	Agent string
	// PromptBudget overrides the config's prompt_budget when positive.
	PromptBudget int
	// AllowMain lets steps run on main or master.
	AllowMain bool
	// Live receives the agent's output as it runs; nil is quiet.
	Live io.Writer
	// Progress receives one status line per iteration; nil discards them.
	Progress io.Writer
	// Env is added to the environment of the agent and the guard.
	Env []string
	// Sandbox confines the agent and the guard: the project (its root,
	// git directory included) and their temporary directories writable,
	// the system readable (see sandbox.System), and what its Policy adds.
	// The zero value confines where the kernel can.
	Sandbox sandbox.Confinement
	// Now stamps records; nil means time.Now.
	Now func() time.Time

	tokens prompt.Counter // loaded once, when a token budget is set
}

// StepReport says what one Step did.
type StepReport struct {
	// State is the run's state after the step: open, complete or stuck.
	State SelectionState
	// Ran is true when an iteration ran (and was recorded).
	Ran         bool
	Iter        int
	Node        string
	Title       string
	Status      StepStatus
	Guard       GuardResult
	Attempt     int // the attempt this iteration was, from 1
	MaxAttempts int
	// AgentError is what the runner rejected, for agent_error.
	AgentError string
	// RunnerError is the runner error's message, for runner_error.
	RunnerError string
	Elapsed     time.Duration
	CostUSD     float64
	InTokens    int64
	OutTokens   int64
	Commit      string
	// Recovered describes an interrupted or uncommitted iteration the
	// step finished recording before it started its own.
	Recovered []string
	// StuckNode is the leaf out of attempts when State is stuck.
	StuckNode string
}

func (r *Runner) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Runner) progress(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", args...)
	}
}

// Step runs one iteration on the leftmost open leaf, or reports that the
// run is complete or stuck. It refuses to start on a detached HEAD, on
// main or master (unless AllowMain), on another branch than the run's, or
// on a work tree with uncommitted changes. Before that it finishes
// recording an iteration whose process died (see docs/runner.md).
//
// A runner error is recorded (runner_error.log, a commit, no attempt
// spent, nothing fed back) and returned as an Unavailable or Canceled
// error, with the report.
func (r *Runner) Step(ctx context.Context) (*StepReport, error) {
	l := r.Layout
	unlock, err := l.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cfg, err := l.LoadConfig()
	if err != nil {
		return nil, err
	}
	st, err := l.LoadRunState()
	if err != nil {
		return nil, err
	}
	repo := gitx.Open(l.Root)
	branch, err := r.checkBranch(ctx, repo, st)
	if err != nil {
		return nil, err
	}
	rep := &StepReport{}
	if st.InFlight != nil {
		note, err := r.recoverInterrupted(ctx, repo, st)
		if err != nil {
			return nil, err
		}
		rep.Recovered = append(rep.Recovered, note)
	}
	if note, err := r.recoverUncommitted(ctx, repo, st); err != nil {
		return nil, err
	} else if note != "" {
		rep.Recovered = append(rep.Recovered, note)
	}
	if err := r.checkClean(ctx, repo); err != nil {
		return nil, err
	}
	tree, err := l.LoadTree()
	if err != nil {
		return nil, err
	}
	sel := Select(tree)
	rep.State = sel.State
	switch sel.State {
	case complete:
		return rep, nil
	case Stuck:
		rep.StuckNode = sel.Node.ID
		return rep, nil
	}
	if cfg.Guard == "" {
		return nil, baton.Errorf(baton.Invalid, "no guard is configured: a leaf passes only when the agent says done AND the guard passes; set guard in %s (guard = \"true\" trusts the agent alone)", l.rel(l.State(ConfigFile)))
	}
	it := &iteration{r: r, cfg: cfg, st: st, repo: repo, branch: branch, tree: tree, sel: sel, rep: rep}
	return rep, it.run(ctx)
}

// iteration is one Step's work from selection to commit.
type iteration struct {
	r    *Runner
	cfg  Config
	st   *RunState
	repo *gitx.Repo
	// branch is HEAD's branch when the step started.
	branch string
	tree   *Node
	sel    Selection
	rep    *StepReport

	n        int // iteration number
	dir      string
	start    time.Time
	started  time.Time // r.now() at start
	spec     agentrun.Spec
	pack     *prompt.Pack
	res      *agentrun.Result
	protect  map[string][]byte // runner-owned files as they were before the agent
	agentDur time.Duration
	guardDur time.Duration
}

func (it *iteration) node() *Node { return it.sel.Node }

// run is the iteration's phases. Until begin, nothing is on record and a
// failure is a plain error; from then on every failure is recorded as a
// runner error, except when the agent moved HEAD (see
// checkBranchAfterAgent).
func (it *iteration) run(ctx context.Context) error {
	node := it.node()
	it.n = it.st.NextIter
	it.dir = it.r.Layout.Iteration(it.st.RunID, it.n)
	it.start, it.started = time.Now(), it.r.now()
	it.rep.Iter, it.rep.Node, it.rep.Title = it.n, node.ID, node.Title
	it.rep.Attempt, it.rep.MaxAttempts = node.Attempts+1, node.MaxAttempts

	in, err := it.prepare()
	if err != nil {
		return err // nothing ran and nothing is on record
	}
	it.rep.Ran = true
	if err := it.begin(ctx, in); err != nil {
		return err
	}
	result, err := it.runAgent(ctx)
	if err != nil {
		return err
	}
	agentErr, err := it.restoreProtected()
	if err != nil {
		return it.runnerError(ctx, err)
	}
	if agentErr == "" {
		agentErr = checkResult(node, len(it.sel.Path)-1, result, it.cfg.Limits())
	}
	guard, gout := guardSkipped, guardOutcome{}
	if agentErr == "" && result.Status == statusDone {
		if gout, err = it.runGuard(ctx); err != nil {
			return it.runnerError(ctx, err)
		}
		guard = gout.Result
	}
	return it.apply(ctx, result, agentErr, guard, gout)
}

// prepare builds the prompt and checks the agent can start: everything
// that fails for configuration reasons fails here, before the iteration
// is on record, and costs nothing.
func (it *iteration) prepare() (Inputs, error) {
	r := it.r
	in, err := it.inputs()
	if err != nil {
		return in, err
	}
	opts := prompt.Options{BudgetBytes: it.cfg.PromptBudget}
	if r.PromptBudget > 0 {
		opts.BudgetBytes = r.PromptBudget
	}
	if it.cfg.PromptBudgetTokens > 0 {
		if r.tokens == nil {
			if r.tokens, err = budget.NewO200k(); err != nil {
				return in, err
			}
		}
		opts.BudgetTokens, opts.Tokens = it.cfg.PromptBudgetTokens, r.tokens
	}
	if it.pack, err = buildPrompt(in, opts); err != nil {
		return in, err
	}
	agent := it.cfg.Agent
	if r.Agent != "" {
		agent = r.Agent
	}
	it.spec = agentSpec(it.cfg, agent, it.pack.Text, r.Layout.Root, it.dir, r.Live, r.Env)
	it.spec.Confine = &r.Sandbox
	return in, agentrun.Check(it.spec)
}

// begin puts the iteration on record: tree.before.json and in_flight,
// then the context files and the snapshot of the runner-owned files.
func (it *iteration) begin(ctx context.Context, in Inputs) error {
	l, node := it.r.Layout, it.node()
	if err := l.removeAll(it.dir); err != nil {
		return fmt.Errorf("clear %s: %w", it.dir, err)
	}
	if err := l.mkdirAll(it.dir); err != nil {
		return fmt.Errorf("create %s: %w", it.dir, err)
	}
	if err := l.writeFile(filepath.Join(it.dir, treeBeforeLog), encode(it.tree)); err != nil {
		return err
	}
	head, err := it.repo.Head(ctx)
	if err != nil && baton.ErrorCode(err) != baton.NotFound {
		return gitError(err, "read HEAD")
	}
	it.st.InFlight = &InFlight{Iter: it.n, Node: node.ID, Attempt: it.rep.Attempt, StartedAt: it.started.UTC().Truncate(time.Second), Head: head.SHA}
	if err := l.SaveRunState(it.st); err != nil {
		return err
	}
	// From here a crash leaves in_flight for the next step to recover.
	if err := writeContext(l, l.Context(""), in); err != nil {
		return it.runnerError(ctx, err)
	}
	if it.protect, err = snapshot(l); err != nil {
		return it.runnerError(ctx, err)
	}
	if it.r.Live != nil {
		it.r.progress("baton run %s iter=%d node=%s attempt=%d/%d agent=%s: %s", it.st.RunID, it.n, node.ID, it.rep.Attempt, node.MaxAttempts, it.spec.Agent, oneLine(node.Title))
	}
	return nil
}

// runAgent runs the agent and decodes its answer. Every failure is a
// runner error: a crash, an outage, a timeout or an unreadable answer is
// not an answer, so none of it is held against the node. Whatever the
// agent changed is committed as it is.
func (it *iteration) runAgent(ctx context.Context) (*Result, error) {
	var err error
	it.res, err = agentrun.Run(ctx, it.spec)
	it.agentDur = it.res.Duration
	it.rep.CostUSD, it.rep.InTokens, it.rep.OutTokens = it.res.CostUSD, it.res.InputTokens, it.res.OutputTokens
	if err != nil {
		return nil, it.runnerError(ctx, err)
	}
	if err := it.checkBranchAfterAgent(ctx); err != nil {
		return nil, err // leaves in_flight: the next step recovers once HEAD is back
	}
	if len(it.res.Structured) > 0 {
		if err := it.r.Layout.writeFile(filepath.Join(it.dir, outputLog), append(bytes.TrimSpace(it.res.Structured), '\n')); err != nil {
			return nil, it.runnerError(ctx, err)
		}
	}
	result, err := decodeResult(it.res.Structured)
	if err != nil {
		return nil, it.runnerError(ctx, err)
	}
	return result, nil
}

// runGuard runs the guard with what is left of the iteration's time.
func (it *iteration) runGuard(ctx context.Context) (guardOutcome, error) {
	start := time.Now()
	defer func() { it.guardDur = time.Since(start) }()
	return runGuard(ctx, guardSpec{
		Command: it.cfg.Guard, Dir: it.r.Layout.Root, Timeout: it.cfg.IterationTimeout - time.Since(it.start),
		Env:     append(append([]string(nil), it.r.Env...), "BATON_RUN_ID="+it.st.RunID, "BATON_NODE_ID="+it.node().ID),
		PassEnv: it.cfg.PassEnv, Log: filepath.Join(it.dir, GuardLog), Files: it.r.Layout, MaxLog: it.cfg.LogMaxBytes,
		Confine: &it.r.Sandbox,
	})
}

// apply computes and saves the tree after the iteration, with its logs
// and the feedback for the next attempt, then records it.
func (it *iteration) apply(ctx context.Context, result *Result, agentErr string, guard GuardResult, gout guardOutcome) error {
	l, node := it.r.Layout, it.node()
	after, v, err := update(it.tree, node.ID, result, agentErr, guard, it.cfg.Limits())
	if err != nil {
		return it.runnerError(ctx, err)
	}
	logs := map[string]string{}
	if v.Guard == guardFail {
		logs[failureLog] = gout.failureText(it.cfg.Guard)
	}
	if v.AgentError != "" {
		logs[agentErrorLog] = v.AgentError + "\n"
	}
	logs[treeAfterLog] = string(encode(after))
	for name, text := range logs {
		if err := it.r.Layout.writeFile(filepath.Join(it.dir, name), []byte(text)); err != nil {
			return it.runnerError(ctx, err)
		}
	}
	if err := l.SaveTree(after); err != nil {
		return it.runnerError(ctx, err)
	}
	it.st.Feedback = &Feedback{Iter: it.n, Node: node.ID, Status: v.Status, Guard: v.Guard, Summary: historyText(result, v)}
	it.rep.Status, it.rep.Guard, it.rep.AgentError = v.Status, v.Guard, v.AgentError
	next := Select(after)
	it.rep.State = next.State
	if next.State == Stuck {
		it.rep.StuckNode = next.Node.ID
	}
	return it.record(ctx, "", v.Added)
}

// inputs gathers the prompt's contents: the tree, the selection, and what
// the last attempt at this node left.
func (it *iteration) inputs() (Inputs, error) {
	l := it.r.Layout
	in := Inputs{RunID: it.st.RunID, Iter: it.n, Tree: it.tree, Selection: it.sel, Guard: it.cfg.Guard, Limits: it.cfg.Limits()}
	if fb := it.st.Feedback; fb != nil && fb.Node == it.node().ID {
		if fb.History() {
			in.History = fb.Summary
		}
		if fb.Failure() {
			in.Failure = readFailure(l, l.Iteration(it.st.RunID, fb.Iter), fb.Iter)
		}
	}
	budget := max(it.cfg.PromptBudget, it.r.PromptBudget)
	var err error
	if in.Assumptions, err = readNotes(l, l.State(assumptionsFile), assumptionsTemplate, budget); err != nil {
		return in, err
	}
	if in.Questions, err = readNotes(l, l.State(questionsFile), questionsTemplate, budget); err != nil {
		return in, err
	}
	return in, nil
}

// readFailure returns the failure the previous iteration recorded: its
// failure.log, else the end of its guard.log.
func readFailure(l Layout, dir string, iter int) string {
	if b, err := l.readFile(filepath.Join(dir, failureLog)); err == nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	f, err := l.openFile(filepath.Join(dir, GuardLog), os.O_RDONLY)
	if err == nil {
		defer f.Close()
		tail := proc.Tail{Max: failureTailBytes}
		if _, err := io.Copy(&tail, f); err == nil {
			text, _ := tail.Text()
			return "The guard failed. The end of its log:\n\n" + text
		}
	}
	return fmt.Sprintf("The guard failed in iteration %d; its log is no longer on this machine.", iter)
}

// historyText is what the next attempt is told after a retry or an agent
// error.
func historyText(r *Result, v Verdict) string {
	summary := truncateSummary(r.Summary)
	if summary == "" {
		summary = "(the previous attempt left no summary)"
	}
	if v.AgentError == "" {
		return summary
	}
	return "The runner rejected the previous attempt's answer: " + v.AgentError + ".\n\nIts summary was: " + summary
}

// agentSpec is how the runner asks agentrun to run an agent.
func agentSpec(cfg Config, agent, promptText, root, logDir string, live io.Writer, env []string) agentrun.Spec {
	return agentrun.Spec{
		Agent:        agent,
		Prompt:       promptText,
		Dir:          root,
		OutputSchema: schema(agent == "codex"),
		Timeout:      cfg.IterationTimeout,
		Model:        cfg.Model,
		ExtraArgs:    cfg.AgentArgs,
		Env:          env,
		PassEnv:      cfg.PassEnv,
		Live:         live,
		LogDir:       logDir,
		MaxLogBytes:  cfg.LogMaxBytes,
	}
}

// protectedFiles are the runner-owned files an agent must not change.
func protectedFiles(l Layout) []string {
	return []string{l.State(treeFile), l.State(RunStateFile), l.State(ConfigFile), l.Gitignore()}
}

// snapshot reads the protected files; a missing one is nil.
func snapshot(l Layout) (map[string][]byte, error) {
	m := map[string][]byte{}
	for _, p := range protectedFiles(l) {
		b, err := l.readFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		m[p] = b
	}
	return m, nil
}

// restoreProtected puts back every protected file the agent changed and
// returns the agent error that describes the change, or "".
func (it *iteration) restoreProtected() (string, error) {
	l := it.r.Layout
	var msgs []string
	for _, p := range protectedFiles(l) {
		was := it.protect[p]
		now, err := l.readFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if bytes.Equal(was, now) && (was == nil) == (now == nil) {
			continue
		}
		if p == l.State(treeFile) {
			msgs = append(msgs, describeTreeEdit(it.tree, now))
		} else {
			msgs = append(msgs, fmt.Sprintf("you changed %s, which belongs to the runner; the change was reverted", l.rel(p)))
		}
		if was == nil {
			err = l.removeAll(p)
		} else {
			err = l.writeFile(p, was)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return strings.Join(msgs, "; "), nil
}

// runnerError records the iteration as a runner error: the protected files
// are restored without blame, no attempt is spent, the feedback for the
// next attempt is left as it was, and the work tree is committed as it is.
// It returns the error the step reports.
func (it *iteration) runnerError(ctx context.Context, cause error) error {
	if it.protect != nil {
		if _, err := it.restoreProtected(); err != nil {
			cause = errors.Join(cause, err)
		}
	}
	msg := runnerErrorText(cause)
	it.rep.Status, it.rep.Guard, it.rep.RunnerError = statusRunnerError, guardSkipped, msg
	it.rep.State = it.sel.State
	_ = it.r.Layout.writeFile(filepath.Join(it.dir, runnerErrorLog), []byte(msg+"\n")) // best effort: the error is returned anyway
	if err := it.record(ctx, msg, nil); err != nil && baton.ErrorCode(cause) != baton.Canceled {
		cause = errors.Join(cause, err)
	}
	code := baton.Unavailable
	if baton.ErrorCode(cause) == baton.Canceled {
		code = baton.Canceled
	}
	return baton.WrapError(code, cause, "iteration %d (node %s) stopped by a runner error; no attempt was spent and the agent will not see it", it.n, it.node().ID)
}

// runnerErrorText is the full text of a runner error for its log.
func runnerErrorText(err error) string { return strings.TrimSpace(err.Error()) }

// record ends the iteration: run_state (in_flight cleared, next_iter
// advanced, totals), the commit, meta.json and the status line. errMsg is
// set for a runner error.
func (it *iteration) record(ctx context.Context, errMsg string, added []string) error {
	l, st, node := it.r.Layout, it.st, it.node()
	it.rep.Elapsed = time.Since(it.start)
	rec := &IterationRecord{Iter: it.n, Node: node.ID, Status: it.rep.Status, Guard: it.rep.Guard, Attempt: it.rep.Attempt, Error: errMsg, At: it.r.now().UTC().Truncate(time.Second)}
	st.Last, st.InFlight = rec, nil
	st.NextIter = it.n + 1
	st.Totals.Iterations++
	st.Totals.AgentSeconds += it.agentDur.Seconds()
	st.Totals.CostUSD += it.rep.CostUSD
	st.Totals.InputTokens += it.rep.InTokens
	st.Totals.OutputTokens += it.rep.OutTokens
	meta := it.meta(errMsg, added)
	if err := l.SaveRunState(st); err != nil {
		return err
	}
	// A canceled context must not stop the checkpoint of what was done.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	c, cerr := it.repo.CommitAll(cctx, commitMessage(st.RunID, rec))
	if cerr == nil {
		it.rep.Commit, meta.Commit = c.SHA, c.SHA
	} else {
		cerr = gitError(cerr, "commit iteration %d (it is recorded; the next step commits it)", it.n)
	}
	meta.ElapsedSeconds = time.Since(it.start).Seconds()
	werr := it.r.Layout.writeFile(filepath.Join(it.dir, MetaLog), encodeJSON(meta))
	it.r.progress("%s", it.rep.Line(st.RunID))
	if cerr != nil {
		if errMsg == "" {
			return it.runnerErrorAfterRecord(cerr)
		}
		return cerr
	}
	return werr
}

// runnerErrorAfterRecord reports a commit failure after the iteration's
// outcome was recorded: the outcome stands, and the next step commits it.
func (it *iteration) runnerErrorAfterRecord(cause error) error {
	_ = it.r.Layout.writeFile(filepath.Join(it.dir, runnerErrorLog), []byte(runnerErrorText(cause)+"\n"))
	return baton.WrapError(baton.Unavailable, cause, "iteration %d (node %s) was recorded but not committed", it.n, it.node().ID)
}

// commitMessage is the deterministic subject of an iteration's commit.
func commitMessage(run string, rec *IterationRecord) string {
	return fmt.Sprintf("baton run %s iter %d: node %s status=%s guard=%s", run, rec.Iter, rec.Node, rec.Status, rec.Guard)
}

// Line renders the step's one status line.
func (rep *StepReport) Line(run string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "baton run %s iter=%d node=%s status=%s guard=%s attempt=%d/%d elapsed=%s",
		run, rep.Iter, rep.Node, rep.Status, rep.Guard, rep.Attempt, rep.MaxAttempts, rep.Elapsed.Round(100*time.Millisecond))
	if rep.CostUSD > 0 {
		fmt.Fprintf(&b, " cost=$%.2f", rep.CostUSD)
	}
	if rep.AgentError != "" {
		fmt.Fprintf(&b, " agent_error=%q", oneLineCut(rep.AgentError, 160))
	}
	if rep.RunnerError != "" {
		fmt.Fprintf(&b, " runner_error=%q", oneLineCut(rep.RunnerError, 160))
	}
	return b.String()
}

func oneLineCut(s string, n int) string {
	s = oneLine(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Meta is an iteration's meta.json.
type Meta struct {
	SchemaVersion   int            `json:"schema_version"`
	RunID           string         `json:"run_id"`
	Iter            int            `json:"iter"`
	Node            string         `json:"node"`
	Title           string         `json:"title"`
	Attempt         int            `json:"attempt"`
	MaxAttempts     int            `json:"max_attempts"`
	Agent           string         `json:"agent"`
	Status          StepStatus     `json:"status"`
	Guard           GuardResult    `json:"guard"`
	RunnerError     string         `json:"runner_error,omitempty"`
	AgentError      string         `json:"agent_error,omitempty"`
	ChildrenAdded   []string       `json:"children_added,omitempty"`
	StartedAt       time.Time      `json:"started_at"`
	FinishedAt      time.Time      `json:"finished_at"`
	AgentSeconds    float64        `json:"agent_seconds"`
	GuardSeconds    float64        `json:"guard_seconds"`
	ElapsedSeconds  float64        `json:"elapsed_seconds"`
	CostUSD         float64        `json:"cost_usd,omitempty"`
	InputTokens     int64          `json:"input_tokens,omitempty"`
	OutputTokens    int64          `json:"output_tokens,omitempty"`
	CacheReadTokens int64          `json:"cache_read_tokens,omitempty"`
	NumTurns        int            `json:"num_turns,omitempty"`
	SessionID       string         `json:"session_id,omitempty"`
	Model           string         `json:"model,omitempty"`
	ExitCode        *int           `json:"agent_exit_code,omitempty"`
	Prompt          *prompt.Report `json:"prompt,omitempty"`
	Commit          string         `json:"commit,omitempty"`
}

func (it *iteration) meta(errMsg string, added []string) *Meta {
	m := &Meta{
		SchemaVersion: 1, RunID: it.st.RunID, Iter: it.n, Node: it.node().ID, Title: it.node().Title,
		Attempt: it.rep.Attempt, MaxAttempts: it.rep.MaxAttempts, Agent: it.spec.Agent,
		Status: it.rep.Status, Guard: it.rep.Guard, RunnerError: errMsg, AgentError: it.rep.AgentError,
		ChildrenAdded: added, StartedAt: it.started.UTC(), FinishedAt: it.r.now().UTC(),
		AgentSeconds: it.agentDur.Seconds(), GuardSeconds: it.guardDur.Seconds(),
	}
	if it.pack != nil {
		m.Prompt = &it.pack.Report
	}
	if res := it.res; res != nil {
		m.CostUSD, m.InputTokens, m.OutputTokens, m.CacheReadTokens = res.CostUSD, res.InputTokens, res.OutputTokens, res.CacheReadTokens
		m.NumTurns, m.SessionID, m.Model = res.NumTurns, res.SessionID, res.Model
		code := res.ExitCode
		m.ExitCode = &code
	}
	return m
}
