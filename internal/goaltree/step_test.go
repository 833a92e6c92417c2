package goaltree

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

// project is a git repository in a temporary directory with a run
// initialised in it and a scripted fake agent.
type project struct {
	t        *testing.T
	root     string
	l        Layout
	fake     *agenttest.Fake
	seen     string // outside the repository: what the agent saw, per call
	progress bytes.Buffer
}

func newProject(t *testing.T, goal string, cfg Config, turns ...agenttest.Turn) *project {
	t.Helper()
	p := &project{t: t, root: t.TempDir(), seen: t.TempDir()}
	p.l = Layout{Root: p.root}
	p.git("init", "-q", "-b", "main")
	p.write("README.md", "# app\n")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "initial commit")
	g, err := ParseGoalFile([]byte(goal))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(t.Context(), p.l, InitOptions{Goal: g, Config: cfg, Now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatalf("Init error: %v", err)
	}
	p.fake = agenttest.New(t, turns...)
	return p
}

func (p *project) git(args ...string) string {
	p.t.Helper()
	return gittest.Git(p.t, p.root, args...)
}

func (p *project) write(rel, content string) {
	p.t.Helper()
	path := filepath.Join(p.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) runner() *Runner {
	return &Runner{Layout: p.l, Env: p.fake.Env(), Sandbox: sandbox.Confinement{Policy: p.fake.Sandbox().Merge(sandbox.Policy{Write: []string{p.seen}})}, Progress: &p.progress, Now: func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }}
}

func (p *project) step() (*StepReport, error) {
	p.t.Helper()
	return p.runner().Step(p.t.Context())
}

func (p *project) tree() *Node {
	p.t.Helper()
	tr, err := p.l.LoadTree()
	if err != nil {
		p.t.Fatal(err)
	}
	return tr
}

func (p *project) state() *RunState {
	p.t.Helper()
	st, err := p.l.LoadRunState()
	if err != nil {
		p.t.Fatal(err)
	}
	return st
}

// subjects returns the commit subjects of the run's branch, oldest first,
// after the initial commit.
func (p *project) subjects() []string {
	p.t.Helper()
	out := p.git("log", "--reverse", "--format=%s", "main..HEAD")
	return strings.Split(out, "\n")
}

// lookAtContext is a command the fake agent runs first: it lists the
// context directory as the agent finds it, into seen/<name>.
func (p *project) lookAtContext(name string) agenttest.Command {
	script := `ls "$1" > "$2"`
	return agenttest.Command{Argv: []string{"sh", "-c", script, "sh", p.l.Context(""), filepath.Join(p.seen, name)}}
}

func (p *project) seenContext(name string) []string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.seen, name))
	if err != nil {
		p.t.Fatalf("the agent did not record its context: %v", err)
	}
	return strings.Fields(string(b))
}

func (p *project) iterFile(iter int, name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(p.l.Iteration(p.state().RunID, iter), name))
	return string(b), err == nil
}

func testConfig(guard string) Config {
	c := DefaultConfig()
	c.Guard = guard
	c.IterationTimeout = 20 * time.Second
	return c
}

const leafGoal = "---\nid: calc\nnext: execute\n---\n# Write the calculator\n\nAdd calc.txt.\n\n## Acceptance\n- calc.txt exists\n"

func done(summary string) map[string]any {
	return map[string]any{"status": "done", "summary": summary}
}

func retry(summary string) map[string]any {
	return map[string]any{"status": "retry", "summary": summary}
}

// TestRunnerErrorsNeverReachTheAgent runs every kind of runner error
// between a retry and the attempts after it: none costs an attempt, none
// shows up in history or failure, and each is committed.
func TestRunnerErrorsNeverReachTheAgent(t *testing.T) {
	t.Parallel()
	cfg := testConfig("true")
	cfg.IterationTimeout = 4 * time.Second
	var p *project
	turns := func(p *project) []agenttest.Turn {
		return []agenttest.Turn{
			{Commands: []agenttest.Command{p.lookAtContext("1")}, Final: "PLAIN-TEXT-ANSWER, no JSON"},
			{Commands: []agenttest.Command{p.lookAtContext("2")}, IsError: true, Errors: []string{"OVERLOADED-529"}},
			{Commands: []agenttest.Command{p.lookAtContext("3")}, Files: []agenttest.File{{Path: "calc.txt", Content: "half\n"}}, Final: retry("SUMMARY-ONE: wrote half of calc.txt")},
			{Commands: []agenttest.Command{p.lookAtContext("4")}, Sleep: time.Minute},
			{Commands: []agenttest.Command{p.lookAtContext("5")}, Final: map[string]any{"status": "done", "summary": "s", "surprise": true}},
			{Commands: []agenttest.Command{p.lookAtContext("6")}, Files: []agenttest.File{{Path: "calc.txt", Content: "full\n"}}, Final: done("finished calc.txt")},
		}
	}
	p = newProject(t, leafGoal, cfg)
	p.fake.SetScript(t, agenttest.Script{Turns: turns(p)})

	wantErr := []bool{true, true, false, true, true, false}
	for i, want := range wantErr {
		rep, err := p.step()
		if (err != nil) != want {
			t.Fatalf("step %d error = %v, want error %v", i+1, err, want)
		}
		if err != nil {
			if code := baton.ErrorCode(err); code != baton.Unavailable {
				t.Errorf("step %d error code = %s, want unavailable (exit 1, not a usage error)", i+1, code)
			}
			if rep == nil || rep.Status != statusRunnerError || !rep.Ran {
				t.Errorf("step %d report = %+v, want a recorded runner error", i+1, rep)
			}
			if _, ok := p.iterFile(i+1, runnerErrorLog); !ok {
				t.Errorf("iteration %d has no %s", i+1, runnerErrorLog)
			}
		}
	}
	root := p.tree()
	if !root.Passes || root.Attempts != 1 {
		t.Errorf("root passes=%v attempts=%d, want passed after exactly one spent attempt (the retry)", root.Passes, root.Attempts)
	}
	calls := p.fake.Calls(t)
	if len(calls) != 6 {
		t.Fatalf("agent ran %d times, want 6", len(calls))
	}
	for i, c := range calls {
		for _, leak := range []string{"PLAIN-TEXT", "OVERLOADED", "did not finish", "surprise", "runner error", "exit status"} {
			if strings.Contains(c.Prompt, leak) {
				t.Errorf("call %d prompt mentions the runner error %q", i+1, leak)
			}
		}
		hasHistory := strings.Contains(c.Prompt, "## History (previous attempt)\n\nSUMMARY-ONE")
		if hasHistory != (i >= 3) {
			t.Errorf("call %d prompt has the retry's history: %v, want %v", i+1, hasHistory, i >= 3)
		}
		if strings.Contains(c.Prompt, "## Failure") {
			t.Errorf("call %d prompt has a failure section without a guard failure", i+1)
		}
	}
	// The context directory, as each agent found it: rewritten every time,
	// history.md only after the retry, runner errors never in it.
	for i, want := range [][]string{{"goal.md"}, {"goal.md"}, {"goal.md"}, {"goal.md", "history.md"}, {"goal.md", "history.md"}, {"goal.md", "history.md"}} {
		if diff := cmp.Diff(want, p.seenContext(string(rune('1'+i)))); diff != "" {
			t.Errorf("context seen by call %d (-want +got):\n%s", i+1, diff)
		}
	}
	wantSubjects := []string{
		"baton run calc: init",
		"baton run calc iter 1: node root status=runner_error guard=skipped",
		"baton run calc iter 2: node root status=runner_error guard=skipped",
		"baton run calc iter 3: node root status=retry guard=skipped",
		"baton run calc iter 4: node root status=runner_error guard=skipped",
		"baton run calc iter 5: node root status=runner_error guard=skipped",
		"baton run calc iter 6: node root status=done guard=pass",
	}
	if diff := cmp.Diff(wantSubjects, p.subjects()); diff != "" {
		t.Errorf("commits mismatch (-want +got):\n%s", diff)
	}
	if got := p.git("status", "--porcelain"); got != "" {
		t.Errorf("work tree is dirty after the run:\n%s", got)
	}
	log, _ := p.iterFile(4, runnerErrorLog)
	if !strings.Contains(log, "did not finish") {
		t.Errorf("iteration 4 runner_error.log = %q, want the timeout", log)
	}
	st := p.state()
	if st.Totals.Iterations != 6 || st.NextIter != 7 || st.InFlight != nil {
		t.Errorf("run state = %+v", st)
	}
}

// TestGuardFailureFeedsTheNextAttempt: done with a failing guard spends an
// attempt and the next attempt gets failure.md, not the history.
func TestGuardFailureFeedsTheNextAttempt(t *testing.T) {
	t.Parallel()
	guard := `if [ -f bug.txt ]; then echo "FAILURE-MARK: bug.txt is still here"; exit 1; fi`
	p := newProject(t, leafGoal, testConfig(guard))
	p.fake.SetScript(t, agenttest.Script{Turns: []agenttest.Turn{
		{Commands: []agenttest.Command{p.lookAtContext("1")}, Files: []agenttest.File{{Path: "bug.txt", Content: "x"}}, Final: retry("SUMMARY-R")},
		{Commands: []agenttest.Command{p.lookAtContext("2")}, Final: done("I think it works")},
		{Commands: []agenttest.Command{p.lookAtContext("3")}, Files: []agenttest.File{{Path: "bug.txt", Op: "delete"}}, Final: done("removed bug.txt")},
	}})
	for i, want := range []GuardResult{guardSkipped, guardFail, guardPass} {
		rep, err := p.step()
		if err != nil || rep.Guard != want {
			t.Fatalf("step %d = %+v, %v; want guard %s", i+1, rep, err, want)
		}
	}
	if diff := cmp.Diff([]string{"goal.md", "history.md"}, p.seenContext("2")); diff != "" {
		t.Errorf("context after the retry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"failure.md", "goal.md"}, p.seenContext("3")); diff != "" {
		t.Errorf("context after the guard failure (-want +got):\n%s", diff)
	}
	calls := p.fake.Calls(t)
	third := calls[2].Prompt
	if !strings.Contains(third, "## Failure (previous attempt)") || !strings.Contains(third, "FAILURE-MARK: bug.txt is still here") || strings.Contains(third, "SUMMARY-R") {
		t.Errorf("third prompt does not carry just the guard failure:\n%s", third)
	}
	if failure, ok := p.iterFile(2, failureLog); !ok || !strings.Contains(failure, "exit status 1") {
		t.Errorf("iteration 2 %s = %q", failureLog, failure)
	}
	if g, _ := p.iterFile(2, GuardLog); !strings.Contains(g, "FAILURE-MARK") || !strings.Contains(g, "[baton: exit status 1") {
		t.Errorf("iteration 2 %s = %q", GuardLog, g)
	}
	if root := p.tree(); !root.Passes || root.Attempts != 2 {
		t.Errorf("root = passes %v attempts %d, want passed after 2 spent attempts", root.Passes, root.Attempts)
	}
	if _, err := os.Stat(p.l.Context(failureContext)); err != nil {
		t.Errorf("failure.md of the last iteration should stay for people to read: %v", err)
	}
}

// TestAgentEditingRunnerFilesIsAnAgentError: the runner owns tree.json and
// config.toml; an agent that edits them (here: marks itself passed and
// weakens the guard) is reverted, skips the guard, and spends an attempt.
func TestAgentEditingRunnerFilesIsAnAgentError(t *testing.T) {
	t.Parallel()
	p := newProject(t, leafGoal, testConfig("exit 1"))
	cheat := p.tree()
	cheat.Passes = true
	p.fake.SetScript(t, agenttest.Script{Turns: []agenttest.Turn{{
		Files: []agenttest.File{
			{Path: dir + "/state/tree.json", Content: string(encode(cheat))},
			{Path: dir + "/state/config.toml", Content: "guard = \"true\"\n"},
		},
		Final: done("all good"),
	}}})
	treeBefore, _ := os.ReadFile(p.l.State(treeFile))
	rep, err := p.step()
	if err != nil {
		t.Fatalf("step error: %v", err)
	}
	if rep.Status != statusAgentError || rep.Guard != guardSkipped {
		t.Errorf("step = status %s guard %s, want agent_error skipped", rep.Status, rep.Guard)
	}
	for _, want := range []string{"runner-owned fields of node root", "config.toml"} {
		if !strings.Contains(rep.AgentError, want) {
			t.Errorf("agent error %q does not mention %q", rep.AgentError, want)
		}
	}
	root := p.tree()
	if root.Passes || root.Attempts != 1 {
		t.Errorf("root = passes %v attempts %d, want open with one spent attempt", root.Passes, root.Attempts)
	}
	cfg, err := p.l.LoadConfig()
	if err != nil || cfg.Guard != "exit 1" {
		t.Errorf("config after the step = %+v, %v; want the guard restored", cfg, err)
	}
	if _, ok := p.iterFile(1, GuardLog); ok {
		t.Error("the guard ran after an agent error")
	}
	if log, ok := p.iterFile(1, agentErrorLog); !ok || !strings.Contains(log, "tree.json") {
		t.Errorf("%s = %q", agentErrorLog, log)
	}
	if fb := p.state().Feedback; !fb.History() || !strings.Contains(fb.Summary, "rejected") || !strings.Contains(fb.Summary, "all good") {
		t.Errorf("feedback = %+v, want the rejection and the summary for the next attempt", fb)
	}
	after := p.tree()
	after.Attempts = 0
	if string(encode(after)) != string(treeBefore) {
		t.Errorf("tree differs from before beyond the spent attempt:\n%s", encode(after))
	}
}

func TestDecompositionAndStuck(t *testing.T) {
	t.Parallel()
	cfg := testConfig("true")
	cfg.MaxAttempts = 1
	goal := "---\nid: calc\n---\n# Build a calculator\n\nParse and evaluate.\n"
	p := newProject(t, goal, cfg,
		agenttest.Turn{Final: map[string]any{"status": "decomposed", "summary": "two steps", "children": []map[string]any{
			{"title": "Parser", "goal": "parse 1+2", "acceptance": []string{"parses"}, "next": "execute"},
			{"title": "Evaluator", "goal": "evaluate", "acceptance": []string{"evaluates"}, "next": "execute"},
		}}},
		agenttest.Turn{Final: map[string]any{"status": "decomposed", "summary": "more", "children": []map[string]any{
			{"title": "Lexer", "goal": "lex", "acceptance": []string{"lexes"}, "next": "execute"},
		}}},
	)
	rep, err := p.step()
	if err != nil || rep.Status != statusDecomposed || rep.State != open {
		t.Fatalf("step 1 = %+v, %v; want decomposed, open", rep, err)
	}
	tree := p.tree()
	if len(tree.Children) != 2 || tree.Children[0].ID != "1" || tree.Children[1].ID != "2" || tree.Children[0].MaxAttempts != 1 || tree.Attempts != 0 {
		t.Fatalf("tree after decomposition:\n%s", encode(tree))
	}
	// Children on an execute node: the agent's error, and with one attempt
	// allowed, node 1 is stuck.
	rep, err = p.step()
	if err != nil || rep.Status != statusAgentError || rep.State != Stuck || rep.StuckNode != "1" {
		t.Fatalf("step 2 = %+v, %v; want agent_error, stuck on 1", rep, err)
	}
	if len(p.tree().Find("1").Children) != 0 {
		t.Error("children were attached to an execute node")
	}
	rep, err = p.step()
	if err != nil || rep.Ran || rep.State != Stuck || rep.StuckNode != "1" {
		t.Errorf("step 3 = %+v, %v; want stuck without running", rep, err)
	}
	if n := len(p.fake.Calls(t)); n != 2 {
		t.Errorf("agent ran %d times, want 2", n)
	}
}

func TestStepRefuses(t *testing.T) {
	t.Parallel()
	p := newProject(t, leafGoal, testConfig("true"))
	head := p.git("rev-parse", "HEAD")
	tests := []struct {
		name    string
		setup   func()
		undo    func()
		runner  func(*Runner)
		code    baton.Code
		message string
	}{
		{"dirty tree", func() { p.write("notes.txt", "mine") }, func() { os.Remove(filepath.Join(p.root, "notes.txt")) }, nil, baton.Conflict, "notes.txt"},
		{"detached HEAD", func() { p.git("checkout", "-q", "--detach") }, func() { p.git("checkout", "-q", "runner/calc") }, nil, baton.Conflict, "detached"},
		{"another branch", func() { p.git("checkout", "-q", "-b", "other") }, func() { p.git("checkout", "-q", "runner/calc") }, nil, baton.Conflict, "works on branch runner/calc"},
		{"missing agent", nil, nil, func(r *Runner) { r.Agent = "droid"; r.Env = []string{"PATH=" + t.TempDir()} }, baton.NotFound, "--agent"},
		{"prompt budget too small", nil, nil, func(r *Runner) { r.PromptBudget = 300 }, baton.Invalid, "too small"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
				defer tt.undo()
			}
			r := p.runner()
			if tt.runner != nil {
				tt.runner(r)
			}
			_, err := r.Step(t.Context())
			if baton.ErrorCode(err) != tt.code || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("Step() = %v, want a %s error mentioning %q", err, tt.code, tt.message)
			}
		})
	}
	if got := p.git("rev-parse", "runner/calc"); got != head || p.state().NextIter != 1 || len(p.fake.Calls(t)) != 0 {
		t.Errorf("a refused step left a trace: HEAD %s (was %s), next_iter %d, %d agent calls", got, head, p.state().NextIter, len(p.fake.Calls(t)))
	}

	// main is refused unless allowed.
	q := newProject(t, leafGoal, testConfig("true"), agenttest.Turn{Final: done("ok")})
	q.git("checkout", "-q", "main")
	q.git("merge", "-q", "--ff-only", "runner/calc")
	st := q.state()
	st.Branch = ""
	if err := q.l.SaveRunState(st); err != nil {
		t.Fatal(err)
	}
	q.git("commit", "-qam", "run on main")
	if _, err := q.step(); baton.ErrorCode(err) != baton.Conflict || !strings.Contains(err.Error(), "--allow-main") {
		t.Errorf("Step on main = %v, want a Conflict naming --allow-main", err)
	}
	r := q.runner()
	r.AllowMain = true
	if rep, err := r.Step(t.Context()); err != nil || rep.Status != statusDone {
		t.Errorf("Step --allow-main = %+v, %v", rep, err)
	}

	// No guard, no step: "done" alone means nothing.
	g := newProject(t, leafGoal, testConfig(""))
	if _, err := g.step(); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "guard") {
		t.Errorf("Step without a guard = %v, want an Invalid error about the guard", err)
	}
}

// liveTrigger calls fn once when the agent's live output shows marker.
type liveTrigger struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	fn     func()
	fired  bool
}

func (w *liveTrigger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if !w.fired && strings.Contains(w.buf.String(), w.marker) {
		w.fired = true
		w.fn()
	}
	return len(b), nil
}

// TestInterruptAndRecovery: Ctrl-C during the agent records the iteration
// as a runner error and commits the partial work; an in-flight iteration
// left by a dead process is recovered with the tree as it was before it.
// (The CLI tests kill a real process with SIGKILL.)
func TestInterruptAndRecovery(t *testing.T) {
	t.Parallel()
	p := newProject(t, leafGoal, testConfig("test -f calc.txt"),
		agenttest.Turn{Files: []agenttest.File{{Path: "partial.txt", Content: "half"}}, Say: []string{"WAITING-MARK"}, Sleep: time.Minute},
		agenttest.Turn{Files: []agenttest.File{{Path: "calc.txt", Content: "1"}}, Final: retry("almost")},
		agenttest.Turn{Final: done("done")},
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := p.runner()
	r.Live = &liveTrigger{marker: "WAITING-MARK", fn: cancel}
	rep, err := r.Step(ctx)
	if baton.ErrorCode(err) != baton.Canceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Step = %v, want Canceled", err)
	}
	if rep.Status != statusRunnerError || rep.Commit == "" {
		t.Errorf("interrupted step report = %+v, want a committed runner error", rep)
	}
	if got := p.git("show", "HEAD:partial.txt"); got != "half" {
		t.Errorf("partial work at HEAD = %q, want it committed", got)
	}
	st := p.state()
	if st.InFlight != nil || st.NextIter != 2 || st.Feedback != nil || p.tree().Attempts != 0 {
		t.Errorf("after the interrupt: state %+v, attempts %d; want recorded, no feedback, no attempt", st, p.tree().Attempts)
	}

	if _, err := p.step(); err != nil { // iteration 2: retry
		t.Fatal(err)
	}
	// A process that died during iteration 3, after the agent edited the tree.
	st = p.state()
	tree := p.tree()
	st.InFlight = &InFlight{Iter: st.NextIter, Node: "root", Attempt: 2, StartedAt: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)}
	dir := p.l.Iteration(st.RunID, st.NextIter)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, treeBeforeLog), encode(tree), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.l.SaveRunState(st); err != nil {
		t.Fatal(err)
	}
	edited := tree.Clone()
	edited.Passes = true
	if err := p.l.SaveTree(edited); err != nil {
		t.Fatal(err)
	}
	p.write("scratch.txt", "left by the dead agent")

	rep, err = p.step()
	if err != nil {
		t.Fatalf("step after the crash: %v", err)
	}
	if len(rep.Recovered) != 1 || !strings.Contains(rep.Recovered[0], "interrupted") || rep.Status != statusDone || rep.Iter != 4 {
		t.Errorf("step after the crash = %+v, want iteration 3 recovered and 4 done", rep)
	}
	wantSubjects := []string{
		"baton run calc: init",
		"baton run calc iter 1: node root status=runner_error guard=skipped",
		"baton run calc iter 2: node root status=retry guard=skipped",
		"baton run calc iter 3: node root status=runner_error guard=skipped",
		"baton run calc iter 4: node root status=done guard=pass",
	}
	if diff := cmp.Diff(wantSubjects, p.subjects()); diff != "" {
		t.Errorf("commits mismatch (-want +got):\n%s", diff)
	}
	if root := p.tree(); !root.Passes || root.Attempts != 1 {
		t.Errorf("root = passes %v attempts %d; want the dead agent's edit gone and one attempt (the retry) spent", root.Passes, root.Attempts)
	}
	if got := p.git("show", "HEAD~1:scratch.txt"); got != "left by the dead agent" {
		t.Errorf("the dead agent's file was not committed by the recovery: %q", got)
	}
	calls := p.fake.Calls(t)
	if len(calls) != 3 || !strings.Contains(calls[2].Prompt, "almost") || strings.Contains(calls[2].Prompt, "interrupted") {
		t.Errorf("the last prompt should carry the retry's history and no runner error")
	}
}

// TestRecoverUncommitted: a record whose commit is missing is committed
// with its own deterministic message before the next iteration.
func TestRecoverUncommitted(t *testing.T) {
	t.Parallel()
	p := newProject(t, leafGoal, testConfig("test -f calc.txt"),
		agenttest.Turn{Final: retry("not yet")},
		agenttest.Turn{Files: []agenttest.File{{Path: "calc.txt", Content: "1"}}, Final: done("done")},
	)
	if _, err := p.step(); err != nil {
		t.Fatal(err)
	}
	p.git("reset", "-q", "--soft", "HEAD~1")
	rep, err := p.step()
	if err != nil || len(rep.Recovered) != 1 || !strings.Contains(rep.Recovered[0], "recorded but not committed") {
		t.Fatalf("step = %+v, %v; want the missing commit recovered", rep, err)
	}
	want := []string{
		"baton run calc: init",
		"baton run calc iter 1: node root status=retry guard=skipped",
		"baton run calc iter 2: node root status=done guard=pass",
	}
	if diff := cmp.Diff(want, p.subjects()); diff != "" {
		t.Errorf("commits mismatch (-want +got):\n%s", diff)
	}
}

func TestLoopOutcomes(t *testing.T) {
	t.Parallel()
	goal := "---\nid: calc\n---\n# Build\n\nBuild it.\n"
	p := newProject(t, goal, testConfig("true"),
		agenttest.Turn{Final: map[string]any{"status": "decomposed", "summary": "s", "children": []map[string]any{
			{"title": "A", "goal": "a", "acceptance": []string{"a"}, "next": "execute"},
			{"title": "B", "goal": "b", "acceptance": []string{"b"}, "next": "execute"},
		}}, CostUSD: 0.5, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Final: done("a"), CostUSD: 0.25, InputTokens: 500, OutputTokens: 50},
		agenttest.Turn{Final: done("b")},
	)
	rep, err := p.runner().Loop(t.Context(), 2)
	if err != nil || rep.Outcome != LoopLimit || rep.Iterations != 2 || rep.Counts.Passed != 1 || rep.Counts.Open != 1 {
		t.Fatalf("Loop(2) = %+v, %v; want the limit after 2 iterations", rep, err)
	}
	if rep.CostUSD != 0.75 || rep.InTokens != 1500 || !strings.Contains(rep.SummaryLine(), "agent cost $0.75") {
		t.Errorf("Loop(2) totals = $%v %d tokens; summary %q", rep.CostUSD, rep.InTokens, rep.SummaryLine())
	}
	rep, err = p.runner().Loop(t.Context(), 10)
	if err != nil || rep.Outcome != loopComplete || rep.Iterations != 1 || rep.Counts.Passed != 2 {
		t.Fatalf("Loop(10) = %+v, %v; want complete after 1 more iteration", rep, err)
	}
	lines := strings.Split(strings.TrimSpace(p.progress.String()), "\n")
	sort.Strings(lines)
	if len(lines) != 3 || !strings.Contains(lines[0], "iter=1 node=root status=decomposed guard=skipped attempt=1/3") {
		t.Errorf("progress lines:\n%s", p.progress.String())
	}
	st := p.state()
	if st.Totals.CostUSD != 0.75 || st.Totals.Iterations != 3 {
		t.Errorf("run totals = %+v", st.Totals)
	}
}

// TestEveryExecutorStep runs one passing iteration with each executor the
// fake speaks, codex with the strict schema OpenAI requires.
func TestEveryExecutorStep(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"claude", "codex", "droid", "command"} {
		t.Run(agent, func(t *testing.T) {
			p := newProject(t, leafGoal, testConfig("test -f calc.txt"), agenttest.Turn{
				Files: []agenttest.File{{Path: "calc.txt", Content: "1"}},
				Final: map[string]any{"status": "done", "summary": "wrote calc.txt", "children": nil},
			})
			r := p.runner()
			r.Agent = agent
			if agent == "command" {
				r.Agent = p.fake.CommandAgent()
			}
			rep, err := r.Step(t.Context())
			if err != nil || rep.Status != statusDone || rep.Guard != guardPass || rep.State != complete {
				t.Fatalf("Step with %s = %+v, %v", agent, rep, err)
			}
			calls := p.fake.Calls(t)
			if len(calls) != 1 || calls[0].Dir != p.root {
				t.Fatalf("calls = %+v", calls)
			}
			var schema map[string]any
			if err := json.Unmarshal(calls[0].Schema, &schema); agent != "droid" && (err != nil || schema["required"] == nil) {
				t.Errorf("%s got schema %s", agent, calls[0].Schema)
			}
			if out, ok := p.iterFile(1, outputLog); !ok || !strings.Contains(out, "wrote calc.txt") {
				t.Errorf("%s = %q", outputLog, out)
			}
		})
	}
}

// TestAgentLinksLeadTheRunnerNowhere: the agent works in the tree that
// holds the runner's files, so it can turn the directory of its own
// iteration into a link to elsewhere. What the runner writes after the
// agent is then refused, never written through the link.
func TestAgentLinksLeadTheRunnerNowhere(t *testing.T) {
	t.Parallel()
	p := newProject(t, leafGoal, testConfig("true"))
	outside := t.TempDir()
	iterDir := p.l.Iteration(p.state().RunID, 1)
	p.fake.SetScript(t, agenttest.Script{Turns: []agenttest.Turn{{
		Commands: []agenttest.Command{{Argv: []string{"sh", "-c", `rm -rf "$1" && ln -s "$2" "$1"`, "sh", iterDir, outside}}},
		Final:    done("moved my logs"),
	}}})
	_, _ = p.step() // refused or recorded: either way, nothing goes outside
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("the runner wrote %q through the agent's link to %s", names, outside)
	}
	if fi, err := os.Lstat(iterDir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the agent did not make its link (%v, %v): the test proves nothing", fi, err)
	}
}
